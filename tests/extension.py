"""The book's Sphinx extension modules (``_ext/``), imported for tests that need no build."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

EXT = Path(__file__).resolve().parent.parent / "_ext"


def load(name: str = "eit_pages"):
    """Import ``_ext/<name>.py`` (and what it imports from ``_ext``) without leaving
    ``_ext`` on ``sys.path``."""
    sys.path.insert(0, str(EXT))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(EXT))
