"""Sphinx directives for the book's generated pages.

``{claims-ledger}`` renders every verdict recorded by the executed chapters and
``{chapter-status}`` renders how their committed outputs were produced. Both read the
committed notebooks through :mod:`eit.ledger` at build time, so the pages cannot drift.
"""

from __future__ import annotations

from collections import Counter

from docutils import nodes
from sphinx import addnodes
from sphinx.util.docutils import SphinxDirective

from eit import ledger
from eit.checks import CONFIRMED, CORRECTED, REFUTED


def _table(headers: list[str], rows: list[list[nodes.Node | str]], widths: list[int],
           classes: list[str]) -> nodes.table:
    table = nodes.table(classes=classes)
    group = nodes.tgroup(cols=len(headers))
    table += group
    group.extend(nodes.colspec(colwidth=w) for w in widths)
    head = nodes.thead()
    row = nodes.row()
    for h in headers:
        row += nodes.entry("", nodes.paragraph(text=h))
    head += row
    group += head
    body = nodes.tbody()
    for cells in rows:
        row = nodes.row()
        for cell in cells:
            para = nodes.paragraph()
            para += cell if isinstance(cell, nodes.Node) else nodes.Text(cell)
            row += nodes.entry("", para)
        body += row
    group += body
    return table


def _doc_link(docname: str, title: str) -> nodes.Node:
    ref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget="/" + docname,
                                refexplicit=True)
    ref += nodes.inline(text=title or docname)
    return ref


class ClaimsLedger(SphinxDirective):
    """Every claim of the book with its verdict, theory and measurement."""

    def run(self) -> list[nodes.Node]:
        for path in ledger.chapter_notebooks():
            self.env.note_dependency(str(path))
        records = ledger.verdicts()
        counts = Counter(r["verdict"] for r in records)
        summary = nodes.paragraph(text=(
            f"{len(records)} claims checked: {counts[CONFIRMED]} {CONFIRMED}, "
            f"{counts[CORRECTED]} {CORRECTED}, {counts[REFUTED]} {REFUTED}."))
        rows = [[r["paper"], r["claim"], r["statement"], r["verdict"], r["theory"],
                 r["measured"], r.get("correction", ""),
                 _doc_link(r["chapter"], r["chapter_title"])] for r in records]
        headers = ["Paper", "Claim", "Statement", "Verdict", "Theory", "Measured",
                   "Correction", "Chapter"]
        return [summary, _table(headers, rows, [6, 8, 18, 7, 12, 12, 14, 10], ["eit-ledger"])]


class ChapterStatus(SphinxDirective):
    """How the committed outputs of each chapter were produced."""

    def run(self) -> list[nodes.Node]:
        rows = []
        for path in ledger.chapter_notebooks():
            self.env.note_dependency(str(path))
        for s in ledger.status():
            versions = ", ".join(f"{k} {v}" for k, v in s.get("versions", {}).items())
            rows.append([_doc_link(s["chapter"], s["title"]), f"{s.get('wall_time_s', '?')}",
                         s.get("device", "?"), s.get("scale", "?"), s.get("executed", "?"),
                         f"Python {s.get('python', '?')}; {versions}"])
        headers = ["Chapter", "Execution (s)", "Device", "Scale", "Executed", "Versions"]
        return [_table(headers, rows, [14, 6, 12, 6, 10, 30], ["eit-ledger"])]


def setup(app):
    app.add_directive("claims-ledger", ClaimsLedger)
    app.add_directive("chapter-status", ChapterStatus)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "0.1"}
