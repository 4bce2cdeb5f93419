/* The book's small scripts (vanilla JS, loaded on every page by Jupyter Book):
 * - the claims ledger: search, filter, sort, group, expand, a number of rows per part at a
 *   time, and a row named by the address (ledger.html#v-...) shown and scrolled to (without
 *   the script the page still shows every section; each paper's table opens with a click);
 * - a link to an anchor lands on it after MathJax has typeset the page;
 * - search results typeset their math (titles and snippets hold it);
 * - a figure too wide for a narrow screen scrolls instead of shrinking past legibility.
 *
 * Rows carry their data as classes written by _ext/eit_pages.py:
 *   eit-p-<paper> eit-o-<outcome> eit-s-<scope> eit-k-<kind> eit-n-<part number>
 * The state is kept in the address
 * (?q=<search words>&paper=...&outcome=...&scope=...&kind=...&sort=...&flat=1),
 * so a filtered view can be linked to; the summary table's counts are such links. */
(function () {
  "use strict";

  var ORDER = {
    outcome: ["confirmed", "confirmed-with-a-correction", "refuted", "inconclusive",
              "not-reproduced-on-the-substitute"],
    scope: ["paper", "substitute", "extension"],
  };
  var FILTERS = ["paper", "outcome", "scope", "kind"];
  var HEADER_SORT = { Part: "paper", Claim: "claim", Outcome: "outcome", Scope: "scope" };
  /* The ledger shows PAGE rows of each part at first (FLAT_PAGE when not grouped), and STEP
   * more at each "show more": expanded, the whole ledger would be 50,000 px tall. */
  var PAGE = 10, FLAT_PAGE = 40, STEP = 25;

  /* Lower-case text with its whitespace collapsed: what the search box compares. */
  function words(text) {
    return text.toLowerCase().replace(/\s+/g, " ").trim();
  }

  function classValue(el, prefix) {
    for (var i = 0; i < el.classList.length; i++) {
      var c = el.classList[i];
      if (c.indexOf(prefix) === 0) return c.slice(prefix.length);
    }
    return "";
  }

  function init() {
    var form = document.querySelector("form.eit-ledger-controls");
    if (!form) return;
    document.documentElement.classList.add("eit-js");
    var sections = Array.prototype.slice.call(document.querySelectorAll("section.eit-paper"));
    var rows = Array.prototype.slice.call(
      document.querySelectorAll("table.eit-ledger tr.eit-row"));
    var home = new Map();
    rows.forEach(function (row, i) {
      home.set(row, row.parentNode);
      row.dataset.index = String(i);
      row.dataset.paper = classValue(row, "eit-p-");
      row.dataset.outcome = classValue(row, "eit-o-");
      row.dataset.scope = classValue(row, "eit-s-");
      row.dataset.kind = classValue(row, "eit-k-");
      row.dataset.part = classValue(row, "eit-n-");
      var claim = row.querySelector("td.eit-c-claim");
      row.dataset.claim = claim ? claim.textContent.trim().toLowerCase() : "";
      row.dataset.text = words(row.id + " " + row.textContent);
    });
    var selects = {};
    FILTERS.forEach(function (name) {
      selects[name] = form.querySelector('select[data-filter="' + name + '"]');
    });
    var search = form.querySelector("input[data-search]");
    var sortSelect = form.querySelector("select[data-sort]");
    var group = form.querySelector("input[data-group]");
    var expand = form.querySelector("button[data-expand]");
    var reset = form.querySelector("button[data-reset]");
    var count = form.querySelector(".eit-ledger-count");
    var flatBox = document.getElementById("eit-ledger-flat");
    var flatBody = null;
    var limits = new Map();  // tbody -> how many of its matching rows are shown
    var bars = new Map();    // tbody -> its "show more" bar

    function detailsOf(section) { return section.querySelector("details.eit-claims"); }

    function filters() {
      var f = {};
      FILTERS.forEach(function (name) { f[name] = selects[name] ? selects[name].value : ""; });
      return f;
    }

    function key(row, by) {
      if (by === "outcome" || by === "scope") {
        return [ORDER[by].indexOf(row.dataset[by]), Number(row.dataset.index)];
      }
      if (by === "paper") return [Number(row.dataset.part), Number(row.dataset.index)];
      if (by === "claim") return [row.dataset.claim, Number(row.dataset.index)];
      return [Number(row.dataset.index), 0];
    }

    function compare(a, b) {
      for (var i = 0; i < a.length; i++) {
        if (a[i] < b[i]) return -1;
        if (a[i] > b[i]) return 1;
      }
      return 0;
    }

    function rowsOf(body) {
      return Array.prototype.slice.call(body.querySelectorAll(":scope > tr.eit-row"));
    }

    function sortBody(body, by) {
      var list = rowsOf(body);
      list.sort(function (x, y) { return compare(key(x, by), key(y, by)); });
      list.forEach(function (row) { body.appendChild(row); });
    }

    /* Under each table, "Showing 10 of 92 claims [Show 25 more] [Show all]". */
    function makeBar(body, after) {
      var bar = document.createElement("p");
      bar.className = "eit-more";
      bar.innerHTML = '<span></span> <button type="button" data-more></button> ' +
        '<button type="button" data-all>Show all</button>';
      bar.querySelector("button[data-more]").addEventListener("click", function () {
        limits.set(body, (limits.get(body) || pageOf(body)) + STEP);
        paginate();
      });
      bar.querySelector("button[data-all]").addEventListener("click", function () {
        limits.set(body, Infinity);
        paginate();
      });
      after.parentNode.insertBefore(bar, after.nextSibling);
      bars.set(body, bar);
    }

    function pageOf(body) { return body === flatBody ? FLAT_PAGE : PAGE; }

    function bodies() {
      if (flatBody) return [flatBody];
      return sections.map(function (s) { return s.querySelector("table.eit-ledger tbody"); })
        .filter(Boolean);
    }

    /* Show the first rows of each table that match the filters; the rest wait behind the
     * table's "show more" bar. */
    function paginate() {
      bodies().forEach(function (body) {
        var limit = limits.get(body) || pageOf(body);
        var matching = rowsOf(body).filter(function (r) {
          return !r.classList.contains("eit-hidden");
        });
        rowsOf(body).forEach(function (row) { row.classList.remove("eit-paged"); });
        matching.forEach(function (row, i) { row.classList.toggle("eit-paged", i >= limit); });
        var bar = bars.get(body);
        var shown = Math.min(limit, matching.length);
        bar.classList.toggle("eit-hidden", shown === matching.length);
        bar.querySelector("span").textContent = "Showing " + shown + " of " +
          matching.length + " claims.";
        bar.querySelector("button[data-more]").textContent =
          "Show " + Math.min(STEP, matching.length - shown) + " more";
      });
    }

    function setFlat(flat) {
      if (flat && !flatBody) {
        var first = document.querySelector("table.eit-ledger");
        var tableEl = first.cloneNode(false);
        tableEl.removeAttribute("id");
        Array.prototype.forEach.call(first.children, function (child) {
          if (child.tagName !== "TBODY") tableEl.appendChild(child.cloneNode(true));
        });
        flatBody = document.createElement("tbody");
        tableEl.appendChild(flatBody);
        flatBox.appendChild(tableEl);
        rows.forEach(function (row) { flatBody.appendChild(row); });
        sections.forEach(function (s) { s.classList.add("eit-hidden"); });
        flatBox.classList.add("eit-flat");
        headerButtons(tableEl);
        makeBar(flatBody, tableEl);
      } else if (!flat && flatBody) {
        rows.forEach(function (row) { home.get(row).appendChild(row); });
        bars.delete(flatBody);
        limits.delete(flatBody);
        flatBox.innerHTML = "";
        flatBox.classList.remove("eit-flat");
        flatBody = null;
        sections.forEach(function (s) { s.classList.remove("eit-hidden"); });
      }
    }

    function matches(row, f, terms) {
      return FILTERS.every(function (n) { return !f[n] || row.dataset[n] === f[n]; }) &&
        terms.every(function (t) { return row.dataset.text.indexOf(t) >= 0; });
    }

    function apply(opts) {
      opts = opts || {};
      if (!opts.keepPages) limits.clear();
      var f = filters();
      var text = search.value.trim().replace(/\s+/g, " ");
      var terms = words(text).split(" ").filter(Boolean);
      var active = !!text || FILTERS.some(function (n) { return f[n]; });
      var shown = 0;
      rows.forEach(function (row) {
        var ok = matches(row, f, terms);
        row.classList.toggle("eit-hidden", !ok);
        if (ok) shown += 1;
      });
      setFlat(!group.checked);
      var by = sortSelect.value;
      if (flatBody) {
        sortBody(flatBody, by || "paper");
      } else {
        sections.forEach(function (section) {
          var body = section.querySelector("table.eit-ledger tbody");
          if (body) sortBody(body, by);
          var n = section.querySelectorAll("tr.eit-row:not(.eit-hidden)").length;
          section.classList.toggle("eit-hidden", active && n === 0);
          if (active && n > 0) detailsOf(section).open = true;
          else if (opts.collapse) detailsOf(section).open = false;
        });
      }
      paginate();
      document.querySelectorAll("table.eit-ledger th").forEach(function (th) {
        var name = HEADER_SORT[th.dataset.label];
        if (name) th.setAttribute("aria-sort", name === (by || (flatBody ? "paper" : ""))
          ? "ascending" : "none");
      });
      count.value = shown + " of " + rows.length + " claims match";
      if (!opts.keepAddress) {
        var params = new URLSearchParams();
        if (text) params.set("q", text);
        FILTERS.forEach(function (n) { if (f[n]) params.set(n, f[n]); });
        if (by) params.set("sort", by);
        if (!group.checked) params.set("flat", "1");
        var query = params.toString();
        history.replaceState(null, "", location.pathname + (query ? "?" + query : "") +
          location.hash);
      }
    }

    function fromAddress(query) {
      var params = new URLSearchParams(query);
      search.value = params.get("q") || "";
      FILTERS.forEach(function (n) { if (selects[n]) selects[n].value = params.get(n) || ""; });
      sortSelect.value = params.get("sort") || "";
      group.checked = params.get("flat") !== "1";
      if (params.get("all") === "1") {
        sections.forEach(function (s) { detailsOf(s).open = true; });
      }
    }

    function headerButtons(tableEl) {
      tableEl.querySelectorAll("thead th").forEach(function (th) {
        var label = th.dataset.label || th.textContent.trim();
        th.dataset.label = label;
        if (!HEADER_SORT[label]) return;
        var button = document.createElement("button");
        button.type = "button";
        button.className = "eit-sort";
        button.textContent = label;
        button.title = "Sort by " + label.toLowerCase();
        button.addEventListener("click", function () {
          sortSelect.value = HEADER_SORT[label];
          apply();
        });
        th.textContent = "";
        th.appendChild(button);
      });
    }

    /* The address names a row (ledger.html#v-...): show it (clear the filters that hide it,
     * open its part, page to it) and scroll to it. */
    function openTarget() {
      var id = decodeURIComponent(location.hash.slice(1));
      var target = id && document.getElementById(id);
      if (!target) return;
      var row = target.closest ? target.closest("tr.eit-row") : null;
      if (row && row.classList.contains("eit-hidden")) {
        search.value = "";
        FILTERS.forEach(function (n) { if (selects[n]) selects[n].value = ""; });
        apply();
      }
      var section = target.closest ? target.closest("section.eit-paper") : null;
      if (section && !flatBody) {
        var d = detailsOf(section);
        if (d) d.open = true;
      }
      if (row) {
        var body = row.parentNode;
        var matching = rowsOf(body).filter(function (r) {
          return !r.classList.contains("eit-hidden");
        });
        var at = matching.indexOf(row);
        if (at >= (limits.get(body) || pageOf(body))) {
          limits.set(body, at + 1);
          paginate();
        }
        row.scrollIntoView({ block: "start" });
      }
    }

    document.querySelectorAll("table.eit-ledger").forEach(headerButtons);
    sections.forEach(function (section) {
      var body = section.querySelector("table.eit-ledger tbody");
      if (!body) return;
      var tableEl = body.closest("table");
      makeBar(body, tableEl.closest(".pst-scrollable-table-container") || tableEl);
    });
    form.addEventListener("change", function () { apply(); });
    form.addEventListener("submit", function (e) { e.preventDefault(); });
    var typing = null;
    search.addEventListener("input", function () {
      if (typing) clearTimeout(typing);
      typing = setTimeout(function () { apply(); }, 150);
    });
    expand.addEventListener("click", function () {
      var open = sections.some(function (s) { return !detailsOf(s).open; });
      sections.forEach(function (s) { detailsOf(s).open = open; });
      expand.textContent = open ? "Hide all claims" : "Show all claims";
    });
    reset.addEventListener("click", function () {
      search.value = "";
      FILTERS.forEach(function (n) { if (selects[n]) selects[n].value = ""; });
      sortSelect.value = "";
      group.checked = true;
      apply({ collapse: true });
      expand.textContent = "Show all claims";
    });
    document.querySelectorAll("table.eit-summary a.eit-link").forEach(function (a) {
      var href = a.getAttribute("href") || "";
      if (href.charAt(0) !== "?") return;
      a.addEventListener("click", function (e) {
        e.preventDefault();
        fromAddress(href);
        apply();
        form.scrollIntoView({ block: "start" });
      });
    });
    window.addEventListener("hashchange", openTarget);
    fromAddress(location.search);
    apply({ keepAddress: true });
    openTarget();
  }

  /* Any page: once MathJax has typeset (which changes the heights above a target), scroll
   * to the address's target again, so that a link to a verdict lands on it. */
  function rescroll() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (target) target.scrollIntoView({ block: "start" });
  }

  /* Keep the target in view while the page settles (typeset math, figures, fonts change the
   * heights above it), for two seconds or until the reader scrolls. */
  function keepTarget() {
    rescroll();
    if (!window.ResizeObserver) return;
    var ro = new ResizeObserver(rescroll);
    var stop = function () { ro.disconnect(); };
    ro.observe(document.body);
    setTimeout(stop, 2000);
    ["wheel", "touchmove", "keydown"].forEach(function (ev) {
      window.addEventListener(ev, stop, { once: true, passive: true });
    });
  }

  function afterTypeset() {
    if (!location.hash) return;
    var tries = 0;
    (function wait() {
      if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
        MathJax.startup.promise.then(keepTarget);
      } else if (tries++ < 50) {
        setTimeout(wait, 100);
      }
    })();
  }

  /* A snippet is a window of the page's text: it may cut an inline formula in two. Drop the
     cut pieces (an opening \( with no closing \), a closing \) with no opening), so that no
     raw TeX is left for the reader. */
  function balanceMath(el) {
    var text = el.textContent, open = "\\(", close = "\\)";
    var first = text.indexOf(close), start = text.indexOf(open);
    if (first >= 0 && (start < 0 || first < start)) text = "…" + text.slice(first + 2);
    var last = text.lastIndexOf(open);
    if (last >= 0 && text.indexOf(close, last) < 0) text = text.slice(0, last) + "…";
    if (text !== el.textContent) el.textContent = text;
  }

  /* The search page fills #search-results after the page is typeset: typeset them too. */
  function typesetSearch() {
    var results = document.getElementById("search-results");
    if (!results || !window.MutationObserver) return;
    var pending = null;
    new MutationObserver(function () {
      if (pending) clearTimeout(pending);
      pending = setTimeout(function () {
        results.querySelectorAll("p.context").forEach(balanceMath);
        if (window.MathJax && MathJax.typesetPromise) {
          MathJax.startup.promise.then(function () { return MathJax.typesetPromise([results]); });
        }
      }, 200);
    }).observe(results, { childList: true, subtree: true });
  }

  /* A figure is a PNG at twice its intended size (eit.plotting.use_style): on a narrow screen
   * it shrinks with the column, and below MIN_SCALE of its intended size its text would be
   * too small to read. There it keeps that scale and scrolls sideways in its own box. */
  var MIN_SCALE = 0.6;

  function legible(img) {
    var intended = img.naturalWidth / 2;
    if (!intended) return;
    var box = img.parentElement;
    if (box.clientWidth < MIN_SCALE * intended) {
      img.style.minWidth = Math.round(MIN_SCALE * intended) + "px";
      box.classList.add("eit-figure-scroll");
    } else {
      img.style.minWidth = "";
      box.classList.remove("eit-figure-scroll");
    }
  }

  function legibleFigures() {
    document.querySelectorAll("div.cell_output img").forEach(function (img) {
      if (img.complete) legible(img);
      else img.addEventListener("load", function () { legible(img); });
    });
  }

  function start() {
    init();
    typesetSearch();
    legibleFigures();
    window.addEventListener("resize", legibleFigures);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
  window.addEventListener("load", afterTypeset);
})();
