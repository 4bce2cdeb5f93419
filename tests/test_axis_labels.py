"""Axis labels, titles and legend entries are typeset with matplotlib's mathtext: no formula
syntax outside ``$...$`` in the label strings of the chapters and of ``eit.plotting``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import htmlcheck
import jupytext
import pytest

ROOT = Path(__file__).resolve().parent.parent
LABELS = {"xlabel", "ylabel", "title", "label", "set_xlabel", "set_ylabel", "set_title",
          "suptitle", "text"}
MATH = re.compile(r"\$[^$]*\$")


def _strings(node: ast.AST) -> list[str]:
    """The literal text of a string or f-string (its fields left out)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return ["".join(v.value if isinstance(v, ast.Constant) else " 0 " for v in node.values)]
    return []


def label_texts(source: str) -> list[tuple[int, str]]:
    """(line, text) of every label-like string argument in Python ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "attr", getattr(node.func, "id", ""))
        args = node.args[:1] if name in LABELS else []
        args += [k.value for k in node.keywords if k.arg in LABELS]
        for a in args:
            found += [(a.lineno, t) for t in _strings(a)]
    return found


def _sources() -> list[tuple[str, list[str]]]:
    """(file, its pieces of Python): each module of eit.plotting, each chapter's code cells."""
    out = [(p.relative_to(ROOT).as_posix(), [p.read_text()])
           for p in sorted((ROOT / "lib" / "plotting").glob("*.py"))]
    for md in sorted((ROOT / "chapters").glob("*/*.md")):
        cells = [c.source for c in jupytext.read(md).cells if c.cell_type == "code"]
        out.append((md.relative_to(ROOT).as_posix(), cells))
    return out


@pytest.mark.parametrize("name,sources", _sources(), ids=lambda x: x if isinstance(x, str) else "")
def test_axis_labels_write_formulas_as_mathtext(name, sources):
    bad = []
    for line, text in (t for s in sources for t in label_texts(s)):
        plain = MATH.sub(" ", text)
        kinds = [k for k, p in htmlcheck.CODE_MATH.items() if p.search(plain)]
        if kinds:
            bad.append(f"line {line}: {kinds} {text!r}")
    assert not bad, f"{name}: " + "; ".join(bad)


def test_the_label_check_finds_code_math_in_labels():
    source = ("ax.set(xlabel='layer l', ylabel='||h||^2')\n"
              "ax.set_title(f'width {n}, sqrt(n) units')\n"
              "ax.plot(x, y, label=r'$\\Vert h\\Vert^2$')\n")
    texts = [t for _, t in label_texts(source)]
    assert texts == ["layer l", "||h||^2", "width  0 , sqrt(n) units", r"$\Vert h\Vert^2$"]
    flagged = [t for t in texts
               if any(p.search(MATH.sub(" ", t)) for p in htmlcheck.CODE_MATH.values())]
    assert flagged == ["||h||^2", "width  0 , sqrt(n) units"]
