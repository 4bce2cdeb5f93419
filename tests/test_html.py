"""Checks of the built HTML that ``-n -W`` does not make (issue 14).

The book is built once per session (:mod:`bookbuild`). The three content checks (unrendered
math, ragged tables, images without alt text) name each defect with its page and, for a
chapter, the line of its ``.md``: ``python tests/htmlcheck.py _build/html`` prints them all.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import htmlcheck
import pytest
import yaml
from bookbuild import book, html_of  # noqa: F401 (book: the session's build, a fixture)
from bs4 import BeautifulSoup

from eit.verdicts import ledger

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def html(book):  # noqa: F811
    return html_of(book)


def _in_toc() -> set[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    found = set()

    def walk(entries):
        for e in entries or []:
            found.add(e.get("file"))
            walk(e.get("sections"))
            walk(e.get("chapters"))

    walk(toc.get("parts"))
    return found


def _records() -> list[dict]:
    """The verdict records of the chapters the book renders (those in _toc.yml)."""
    return [r for r in ledger.verdicts() if r["chapter"] in _in_toc()]


def _report(defects) -> str:
    return f"{len(defects)} defects:\n" + "\n".join(f"  {d}" for d in defects)


def test_no_unrendered_math(html):
    """No `$`, `\\tag`, `\\begin`, `\\frac` (nor any TeX) outside math: MyST math that failed to
    parse (display math right after a text line, `+` starting a line inside `$...$`, `|` inside
    math in a table), or raw TeX in a link's text."""
    defects = htmlcheck.unrendered_math(html)
    assert not defects, _report(defects)


def test_results_write_formulas_as_math(html):
    """Verdicts, tables of results and figure captions write every formula as math (LaTeX in
    ``$...$``, typeset by MathJax), never as code or plain text: no ``**``, ``sqrt(``,
    ``||u||``, ``nu_2``, ``lambda`` outside math (issue 26 item 2: 149 of 346 verdict blocks
    did, e.g. ``norm_u/(sqrt(pi)*sqrt(m))``)."""
    defects = htmlcheck.code_math(html)
    assert not defects, _report(defects)


def test_the_formula_check_finds_each_kind_and_spares_math(tmp_path):
    bad = {"power": "x**2 and (1 + x)^2", "product": "2*n", "call": "sqrt(x + 1)",
           "norm": "||u||", "subscript": "at nu_2 = 1", "Greek name": "at lambda = 1",
           "expectation": "E[v] = 0", "fraction": "variance n/m"}
    good = ("fan-in/fan-out of a ReLU layer, 0/20000 = 0, theory 0.3305 \u00b1 0.001, "
            "E. coli, the E-step")
    blocks = [f"<div class='eit-verdict'>{t}</div>" for t in bad.values()]
    blocks.append("<div class='eit-verdict'>ok <span class='math notranslate nohighlight'>"
                  "\\(\\sqrt{n}\\|u\\|^2 \\lambda_1\\)</span> " + good + "</div>")
    (tmp_path / "page.html").write_text("<html><body>" + "".join(blocks) + "</body></html>")
    found = htmlcheck.code_math(tmp_path)
    kinds = sorted(d.what.split(" '")[0] for d in found)
    assert kinds == sorted(bad), [str(d) for d in found]


def test_table_rows_have_the_header_width(html):
    defects = htmlcheck.ragged_tables(html)
    assert not defects, _report(defects)


def test_images_have_alt_text(html):
    """A figure's alt text describes it (a hash path is not alt text): give the cell
    `mystnb: image: alt:` metadata (README, "Writing a chapter")."""
    defects = htmlcheck.images_without_alt(html)
    assert not defects, _report(defects)


@pytest.mark.parametrize("alt,src,bad", [
    (None, "a.png", True), ("", "a.png", True),
    ("../../_images/8f605f3a0ede338f2c4680ae065565e0e01.png", "x.png", True),
    ("8f605f3a0ede338f2c4680ae065565e0e0134c", "x.png", True),
    ("Mean squared length against depth for four widths", "x.png", False),
    ("Two panels: the ratio against 1/B and against depth", "x.png", False)])
def test_alt_text_rule(alt, src, bad):
    assert htmlcheck.bad_alt(alt, src) is bad


def _soup(path: Path) -> BeautifulSoup:
    return htmlcheck.soup_of(path)


def test_ledger_page(html):
    """One section per paper with a real heading, one row per record linking to the
    verdict's own anchor in its chapter (which carries that id), the JSON export linked."""
    records = _records()
    soup = _soup(html / "ledger.html")
    sections = soup.select("section.eit-paper")
    assert len(sections) == len({r["paper"] for r in records})
    assert all(s.find(["h2", "h3"], recursive=False) for s in sections)
    rows = soup.select("table.eit-ledger tr.eit-row")
    assert len(rows) == len(records)
    targets: dict[str, set[str]] = {}
    for row in rows:
        link = row.select_one("td.eit-c-claim a")
        assert link is not None, row
        page, _, anchor = link["href"].partition("#")
        assert re.fullmatch(r"v-[0-9a-f]{10}", anchor), link["href"]
        targets.setdefault(page, set()).add(anchor)
    for page, anchors in targets.items():
        ids = {e.get("id") for e in _soup(html / page).select("div.eit-verdict")}
        assert anchors <= ids, f"{page}: no verdict block with id {sorted(anchors - ids)}"
    export = soup.find("a", href="ledger.json")
    assert export is not None
    data = json.loads((html / "ledger.json").read_text())
    assert len(data["verdicts"]) == len(records)
    # the summary table counts paper x outcome x scope, consistency checks apart
    summary = soup.select_one("table.eit-summary")
    heads = [th.get_text(" ", strip=True) for th in summary.select("thead th")]
    assert heads[:2] == ["Paper", "Scope"] and "consistency" in heads
    total = summary.select("tr.eit-total td")
    assert int(total[-1].get_text(strip=True)) == len(records)


def test_ledger_values_render_sympy_text_as_math(html):
    """A theory or measured value that holds a formula (LaTeX in dollars, as ``exact()``
    writes it, or SymPy's text form in older records) is typeset, not shown as code."""
    sys.path.insert(0, str(ROOT / "_ext"))
    from eit_tex import sympy_text_to_tex

    expected = sum(1 for r in _records() for k in ("theory", "measured")
                   if r[k] and (re.search(r"\$[^$]+\$", r[k])
                                or sympy_text_to_tex(r[k]) is not None))
    soup = _soup(html / "ledger.html")
    typeset = [v for v in soup.select("span.eit-value")
               if v.strong and v.strong.get_text(strip=True) in ("theory", "measured")
               and v.select_one("span.math")]
    assert expected > 20 and len(typeset) >= expected, (expected, len(typeset))
    raw = [v.get_text() for v in soup.select("span.eit-value")
           if re.search(r"\bprinted [\w()]+\*\*?\w", v.get_text())]
    assert not raw, raw[:3]


def test_status_page_is_grouped_by_part(html):
    soup = _soup(html / "status.html")
    headings = [h.get_text(" ", strip=True).rstrip("#").strip()
                for h in soup.select("section section > h2")]
    assert any(h.startswith("Part I:") for h in headings), headings
    assert len(soup.select("table.eit-status")) == len(headings)
    text = soup.get_text(" ")
    assert "Versions (where they differ)" not in text
    rows = soup.select("table.eit-status tbody tr")
    toc = _in_toc()
    assert len(rows) == len([p for p in ledger.chapter_notebooks()
                             if p.relative_to(ROOT).with_suffix("").as_posix() in toc])
    assert all(re.search(r"\d+ confirmed|no tested claims|\d+ \w+", r.get_text(" "))
               for r in rows)


def test_page_titles_have_no_tex(html):
    """The browser tab, the print header and the search index show math as text."""
    for page in htmlcheck.pages(html):
        text = page.read_text()
        m = re.search(r"<title>(.*?)</title>", text, re.S)
        if m:  # (index.html is a redirect, without a title)
            assert "\\" not in m.group(1) and "$" not in m.group(1), (page, m.group(1))
        for h1 in re.findall(r'<div id="jb-print-docs-body"[^>]*>\s*<h1>(.*?)</h1>', text):
            assert "\\" not in h1, (page, h1)
    index = (html / "searchindex.js").read_text()
    payload = json.loads(index[index.index("(") + 1:index.rindex(")")])
    for title in [*payload["titles"], *payload["alltitles"]]:
        assert "\\" not in title and "$" not in title, title


def test_theorem_titles_do_not_repeat_their_kind(html):
    for page in (html / "chapters").rglob("*.html"):
        m = re.search(r'<span class="caption-number">(\w+) </span> \(\1 ', page.read_text())
        assert m is None, f"{page.name}: {m.group(0)}"


def test_front_page(html):
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    text = (html / "index.html").read_text() + (html / "intro.html").read_text()
    assert "&lt;this repository&gt;" not in text and "<this repository>" not in text
    assert config["repository"]["url"] in text
    assert 'href="prf-prf.html"' in (html / "intro.html").read_text()


def test_bibliography_links_papers(html):
    text = (html / "references.html").read_text()
    for arxiv in ("1901.03611", "1803.01719", "1906.02341", "2310.02012", "1611.04231"):
        assert f"arxiv.org/abs/{arxiv}" in text, arxiv
    assert "doi.org/" in text


def test_mathjax_is_served_by_the_book(html):
    for page in htmlcheck.pages(html):
        for src in re.findall(r'<script[^>]*src="([^"]*tex-[^"]*)"', page.read_text()):
            assert "://" not in src, (page, src)
            assert (page.parent / src.split("?")[0]).resolve().exists(), (page, src)


def test_nav_does_not_repeat_part_captions(html):
    """A part's caption is not repeated as the title of its first entry."""
    soup = _soup(html / "intro.html")
    nav = soup.select_one("nav.bd-docs-nav") or soup
    for caption in nav.select("p.caption"):
        first = caption.find_next("li")
        assert first is not None
        assert first.get_text(" ", strip=True) != caption.get_text(" ", strip=True), caption


def test_parts_are_named_one_way(html):
    """The ledger and status pages name each paper by its part's caption in _toc.yml."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    captions = {p["caption"] for p in toc["parts"] if p["caption"].startswith("Part ")}
    for page in ("ledger.html", "status.html"):
        soup = _soup(html / page)
        heads = {h.get_text(" ", strip=True).rstrip("#").strip()
                 for h in soup.select("section section > h2")}
        assert captions <= heads, (page, captions - heads)


def test_downloaded_notebooks_say_how_to_get_eit(html):
    notebooks = sorted((html / "_sources" / "chapters").rglob("*.ipynb"))
    assert notebooks
    for path in notebooks:
        nb = json.loads(path.read_text())
        first, second = nb["cells"][:2]
        assert first["cell_type"] == "markdown" and "`eit`" in "".join(first["source"])
        code = "".join(second["source"])
        assert second["cell_type"] == "code" and "%pip install" in code
        assert 'find_spec("eit") is None' in code
        assert "download.pytorch.org/whl/cpu" in code


def test_api_reference_documents_every_public_name(html):
    """Issue 26 item 1: the page showed 102 raw ``.. automodule::`` lines and no object."""
    import importlib
    import inspect
    import pkgutil
    import sys

    import eit
    sys_path = str(ROOT / "_ext")
    if sys_path not in sys.path:
        sys.path.insert(0, sys_path)
    from eit_api import own_names

    soup = BeautifulSoup((html / "api.html").read_text(), "html.parser")
    text = soup.get_text()
    assert "automodule" not in text and "^^^^" not in text
    documented = {dt.get("id") for dt in soup.select("dl.py > dt[id]")}
    expected = set()
    for info in pkgutil.walk_packages(eit.__path__, "eit."):
        if info.name.rpartition(".")[2].startswith("_") or info.ispkg:
            continue
        module = importlib.import_module(info.name)
        expected |= {f"{info.name}.{name}" for name in own_names(module)
                     if inspect.isfunction(getattr(module, name))
                     or inspect.isclass(getattr(module, name))}   # not constants, aliases
    missing = sorted(expected - documented)
    assert len(expected) > 200 and not missing, _report(missing[:40])
    # the reader's entry points are there, with their docstring's summary
    for name in ("eit.sample.mlps.relu_mlp", "eit.verdicts.checks.agree",
                 "eit.core.scaling.rescaled"):
        assert name in documented
        summary = soup.find("dt", id=name).find_next_sibling("dd").get_text()
        assert len(summary.split()) > 5, name


# --- issue 26, items 4, 8 and 10 -------------------------------------------------------------

def test_ledger_rows_are_anchored_and_searchable(html):
    """Each row of the ledger carries its record's id (``ledger.html#v-...`` names it) and a
    link to itself; the controls hold a search box (its script: tests/test_browser.py)."""
    records = _records()
    soup = _soup(html / "ledger.html")
    rows = soup.select("table.eit-ledger tr.eit-row")
    assert sorted(r.get("id", "") for r in rows) == sorted(r["id"] for r in records)
    for row in rows:
        own = row.select_one("a.eit-row-link")
        assert own is not None and own["href"] == f"#{row['id']}", row.get("id")
    assert soup.select_one("form.eit-ledger-controls input[type=search][data-search]")


def _prf_blocks() -> dict[str, tuple[str, str]]:
    """label -> (kind, title) of every labelled theorem block of the chapters the book
    renders, read from their notebooks (what the proof index must name)."""
    block = re.compile(r"```\{prf:(\w+)\}[ \t]*([^\n]*)\n:label:[ \t]*(\S+)")
    found = {}
    for path in ledger.chapter_notebooks():
        if path.relative_to(ROOT).with_suffix("").as_posix() not in _in_toc():
            continue
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "markdown":
                for kind, title, label in block.findall("".join(cell["source"])):
                    found[label] = (kind, title.strip())
    return found


def test_proof_index_names_blocks_by_their_titles(html):
    """The proof index (``prf-prf.html``) lists each theorem block by its title, e.g.
    "Theorem 3, eqs. (16)-(17) (...) (Arpit & Bengio 2019)", with its chapter's title: not
    by its label and file path (issue 26 item 8)."""
    blocks = _prf_blocks()
    soup = _soup(html / "prf-prf.html")
    entries = {}
    for a in soup.select("table.modindextable a[href]"):
        page, _, label = a["href"].partition("#")
        entries[label] = (page, " ".join(a.get_text(" ").split()),
                          " ".join(a.parent.get_text(" ").split()))
    assert len(blocks) > 80 and set(blocks) <= set(entries), sorted(set(blocks) - set(entries))
    for label, (kind, title) in blocks.items():
        page, name, line = entries[label]
        assert name != label and "chapters/" not in line, (label, line)
        before_math = title.split("$")[0].strip()   # (math shows as Unicode text)
        assert name.startswith(before_math or kind.title()), (label, name)
    # the paper is named where the title does not name it
    assert entries["ab19-theorem-3"][1] == ("Theorem 3, eqs. (16)-(17) (Theorem 6: the same for "
                                            "the masked layer) (Arpit & Bengio 2019)")
    assert entries["ab19-lemma-1"][1] == "Lemma 1 of Arpit & Bengio (2019)"
    # grouped by part, in the book's order
    groups = [s.get_text(strip=True) for s in soup.select(".modindex-jumpbox strong")]
    assert groups[:5] == ["I", "II", "III", "IV", "V"], groups


def test_front_page_summarizes_the_results(html):
    """The front page counts the records by part and outcome (counted at build time) and
    links to every refuted and every corrected claim's verdict (issue 26 item 10)."""
    records = _records()
    soup = _soup(html / "intro.html")
    results = soup.select_one("table.eit-results")
    assert results is not None
    heads = [th.get_text(" ", strip=True) for th in results.select("thead th")]
    total = [td.get_text(strip=True) for td in results.select("tr.eit-total td")]
    summary = ledger.summary(records)
    expected = {"confirmed": summary["outcomes"]["confirmed"],
                "corrected": summary["outcomes"]["confirmed with a correction"],
                "refuted": summary["outcomes"]["refuted"],
                "consistency": summary["consistency"], "all": len(records)}
    for head, n in expected.items():
        assert int(total[heads.index(head)]) == n, (head, total)
    parts = len({r["paper"] for r in records})
    assert len(results.select("tbody tr")) == parts + 1
    for a in results.select("a.eit-link"):
        assert a["href"].startswith("ledger.html"), a["href"]
    linked = {a["href"].partition("#")[2] for a in soup.select("article a[href*='#v-']")}
    wanted = {r["id"] for r in records
              if r["outcome"] in ("refuted", "confirmed with a correction")}
    assert len(wanted) > 20 and wanted <= linked, sorted(wanted - linked)[:5]


def test_chapters_show_their_execution_status(html):
    """Under its title each chapter says how its outputs were produced, from its notebook's
    ``metadata.eit``: date, device, scale, wall time (issue 26 item 10)."""
    checked = 0
    for path in ledger.chapter_notebooks():
        doc = path.relative_to(ROOT).with_suffix("").as_posix()
        meta = json.loads(path.read_text())["metadata"].get("eit")
        if doc not in _in_toc() or not meta:
            continue
        soup = _soup(html / f"{doc}.html")
        line = soup.select_one("p.eit-chapter-status")
        assert line is not None, doc
        assert line.find_previous_sibling().name == "h1", doc
        text = " ".join(line.get_text(" ").split())
        for value in (meta["executed"], meta["device"], meta["scale"],
                      f"{float(meta['wall_time_s']):.0f} s"):
            assert value in text, (doc, value, text)
        checked += 1
    assert checked > 30
