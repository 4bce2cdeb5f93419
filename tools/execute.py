"""Re-execute chapters from their MyST source and refresh the committed notebooks.

    python tools/execute.py [CHAPTER.md ...] [--jobs N] [--output-dir DIR] [--timeout S]

Each ``.md`` is converted with jupytext, executed with nbclient on this machine (GPU if
present) in its own folder, and written as the paired ``.ipynb`` with the outputs. The
notebook metadata ``eit`` records wall time, device, scale, date and library versions for the
status page. With no arguments every chapter under ``chapters/`` is executed.

A run never loses a finished chapter to its bookkeeping, and an interrupted run stops:

* what the metadata records (versions, device, scale, Python, start time) is collected before
  the chapter runs, a missing package reading "not installed"; the notebook is written
  atomically (a temporary file in the same folder, then ``os.replace``);
* every process started here dies with its parent whatever the signal (on Linux
  ``PR_SET_PDEATHSIG``: the workers die with this process, each kernel with its worker), and a
  worker writes a notebook only while its original parent is alive, so nothing reaches disk
  after the user saw "Killed";
* kernels keep their connection files (which hold the kernel's key) in a private runtime
  folder, removed on every exit path: by this process on a normal exit or on SIGINT, SIGTERM
  or SIGHUP, and by a small janitor process when this one is killed outright.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import importlib.metadata as md
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIBRARIES = ("torch", "numpy", "scipy", "sympy", "matplotlib", "jupyter-book", "myst-nb",
             "nbval", "jupytext")
KERNEL = {"display_name": "Python 3", "language": "python", "name": "python3"}
NOT_INSTALLED = "not installed"
SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                if hasattr(signal, name))
_PR_SET_PDEATHSIG = 1
# The parent a worker must still have when it writes (set by the pool's initializer).
_PARENT_PID: int | None = None


class Orphaned(RuntimeError):
    """The process that started this run is gone: its result must not reach disk."""


def book_root() -> Path:
    """The book being executed: ``EIT_BOOK_ROOT`` (set by ``./book``; tests point it at a
    synthetic book) or else this checkout."""
    forced = os.environ.get("EIT_BOOK_ROOT")
    return Path(forced).resolve() if forced else ROOT


def chapter_sources() -> list[Path]:
    return sorted(p for p in (book_root() / "chapters").rglob("*.md")
                  if "{code-cell}" in p.read_text() and ".ipynb_checkpoints" not in p.parts)


def relative(source: Path) -> Path:
    """``source`` relative to the book's root (the path itself when it lies elsewhere)."""
    try:
        return source.resolve().relative_to(book_root())
    except ValueError:
        return source


def output_path(source: Path, output_dir: Path | None) -> Path:
    """Where the executed notebook of ``source`` goes: next to it, or under ``output_dir`` at
    its path relative to the book's root (its name alone when it lies outside the book)."""
    if output_dir is None:
        return source.with_suffix(".ipynb")
    rel = relative(source)
    return Path(output_dir) / (rel if not rel.is_absolute() else Path(rel.name)
                               ).with_suffix(".ipynb")


def recorded_wall_time(source: Path) -> float:
    """The wall time recorded in a chapter's committed notebook (0 when there is none)."""
    try:
        nb = json.loads(source.with_suffix(".ipynb").read_text())
        return float(nb["metadata"]["eit"]["wall_time_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0


def longest_first(sources: list[Path]) -> list[Path]:
    """Chapters by recorded wall time, longest first: with a few parallel jobs the slowest
    chapter then never starts last and holds up the end of the run."""
    return sorted(sources, key=lambda p: (-recorded_wall_time(p), str(p)))


# --- bookkeeping, collected before the long run ----------------------------------------------

def version(name: str) -> str:
    """The installed version of distribution ``name``, or "not installed" (never raises)."""
    try:
        return md.version(name)
    except Exception:  # PackageNotFoundError, or broken metadata: never fail the run
        return NOT_INSTALLED


def device_description() -> str:
    try:
        from eit.core import device

        return device.description()
    except Exception as error:  # the run itself will say what is wrong
        return f"unknown ({type(error).__name__}: {error})"[:200]


def run_metadata(facts: dict | None = None) -> dict:
    """What the notebook metadata ``eit`` records, except the wall time: collected before the
    chapter runs, so that nothing can fail after it. ``facts`` (device, scale, Python,
    versions), when given, were collected by the parent once for all its chapters; the start
    time is this chapter's."""
    facts = facts or {
        "device": device_description(),
        "scale": os.environ.get("EIT_SCALE", "default"),
        "python": sys.version.split()[0],
        "versions": {name: version(name) for name in LIBRARIES},
    }
    return {**facts, "executed": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")}


# --- dying with the parent -------------------------------------------------------------------

def _prctl() -> Callable[..., int] | None:
    """libc's ``prctl`` (Linux), looked up once, before any fork that will call it."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    return ctypes.CDLL(None, use_errno=True).prctl


def die_with_parent(parent: int, prctl: Callable[..., int] | None = None) -> None:
    """Have the operating system SIGKILL this process when its parent dies (Linux), and exit
    now if ``parent`` is already gone (it may have died before the request was made). Where
    the request fails, the worker's check of its parent before writing still holds."""
    prctl = prctl or _prctl()
    if prctl is not None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _worker_init(parent: int) -> None:
    """Initializer of the pool's workers: die with ``parent``; leave Ctrl-C to the parent,
    which stops the workers itself."""
    global _PARENT_PID
    _PARENT_PID = parent
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _kernel_preexec(worker: int) -> Callable[[], None]:
    """Run in the forked kernel before it execs: it dies with the worker that started it
    (``PR_SET_PDEATHSIG`` survives ``exec``), and gets back the default Ctrl-C handling."""
    prctl = _prctl()  # resolved here: the forked child only calls it

    def preexec() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        die_with_parent(worker, prctl)
    return preexec


def parent_alive(parent: int | None) -> bool:
    return parent is None or os.getppid() == parent


def write_atomically(text: str, target: Path, parent: int | None = None) -> None:
    """Write ``text`` to ``target`` through a temporary file in the same folder (a unique
    name), replaced onto ``target`` only while ``parent`` (when given) is still this
    process's parent; raise :class:`Orphaned` otherwise, leaving nothing behind."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        try:  # the mode a new file gets (mkstemp makes it private)
            mode = target.stat().st_mode & 0o777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        if not parent_alive(parent):
            raise Orphaned(f"the parent process {parent} is gone: {target} not written")
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# --- one chapter -----------------------------------------------------------------------------

def execute(source: Path, timeout: int = 900, output_dir: Path | None = None,
            facts: dict | None = None) -> tuple[str, float]:
    """Execute the chapter ``source`` and write its notebook; return its name and wall time.

    The write happens only when the run finished and the process that started this one is
    still its parent (a worker of :func:`run_all`), so a killed run leaves nothing.
    ``facts``: what :func:`run_metadata` collects, when the caller collected it already.
    """
    parent = _PARENT_PID if _PARENT_PID is not None else os.getppid()
    meta = run_metadata(facts)  # before the long run: nothing can fail after it
    target = output_path(source, output_dir)
    name = str(relative(source))

    import jupytext
    import nbformat
    from jupyter_core.paths import jupyter_runtime_dir
    from nbclient import NotebookClient
    from traitlets.config import Config

    nb = jupytext.read(source)
    nb.metadata["kernelspec"] = KERNEL
    nb.metadata.pop("jupytext", None)
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    # The kernel's connection file (it holds the kernel's key) goes to the runtime folder
    # (private to the run under run_all), not to a temporary file of /tmp.
    config = Config()
    config.KernelManager.connection_file = str(
        Path(jupyter_runtime_dir()) / f"kernel-{uuid.uuid4()}.json")
    start = time.perf_counter()
    NotebookClient(nb, timeout=timeout, kernel_name="python3", config=config,
                   resources={"metadata": {"path": str(source.parent)}}
                   ).execute(preexec_fn=_kernel_preexec(os.getpid()))
    wall = time.perf_counter() - start
    nb.metadata["eit"] = {"wall_time_s": round(wall, 1), **meta}
    write_atomically(nbformat.writes(nb) + "\n", target, parent)
    return name, wall


# --- many chapters ---------------------------------------------------------------------------

_JANITOR = """\
import shutil, sys, time
if sys.stdin.buffer.read() == b"":  # end of file without a word: the parent was killed
    time.sleep(0.5)                 # its workers and kernels die with it (PDEATHSIG)
    shutil.rmtree(sys.argv[1], ignore_errors=True)
"""


@contextlib.contextmanager
def private_runtime() -> Iterator[Path]:
    """A private Jupyter runtime folder (``JUPYTER_RUNTIME_DIR``) for the kernels of a run,
    removed on exit; a janitor process removes it when this process is killed outright."""
    path = Path(tempfile.mkdtemp(prefix="eit-execute-"))
    janitor = subprocess.Popen([sys.executable, "-I", "-S", "-c", _JANITOR, str(path)],
                               stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    previous = os.environ.get("JUPYTER_RUNTIME_DIR")
    os.environ["JUPYTER_RUNTIME_DIR"] = str(path)
    try:
        yield path
    finally:
        if previous is None:
            os.environ.pop("JUPYTER_RUNTIME_DIR", None)
        else:
            os.environ["JUPYTER_RUNTIME_DIR"] = previous
        shutil.rmtree(path, ignore_errors=True)
        try:
            janitor.communicate(b"done", timeout=10)
        except (subprocess.TimeoutExpired, OSError):
            janitor.kill()


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    """Kill the pool's worker processes and everything they started (the kernels), and wait
    until they are gone."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    try:
        import psutil
    except ImportError:  # the kernels die with their worker (PDEATHSIG)
        psutil = None
    family = []
    for proc in procs:
        if psutil is not None:
            with contextlib.suppress(psutil.Error):
                family += psutil.Process(proc.pid).children(recursive=True)
        with contextlib.suppress(OSError, ValueError):
            proc.kill()
    for member in family:
        with contextlib.suppress(psutil.Error):
            member.kill()
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.join(timeout=5)
    if psutil is not None:
        psutil.wait_procs(family, timeout=5)


@contextlib.contextmanager
def _signals_ignored() -> Iterator[None]:
    """Let a clean-up finish: a second Ctrl-C or SIGTERM does not cut it short."""
    old = {s: signal.signal(s, signal.SIG_IGN) for s in SIGNALS}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def run_all(sources: list[Path], *, jobs: int, output_dir: Path | None, timeout: int,
            done: Callable[[Path], None] | None = None) -> list[Path]:
    """Execute chapters in parallel, reporting progress; return those that failed.

    ``done(source)`` is called after each success. On Ctrl-C, SIGTERM or SIGHUP (through
    :func:`interruptible`) every worker and its kernel is stopped before the interrupt
    propagates, so nothing is left running; when this process is killed outright, they die
    with it.
    """
    failed: list[Path] = []
    total, finished = len(sources), 0
    facts = run_metadata()  # once for all chapters, before any runs
    facts.pop("executed")
    with private_runtime():
        pool = ProcessPoolExecutor(max_workers=jobs,
                                   mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_worker_init, initargs=(os.getpid(),))
        try:
            futures = {pool.submit(execute, source, timeout, output_dir, facts): source
                       for source in longest_first(sources)}
            print(f"executing {total} chapter(s), {jobs} at a time", flush=True)
            for future in as_completed(futures):
                source = futures[future]
                finished += 1
                try:
                    name, wall = future.result()
                    print(f"[{finished}/{total}] executed {name} in {wall:.1f} s", flush=True)
                    if done is not None:
                        done(source)
                except Exception as error:  # report every failure, execute the others
                    failed.append(source)
                    print(f"[{finished}/{total}] FAILED {relative(source)}: {error}"[:4000],
                          flush=True)
        except KeyboardInterrupt:
            with _signals_ignored():
                print("interrupted: stopping the workers and their kernels", flush=True)
                _kill_workers(pool)
                pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
    return failed


def interruptible() -> None:
    """Turn Ctrl-C, SIGTERM and SIGHUP into KeyboardInterrupt (even where a shell ignored
    SIGINT), so that every exit path stops the workers and removes the runtime folder."""
    def stop(signum, frame):
        raise KeyboardInterrupt

    for s in SIGNALS:
        signal.signal(s, stop)


def main(argv: list[str] | None = None) -> int:
    interruptible()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", type=Path, help="chapter .md files (default all)")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 1) // 2),
                        help="chapters executed in parallel")
    parser.add_argument("--output-dir", type=Path, default=None,
                        help="write executed notebooks here instead of next to the sources")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell")
    args = parser.parse_args(argv)
    if os.environ.get("EIT_SCALE") in ("paper", "smoke") and args.output_dir is None:
        parser.error("at paper (or smoke) scale give --output-dir: the committed notebooks hold "
                     "the default-scale outputs that nbval checks")
    sources = [p.resolve() for p in args.chapters] or chapter_sources()
    for p in sources:
        if p.suffix != ".md" or not p.exists():
            parser.error(f"not a chapter source: {p}")
    # one thread per chapter unless told otherwise: `./book` sets the same for `test`
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")
    out = args.output_dir.resolve() if args.output_dir else None
    try:
        failed = run_all(sources, jobs=args.jobs, output_dir=out, timeout=args.timeout)
    except KeyboardInterrupt:
        return 130
    if failed:
        print(f"{len(failed)} chapter(s) failed; their notebooks were not written")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
