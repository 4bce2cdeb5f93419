"""Smoke mode: every chapter's paper-scale code path runs, at tiny sizes.

Each chapter is converted from its MyST source and executed in a fresh kernel with
``EIT_SCALE=smoke``: sizes come from ``at_scale(default, paper, smoke=...)`` and the
paper-scale branches (saving results, which go to ``_build/smoke-data/``) run, so the paper
scale cannot rot between the rare runs that use it. Outputs are not compared; an exception
fails the test. A chapter gives its smoke sizes as ``at_scale(default, paper, smoke=...)``.
"""

from __future__ import annotations

import os
from pathlib import Path

import jupytext
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for p in (ROOT / "chapters").rglob("*.md")
                 if "{code-cell}" in p.read_text() and ".ipynb_checkpoints" not in p.parts)


def run_in_smoke_mode(source: Path, monkeypatch) -> None:
    monkeypatch.setenv("EIT_SCALE", "smoke")
    monkeypatch.delenv("EIT_SEED", raising=False)
    monkeypatch.setenv("EIT_BOOK_ROOT", str(ROOT))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = jupytext.read(source)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    client = NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(source.parent)}})
    try:
        client.execute(env=dict(os.environ))
    except CellExecutionError as err:
        pytest.fail(f"{source.relative_to(ROOT)} fails in smoke mode:\n{str(err)[-3000:]}")


def _smoke_class(source: Path) -> type:
    def test_paper_scale_path_runs_in_smoke_mode(self, monkeypatch):
        run_in_smoke_mode(source, monkeypatch)

    return type(f"TestSmoke_{source.stem.replace('-', '_')}", (),
                {"test_paper_scale_path_runs_in_smoke_mode":
                 test_paper_scale_path_runs_in_smoke_mode})


# one class per chapter, so that pytest-xdist's --dist loadscope spreads them over workers
for _source in SOURCES:
    _cls = _smoke_class(_source)
    globals()[_cls.__name__] = _cls
