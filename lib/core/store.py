"""Results stored in ``data/``: arrays with provenance, and a checksum for every file.

Paper-scale runs save their results with :func:`save_result`; default-scale chapters read them
with :func:`load_result` and overlay them on their own measurements. The library writes the
provenance (name, checksum, seed, command, scale, device, date, versions); what a chapter adds
goes under ``meta`` and can never overwrite it. Every committed file of ``data/`` is listed in
``data/SHA256SUMS``, which :func:`verify` checks (the test suite runs it over the committed
tree): a corrupted, swapped or unlisted file fails with a message naming it.
:func:`load_result` checks the same manifest for the arrays *and* their provenance, and can
check the provenance against what the caller expects (scale, seed, command); a result saved at
the paper's scale is never replaced by one saved at another scale unless ``replace=True``.

Writes are atomic (a unique temporary file in the same folder, then :func:`os.replace`) and
serialized per folder by an advisory lock, so that parallel workers saving into one folder
never corrupt a result or the manifest; a save validates everything before it writes, so a
refused save leaves nothing behind.

``data/`` is the folder of the checkout being tested (:func:`eit.core.paths.data_dir`), never
a path relative to the installed library. In smoke mode (``EIT_SCALE=smoke``: the paper-scale
code path at tiny sizes) results go to ``_build/smoke-data/`` instead, so a test never writes
into ``data/``. Outside a checkout (a downloaded notebook, Colab) there is no book root: results
are then read (never written) from the copy of ``data/`` installed with the package
(``eit._data``, see pyproject.toml), checked against its ``SHA256SUMS`` like the checkout's.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import importlib.metadata as md
import io
import json
import os
import re
import sys
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from . import provenance as _prov
from .device import SCALES, description, paper_path
from .device import scale as current_scale
from .paths import book_root, data_dir
from .seeds import seed_offset
from .validate import nonnegative_int

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
    if current_scale() == "smoke":
        return book_root() / "_build" / "smoke-data"
    return data_dir()


def _paths(name: str, root: Path) -> tuple[Path, Path]:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"name must be a lowercase relative path like 'part/result', got {name!r}")
    return root / f"{name}.npz", root / f"{name}.json"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


try:  # an advisory lock per folder (POSIX); threads of one process also share _THREAD_LOCK
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: threads are still serialized
    fcntl = None
_THREAD_LOCK = threading.RLock()


@contextlib.contextmanager
def _locked(root: Path, *, shared: bool = False) -> Iterator[None]:
    """Hold the lock of the folder ``root`` (exclusive to write, shared to read)."""
    with contextlib.ExitStack() as stack:
        if not shared:
            stack.enter_context(_THREAD_LOCK)
        if fcntl is not None and root.is_dir():
            fd = os.open(root, os.O_RDONLY)
            stack.callback(os.close, fd)
            fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
            stack.callback(fcntl.flock, fd, fcntl.LOCK_UN)
        yield


def _stage(path: Path, data: bytes) -> str:
    """Write ``data`` to a unique temporary file next to ``path``; return its name."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def _atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (a unique temporary file, then a rename)."""
    _atomic_write_all((path, data))


def _atomic_write_all(*pairs: tuple[Path, bytes]) -> None:
    """Write each ``(path, data)`` atomically: every file is staged before any is replaced."""
    staged = []
    try:
        for path, data in pairs:
            staged.append((_stage(path, data), path))
        while staged:
            tmp, path = staged[0]
            os.replace(tmp, path)
            staged.pop(0)
    finally:
        for tmp, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


@functools.cache
def _versions() -> dict[str, str]:
    return {k: md.version(k) for k in ("torch", "numpy", "scipy", "sympy")}


def _json_meta(meta) -> dict:
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise TypeError(f"meta must be a dict, got {type(meta).__name__}")

    def keys(value, where: str) -> None:  # JSON would turn other keys into strings silently
        if isinstance(value, dict):
            for k, item in value.items():
                if not isinstance(k, str):
                    raise TypeError(f"{where} has the key {k!r}: keys must be strings")
                keys(item, f"{where}[{k!r}]")
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                keys(item, f"{where}[{i}]")

    keys(meta, "meta")
    try:
        return json.loads(json.dumps(meta, allow_nan=False))
    except (TypeError, ValueError) as err:
        raise ValueError(f"meta must hold JSON values only (finite numbers, strings, lists, "
                         f"dicts with str keys): {err}") from err


def save_result(name: str, arrays: dict, *, seed: int, command: str,
                meta: dict | None = None, replace: bool = False) -> Path:
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
    replace : bool
        Allow replacing a stored result whose provenance says it was computed at the paper's
        scale by one computed at another scale (default False: refused).

    Returns
    -------
    Path
        The ``.npz`` written. The manifest ``SHA256SUMS`` of the folder is updated.

    Raises
    ------
    ValueError, TypeError
        A bad argument (named); nothing is written.
    DataError
        The stored result is a paper-scale one and this run is not (without ``replace``), or
        its provenance is unreadable; nothing is written.
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
    meta = _json_meta(meta)
    if not isinstance(replace, bool):
        raise TypeError(f"replace must be a bool, got {type(replace).__name__}")
    root = result_dir()
    npz, info = _paths(name, root)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **clean)
    data = buffer.getvalue()
    here = current_scale()
    provenance = {
        "name": name, "sha256": hashlib.sha256(data).hexdigest(), "seed": seed,
        "eit_seed": seed_offset(), "command": command, "scale": here, "device": description(),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "python": sys.version.split()[0],
        "versions": dict(_versions()),
        "meta": meta,
    }
    text = (json.dumps(provenance, indent=2, allow_nan=False) + "\n").encode()
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root):
        if here != "paper" and info.exists() and not replace:
            stored = _provenance(name, info)
            if stored.get("scale") == "paper":
                raise DataError(
                    f"refusing to replace the paper-scale result {name!r} ({info}, command "
                    f"{stored.get('command')!r}) by one computed at scale {here!r}: run at "
                    "the paper's scale, or pass replace=True")
        npz.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write_all((npz, data), (info, text))
        _write_manifest(root)
    return npz


def stored_dir() -> Path:
    """Where stored results are read from: ``data/`` of the book root, else the copy of
    ``data/`` installed with the package (``eit._data``: a notebook run outside a clone).

    Raises
    ------
    FileNotFoundError
        If there is neither a book root nor an installed copy holding a manifest.
    """
    try:
        return data_dir()
    except FileNotFoundError as err:
        packaged = _packaged_data()
        if packaged is None:
            raise FileNotFoundError(f"{err}; nor is data/ installed with eit (eit._data)"
                                    ) from err
        return packaged


def _packaged_data() -> Path | None:
    """The ``data/`` installed with the package, or None (an install without it)."""
    from importlib.util import find_spec

    try:
        spec = find_spec("eit._data")
    except ModuleNotFoundError:
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if (Path(folder) / MANIFEST).is_file():
            return Path(folder)
    return None


def has_result(name: str) -> bool:
    """Whether ``data/<name>.npz`` and its provenance exist."""
    npz, info = _paths(name, stored_dir())
    return npz.exists() and info.exists()


def _provenance(name: str, info: Path) -> dict:
    try:
        provenance = json.loads(info.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DataError(f"the provenance {info} of result {name!r} is not valid JSON: {err}"
                        ) from err
    except OSError as err:
        raise DataError(f"the provenance {info} of result {name!r} cannot be read: {err}"
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


def load_result(name: str, *, scale: str | None = None, seed: int | None = None,
                command: str | None = None) -> tuple[dict[str, np.ndarray], dict]:
    """Arrays and provenance of ``data/<name>``, verified.

    The arrays and their provenance must both match their lines of ``data/SHA256SUMS``, the
    provenance must name this result and hold the arrays' checksum, and, where the caller
    gives them, its ``scale``, ``seed`` and ``command`` must be the expected ones.

    Parameters
    ----------
    name : str
        The result, e.g. ``"hanin-rolnick-2018/figure-1a"``.
    scale, seed, command : optional
        The provenance the caller expects (``"paper"``; the seed of the run; the command
        that reproduces it).

    Raises
    ------
    FileNotFoundError
        If the result is not stored.
    DataError
        If a file is unreadable, is not listed in the manifest or does not match its
        checksum, if only one of the two files exists, or if the provenance belongs to
        another result or differs from the expected one.
    """
    _expected(scale, seed, command)
    return load_result_from(stored_dir(), name, scale=scale, seed=seed, command=command)


def _expected(scale, seed, command) -> None:
    """Check the provenance a caller expects (each None or of its type)."""
    if scale is not None and scale not in SCALES:
        raise (TypeError if not isinstance(scale, str) else ValueError)(
            f"scale must be one of {SCALES} or None, got {scale!r}")
    if seed is not None:
        nonnegative_int("seed", seed)
    if command is not None and not isinstance(command, str):
        raise TypeError(f"command must be a str or None, got {type(command).__name__}")


def _root(root) -> Path:
    if root is None:
        return stored_dir()
    if not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"root must be a path, got {type(root).__name__}")
    return Path(root)


def _listed(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name != MANIFEST
                  and not p.name.endswith(".tmp") and not p.name.startswith(".")
                  and p.name != "README.md")


def _write_manifest(root: Path) -> Path:
    lines = [f"{_sha256(p)}  {p.relative_to(root).as_posix()}" for p in _listed(root)]
    path = root / MANIFEST
    _atomic_write(path, ("\n".join(lines) + "\n").encode() if lines else b"")
    return path


def update_manifest(root: Path | None = None) -> Path:
    """Rewrite ``SHA256SUMS`` of ``root`` (default ``data/``) from the files in it."""
    root = data_dir() if root is None else _root(root)   # never the installed copy
    with _locked(root):
        return _write_manifest(root)


def _manifest(root: Path) -> dict[str, str]:
    """The manifest of ``root`` as ``{relative path: sha256}``; a DataError names a bad one."""
    path = root / MANIFEST
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError as err:
        raise DataError(f"{path} is missing: the results of {root} cannot be verified") from err
    except (OSError, UnicodeDecodeError) as err:
        raise DataError(f"{path} cannot be read: {err}") from err
    listed = {}
    for i, line in enumerate(text.splitlines(), 1):
        digest, sep, rel = line.partition("  ")
        if not sep or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise DataError(f"{path}:{i}: not a `sha256  path` line: {line!r}")
        listed[rel] = digest
    return listed


def verify(root: Path | None = None) -> list[str]:
    """Check every file of ``root`` (default ``data/``): the manifest and each provenance.

    Returns
    -------
    list of str
        One line per problem (empty when everything verifies).
    """
    root = _root(root)
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
                _load(root, name, None)
            except (DataError, FileNotFoundError) as err:
                problems.append(str(err))
    return problems


def load_result_from(root: Path, name: str, *, scale: str | None = None,
                     seed: int | None = None, command: str | None = None
                     ) -> tuple[dict[str, np.ndarray], dict]:
    """:func:`load_result` from the folder ``root`` (verification, tests)."""
    root = Path(root)
    npz, info = _paths(name, root)
    if not (npz.exists() or info.exists()):
        raise FileNotFoundError(f"no stored result {name!r} in {root}")
    with _locked(root, shared=True):
        arrays, provenance_ = _load(root, name, _manifest(root),
                                    expect={"scale": scale, "seed": seed, "command": command})
    # registered with the cell that read them: a check names them in drawn_by
    return _prov.register(arrays), _prov.register(provenance_)


def _load(root: Path, name: str, listed: dict[str, str] | None, *,
          expect: dict | None = None) -> tuple[dict[str, np.ndarray], dict]:
    npz, info = _paths(name, root)
    have = npz.exists(), info.exists()
    if not any(have):
        raise FileNotFoundError(f"no stored result {name!r} in {root}")
    if not all(have):
        raise DataError(f"result {name!r} in {root} is partial: {info if have[0] else npz} "
                        "is missing")
    provenance = _provenance(name, info)
    for path in (npz, info) if listed is not None else ():
        rel = path.relative_to(root).as_posix()
        if rel not in listed:
            raise DataError(f"{path} has no checksum in {root / MANIFEST}")
        if _sha256(path) != listed[rel]:
            raise DataError(f"{path} does not match its checksum in {root / MANIFEST}: the "
                            "file changed after it was written")
    if _sha256(npz) != provenance["sha256"]:
        raise DataError(f"checksum mismatch for {npz}: the file changed after it was written")
    for key, want in (expect or {}).items():
        if want is not None and provenance.get(key) != want:
            raise DataError(f"result {name!r} ({info}) was stored with {key} "
                            f"{provenance.get(key)!r}, not the expected {want!r}: re-run "
                            "its paper-scale command, or check the caller's arguments")
    try:
        with np.load(npz, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as err:
        raise DataError(f"the arrays {npz} of result {name!r} cannot be read: {err}") from err
    return arrays, provenance


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
        ``(arrays, provenance)`` of ``data/<name>``, None when nothing is stored. Verified
        (:func:`load_result`): checksums, and a provenance of scale ``"paper"`` with this
        ``seed`` and the command of this ``chapter``.

    Raises
    ------
    DataError
        The stored result fails verification or was stored with another provenance.

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
    if not chapter.strip():
        raise ValueError("chapter must name the chapter's path under chapters/, got ''")
    seed = nonnegative_int("seed", seed)
    _json_meta(meta)                 # refused at every scale, not only where it is saved
    if not (isinstance(arrays, dict) or callable(arrays)):
        raise TypeError(f"arrays must be a dict of named arrays or a callable returning one, "
                        f"got {type(arrays).__name__}")
    command = f"./book paper-scale chapters/{chapter}"
    if paper_path():
        computed = arrays() if callable(arrays) else arrays
        if not isinstance(computed, dict):
            raise TypeError(f"arrays() must return a dict of named arrays, got "
                            f"{type(computed).__name__}")
        save_result(name, computed, seed=seed, command=command, meta=meta)
    npz, info = _paths(name, data_dir())
    if not (npz.exists() or info.exists()):
        return None
    return load_result(name, scale="paper", seed=seed, command=command)
