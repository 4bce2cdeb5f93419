"""Results stored in ``data/``: arrays with provenance and a checksum.

Paper-scale runs (``EIT_SCALE=paper``, on a GPU) save their results with :func:`save_result`;
default-scale chapters read them with :func:`load_result`, which verifies the SHA-256 recorded
next to the arrays, and overlay them on their own measurements.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.metadata as md
import io
import json
import re
import sys
from pathlib import Path

import numpy as np

from .device import description, scale

DATA = Path(__file__).resolve().parent.parent / "data"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*(/[a-z0-9][a-z0-9_.-]*)*$")


def _paths(name: str, root: Path) -> tuple[Path, Path]:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"name must be a lowercase relative path like 'part/result', got {name!r}")
    return root / f"{name}.npz", root / f"{name}.json"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def save_result(name: str, arrays: dict[str, np.ndarray], *, seed: int, command: str,
                root: Path = DATA, **meta) -> Path:
    """Write ``data/<name>.npz`` and its provenance ``data/<name>.json`` (with the checksum)."""
    if not arrays or not all(isinstance(k, str) for k in arrays):
        raise ValueError("arrays must be a non-empty dict of named arrays")
    npz, info = _paths(name, root)
    npz.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **{k: np.asarray(a) for k, a in arrays.items()})
    npz.write_bytes(buffer.getvalue())
    provenance = {
        "name": name, "sha256": _sha256(npz), "seed": seed, "command": command,
        "scale": scale(), "device": description(),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "python": sys.version.split()[0],
        "versions": {k: md.version(k) for k in ("torch", "numpy", "scipy", "sympy")},
        **meta,
    }
    info.write_text(json.dumps(provenance, indent=2) + "\n")
    return npz


def has_result(name: str, root: Path = DATA) -> bool:
    npz, info = _paths(name, root)
    return npz.exists() and info.exists()


def load_result(name: str, root: Path = DATA) -> tuple[dict[str, np.ndarray], dict]:
    """Arrays and provenance of a stored result; raises if the checksum does not match."""
    npz, info = _paths(name, root)
    if not (npz.exists() and info.exists()):
        raise FileNotFoundError(f"no stored result {name!r} in {root}")
    provenance = json.loads(info.read_text())
    if _sha256(npz) != provenance.get("sha256"):
        raise ValueError(f"checksum mismatch for {npz}: the file changed after it was written")
    with np.load(npz) as f:
        return {k: f[k] for k in f.files}, provenance
