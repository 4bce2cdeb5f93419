"""Results stored in ``data/``: arrays with provenance, and a checksum for every file.

Paper-scale runs save their results with :func:`save_result`; default-scale chapters read them
with :func:`load_result` and overlay them on their own measurements. The library writes the
provenance (name, checksum, seed, command, scale, device, date, versions); what a chapter adds
goes under ``meta`` and can never overwrite it. Every committed file of ``data/`` is listed in
``data/SHA256SUMS``, which :func:`verify` checks (the test suite runs it over the committed
tree): a corrupted, swapped or unlisted file fails with a message naming it.

``data/`` is the folder of the checkout being tested (:func:`eit.core.paths.data_dir`), never
a path relative to the installed library. In smoke mode (``EIT_SCALE=smoke``: the paper-scale
code path at tiny sizes) results go to ``_build/smoke-data/`` instead, so a test never writes
into ``data/``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.metadata as md
import io
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .device import description, paper_path, scale
from .paths import book_root, data_dir
from .seeds import seed_offset

__all__ = ["save_result", "load_result", "has_result", "result_dir", "verify", "update_manifest",
           "MANIFEST", "DataError", "paper_scale_result"]

MANIFEST = "SHA256SUMS"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*(/[a-z0-9][a-z0-9_.-]*)*$")
_PROVENANCE = ("name", "sha256", "seed", "command", "scale", "device", "date", "python",
               "versions")


class DataError(ValueError):
    """A stored result or a file of ``data/`` that fails verification."""


def result_dir() -> Path:
    """Where results are written: ``data/``, or ``_build/smoke-data/`` in smoke mode."""
    if scale() == "smoke":
        return book_root() / "_build" / "smoke-data"
    return data_dir()


def _paths(name: str, root: Path) -> tuple[Path, Path]:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"name must be a lowercase relative path like 'part/result', got {name!r}")
    return root / f"{name}.npz", root / f"{name}.json"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def save_result(name: str, arrays: dict, *, seed: int, command: str,
                meta: dict | None = None) -> Path:
    """Write ``<name>.npz`` and its provenance ``<name>.json`` into :func:`result_dir`.

    Parameters
    ----------
    name : str
        A lowercase relative path, e.g. ``"hanin-rolnick-2018/figure-1a"``.
    arrays : dict of str -> array_like
        The named arrays (finite numbers only).
    seed : int
        The seed the result was computed with (before the ``EIT_SEED`` shift, which is
        recorded too).
    command : str
        The command that reproduces the result.
    meta : dict, optional
        Further JSON-serializable facts (sizes, parameters); stored under ``"meta"``.

    Returns
    -------
    Path
        The ``.npz`` written. The manifest ``SHA256SUMS`` of the folder is updated.
    """
    if not isinstance(arrays, dict) or not arrays or not all(isinstance(k, str) for k in arrays):
        raise ValueError("arrays must be a non-empty dict of named arrays")
    clean = {}
    for key, value in arrays.items():
        arr = np.asarray(value)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"arrays[{key!r}] must be numeric, got dtype {arr.dtype}")
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            raise ValueError(f"arrays[{key!r}] contains inf or NaN")
        clean[key] = arr
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    if not isinstance(command, str) or not command.strip():
        raise ValueError(f"command must be a non-empty string, got {command!r}")
    if meta is not None and not isinstance(meta, dict):
        raise TypeError(f"meta must be a dict, got {type(meta).__name__}")
    root = result_dir()
    npz, info = _paths(name, root)
    npz.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **clean)
    _atomic_write(npz, buffer.getvalue())
    provenance = {
        "name": name, "sha256": _sha256(npz), "seed": seed, "eit_seed": seed_offset(),
        "command": command, "scale": scale(), "device": description(),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "python": sys.version.split()[0],
        "versions": {k: md.version(k) for k in ("torch", "numpy", "scipy", "sympy")},
        "meta": json.loads(json.dumps(meta or {})),
    }
    _atomic_write(info, (json.dumps(provenance, indent=2) + "\n").encode())
    update_manifest(root)
    return npz


def has_result(name: str) -> bool:
    """Whether ``data/<name>.npz`` and its provenance exist."""
    npz, info = _paths(name, data_dir())
    return npz.exists() and info.exists()


def _provenance(name: str, info: Path) -> dict:
    try:
        provenance = json.loads(info.read_text())
    except json.JSONDecodeError as err:
        raise DataError(f"the provenance {info} of result {name!r} is not valid JSON: {err}"
                        ) from err
    if not isinstance(provenance, dict):
        raise DataError(f"the provenance {info} of result {name!r} is not a JSON object")
    missing = [k for k in _PROVENANCE if k not in provenance]
    if missing:
        raise DataError(f"the provenance {info} of result {name!r} lacks {missing}")
    if provenance["name"] != name:
        raise DataError(f"{info} holds the provenance of {provenance['name']!r}, not of "
                        f"{name!r}: the files were swapped or renamed")
    return provenance


def load_result(name: str) -> tuple[dict[str, np.ndarray], dict]:
    """Arrays and provenance of ``data/<name>``, verified.

    Raises
    ------
    FileNotFoundError
        If the result is not stored.
    DataError
        If the provenance is unreadable or belongs to another result, or the checksum does
        not match the arrays.
    """
    return load_result_from(data_dir(), name)


def _listed(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name != MANIFEST
                  and not p.name.endswith(".tmp") and p.name != "README.md")


def update_manifest(root: Path | None = None) -> Path:
    """Rewrite ``SHA256SUMS`` of ``root`` (default ``data/``) from the files in it."""
    root = data_dir() if root is None else Path(root)
    lines = [f"{_sha256(p)}  {p.relative_to(root).as_posix()}" for p in _listed(root)]
    path = root / MANIFEST
    _atomic_write(path, ("\n".join(lines) + "\n").encode() if lines else b"")
    return path


def verify(root: Path | None = None) -> list[str]:
    """Check every file of ``root`` (default ``data/``): the manifest and each provenance.

    Returns
    -------
    list of str
        One line per problem (empty when everything verifies).
    """
    root = data_dir() if root is None else Path(root)
    manifest = root / MANIFEST
    if not manifest.exists():
        return [f"{manifest} is missing: run `python -m eit.core.store --update-manifest`"]
    listed = {}
    for i, line in enumerate(manifest.read_text().splitlines(), 1):
        digest, sep, rel = line.partition("  ")
        if not sep or len(digest) != 64:
            return [f"{manifest}:{i}: not a `sha256  path` line: {line!r}"]
        listed[rel] = digest
    problems = []
    present = {p.relative_to(root).as_posix(): p for p in _listed(root)}
    for rel in sorted(set(listed) - set(present)):
        problems.append(f"{rel} is listed in {MANIFEST} but missing")
    for rel, path in present.items():
        if rel not in listed:
            problems.append(f"{rel} has no checksum in {MANIFEST}")
        elif _sha256(path) != listed[rel]:
            problems.append(f"{rel} does not match its checksum in {MANIFEST}")
        if path.suffix == ".npz":
            name = rel[: -len(".npz")]
            try:
                load_result_from(root, name)
            except (DataError, FileNotFoundError) as err:
                problems.append(str(err))
    return problems


def load_result_from(root: Path, name: str) -> tuple[dict[str, np.ndarray], dict]:
    """:func:`load_result` from the folder ``root`` (verification, tests)."""
    npz, info = _paths(name, Path(root))
    if not (npz.exists() and info.exists()):
        raise FileNotFoundError(f"no stored result {name!r} in {root}")
    provenance = _provenance(name, info)
    if _sha256(npz) != provenance["sha256"]:
        raise DataError(f"checksum mismatch for {npz}: the file changed after it was written")
    with np.load(npz) as f:
        return {k: f[k] for k in f.files}, provenance


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Verify (or re-list) the files of data/.")
    parser.add_argument("--update-manifest", action="store_true",
                        help="rewrite data/SHA256SUMS from the files present")
    args = parser.parse_args(argv)
    if args.update_manifest:
        print(f"wrote {update_manifest()}")
        return 0
    problems = verify()
    for line in problems:
        print(line)
    print("data/ verifies" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())


def paper_scale_result(name: str, arrays: dict | Callable[[], dict], *, seed: int,
                       chapter: str, meta: dict | None = None
                       ) -> tuple[dict[str, np.ndarray], dict] | None:
    """Save ``arrays`` on the paper-scale path; return the stored ``(arrays, provenance)``.

    Parameters
    ----------
    name : str
        The result's name under ``data/``, e.g. ``"meterez-et-al-2024/figure-1"``.
    arrays : dict of str -> array_like, or a callable returning one
        What this run computed (saved only on the paper-scale path). A callable with no
        arguments is called only there, so that the paper-size computation never runs at the
        default scale.
    seed : int
        The seed of the run.
    chapter : str
        The chapter's path under ``chapters/``; the provenance records the command
        ``./book paper-scale chapters/<chapter>``.
    meta : dict, optional
        Further facts stored under the provenance's ``"meta"``.

    Returns
    -------
    tuple or None
        ``(arrays, provenance)`` of ``data/<name>`` (verified), None when nothing is stored.

    Examples
    --------
    >>> import os
    >>> os.environ["EIT_SCALE"] = "default"
    >>> paper_scale_result("no-such-part/no-such-result", {}, seed=0, chapter="x.md") is None
    True
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if not isinstance(chapter, str):
        raise TypeError(f"chapter must be a str, got {type(chapter).__name__}")
    if not (isinstance(arrays, dict) or callable(arrays)):
        raise TypeError(f"arrays must be a dict of named arrays or a callable returning one, "
                        f"got {type(arrays).__name__}")
    if paper_path():
        computed = arrays() if callable(arrays) else arrays
        if not isinstance(computed, dict):
            raise TypeError(f"arrays() must return a dict of named arrays, got "
                            f"{type(computed).__name__}")
        save_result(name, computed, seed=seed, command=f"./book paper-scale chapters/{chapter}",
                    meta=meta)
    return load_result(name) if has_result(name) else None
