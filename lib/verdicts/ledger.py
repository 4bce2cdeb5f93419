"""The claims ledger: every verdict recorded by the executed chapters.

Verdicts are read from the committed, executed notebooks (output metadata under
:data:`eit.verdicts.checks.MIME`), never typed by hand.
``python -m eit.verdicts.ledger out.json`` exports them.
Chapter status (execution time, device, library versions) is read from the notebook metadata
written by ``tools/execute.py``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..core.paths import book_root
from .checks import MIME


def chapter_notebooks(root: Path | None = None) -> list[Path]:
    """The executed chapter notebooks, in path order."""
    root = book_root() if root is None else root
    return sorted(p for p in (root / "chapters").rglob("*.ipynb")
                  if ".ipynb_checkpoints" not in p.parts and "_build" not in p.parts)


def _title(nb: dict) -> str:
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return ""


def verdicts(root: Path | None = None) -> list[dict]:
    """All verdict records, each with the chapter's docname and title added."""
    root = book_root() if root is None else root
    records = []
    for path in chapter_notebooks(root):
        nb = json.loads(path.read_text())
        doc = path.relative_to(root).with_suffix("").as_posix()
        for cell in nb["cells"]:
            for out in cell.get("outputs", []):
                rec = out.get("metadata", {}).get(MIME)
                if rec is not None:
                    records.append({**rec, "chapter": doc, "chapter_title": _title(nb)})
    return records


def status(root: Path | None = None) -> list[dict]:
    """Per chapter: execution wall time, device and library versions of the committed outputs."""
    root = book_root() if root is None else root
    rows = []
    for path in chapter_notebooks(root):
        nb = json.loads(path.read_text())
        meta = nb.get("metadata", {}).get("eit", {})
        rows.append({"chapter": path.relative_to(root).with_suffix("").as_posix(),
                     "title": _title(nb), **meta})
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Export the claims ledger as JSON.")
    parser.add_argument("output", nargs="?", default="-", help="file to write (default stdout)")
    args = parser.parse_args(argv)
    text = json.dumps({"verdicts": verdicts(), "status": status()}, indent=2,
                      ensure_ascii=False)
    if args.output == "-":
        print(text)
    else:
        Path(args.output).write_text(text + "\n")


if __name__ == "__main__":
    main()
