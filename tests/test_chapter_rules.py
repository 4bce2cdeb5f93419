"""Rules every chapter follows so that the regression test can do its job (CONTRIBUTING.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jupytext
import pytest

from eit.verdicts.records import MIME_VERDICT, OUTCOMES, SCOPES

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for p in (ROOT / "chapters").rglob("*.md")
                 if "{code-cell}" in p.read_text() and ".ipynb_checkpoints" not in p.parts)
#: random streams that EIT_SEED cannot shift
UNSEEDED = re.compile(r"torch\.manual_seed|np\.random\.|numpy\.random\.|default_rng\(|"
                      r"torch\.Generator\(|^\s*import random\b|\brandom\.(random|seed|gauss)\(",
                      re.M)


def code_cells(source: Path):
    return [c for c in jupytext.read(source).cells if c.cell_type == "code"]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_every_random_stream_goes_through_eit_seeds(source):
    bad = [m.group(0) for c in code_cells(source) for m in UNSEEDED.finditer(c.source)]
    assert not bad, f"{source.name} draws random numbers outside eit.core.seeds: {bad}"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_the_import_cell_is_visible(source):
    cells = [c for c in code_cells(source) if re.search(r"^from eit|^import eit", c.source, re.M)]
    assert cells, f"{source.name} imports nothing from eit"
    tags = cells[0].metadata.get("tags", [])
    assert "hide-input" not in tags and "remove-input" not in tags, (
        f"{source.name}: the import cell is the reader's map to the library; show it")


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_verdict_records_follow_the_protocol(source):
    nb = json.loads(source.with_suffix(".ipynb").read_text())
    recs = [o["metadata"][MIME_VERDICT] for c in nb["cells"] for o in c.get("outputs", [])
            if MIME_VERDICT in o.get("metadata", {})]
    assert recs, f"{source.name} records no verdict"
    for rec in recs:
        assert rec.get("schema") == 2, f"{source.name}: a schema-1 record ({rec['claim']!r})"
        assert rec["outcome"] in OUTCOMES and rec["scope"] in SCOPES
        assert rec["kind"] != "test" or rec["criterion"], (
            f"{source.name}: {rec['claim']!r} is a statistical test without a criterion")
    ids = [r["id"] for r in recs]
    dup = {i for i in ids if ids.count(i) > 1}
    assert not dup, f"{source.name}: two verdicts share claim and statement ({dup})"
