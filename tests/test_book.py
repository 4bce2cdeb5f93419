"""Book-level checks: md/ipynb pairing, toc completeness, verdicts, and the strict build."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jupytext
import pytest
import yaml
from bookbuild import book  # noqa: F401 (the session's build, a fixture)

from eit.verdicts import ledger
from eit.verdicts.records import MIME_VERDICT as MIME
from eit.verdicts.records import OUTCOMES, SCOPES

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for p in (ROOT / "chapters").rglob("*.md")
                 if "{code-cell}" in p.read_text() and ".ipynb_checkpoints" not in p.parts)


def toc_files() -> set[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    found = {toc["root"]}

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                found.add(entry["file"])
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    walk(toc.get("parts"))
    walk(toc.get("chapters"))
    return found


def inputs(nb) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


def test_there_are_chapters():
    assert SOURCES, "no chapter sources found"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_md_and_ipynb_have_identical_inputs(source):
    nb_path = source.with_suffix(".ipynb")
    assert nb_path.exists(), f"{nb_path.name} is missing: run ./book execute {source}"
    assert inputs(jupytext.read(source)) == inputs(jupytext.read(nb_path)), (
        f"{source.name} and {nb_path.name} differ: run ./book execute {source}")


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_no_cell_relies_on_a_trailing_semicolon(source):
    """nbval does not honour IPython's trailing ';' (the output would differ): use `_ = ...`."""
    for cell in jupytext.read(source).cells:
        lines = cell.source.rstrip().splitlines()
        if cell.cell_type == "code" and lines:
            assert not lines[-1].rstrip().endswith(";"), f"{source.name}: {lines[-1]}"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_chapter_is_executed_and_records_verdicts(source):
    nb = json.loads(source.with_suffix(".ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]
    assert all(c.get("execution_count") for c in code), "not fully executed"
    assert not [o for c in code for o in c["outputs"] if o["output_type"] == "error"]
    assert not [o for c in code for o in c["outputs"]
                if o["output_type"] == "stream" and o["name"] == "stderr"], "stderr output"
    assert any(MIME in o.get("metadata", {}) for c in code for o in c["outputs"]), "no verdict"
    assert "eit" in nb["metadata"], "no execution metadata: run ./book execute"
    if "subplots(" in source.read_text():
        assert any("image/png" in o.get("data", {}) for c in code for o in c["outputs"]), (
            "the chapter draws figures but its notebook holds none (non-inline backend?)")


def test_every_chapter_and_page_is_in_the_toc():
    listed = toc_files()
    for source in SOURCES:
        assert source.relative_to(ROOT).with_suffix("").as_posix() in listed, source
    for overview in (ROOT / "chapters").glob("*/overview.md"):
        assert overview.relative_to(ROOT).with_suffix("").as_posix() in listed, overview
    for entry in listed:
        assert any((ROOT / f"{entry}{ext}").exists() for ext in (".md", ".ipynb")), entry


def test_ledger_is_built_from_the_notebooks():
    records = ledger.verdicts()
    assert records and all(r["outcome"] in OUTCOMES and r["scope"] in SCOPES for r in records)
    assert all(re.fullmatch(r"v-[0-9a-f]{10}", r["id"]) for r in records)
    chapters = {r["chapter"] for r in records}
    assert chapters == {s.relative_to(ROOT).with_suffix("").as_posix() for s in SOURCES}


def test_ledger_refuses_a_record_of_the_retired_schema():
    rec = dict(ledger.verdicts()[0])
    with pytest.raises(ValueError, match="schema 2"):
        ledger.normalize({k: v for k, v in rec.items() if k != "schema"})
    with pytest.raises(ValueError, match="without"):
        ledger.normalize({k: v for k, v in rec.items() if k != "outcome"})
    with pytest.raises(ValueError, match="outcome must be"):
        ledger.normalize({**rec, "outcome": "plausible"})


def test_pinned_requirements_are_the_single_source():
    """environment.yml (Binder) installs requirements.txt, with PyTorch's CPU wheels."""
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert pip == ["--extra-index-url https://download.pytorch.org/whl/cpu",
                   "-r requirements.txt"]
    reqs = [line for line in (ROOT / "requirements.txt").read_text().splitlines()
            if line and not line.startswith("#")]
    assert all("==" in r for r in reqs)
    assert any(r.startswith("jupyter-book==1.") for r in reqs)
    # the look of the book does not change with the install day
    for theme in ("sphinx-book-theme==", "pydata-sphinx-theme=="):
        assert any(r.startswith(theme) for r in reqs), theme


def test_book_builds_without_warnings(book):  # noqa: F811 (the fixture)
    """jupyter-book build with warnings as errors, nitpicky (the session's shared build)."""
    log = book.log
    assert book.returncode == 0, log[-6000:]
    assert "WARNING" not in log, log[-6000:]
    html = book.html
    assert (html / "ledger.html").exists()
    page = (html / "chapters" / "arpit-bengio-2019" / "01-one-layer-norm-preservation.html")
    assert "eit-verdict" in page.read_text()
    # no directive left unparsed (e.g. a theorem block broken by a role in its title)
    for path in (html / "chapters").rglob("*.html"):
        text = path.read_text()
        assert "```{" not in text and "{prf:" not in text, f"unrendered directive in {path}"
