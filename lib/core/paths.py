"""Where the book lives: the checkout under test, never wherever the library was installed.

The library is installed as a package (editable or not), so a path relative to its own files
may point into another checkout. The book's root is found from ``EIT_BOOK_ROOT`` (set by
``./book``), else by walking up from the working directory to the folder holding
``_toc.yml`` and ``chapters/``.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["book_root", "data_dir"]


def _is_root(path: Path) -> bool:
    return (path / "_toc.yml").is_file() and (path / "chapters").is_dir()


def book_root() -> Path:
    """The root folder of the book being built or tested.

    Raises
    ------
    FileNotFoundError
        If ``EIT_BOOK_ROOT`` is set but is not a book root, or if no folder above the working
        directory is one.
    """
    forced = os.environ.get("EIT_BOOK_ROOT")
    if forced:
        root = Path(forced).resolve()
        if not _is_root(root):
            raise FileNotFoundError(f"EIT_BOOK_ROOT={forced!r} has no _toc.yml and chapters/")
        return root
    here = Path.cwd().resolve()
    for path in (here, *here.parents):
        if _is_root(path):
            return path
    raise FileNotFoundError(
        f"no book root (a folder with _toc.yml and chapters/) above {here}; "
        "run from inside the checkout or set EIT_BOOK_ROOT")


def data_dir() -> Path:
    """The ``data/`` folder of :func:`book_root`."""
    return book_root() / "data"
