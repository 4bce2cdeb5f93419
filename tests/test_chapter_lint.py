"""Chapter code is linted (ruff) at a width that fits the book's code box, chapter by chapter.

Ruff reads each chapter's ``.md`` (the source the authors edit, turned into a notebook by
jupytext in a temporary folder) with the project's rules (``pyproject.toml``) at
:data:`LINE_LENGTH`; a failure lists every offending line as
``chapters/<part>/<chapter>.md:<line>``. Notebook-only exceptions: imports below the first
cell (E402); ruff itself lets a bare expression end a cell (its output).

``tests/test_browser.py::test_code_fits_the_code_box`` measures the code box at 1280 px and
checks that :data:`LINE_LENGTH` fits in it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parent.parent
#: characters per line of chapter code: the code box of a chapter at 1280 px holds 88 (measured
#: by the browser test; `_build/screenshots/measurements.json`)
LINE_LENGTH = 88
SOURCES = sorted(p for p in (ROOT / "chapters").rglob("*.md")
                 if "{code-cell}" in p.read_text() and ".ipynb_checkpoints" not in p.parts)


def _ruff() -> str:
    exe = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if exe is None:
        pytest.fail("ruff is not installed (it is pinned in requirements.txt)")
    return exe


def code_cell_lines(md: Path) -> list[int]:
    """For each code cell of a MyST notebook, the line of the .md where its source begins."""
    lines = md.read_text().splitlines()
    starts = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("```{code-cell}"):
            j = i + 1
            options = False
            if j < len(lines) and lines[j].strip() == "---":  # YAML options block
                j += 1
                while j < len(lines) and lines[j].strip() != "---":
                    j += 1
                j += 1
                options = True
            while j < len(lines) and lines[j].startswith(":") and ":" in lines[j][1:]:
                j += 1  # `:tags: [...]` options
                options = True
            if options and j < len(lines) and not lines[j].strip():
                j += 1  # the blank line after the options
            starts.append(j + 1)  # 1-based
            i = j
        i += 1
    return starts


def lint(md: Path, line_length: int = LINE_LENGTH) -> list[str]:
    """Ruff's findings for a chapter, each as ``path.md:line:col: CODE message``."""
    notebook = jupytext.read(md)
    with tempfile.TemporaryDirectory() as tmp:
        nb_path = Path(tmp) / f"{md.stem}.ipynb"
        jupytext.write(notebook, nb_path)
        out = subprocess.run(
            [_ruff(), "check", "--no-cache", "--output-format", "json", "--config",
             str(ROOT / "pyproject.toml"), "--line-length", str(line_length),
             "--extend-ignore", "E402", str(nb_path)],
            capture_output=True, text=True, cwd=ROOT)
        nb = json.loads(nb_path.read_text())
    if out.returncode not in (0, 1):
        raise RuntimeError(out.stderr)
    findings = json.loads(out.stdout or "[]")
    code_index = {}  # notebook cell number (1-based, all cells) -> code cell number
    k = 0
    for i, cell in enumerate(nb["cells"], 1):
        if cell["cell_type"] == "code":
            code_index[i] = k
            k += 1
    starts = code_cell_lines(md)
    rel = md.relative_to(ROOT).as_posix()
    report = []
    for f in sorted(findings, key=lambda f: (f.get("cell") or 0, f["location"]["row"])):
        cell = f.get("cell")
        row = f["location"]["row"]
        if cell in code_index and code_index[cell] < len(starts):
            line = starts[code_index[cell]] + row - 1
            where = f"{rel}:{line}:{f['location']['column']}"
        else:
            where = f"{rel} cell {cell}, line {row}"
        report.append(f"{where}: {f['code']} {f['message']}")
    return report


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_chapter_code_is_lint_clean(source):
    report = lint(source)
    assert not report, f"{len(report)} findings (line length {LINE_LENGTH}):\n" + "\n".join(
        report)
