"""Re-execute chapters from their MyST source and refresh the committed notebooks.

    python tools/execute.py [CHAPTER.md ...] [--jobs N]

Each ``.md`` is converted with jupytext, executed with nbclient on this machine (GPU if
present) in its own folder, and written as the paired ``.ipynb`` with the outputs. The
notebook metadata ``eit`` records wall time, device, scale, date and library versions for the
status page. With no arguments every chapter under ``chapters/`` is executed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata as md
import json
import os
import signal
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIBRARIES = ("torch", "numpy", "scipy", "sympy", "matplotlib", "jupyter-book", "myst-nb",
             "nbval", "jupytext")
KERNEL = {"display_name": "Python 3", "language": "python", "name": "python3"}


def chapter_sources() -> list[Path]:
    return sorted(p for p in (ROOT / "chapters").rglob("*.md")
                  if "{code-cell}" in p.read_text() and ".ipynb_checkpoints" not in p.parts)


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


def execute(source: Path, timeout: int = 900, output_dir: Path | None = None
            ) -> tuple[str, float]:
    import jupytext
    import nbformat
    from nbclient import NotebookClient

    from eit.core import device

    nb = jupytext.read(source)
    nb.metadata["kernelspec"] = KERNEL
    nb.metadata.pop("jupytext", None)
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    start = time.perf_counter()
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(source.parent)}}).execute()
    wall = time.perf_counter() - start
    nb.metadata["eit"] = {
        "wall_time_s": round(wall, 1),
        "device": device.description(),
        "scale": device.scale(),
        "executed": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "python": sys.version.split()[0],
        "versions": {name: md.version(name) for name in LIBRARIES},
    }
    if output_dir is None:
        target = source.with_suffix(".ipynb")
    else:  # paper-scale runs never overwrite the committed (default-scale) notebooks
        target = output_dir / source.relative_to(ROOT).with_suffix(".ipynb")
        target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    return str(source.relative_to(ROOT)), wall


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    """Terminate the pool's worker processes and everything they started (the kernels)."""
    import psutil

    for proc in list(getattr(pool, "_processes", {}).values()):
        try:
            parent = psutil.Process(proc.pid)
            family = parent.children(recursive=True) + [parent]
        except psutil.NoSuchProcess:
            continue
        for member in family:
            try:
                member.kill()
            except psutil.NoSuchProcess:
                pass


def run_all(sources: list[Path], *, jobs: int, output_dir: Path | None, timeout: int,
            done=None) -> list[Path]:
    """Execute chapters in parallel, reporting progress; return those that failed.

    ``done(source)`` is called after each success. On Ctrl-C every worker and its kernel is
    stopped before the interrupt propagates, so nothing is left running.
    """
    failed: list[Path] = []
    total, finished = len(sources), 0
    pool = ProcessPoolExecutor(max_workers=jobs)
    try:
        futures = {pool.submit(execute, source, timeout, output_dir): source
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
            except Exception as error:  # report every failure, keep executing the others
                failed.append(source)
                print(f"[{finished}/{total}] FAILED {source.relative_to(ROOT)}: {error}"[:4000],
                      flush=True)
    except KeyboardInterrupt:
        print("interrupted: stopping the workers and their kernels", flush=True)
        _kill_workers(pool)
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return failed


def interruptible() -> None:
    """Turn Ctrl-C and SIGTERM into KeyboardInterrupt (even where a shell ignored SIGINT)."""
    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)


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
