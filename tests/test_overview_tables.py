"""The overview pages agree with the verdict records of their chapters.

* every chapter of a part appears in its overview's "Claims and chapters" section;
* the verdict counts come from the ``{verdict-table}`` directive (``_ext/eit_pages.py``),
  never from a hand-counted table, and the directive counts what the ledger holds;
* every outcome that a chapter's records hold (a correction, refutation, failed
  reproduction, inconclusive test, consistency check, confirmation) is stated in its rows (or
  its part of the list) through an ``{outcome}`` role, which renders it from a record; that
  no outcome is stated outside a role is ``tests/test_prose_outcomes.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import extension
import pytest
import yaml
from docutils import nodes

from eit.verdicts import ledger
from eit.verdicts.records import CONSISTENCY, SCOPES

ROOT = Path(__file__).resolve().parent.parent
OVERVIEWS = sorted((ROOT / "chapters").glob("*/overview.md"))
RECORDS = ledger.verdicts()
OUTCOME_ROLE = re.compile(r"\{outcome\}`([^`]*)`")


def part_files(overview: Path) -> list[str]:
    """The docnames of the part whose overview this is (from _toc.yml)."""
    doc = overview.relative_to(ROOT).with_suffix("").as_posix()
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    for part in toc["parts"]:
        files = [e["file"] for e in part.get("chapters", [])]
        if doc in files:
            return [f for f in files if f != doc]
    raise AssertionError(f"{doc} is not in _toc.yml")


def claims_section(text: str) -> str:
    start = text.index("## Claims and chapters")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def status_rows(section: str) -> list[tuple[str, str]]:
    """(chapter stem, status) of each row of the claims table; [] where it is not a table."""
    lines = [ln for ln in section.splitlines() if ln.startswith("|")]
    if not lines or not re.search(r"\|\s*(Status|Verdict)\s*\|\s*$", lines[0]):
        return []
    rows = []
    for line in lines[2:]:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        m = re.search(r"\{doc\}`([^`<]+)`", cells[2])
        assert m, f"no chapter in row: {line}"
        rows.append((m.group(1), cells[-1]))
    return rows


def records_of(overview: Path) -> list[dict]:
    return [r for r in RECORDS if r["part"] == overview.parent.name]


@pytest.mark.parametrize("overview", OVERVIEWS, ids=lambda p: p.parent.name)
def test_every_chapter_is_in_the_claims(overview):
    section = claims_section(overview.read_text())
    for doc in part_files(overview):
        assert f"{{doc}}`{doc.rsplit('/', 1)[-1]}`" in section, f"{doc} missing in {overview}"


@pytest.mark.parametrize("overview", OVERVIEWS, ids=lambda p: p.parent.name)
def test_counts_come_from_the_records(overview):
    text = overview.read_text()
    keys = {r["paper"] for r in records_of(overview)}
    assert len(keys) == 1, keys
    assert f"```{{verdict-table}} {keys.pop()}\n```" in text
    # no hand-typed counts: "65 records", a row of counts under an outcome, "chapters 1-6"
    assert not re.search(r"\b\d+ records\b", text)
    assert not re.search(r"^\|\s*(confirmed|refuted|inconclusive)[^|]*\|\s*\d", text, re.M)
    assert not re.search(r"chapters \d+-\d+", text)


def _resolve_outcome():
    return extension.load().resolve_outcome


def stated_records(section: str, cell: bool = False) -> list[dict]:
    """The records whose outcomes a section (or a table cell) states through its roles."""
    resolve = _resolve_outcome()
    texts = []
    for line in section.splitlines():
        table = cell or line.lstrip().startswith("|")
        texts += [m.group(1).replace("\\|", "|") if table else m.group(1)
                  for m in OUTCOME_ROLE.finditer(line)]
    return [resolve(text, RECORDS) for text in texts]


@pytest.mark.parametrize("overview", OVERVIEWS, ids=lambda p: p.parent.name)
def test_status_cells_name_the_recorded_outcomes(overview):
    """Every outcome that a chapter's records hold is stated, through an ``{outcome}`` role
    naming one of them, in the claims section (its rows, where it is a table); the roles
    render the outcome from the record, so none is claimed that the record does not hold."""
    section = claims_section(overview.read_text())
    rows = status_rows(section)
    by_chapter: dict[str, list[dict]] = {}
    for r in records_of(overview):
        by_chapter.setdefault(r["chapter"].rsplit("/", 1)[-1], []).append(r)
    stated: dict[str, list[dict]] = {}
    texts = [status for _chapter, status in rows] if rows else [section]
    for text in texts:
        for r in stated_records(text, cell=bool(rows)):
            stated.setdefault(r["chapter"].rsplit("/", 1)[-1], []).append(r)
    for chapter, records in by_chapter.items():
        named = stated.get(chapter, [])
        assert named, f"{chapter}: no outcome stated"

        def kinds(rs):
            return ({("consistency check" if r["kind"] == CONSISTENCY else r["outcome"])
                     for r in rs})

        missing = kinds(records) - kinds(named)
        assert not missing, f"{chapter}: records hold {sorted(missing)}, no role states it"


class _Env:
    """What verdict_table_nodes needs of a Sphinx environment."""

    def __init__(self):
        self.found_docs = {r["chapter"] for r in RECORDS}
        self.deps: list[str] = []

    def note_dependency(self, path: str) -> None:
        self.deps.append(path)


@pytest.mark.parametrize("overview", OVERVIEWS, ids=lambda p: p.parent.name)
def test_verdict_table_counts(overview):
    eit_pages = extension.load()
    group = records_of(overview)
    env = _Env()
    out = eit_pages.verdict_table_nodes(env, "ledger", group[0]["paper"])
    assert len(env.deps) == len(ledger.chapter_notebooks())
    table = next(n for n in out if isinstance(n, nodes.table))
    rows = [[e.astext() for e in row.findall(nodes.entry)]
            for row in table.findall(nodes.row)]
    assert rows[0] == ["Outcome", *SCOPES, "total"]
    body = {r[0]: [int(x) for x in r[1:]] for r in rows[1:]}
    summary = ledger.summary(group)
    for outcome, n in summary["outcomes"].items():
        assert body[outcome][-1] == n
        assert sum(body[outcome][:-1]) == n
    assert body["consistency checks"][-1] == summary["consistency"]
    assert body["all records"][-1] == len(group)
    confirmed = [r for r in group if r["outcome"] == "confirmed" and r["kind"] != CONSISTENCY]
    sentence = out[-1].astext()
    assert f"Of the {len(confirmed)} confirmation" in sentence
    exact = sum(r["kind"] == "exact" for r in confirmed)
    assert f", {exact} " in sentence
