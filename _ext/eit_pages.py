"""Sphinx extension of the book: the generated pages, and build-time fixes of the HTML.

Directives:

* ``{claims-ledger}``: every verdict recorded by the executed chapters: a summary table of
  counts (paper x outcome x scope, consistency checks apart), controls to filter and sort
  (``_static/eit.js``: by paper, outcome, scope, kind and text, a number of rows per part at a
  time), then one section per paper with a table of its claims, each row anchored by its
  record's id (``ledger.html#v-...``) and linking to the verdict's own anchor in its chapter.
  The JSON export is written next to the page (``ledger.json``).
* ``{results-summary}``: the front page's results: counts by part and outcome (each a link to
  the ledger's view of those claims), then links to every refuted and every corrected claim.
* ``{chapter-status}``: how the committed outputs of each chapter were produced, grouped by
  part, with the chapter's verdict counts; before them, the latest report of
  ``./book gpu-check`` (``data/gpu/report.json``), or a line saying there is none.
* ``{verdict-summary}``: one line of counts for the part whose overview holds it.
* ``{verdict-table}``: the outcome x scope table of counts of a part (its overview), with the
  confirmations split by kind.

Every chapter notebook gets, under its title, how its outputs were produced (device, scale,
date, wall time, versions), from its ``metadata.eit`` (:func:`add_chapter_status`).

Role ``{outcome}``: the outcome of one record, written where prose states it (an overview's
status cell): ``{outcome}`06-activation-shaping: Figure 5``` renders "confirmed · substitute ·
test" from the record, linked to it; a statement that prose makes about a record therefore
cannot go stale (:func:`resolve_outcome`).

All read the committed notebooks through :mod:`eit.verdicts.ledger` at build time, so the pages
cannot drift from what the tests verified. The fixes applied to every page are in
:mod:`eit_build`.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from pathlib import Path

import eit_build
import yaml
from docutils import nodes
from docutils.parsers.rst import directives
from eit_tex import sympy_text_to_tex
from sphinx.util.docutils import SphinxDirective

from eit.verdicts import ledger
from eit.verdicts.records import CONSISTENCY, OUTCOMES, SCOPES

ROMAN = ["", "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X"]
OUTCOME_SHORT = {"confirmed": "confirmed", "confirmed with a correction": "corrected",
                 "refuted": "refuted", "inconclusive": "inconclusive",
                 "not reproduced on the substitute": "not reproduced"}
SCOPE_TEXT = {"paper": "the paper's claim", "substitute": "on a substitute setting",
              "extension": "the book's extension"}


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# --- nodes -----------------------------------------------------------------------------------

class eit_link(nodes.General, nodes.Inline, nodes.Element):  # noqa: N801 (docutils style)
    """A link resolved after reading: to ``docname#anchor`` or to a file of the built site."""


class details(nodes.General, nodes.Element):  # noqa: N801
    """``<details>``: a block the reader opens."""


class summary(nodes.General, nodes.TextElement):  # noqa: N801
    """``<summary>``: the always-visible line of a :class:`details`."""


def _visit_details(self, node):
    attrs = {"open": "open"} if node.get("open") else {}
    self.body.append(self.starttag(node, "details", "", **attrs))


def _depart_details(self, node):
    self.body.append("</details>\n")


def _visit_summary(self, node):
    self.body.append(self.starttag(node, "summary", ""))


def _depart_summary(self, node):
    self.body.append("</summary>\n")


def _skip(self, node):
    raise nodes.SkipNode


def link(children: list[nodes.Node], *, docname: str = "", anchor: str = "",
         path: str = "") -> eit_link:
    return eit_link("", *children, docname=docname, anchor=anchor, path=path)


# --- helpers ---------------------------------------------------------------------------------

def with_math(text: str) -> list[nodes.Node]:
    """Text whose ``$...$`` segments become inline math nodes (titles and claims carry math)."""
    parts = text.split("$")
    if len(parts) % 2 == 0:  # unbalanced dollars: leave the text alone
        return [nodes.Text(text)]
    return [nodes.math(p, p) if i % 2 else nodes.Text(p) for i, p in enumerate(parts) if p]


def value_nodes(text: str) -> list[nodes.Node]:
    """A theory or measured value: SymPy text typeset as math, anything else as text."""
    tex = sympy_text_to_tex(text)
    if tex is None:
        return with_math(text)
    label, formula = tex
    return ([nodes.Text(label + " ")] if label else []) + [nodes.math(formula, formula)]


def toc_parts(srcdir: str | Path) -> list[dict]:
    """The parts of ``_toc.yml``: caption, number (0 for the unnumbered first part), files."""
    toc = yaml.safe_load((Path(srcdir) / "_toc.yml").read_text())
    parts = []
    for part in toc.get("parts", []):
        files: list[str] = []

        def walk(entries, files=files):
            for e in entries or []:
                if "file" in e:
                    files.append(e["file"])
                walk(e.get("sections"))

        walk(part.get("chapters"))
        caption = part.get("caption", "")
        m = re.match(r"Part ([IVX]+)\b", caption)
        number = ROMAN.index(m.group(1)) if m else 0
        overview = next((f for f in files if f.endswith("/overview")), "")
        parts.append({"caption": caption, "number": number, "files": files,
                      "overview": overview})
    return parts


def part_of(docname: str, parts: list[dict]) -> dict:
    for part in parts:
        if docname in part["files"]:
            return part
    return {"caption": "Other", "number": 99, "files": [], "overview": ""}


def paper_title(part: dict) -> str:
    return "This book's own claims" if part["number"] == 0 else part["caption"]


def table(headers: list[str], rows: list[list], *, classes: list[str],
          row_classes: list[list[str]] | None = None,
          col_classes: list[str] | None = None,
          row_ids: list[str] | None = None) -> nodes.table:
    """A docutils table; a cell is a string, a node or a list of nodes; ``row_ids`` are the
    anchors of the body rows."""
    tab = nodes.table(classes=classes)
    group = nodes.tgroup(cols=len(headers))
    tab += group
    group.extend(nodes.colspec(colwidth=1) for _ in headers)
    col_classes = col_classes or [""] * len(headers)
    head = nodes.thead()
    row = nodes.row()
    for h, c in zip(headers, col_classes):
        row += nodes.entry("", nodes.paragraph("", "", *with_math(h)),
                           classes=[c] if c else [])
    head += row
    group += head
    body = nodes.tbody()
    for i, cells in enumerate(rows):
        row = nodes.row(classes=row_classes[i] if row_classes else [],
                        ids=[row_ids[i]] if row_ids else [])
        for cell, c in zip(cells, col_classes):
            para = nodes.paragraph()
            if isinstance(cell, str):
                para += nodes.Text(cell)
            elif isinstance(cell, nodes.Node):
                para += cell
            else:
                para.extend(cell)
            row += nodes.entry("", para, classes=[c] if c else [])
        body += row
    group += body
    return tab


def counts_text(s: dict) -> str:
    """'12 confirmed, 3 corrected, 1 refuted; 4 consistency checks' (zeros left out)."""
    parts = [f"{n} {OUTCOME_SHORT[o]}" for o, n in s["outcomes"].items() if n]
    text = ", ".join(parts) if parts else "no tested claims"
    if s["consistency"]:
        text += f"; {s['consistency']} consistency check" + ("s" if s["consistency"] > 1 else "")
    return text


def built(env, rows: list[dict]) -> list[dict]:
    """The rows (records or status) of the chapters this build renders (those in _toc.yml)."""
    return [r for r in rows if r["chapter"] in env.found_docs]


def _query(**kw: str) -> str:
    return "?" + "&".join(f"{k}={v}" for k, v in kw.items() if v)


# --- the ledger ------------------------------------------------------------------------------

def stability_nodes(records: list[dict]) -> nodes.Node:
    """How many statistical records are stable (a re-run agrees with probability >= 0.99,
    :mod:`eit.verdicts.stability`), and a link to each unstable one."""
    assessed = [r for r in records if r.get("stability")]
    unstable = [r for r in assessed if not r["stability"]["stable"]]
    para = nodes.paragraph(classes=["eit-stability"])
    para += nodes.strong(text="Stability: ")
    para += nodes.Text(f"{len(assessed) - len(unstable)} of {len(assessed)} statistical "
                       "records are stable (an independent re-run gives the same outcome with "
                       "probability at least 0.99, from each record's distance to the "
                       "thresholds of its criterion; see the design notes).")
    if unstable:
        para += nodes.Text(f" Unstable ({len(unstable)}, to be given more samples or a "
                           "pre-registered margin): ")
        for i, r in enumerate(unstable):
            if i:
                para += nodes.Text("; ")
            para += link(with_math(f"{r['claim']}"), docname=r["chapter"], anchor=r["id"])
            para += nodes.Text(f" (re-run agreement {r['stability']['probability']:.2f})")
        para += nodes.Text(".")
    return para


def ledger_records(env) -> tuple[list[dict], dict[str, dict], list[str]]:
    """The verdict records of the chapters built, each with its part (``_part``); the part of
    each paper (by bibliography key); the papers in the order of their parts. The page that
    asks is rebuilt when a chapter's notebook or ``_toc.yml`` changes."""
    for path in ledger.chapter_notebooks():
        env.note_dependency(str(path))
    env.note_dependency(str(Path(env.srcdir) / "_toc.yml"))
    parts = toc_parts(env.srcdir)
    records = built(env, ledger.verdicts())
    papers: dict[str, dict] = {}
    for r in records:
        r["_part"] = part_of(r["chapter"], parts)
        papers.setdefault(r["paper"], r["_part"])
    order = sorted(papers, key=lambda k: (papers[k]["number"] or 99, k))
    return records, papers, order


def count_cells(group: list[dict], *, paper: str = "", scope: str = "",
                base: str = "") -> list:
    """The counts of ``group`` by outcome, then its consistency checks and its total, each
    (where not zero) a link to the ledger's view of those claims: ``base`` is "" on the ledger
    itself (its script shows the view in place), ``ledger.html`` elsewhere."""
    s = ledger.summary(group)
    key = slug(paper) if paper else ""

    def cell(n: int, **query: str):
        return link([nodes.Text(str(n))], path=base + _query(**query)) if n else "0"

    cells: list = [cell(s["outcomes"][o], paper=key, outcome=slug(o), scope=scope)
                   for o in OUTCOMES]
    cells.append(cell(s["consistency"], paper=key, kind="consistency", scope=scope))
    cells.append(link([nodes.Text(str(s["total"]))],
                      path=base + (_query(paper=key, scope=scope) if key or scope
                                   else "?all=1")))
    return cells


class ClaimsLedger(SphinxDirective):
    """Every claim of the book with its verdict, filterable, one section per paper."""

    def run(self) -> list[nodes.Node]:
        records, papers, order = ledger_records(self.env)
        out: list[nodes.Node] = []

        total = ledger.summary(records)
        intro = nodes.paragraph()
        intro += nodes.Text(f"{len(records)} records from "
                            f"{len({r['chapter'] for r in records})} chapters: "
                            f"{counts_text(total)}. ")
        intro += link([nodes.Text("Download the ledger as JSON")], path="ledger.json")
        intro += nodes.Text(" (the same export as ")
        intro += nodes.literal(text="./book ledger")
        intro += nodes.Text("). Theorem blocks of all chapters are listed in the ")
        intro += link([nodes.Text("proof index")], path="prf-prf.html")
        intro += nodes.Text(".")
        out.append(intro)
        out.append(stability_nodes(records))
        out.append(self._summary(records, papers, order))
        out.append(nodes.raw("", self._controls(papers, order), format="html"))
        out.append(nodes.raw("", '<div id="eit-ledger-flat"></div>', format="html"))
        for key in order:
            out.append(self._section(key, papers[key],
                                     [r for r in records if r["paper"] == key]))
        return out

    def _summary(self, records, papers, order) -> nodes.Node:
        headers = ["Paper", "Scope", *(OUTCOME_SHORT[o] for o in OUTCOMES), "consistency",
                   "all"]
        rows, classes = [], []

        def count_row(label, key, scope, group):
            return [label, scope or "all", *count_cells(group, paper=key, scope=scope)]

        for key in order:
            group = [r for r in records if r["paper"] == key]
            scopes = [s for s in SCOPES if any(r["scope"] == s for r in group)]
            for i, scope in enumerate(scopes):
                label = (link(with_math(paper_title(papers[key])), docname=self.env.docname,
                              anchor=f"ledger-{slug(key)}") if i == 0 else "")
                rows.append(count_row(label, key, scope, [r for r in group
                                                          if r["scope"] == scope]))
                classes.append(["eit-first"] if i == 0 else [])
        rows.append(count_row("All papers", "", "", records))
        classes.append(["eit-first", "eit-total"])
        col = ["eit-c-paper", "eit-c-scope"] + ["eit-c-n"] * (len(OUTCOMES) + 2)
        return table(headers, rows, classes=["eit-summary"], row_classes=classes,
                     col_classes=col)

    def _controls(self, papers, order) -> str:
        def select(name, label, options):
            opts = "".join(f'<option value="{html.escape(v)}">{html.escape(t)}</option>'
                           for v, t in options)
            return (f'<label>{label} <select data-filter="{name}">'
                    f'<option value="">all</option>{opts}</select></label>')

        paper_opts = [(slug(key), paper_title(papers[key])) for key in order]
        return (
            '<form class="eit-ledger-controls" aria-label="Filter and sort the claims">'
            + '<label>Search <input type="search" data-search placeholder="words of a claim"'
              ' aria-label="Show the claims whose row holds all these words"></label>'
            + select("paper", "Paper", paper_opts)
            + select("outcome", "Outcome", [(slug(o), o) for o in OUTCOMES])
            + select("scope", "Scope", [(s, SCOPE_TEXT[s]) for s in SCOPES])
            + select("kind", "Kind", [("test", "statistical test"), ("exact", "exact"),
                                      ("consistency", "consistency check")])
            + '<label>Sort by <select data-sort><option value="">paper and chapter</option>'
              '<option value="outcome">outcome</option><option value="scope">scope</option>'
              '<option value="claim">claim</option></select></label>'
            + '<label><input type="checkbox" data-group checked> grouped by paper</label>'
            + '<button type="button" data-expand>Show all claims</button>'
            + '<button type="button" data-reset>Reset</button>'
            + '<output class="eit-ledger-count" aria-live="polite"></output></form>')

    def _section(self, key: str, part: dict, group: list[dict]) -> nodes.section:
        title = paper_title(part)
        sid = f"ledger-{slug(key)}"
        sec = nodes.section(ids=[sid], names=[nodes.fully_normalize_name(title)],
                            classes=["eit-paper", f"eit-p-{slug(key)}"])
        sec += nodes.title(title, "", *with_math(title))
        para = nodes.paragraph()
        para += nodes.Text(f"{len(group)} records: {counts_text(ledger.summary(group))}.")
        if part["overview"]:
            para += nodes.Text(" ")
            para += link([nodes.Text("The part's overview")], docname=part["overview"])
            para += nodes.Text(".")
        sec += para
        box = details(classes=["eit-claims"])
        box += summary("", f"Show its {len(group)} claims")
        headers = ["Part", "Claim", "Statement", "Outcome", "Scope", "Theory and measurement"]
        cols = ["eit-c-part", "eit-c-claim", "eit-c-statement", "eit-c-outcome",
                "eit-c-scope", "eit-c-values"]
        rows, classes = [], []
        for r in group:
            rows.append([self._part_cell(part), self._claim_cell(r),
                         with_math(r["statement"]), r["outcome"], self._scope_cell(r),
                         self._values_cell(r)])
            classes.append(["eit-row", f"eit-o-{slug(r['outcome'])}", f"eit-s-{r['scope']}",
                            f"eit-k-{r['kind']}", f"eit-p-{slug(key)}",
                            f"eit-n-{part['number'] or 99}"])
        box += table(headers, rows, classes=["eit-ledger"], row_classes=classes,
                     col_classes=cols, row_ids=[r["id"] for r in group])
        sec += box
        return sec

    @staticmethod
    def _part_cell(part: dict) -> nodes.Node:
        return nodes.abbreviation(ROMAN[part["number"]] or "-", ROMAN[part["number"]] or "-",
                                  explanation=paper_title(part))

    @staticmethod
    def _claim_cell(r: dict) -> list[nodes.Node]:
        """The claim, linking to its verdict; its chapter; a link to this row (its anchor)."""
        short = re.sub(r"\s*\([^()]*\)\s*$", "", r["chapter_title"]) or r["chapter_title"]
        here = nodes.reference("", "#", refuri=f"#{r['id']}", classes=["eit-row-link"],
                               reftitle=f"Link to this claim in the ledger ({r['id']})")
        return [link(with_math(r["claim"]), docname=r["chapter"], anchor=r["id"]),
                nodes.inline("", "", nodes.Text("in "), *with_math(short), nodes.Text(" "),
                             here, classes=["eit-chapter"])]

    @staticmethod
    def _scope_cell(r: dict) -> list[nodes.Node]:
        cell: list[nodes.Node] = [nodes.Text(r["scope"])]
        if r["kind"] == CONSISTENCY:
            cell.append(nodes.inline("", "consistency check", classes=["eit-badge"]))
        return cell

    @staticmethod
    def _values_cell(r: dict) -> list[nodes.Node]:
        cell: list[nodes.Node] = []
        for name in ("theory", "measured", "correction", "evidence"):
            text = r.get(name, "")
            if text:
                line = nodes.inline(classes=["eit-value"])
                line += nodes.strong(text=name + " ")
                line.extend(value_nodes(text) if name in ("theory", "measured")
                            else with_math(text))
                cell.append(line)
        return cell


# --- the front page's results ----------------------------------------------------------------

def claim_links(group: list[dict]) -> list[nodes.Node]:
    """'claim A; claim B (2, 3); ...': each claim once, linking to its first verdict, the
    further verdicts of the same claim as numbered links."""
    by_claim: dict[str, list[dict]] = {}
    for r in group:
        by_claim.setdefault(r["claim"], []).append(r)
    out: list[nodes.Node] = []
    for i, (claim, same) in enumerate(by_claim.items()):
        if i:
            out.append(nodes.Text("; "))
        out.append(link(with_math(claim), docname=same[0]["chapter"], anchor=same[0]["id"]))
        if len(same) > 1:
            out.append(nodes.Text(" ("))
            for k, r in enumerate(same[1:], 2):
                if k > 2:
                    out.append(nodes.Text(", "))
                out.append(link([nodes.Text(str(k))], docname=r["chapter"], anchor=r["id"]))
            out.append(nodes.Text(")"))
    return out


class ResultsSummary(SphinxDirective):
    """The book's results for its front page, counted from the verdict records when the book
    is built: a sentence of totals, the counts by part and outcome (each a link to the
    ledger's view of those claims), then every refuted claim, and every claim confirmed with a
    correction, by part, each linking to its verdict in its chapter."""

    def run(self) -> list[nodes.Node]:
        records, papers, order = ledger_records(self.env)
        if not records:
            return [nodes.paragraph(text="No verdicts are recorded yet.")]
        chapters = len({r["chapter"] for r in records})
        intro = nodes.paragraph(classes=["eit-results-total"])
        intro += nodes.Text(f"{len(records)} verdict records from {chapters} chapters, counted "
                            f"when this page was built: {counts_text(ledger.summary(records))}"
                            " (consistency checks, identities true by construction or bounds "
                            "that cannot fail at the tested setting, are counted apart, never "
                            "as confirmations). Each count opens those claims in the ")
        intro += link([nodes.Text("claims ledger")], docname="ledger")
        intro += nodes.Text(".")
        out: list[nodes.Node] = [intro, self._table(records, papers, order)]
        out.extend(self._refuted(records, papers, order))
        out.extend(self._corrected(records, papers, order))
        return out

    @staticmethod
    def _table(records, papers, order) -> nodes.table:
        headers = ["Part", *(OUTCOME_SHORT[o] for o in OUTCOMES), "consistency", "all"]
        rows, classes = [], []
        for key in order:
            label = link(with_math(paper_title(papers[key])), docname="ledger",
                         anchor=f"ledger-{slug(key)}")
            group = [r for r in records if r["paper"] == key]
            rows.append([label, *count_cells(group, paper=key, base="ledger.html")])
            classes.append([])
        rows.append(["All parts", *count_cells(records, base="ledger.html")])
        classes.append(["eit-total"])
        cols = ["eit-c-paper"] + ["eit-c-n"] * (len(OUTCOMES) + 2)
        return table(headers, rows, classes=["eit-results"], row_classes=classes,
                     col_classes=cols)

    @staticmethod
    def _refuted(records, papers, order) -> list[nodes.Node]:
        refuted = [r for r in records if r["outcome"] == "refuted"]
        lead = nodes.paragraph()
        lead += nodes.strong(text=f"Refuted ({len(refuted)})")
        lead += nodes.Text(": the evidence contradicts the claim as printed." if refuted
                           else ": none.")
        items = nodes.bullet_list(classes=["eit-refuted-claims"])
        for key in order:
            for r in (r for r in refuted if r["paper"] == key):
                para = nodes.paragraph()
                para += link(with_math(r["claim"]), docname=r["chapter"], anchor=r["id"])
                para += nodes.Text(f" ({paper_title(papers[key])}): ")
                para.extend(with_math(r["statement"]))
                items += nodes.list_item("", para)
        return [lead, items] if refuted else [lead]

    @staticmethod
    def _corrected(records, papers, order) -> list[nodes.Node]:
        corrected = [r for r in records if r["outcome"] == "confirmed with a correction"]
        lead = nodes.paragraph()
        lead += nodes.strong(text=f"Confirmed with a correction ({len(corrected)})")
        lead += nodes.Text(": errata, each stated in its verdict with the corrected formula and "
                           "the evidence that separates it from the printed one." if corrected
                           else ": none.")
        items = nodes.bullet_list(classes=["eit-corrected-claims"])
        for key in order:
            group = [r for r in corrected if r["paper"] == key]
            if group:
                para = nodes.paragraph()
                para += nodes.Text(f"{paper_title(papers[key])} ({len(group)}): ")
                para.extend(claim_links(group))
                items += nodes.list_item("", para)
        return [lead, items] if corrected else [lead]


# --- status ----------------------------------------------------------------------------------

def pinned(srcdir: str | Path) -> dict[str, str]:
    """Package -> version pinned in requirements.txt for this Python and platform (the lock
    pins some packages per platform: the entries whose marker does not hold are skipped)."""
    from packaging.markers import Marker

    pins = {}
    for line in (Path(srcdir) / "requirements.txt").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;#\\]+)(?:\s*;\s*([^\\]+))?", line)
        if m and (m.group(3) is None or Marker(m.group(3).strip()).evaluate()):
            pins[m.group(1).lower()] = m.group(2)
    return pins


def differing(versions: dict[str, str], pins: dict[str, str]) -> list[str]:
    """'torch 2.12.0 (pinned 2.13.0)' for each version that is not the pinned one.

    A local build label (``2.13.0+cpu``) is the pinned version built for a device.
    """
    out = []
    for name, v in sorted(versions.items()):
        pin = pins.get(name.lower())
        if pin is not None and v.split("+")[0] != pin.split("+")[0]:
            out.append(f"{name} {v} (pinned {pin})")
    return out


#: The report of ``./book gpu-check`` (``tools/gpu_check.py``), relative to the book's root.
GPU_REPORT = "data/gpu/report.json"


def load_gpu_report(srcdir: str | Path) -> dict | None:
    """The latest GPU report, or None when there is none (or it cannot be read)."""
    path = Path(srcdir) / GPU_REPORT
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return report if isinstance(report, dict) else None


def _seconds(value) -> str:
    try:
        return f"{float(value):.0f}"
    except (TypeError, ValueError):
        return "?"


def _failed_cells(row: dict) -> str:
    """'Cell 3, Cell 4, ... (7 in all)' for the failed cells of a chapter row."""
    cells = [c.get("cell", "?") if isinstance(c, dict) else str(c)
             for c in row.get("failed_cells", [])]
    text = ", ".join(cells[:6])
    return text + (f", ... ({len(cells)} in all)" if len(cells) > 6 else "")


def gpu_report_nodes(report: dict | None, *, titles: dict[str, str] | None = None,
                     found_docs=None, pins: dict[str, str] | None = None) -> list[nodes.Node]:
    """The status page's block on the latest GPU check: a rubric, what ran where, the stages
    and one row per chapter; says plainly when there is no report.

    ``titles`` maps a chapter's docname to its title; a chapter links to its page when its
    docname is in ``found_docs`` (or always, when ``found_docs`` is None).
    """
    titles = titles or {}
    out: list[nodes.Node] = [nodes.rubric("", "Latest check on a GPU", ids=["status-gpu"])]
    if not report:
        para = nodes.paragraph()
        para += nodes.Text("No GPU report yet: ")
        para += nodes.literal(text=GPU_REPORT)
        para += nodes.Text(" does not exist. ")
        para += nodes.literal(text="./book gpu-check")
        para += nodes.Text(" on a machine with a CUDA GPU runs every chapter under nbval, the "
                           "benchmark and the paper-scale runs there and writes it.")
        return [*out, para]
    torch = report.get("torch") or {}
    smi = report.get("nvidia_smi") or ""
    driver = smi.split(",")[1].strip() if smi.count(",") >= 2 else ""
    where = [str(report.get("device", "unknown device"))]
    if torch.get("torch"):
        where.append(f"torch {torch['torch']}" + (f" (CUDA {torch['cuda']})"
                                                   if torch.get("cuda") else ""))
    if driver:
        where.append(f"driver {driver}")
    if report.get("python"):
        where.append(f"Python {report['python']}")
    if report.get("cpu_count") and report.get("mode") != "cpu":
        where.append(f"{report['cpu_count']} CPU cores")
    state = ("is complete" if report.get("complete") else
             "was interrupted" if report.get("interrupted") else "is incomplete (still "
             "running, or stopped before its end)")
    para = nodes.paragraph()
    para += nodes.Text("Run by ")
    para += nodes.literal(text="./book gpu-check")
    para += nodes.Text(f" on {', '.join(where)}; started {report.get('started', '?')}, "
                       f"{_seconds(report.get('wall_s'))} s of a "
                       f"{_seconds(report.get('budget_s'))} s budget"
                       + (f", commit {str(report['commit'])[:10]}" if report.get("commit")
                          else "") + f"; the run {state}. ")
    if report.get("mode") == "cpu":
        para += nodes.Text("It ran on the CPU (a test of the tool), not on a GPU. ")
    out.append(para)

    s = report.get("summary") or {}
    chapters = report.get("chapters") or []
    if chapters:
        out.append(nodes.paragraph(text=(
            f"nbval on the device: {s.get('chapters_passed', 0)} of {len(chapters)} chapters "
            f"passed, {s.get('chapters_failed', 0)} failed, {s.get('chapters_not_run', 0)} "
            f"did not run; {s.get('cells_passed', 0)} cells passed, "
            f"{s.get('cells_failed', 0)} failed, and {s.get('cells_tolerated', 0)} passed "
            "only thanks to the statistical tolerance (new random streams on a new device).")))

    vers = {k: v for k, v in (report.get("versions") or {}).items() if v}
    missing = sorted(k for k, v in (report.get("versions") or {}).items() if not v)
    if vers:
        text = "Versions: " + ", ".join(f"{k} {v}" for k, v in sorted(vers.items())) + "."
        if missing:
            text += " Not installed: " + ", ".join(missing) + "."
        differ = differing(vers, pins or {})
        if differ:
            text += " Differing from requirements.txt: " + ", ".join(differ) + "."
        out.append(nodes.paragraph(text=text))

    stages = report.get("stages") or []
    if stages:
        rows = []
        for st in stages:
            result = str(st.get("status", "?"))
            if st.get("note"):
                result += f" ({st['note']})"
            code = st.get("exit_code")
            rows.append([str(st.get("name", "?")), result, "-" if code is None else str(code),
                         _seconds(st.get("wall_s")), _seconds(st.get("timeout_s")),
                         nodes.literal(text=str(st.get("command", "")))])
        out.append(table(["Stage", "Result", "Exit code", "Wall time (s)", "Limit (s)",
                          "Command"], rows, classes=["eit-gpu-stages"],
                         col_classes=["", "", "eit-c-n", "eit-c-n", "eit-c-n", ""]))

    if chapters:
        rows, classes = [], []
        for row in chapters:
            path = str(row.get("chapter", "?"))
            docname = path[: -len(".ipynb")] if path.endswith(".ipynb") else path
            title = titles.get(docname, "")
            name = with_math(title) if title else [nodes.Text(path)]
            if found_docs is None or docname in found_docs:
                cell = link(name, docname=docname)
            else:
                cell = name
            result = str(row.get("result", "?"))
            rows.append([cell, result, str(row.get("passed", 0)), str(row.get("failed", 0)),
                         str(row.get("tolerated", 0)), _seconds(row.get("time_s")),
                         _failed_cells(row)])
            classes.append([f"eit-gpu-{slug(result)}"])
        out.append(table(["Chapter", "Result", "Cells passed", "Failed",
                          "Passed thanks to the tolerance", "Time (s)", "Failed cells"],
                         rows, classes=["eit-gpu-chapters"], row_classes=classes,
                         col_classes=["", "", "eit-c-n", "eit-c-n", "eit-c-n", "eit-c-n", ""]))
    return out


class ChapterStatus(SphinxDirective):
    """How the committed outputs of each chapter were produced, grouped by part, after the
    latest GPU check (:func:`gpu_report_nodes`)."""

    def run(self) -> list[nodes.Node]:
        for path in ledger.chapter_notebooks():
            self.env.note_dependency(str(path))
        for name in ("_toc.yml", "requirements.txt", GPU_REPORT):
            self.env.note_dependency(str(Path(self.env.srcdir) / name))
        parts = toc_parts(self.env.srcdir)
        pins = pinned(self.env.srcdir)
        every = ledger.status()
        status = built(self.env, every)
        for s in status:
            s["_part"] = part_of(s["chapter"], parts)
            s["_differ"] = differing(s.get("versions", {}), pins)
        pythons = Counter(s.get("python", "?") for s in status)
        total = sum(float(s.get("wall_time_s", 0) or 0) for s in status)
        intro = nodes.paragraph()
        intro += nodes.Text(
            f"{len(status)} chapters; executing all of them took {total:.0f} s of wall time "
            f"in all, one chapter at a time. Python "
            + ", ".join(f"{v} ({n} chapters)" if len(pythons) > 1 else v
                        for v, n in pythons.items()) + ". ")
        any_differ = any(s["_differ"] for s in status)
        if any_differ:
            intro += nodes.Text("The last column lists the library versions of a chapter's "
                                "outputs that differ from the ones pinned in requirements.txt: "
                                "re-execute that chapter.")
        else:
            intro += nodes.Text("Every chapter was executed with the library versions pinned "
                                "in requirements.txt.")
        out: list[nodes.Node] = [intro]
        out.extend(gpu_report_nodes(load_gpu_report(self.env.srcdir),
                                    titles={s["chapter"]: s.get("title", "") for s in every},
                                    found_docs=self.env.found_docs, pins=pins))
        headers = ["Chapter", "Verdicts", "Unstable", "Wall time (s)", "Device", "Scale",
                   "Executed"]
        cols = ["eit-c-chapter", "eit-c-verdicts", "eit-c-n", "eit-c-n", "eit-c-device",
                "eit-c-scale", "eit-c-date"]
        unstable = Counter(r["chapter"] for r in built(self.env, ledger.verdicts())
                           if r.get("stability") and not r["stability"]["stable"])
        if any_differ:
            headers.append("Versions differing from requirements.txt")
            cols.append("eit-c-versions")
        for part in sorted(parts, key=lambda p: p["number"] or 99):
            group = [s for s in status if s["_part"] is part]
            if not group:
                continue
            title = paper_title(part) if part["number"] else "The book"
            sec = nodes.section(ids=[f"status-{slug(title)}"],
                                names=[nodes.fully_normalize_name(title)])
            sec += nodes.title(title, "", *with_math(title))
            wall = sum(float(s.get("wall_time_s", 0) or 0) for s in group)
            sec += nodes.paragraph(text=f"{len(group)} chapters, {wall:.0f} s.")
            rows = []
            for s in group:
                row = [link(with_math(s["title"] or s["chapter"]), docname=s["chapter"]),
                       counts_text(s["verdicts"]), str(unstable[s["chapter"]]),
                       f"{s.get('wall_time_s', '?')}",
                       s.get("device", "?"), s.get("scale", "?"), s.get("executed", "?")]
                if any_differ:
                    row.append(", ".join(s["_differ"]))
                rows.append(row)
            sec += table(headers, rows, classes=["eit-status"], col_classes=cols)
            out.append(sec)
        return out


def chapter_status_nodes(meta: dict, pins: dict[str, str]) -> nodes.paragraph:
    """'Outputs: executed 2026-11-28 05:05 UTC on cpu: 2 cores, torch 2.13.0+cpu, default
    scale, 310 s of wall time; library versions as pinned in requirements.txt (all
    chapters).' from a notebook's ``metadata.eit``."""
    para = nodes.paragraph(classes=["eit-chapter-status"])
    para += nodes.strong(text="Outputs: ")
    para += nodes.Text(f"executed {meta.get('executed') or 'at an unrecorded date'} on "
                       f"{meta.get('device') or 'an unrecorded device'}, "
                       f"{meta.get('scale') or 'unrecorded'} scale, "
                       f"{_seconds(meta.get('wall_time_s'))} s of wall time; ")
    differ = differing(meta.get("versions") or {}, pins)
    para += nodes.Text("library versions differing from requirements.txt: " + ", ".join(differ)
                       if differ else "library versions as pinned in requirements.txt")
    para += nodes.Text(" (")
    para += link([nodes.Text("all chapters")], docname="status")
    para += nodes.Text(").")
    return para


def add_chapter_status(app, doctree) -> None:
    """Under the title of a chapter notebook, how its outputs were produced
    (:func:`chapter_status_nodes`), read from its ``metadata.eit`` when the book is built."""
    env = app.env
    source = Path(env.doc2path(env.docname))
    if source.suffix != ".ipynb":
        return
    meta = json.loads(source.read_text()).get("metadata", {}).get("eit")
    if not meta:
        return
    env.note_dependency(str(Path(env.srcdir) / "requirements.txt"))
    para = chapter_status_nodes(meta, pinned(env.srcdir))
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is not None and len(section) and isinstance(section[0], nodes.title):
        section.insert(1, para)
    else:
        doctree.insert(0, para)


def paper_records(env, docname: str, key: str = "") -> list[dict]:
    """The verdict records of a paper: ``key``, or the paper of the chapters next to
    ``docname``; the page is rebuilt when a chapter's notebook changes."""
    for path in ledger.chapter_notebooks():
        env.note_dependency(str(path))
    records = built(env, ledger.verdicts())
    if key:
        return [r for r in records if r["paper"] == key]
    folder = docname.rsplit("/", 1)[0]
    return [r for r in records if r["chapter"].rsplit("/", 1)[0] == folder]


def summary_nodes(env, docname: str, key: str = "") -> list[nodes.Node]:
    """'Verdicts: 71 records, 43 confirmed, ... (in the claims ledger).' for a paper: ``key``,
    or the paper of the chapters next to ``docname``."""
    group = paper_records(env, docname, key)
    if not group:
        return [nodes.Text("No verdicts are recorded yet.")]
    key = group[0]["paper"]
    return [nodes.strong(text="Verdicts: "),
            nodes.Text(f"{len(group)} records, {counts_text(ledger.summary(group))} ("),
            link([nodes.Text("in the claims ledger")], docname="ledger",
                 anchor=f"ledger-{slug(key)}"),
            nodes.Text(").")]


class VerdictSummary(SphinxDirective):
    """A paragraph of verdict counts for a paper (an overview page), linking to its ledger
    section. The argument is the bibliography key; without it, the paper of the chapters next
    to the page. The role ``{verdict-summary}`` gives the same on one line:
    ``{verdict-summary}`hanin2018start``` (or an empty key, ``{verdict-summary}`-```).
    """

    optional_arguments = 1
    option_spec = {"class": directives.class_option}

    def run(self) -> list[nodes.Node]:
        para = nodes.paragraph(classes=["eit-verdict-summary"])
        para.extend(summary_nodes(self.env, self.env.docname,
                                  self.arguments[0] if self.arguments else ""))
        return [para]


#: Rows of the outcome x scope table of an overview (``{verdict-table}``), in this order.
TABLE_OUTCOMES = ("confirmed", "confirmed with a correction", "refuted",
                  "not reproduced on the substitute", "inconclusive")


def _chapter_range(group: list[dict]) -> str:
    """'chapters 01-12' (or 'chapter 03') from the docnames of the records."""
    numbers = sorted({r["chapter"].rsplit("/", 1)[-1].split("-", 1)[0] for r in group})
    if len(numbers) == 1:
        return f"chapter {numbers[0]}"
    return f"{len(numbers)} chapters, {numbers[0]} to {numbers[-1]}"


def verdict_table_nodes(env, docname: str, key: str = "") -> list[nodes.Node]:
    """The outcome x scope counts of a paper's records, as a table with a sentence before
    (where they come from) and after (confirmations by kind). Consistency checks have their own
    row and are not counted as confirmations (:func:`eit.verdicts.ledger.summary`)."""
    group = paper_records(env, docname, key)
    if not group:
        return [nodes.paragraph(text="No verdicts are recorded yet.")]
    key = group[0]["paper"]
    checked = [r for r in group if r["kind"] != CONSISTENCY]
    consistency = [r for r in group if r["kind"] == CONSISTENCY]

    def counts(rows: list[dict]) -> list[str]:
        per_scope = [sum(1 for r in rows if r["scope"] == s) for s in SCOPES]
        return [str(n) for n in per_scope] + [str(len(rows))]

    headers = ["Outcome", *SCOPES, "total"]
    rows, classes = [], []
    for o in TABLE_OUTCOMES:
        rows.append([o, *counts([r for r in checked if r["outcome"] == o])])
        classes.append([f"eit-o-{slug(o)}"])
    rows.append(["consistency checks", *counts(consistency)])
    classes.append(["eit-consistency"])
    rows.append(["all records", *counts(group)])
    classes.append(["eit-total"])
    cols = ["eit-c-outcome"] + ["eit-c-n"] * (len(SCOPES) + 1)

    intro = nodes.paragraph()
    intro += nodes.Text(
        f"Counted when the book is built from the {len(group)} verdict records of "
        f"{_chapter_range(group)} (every record is listed ")
    intro += link([nodes.Text("in the claims ledger")], docname="ledger",
                  anchor=f"ledger-{slug(key)}")
    intro += nodes.Text("). Consistency checks (identities true by construction, bounds "
                        "implied by another result or that cannot fail at the tested setting) "
                        "have their own row and are not counted as confirmations.")
    confirmed = [r for r in checked if r["outcome"] == "confirmed"]
    kinds = Counter(r["kind"] for r in confirmed)
    exact, tests = kinds["exact"], kinds["test"]

    def plural(n: int, one: str, many: str) -> str:
        return f"{n} {one if n == 1 else many}"

    after = nodes.paragraph(
        text=f"Of the {plural(len(confirmed), 'confirmation', 'confirmations')}, "
             f"{plural(exact, 'is an exact computation', 'are exact computations')} and "
             f"{plural(tests, 'a statistical test', 'statistical tests')}.")
    return [intro,
            table(headers, rows, classes=["eit-verdict-table"], row_classes=classes,
                  col_classes=cols),
            after]


class VerdictTable(SphinxDirective):
    """The outcome x scope table of verdict counts for a paper (an overview page). The
    argument is the bibliography key (as for ``{verdict-summary}``); without it, the paper of
    the chapters next to the page. Rows: the five outcomes, the consistency checks (apart,
    never confirmations) and all records; columns: the three scopes and the total. A sentence
    after it splits the confirmations into exact computations and statistical tests."""

    optional_arguments = 1

    def run(self) -> list[nodes.Node]:
        return verdict_table_nodes(self.env, self.env.docname,
                                   self.arguments[0] if self.arguments else "")


class PaperScaleResults(SphinxDirective):
    """The paper-scale results stored in ``data/<part>/`` (an overview page), read from their
    metadata files, so that the page never states a stale list. The argument is the part's
    folder name (``meterez-et-al-2024``); each item names the result, the chapter whose
    ``./book paper-scale`` run wrote it, the device and the date."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        part = self.arguments[0]
        root = Path(self.env.srcdir) / "data" / part
        metas = sorted(root.glob("*.json")) if root.is_dir() else []
        self.env.note_dependency(str(root))
        items = nodes.bullet_list()
        for path in metas:
            self.env.note_dependency(str(path))
            meta = json.loads(path.read_text())
            if meta.get("scale") != "paper":
                continue
            chapter = str(meta.get("command", "")).rpartition(" ")[2]
            text = (f"{meta['name'].partition('/')[2]}: from {chapter or 'an unnamed run'}, "
                    f"on {meta.get('device', 'an unrecorded device')}, {meta.get('date', '')}")
            items += nodes.list_item("", nodes.paragraph(text=text))
        if not len(items):
            return [nodes.paragraph(text=f"No paper-scale result of this part is stored yet "
                                         f"(data/{part}/ is empty).")]
        lead = nodes.paragraph(text=f"Stored now ({len(items)}):")
        return [lead, items]


#: ``{outcome}`` texts: ``<chapter>: <claim>`` (chapter stem, or part/stem), optionally
#: `` | <statement prefix>`` where several records share a claim, or a record id ``v-...``.
_RECORD_ID = re.compile(r"v-[0-9a-f]{10}")


def resolve_outcome(text: str, records: list[dict]) -> dict:
    """The one record that an ``{outcome}`` role names.

    Raises
    ------
    ValueError
        A text of the wrong form, or one that names no record or several (say which).
    """
    text = " ".join(text.split())
    if _RECORD_ID.fullmatch(text):
        found = [r for r in records if r["id"] == text]
    else:
        ref, _, statement = text.partition(" | ")
        chapter, sep, claim = ref.partition(": ")
        if not sep or not chapter.strip() or not claim.strip():
            raise ValueError(f"{{outcome}}`{text}`: write '<chapter stem>: <claim>' "
                             "(optionally ' | <statement prefix>'), or a record id v-...")
        chapter = chapter.strip()
        found = [r for r in records
                 if (r["chapter"] == chapter or r["chapter"].endswith("/" + chapter))
                 and " ".join(r["claim"].split()) == claim.strip()
                 and " ".join(r["statement"].split()).startswith(statement.strip())]
    if len(found) != 1:
        ids = ", ".join(f"{r['id']} ({r['statement'][:50]!r})" for r in found[:6])
        raise ValueError(f"{{outcome}}`{text}` names {len(found)} records, not one"
                         + (f": {ids}; add ' | <statement prefix>' or use the id" if found
                            else ""))
    return found[0]


def outcome_text(record: dict) -> str:
    """'confirmed · paper · test'; a consistency check is 'consistency check · paper'."""
    if record["kind"] == CONSISTENCY:
        return f"consistency check · {record['scope']}"
    return f"{record['outcome']} · {record['scope']} · {record['kind']}"


def outcome_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    env = inliner.document.settings.env
    paths = ledger.chapter_notebooks()
    for path in paths:
        env.note_dependency(str(path))
    # the ledger is read once per state of the notebooks, not once per role (an overview has
    # dozens of roles, and reading every executed notebook takes seconds)
    key = tuple((str(p), p.stat().st_mtime_ns) for p in paths)
    cache = outcome_role.__dict__.setdefault("cache", {})
    if cache.get("key") != key:
        cache.update(key=key, records=ledger.verdicts())
    try:
        record = resolve_outcome(text, built(env, cache["records"]))
    except ValueError as err:
        msg = inliner.reporter.error(str(err), line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    node = link([nodes.Text(outcome_text(record))], docname=record["chapter"],
                anchor=record["id"])
    return [nodes.inline("", "", node, classes=["eit-outcome"])], []


def verdict_summary_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    env = inliner.document.settings.env
    key = "" if text.strip() in ("", "-") else text.strip()
    return [nodes.inline("", "", *summary_nodes(env, env.docname, key),
                         classes=["eit-verdict-summary"])], []


def setup(app):
    app.add_node(eit_link, html=(lambda s, n: None, lambda s, n: None),
                 latex=(_skip, None), text=(_skip, None))
    app.add_node(details, html=(_visit_details, _depart_details),
                 latex=(lambda s, n: None, lambda s, n: None),
                 text=(lambda s, n: None, lambda s, n: None))
    app.add_node(summary, html=(_visit_summary, _depart_summary),
                 latex=(_skip, None), text=(_skip, None))
    app.add_directive("claims-ledger", ClaimsLedger)
    app.add_directive("chapter-status", ChapterStatus)
    app.add_directive("verdict-summary", VerdictSummary)
    app.add_directive("verdict-table", VerdictTable)
    app.add_directive("paper-scale-results", PaperScaleResults)
    app.add_directive("results-summary", ResultsSummary)
    app.connect("doctree-read", add_chapter_status)
    app.add_role("verdict-summary", verdict_summary_role)
    app.add_role("outcome", outcome_role)
    eit_build.setup(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "0.2"}
