"""The claims ledger: every verdict recorded by the executed chapters.

Verdicts are read from the committed, executed notebooks (output metadata under
:data:`eit.verdicts.records.MIME_VERDICT`), never typed by hand, in the shape of
:meth:`eit.verdicts.records.Verdict.record` (``"schema": 2``; the first schema, without
scope or kind, was retired when every chapter moved to the verdict protocol, and a record
of it is refused). Each record also says where it comes from: ``chapter`` (the docname),
``chapter_title`` and ``part`` (the folder under ``chapters/``).
``python -m eit.verdicts.ledger out.json`` exports them, with the chapters' status.
Chapter status (execution time, device, library versions) is read from the notebook metadata
written by ``tools/execute.py``.
"""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..core.paths import book_root
from .records import CONSISTENCY, KINDS, MIME_VERDICT, OUTCOMES, SCOPES
from .stability import of_record

__all__ = ["chapter_notebooks", "normalize", "verdicts", "status", "summary", "export", "main"]

#: The fields of a normalized record, in order (schema 2, then where it comes from).
FIELDS = ("schema", "id", "paper", "claim", "statement", "outcome", "scope", "kind", "theory",
          "measured", "evidence", "correction", "criterion", "test", "values")


def _root(root) -> Path:
    """The book's root (default: this checkout's), a directory with a ``chapters`` folder."""
    if root is None:
        return book_root()
    if not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"root must be a path (str or os.PathLike) or None, got "
                        f"{type(root).__name__}")
    root = Path(root)
    if not (root / "chapters").is_dir():
        raise ValueError(f"root must be the book's root directory (with a chapters/ folder), "
                         f"got {str(root)!r}")
    return root


def chapter_notebooks(root: Path | None = None) -> list[Path]:
    """The executed chapter notebooks, in path order."""
    root = _root(root)
    return sorted(p for p in (root / "chapters").rglob("*.ipynb")
                  if ".ipynb_checkpoints" not in p.parts and "_build" not in p.parts)


def _title(nb: dict) -> str:
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return ""


def normalize(record: dict) -> dict:
    """One verdict record with every field of :data:`FIELDS`, in order.

    Raises
    ------
    ValueError
        If the record is not of schema 2, names an unknown outcome, scope or kind, or lacks a
        field.
    """
    if not isinstance(record, Mapping):
        raise TypeError(f"record must be a verdict record (a dict), got "
                        f"{type(record).__name__}")
    schema = record.get("schema")
    if schema != 2:
        raise ValueError(f"record must be a verdict record of schema 2, got schema {schema!r}: "
                         "re-execute the chapter")
    missing = {"id", "paper", "claim", "statement", "outcome", "scope", "kind"} - set(record)
    if missing:
        raise ValueError(f"record of schema 2 without {sorted(missing)}: {record!r}")
    out = {"schema": 2, "evidence": "", "correction": "", "criterion": {}, "test": {},
           "values": [], "theory": "", "measured": ""}
    out.update({k: record[k] for k in FIELDS if k in record})
    for name, allowed in (("outcome", OUTCOMES), ("scope", SCOPES), ("kind", KINDS)):
        if out[name] not in allowed:
            raise ValueError(f"record: {name} must be one of {allowed}, got {out[name]!r}")
    return {k: out[k] for k in FIELDS}


def verdicts(root: Path | None = None) -> list[dict]:
    """All verdict records, normalized to schema 2, with where each comes from.

    Added keys: ``chapter`` (docname), ``chapter_title`` and ``part`` (the chapter's
    folder), and ``stability`` (:func:`eit.verdicts.stability.of_record` as a dict: the
    re-run agreement probability and the distance to the nearest threshold; None for records
    that no random draw decides: exact records and consistency checks).
    """
    root = _root(root)
    records = []
    for path in chapter_notebooks(root):
        nb = json.loads(path.read_text())
        doc = path.relative_to(root).with_suffix("").as_posix()
        title = _title(nb)
        for cell in nb["cells"]:
            for out in cell.get("outputs", []):
                rec = out.get("metadata", {}).get(MIME_VERDICT)
                if rec is not None:
                    rec = normalize(rec)
                    stab = of_record(rec)
                    records.append({**rec, "chapter": doc, "chapter_title": title,
                                    "part": path.parent.name,
                                    "stability": None if stab is None else stab.record()})
    return records


def summary(records: list[dict]) -> dict:
    """Counts by outcome for tests and exact checks; consistency checks counted apart.

    Returns ``{"total", "consistency", "outcomes": {outcome: n}}``; a consistency check is never
    counted under its outcome (it cannot fail, so it confirms nothing).
    """
    if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Sequence):
        raise TypeError(f"records must be a list of verdict records, got "
                        f"{type(records).__name__}")
    for i, r in enumerate(records):
        if not isinstance(r, Mapping):
            raise TypeError(f"records[{i}] must be a verdict record (a dict), got "
                            f"{type(r).__name__}")
        for name, allowed in (("kind", KINDS), ("outcome", OUTCOMES)):
            if r.get(name) not in allowed:
                raise ValueError(f"records[{i}][{name!r}] must be one of {allowed}, got "
                                 f"{r.get(name)!r}")
    checked = [r for r in records if r["kind"] != CONSISTENCY]
    counts = Counter(r["outcome"] for r in checked)
    return {"total": len(records), "consistency": len(records) - len(checked),
            "outcomes": {o: counts[o] for o in OUTCOMES}}


def status(root: Path | None = None) -> list[dict]:
    """Per chapter: execution wall time, device and library versions of the committed outputs.

    Also ``verdicts``: the chapter's counts (:func:`summary`) and ``part``.
    """
    root = _root(root)
    by_chapter: dict[str, list[dict]] = {}
    for r in verdicts(root):
        by_chapter.setdefault(r["chapter"], []).append(r)
    rows = []
    for path in chapter_notebooks(root):
        nb = json.loads(path.read_text())
        meta = nb.get("metadata", {}).get("eit", {})
        doc = path.relative_to(root).with_suffix("").as_posix()
        rows.append({"chapter": doc, "title": _title(nb), "part": path.parent.name, **meta,
                     "verdicts": summary(by_chapter.get(doc, []))})
    return rows


def export(root: Path | None = None) -> dict:
    """The ledger as one JSON-ready dict: ``{"schema", "verdicts", "status"}``."""
    root = _root(root)
    return {"schema": 2, "verdicts": verdicts(root), "status": status(root)}


def main(argv: list[str] | None = None) -> None:
    """Write the ledger of this checkout's book as JSON (``argv``: the command line, without
    the program's name; None reads ``sys.argv``)."""
    if argv is not None and (isinstance(argv, (str, bytes)) or not isinstance(argv, Sequence)
                             or not all(isinstance(a, str) for a in argv)):
        raise TypeError(f"argv must be a list of str (the command-line arguments) or None, "
                        f"got {argv!r}")
    parser = argparse.ArgumentParser(description="Export the claims ledger as JSON.")
    parser.add_argument("output", nargs="?", default="-", help="file to write (default stdout)")
    args = parser.parse_args(argv)
    text = json.dumps(export(), indent=2, ensure_ascii=False)
    if args.output == "-":
        print(text)
    else:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(text + "\n")


if __name__ == "__main__":
    main()
