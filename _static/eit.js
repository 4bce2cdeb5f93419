/* The book's small scripts (vanilla JS, loaded on every page by Jupyter Book):
 * - the claims ledger: filter, sort, group, expand (without it the page still shows every
 *   section; each paper's table opens with a click);
 * - a link to an anchor lands on it after MathJax has typeset the page;
 * - search results typeset their math (titles and snippets hold it).
 *
 * Rows carry their data as classes written by _ext/eit_pages.py:
 *   eit-p-<paper> eit-o-<outcome> eit-s-<scope> eit-k-<kind> eit-n-<part number>
 * The state is kept in the address (?paper=...&outcome=...&scope=...&kind=...&sort=...&flat=1),
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
    });
    var selects = {};
    FILTERS.forEach(function (name) {
      selects[name] = form.querySelector('select[data-filter="' + name + '"]');
    });
    var sortSelect = form.querySelector("select[data-sort]");
    var group = form.querySelector("input[data-group]");
    var expand = form.querySelector("button[data-expand]");
    var reset = form.querySelector("button[data-reset]");
    var count = form.querySelector(".eit-ledger-count");
    var flatBox = document.getElementById("eit-ledger-flat");
    var flatBody = null;

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

    function sortBody(body, by) {
      var list = Array.prototype.slice.call(body.querySelectorAll(":scope > tr.eit-row"));
      list.sort(function (x, y) { return compare(key(x, by), key(y, by)); });
      list.forEach(function (row) { body.appendChild(row); });
    }

    function setFlat(flat) {
      if (flat && !flatBody) {
        var first = document.querySelector("table.eit-ledger");
        var tableEl = first.cloneNode(false);
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
      } else if (!flat && flatBody) {
        rows.forEach(function (row) { home.get(row).appendChild(row); });
        flatBox.innerHTML = "";
        flatBox.classList.remove("eit-flat");
        flatBody = null;
        sections.forEach(function (s) { s.classList.remove("eit-hidden"); });
      }
    }

    function apply(opts) {
      opts = opts || {};
      var f = filters();
      var active = FILTERS.some(function (n) { return f[n]; });
      var shown = 0;
      rows.forEach(function (row) {
        var ok = FILTERS.every(function (n) { return !f[n] || row.dataset[n] === f[n]; });
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
      document.querySelectorAll("table.eit-ledger th").forEach(function (th) {
        var name = HEADER_SORT[th.dataset.label];
        if (name) th.setAttribute("aria-sort", name === (by || (flatBody ? "paper" : ""))
          ? "ascending" : "none");
      });
      count.value = shown + " of " + rows.length + " claims shown";
      if (!opts.keepAddress) {
        var params = new URLSearchParams();
        FILTERS.forEach(function (n) { if (f[n]) params.set(n, f[n]); });
        if (by) params.set("sort", by);
        if (!group.checked) params.set("flat", "1");
        var query = params.toString();
        history.replaceState(null, "", location.pathname + (query ? "?" + query : "") +
          location.hash);
      }
    }

    function fromAddress(search) {
      var params = new URLSearchParams(search);
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

    function openTarget() {
      var id = decodeURIComponent(location.hash.slice(1));
      var target = id && document.getElementById(id);
      if (!target) return;
      var section = target.closest ? target.closest("section.eit-paper") : null;
      if (section) {
        var d = detailsOf(section);
        if (d) d.open = true;
      }
    }

    document.querySelectorAll("table.eit-ledger").forEach(headerButtons);
    form.addEventListener("change", function () { apply(); });
    form.addEventListener("submit", function (e) { e.preventDefault(); });
    expand.addEventListener("click", function () {
      var open = sections.some(function (s) { return !detailsOf(s).open; });
      sections.forEach(function (s) { detailsOf(s).open = open; });
      expand.textContent = open ? "Hide all claims" : "Show all claims";
    });
    reset.addEventListener("click", function () {
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

  function start() {
    init();
    typesetSearch();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
  window.addEventListener("load", afterTypeset);
})();
