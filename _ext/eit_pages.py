"""Sphinx directives for the book's generated pages.

``{claims-ledger}`` renders every verdict recorded by the executed chapters and
``{chapter-status}`` renders how their committed outputs were produced. Both read the
committed notebooks through :mod:`eit.verdicts.ledger` at build time, so the pages cannot drift.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from docutils import nodes
from pybtex.database import parse_file
from sphinx import addnodes
from sphinx.util.docutils import SphinxDirective

from eit.verdicts import ledger
from eit.verdicts.legacy_checks import CONFIRMED, CORRECTED, REFUTED


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


def _with_math(text: str) -> list[nodes.Node]:
    """Text whose $...$ segments become inline math nodes (chapter titles carry math)."""
    parts = text.split("$")
    if len(parts) % 2 == 0:  # unbalanced dollars: leave the text alone
        return [nodes.Text(text)]
    return [nodes.math(p, p) if i % 2 else nodes.Text(p) for i, p in enumerate(parts) if p]


def _doc_link(docname: str, title: str) -> nodes.Node:
    ref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget="/" + docname,
                                refexplicit=True)
    ref += nodes.inline("", "", *_with_math(title or docname))
    return ref


def _short_citation(key: str, bib) -> str:
    """'Arpit & Bengio 2019', 'Meterez et al. 2024' from the bibliography entry ``key``."""
    entry = bib.entries.get(key)
    if entry is None:
        return key
    names = ["".join(p.last_names).replace("{", "").replace("}", "")
             for p in entry.persons.get("author", [])]
    who = (names[0] if len(names) == 1 else " & ".join(names) if len(names) == 2
           else f"{names[0]} et al.")
    return f"{who} {entry.fields.get('year', '')}".strip()


def _counts(records: list[dict]) -> str:
    counts = Counter(r["verdict"] for r in records)
    return (f"{len(records)} claims checked: {counts[CONFIRMED]} {CONFIRMED}, "
            f"{counts[CORRECTED]} {CORRECTED}, {counts[REFUTED]} {REFUTED}.")


class ClaimsLedger(SphinxDirective):
    """Every claim of the book with its verdict, theory and measurement, one table per paper."""

    def run(self) -> list[nodes.Node]:
        for path in ledger.chapter_notebooks():
            self.env.note_dependency(str(path))
        bib_path = Path(self.env.srcdir) / "references.bib"
        self.env.note_dependency(str(bib_path))
        bib = parse_file(str(bib_path))
        records = ledger.verdicts()
        order = {key: i for i, key in enumerate(bib.entries)}
        papers = sorted({r["paper"] for r in records}, key=lambda k: (order.get(k, len(order)), k))
        out: list[nodes.Node] = [nodes.paragraph(text=_counts(records))]
        headers = ["Claim", "Statement", "Verdict", "Theory", "Measured", "Correction",
                   "Chapter"]
        for paper in papers:
            group = [r for r in records if r["paper"] == paper]
            out.append(nodes.rubric(text=_short_citation(paper, bib)))
            out.append(nodes.paragraph(text=_counts(group)))
            rows = [[r["claim"], r["statement"], r["verdict"], r["theory"], r["measured"],
                     r.get("correction", ""), _doc_link(r["chapter"], r["chapter_title"])]
                    for r in group]
            table = _table(headers, rows, [9, 19, 10, 15, 15, 18, 14],
                           ["eit-ledger", "colwidths-given"])
            for row, r in zip(table.traverse(nodes.row)[1:], group):
                row["classes"].append("eit-" + r["verdict"].replace(" ", "-"))
            out.append(table)
        return out


def _versions(s: dict) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in s.get("versions", {}).items())
    return f"Python {s.get('python', '?')}; {versions}"


class ChapterStatus(SphinxDirective):
    """How the committed outputs of each chapter were produced."""

    def run(self) -> list[nodes.Node]:
        for path in ledger.chapter_notebooks():
            self.env.note_dependency(str(path))
        status = ledger.status()
        common = Counter(_versions(s) for s in status).most_common(1)
        common = common[0][0] if common else ""
        rows = [[_doc_link(s["chapter"], s["title"]), f"{s.get('wall_time_s', '?')}",
                 s.get("device", "?"), s.get("scale", "?"), s.get("executed", "?"),
                 "" if _versions(s) == common else _versions(s)] for s in status]
        headers = ["Chapter", "Execution (s)", "Device", "Scale", "Executed",
                   "Versions (where they differ)"]
        intro = nodes.paragraph(text=f"Versions of the committed outputs: {common}.")
        return [intro, _table(headers, rows, [30, 10, 16, 8, 16, 20],
                              ["eit-ledger", "colwidths-given"])]


def setup(app):
    app.add_directive("claims-ledger", ClaimsLedger)
    app.add_directive("chapter-status", ChapterStatus)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "0.1"}
