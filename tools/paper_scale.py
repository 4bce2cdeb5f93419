"""Run the papers' own sizes within a time budget, in a stated priority order, resumably.

    python tools/paper_scale.py [CHAPTER.md ...] [--budget SECONDS] [--list] [--force]
                                [--scale {paper,smoke}] [--device {auto,cpu,gpu}]
                                [--plan FILE] [--output-dir DIR] [--timeout SECONDS]

The plan (``tools/paper_scale.toml``) lists every chapter with a paper-scale path in priority
order, with the results it stores under ``data/``, its estimated seconds on a GPU and on the
CPU, and whether it needs a GPU. Chapters are run one at a time, in that order (restricted to
the chapters named, if any); a chapter is

* skipped as stored when all its results are already stored with provenance of this scale
  (so an interrupted run resumes where it stopped; ``--force`` runs them again);
* skipped when it needs a GPU and there is none;
* skipped for the budget when its estimate (GPU or CPU, whichever runs; at smoke scale the
  plan's ``smoke_s`` or else the wall time recorded in the committed notebook) does not fit
  in what is left of ``--budget`` (a running chapter is never cut short);
* otherwise executed with ``tools/execute.py`` (its workers and kernels die with this process;
  the notebook goes to ``_build/<scale>-scale/``, the committed one is not touched). The
  chapter saves its results itself, as it computes them, through
  ``eit.core.store.paper_scale_result``, so a result is never lost to a later failure.

A summary lists what was done, skipped and failed. Exit status 0, 1 when a chapter failed,
130 when interrupted. ``--list`` prints the plan and what a run would do, without running.
At smoke scale (``--scale smoke`` or ``EIT_SCALE=smoke``) the same path runs at tiny sizes and
results go to ``_build/smoke-data/``, never to ``data/``. Needs only the kernel stack
(nbclient, jupytext, ipykernel, nbformat) and the library, not jupyter-book.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from execute import book_root, interruptible, recorded_wall_time, relative, run_all  # noqa: E402

PLAN = ROOT / "tools" / "paper_scale.toml"
SMOKE_DEFAULT_S = 60.0  # a smoke run's estimate when the chapter records no wall time
DONE, STORED, BUDGET, NO_GPU, FAILED, INTERRUPTED = (
    "done", "skipped (stored)", "skipped (budget)", "skipped (needs a GPU)", "failed",
    "interrupted")
ORDER = (DONE, STORED, BUDGET, NO_GPU, FAILED, INTERRUPTED)


@dataclass(frozen=True)
class Entry:
    """One chapter of the plan."""

    source: Path
    results: tuple[str, ...]
    gpu_s: float
    cpu_s: float
    needs_gpu: bool
    note: str = ""
    smoke_s: float | None = None

    def estimate(self, gpu: bool, scale: str = "paper") -> float:
        """Seconds expected: at paper scale the plan's GPU or CPU estimate; at smoke scale
        ``smoke_s`` if given, else the wall time recorded in the committed notebook (tiny
        sizes cost about what the default scale costs)."""
        if scale == "smoke":
            if self.smoke_s is not None:
                return self.smoke_s
            return recorded_wall_time(self.source) or SMOKE_DEFAULT_S
        return self.gpu_s if gpu else self.cpu_s


def load_plan(path: Path = PLAN, root: Path | None = None) -> list[Entry]:
    """The plan's chapters in priority order, their sources resolved under ``root``."""
    root = book_root() if root is None else root
    with open(path, "rb") as f:
        data = tomllib.load(f)
    entries = []
    for i, item in enumerate(data.get("chapter", []), 1):
        where = f"{path}: chapter {i}"
        try:
            entry = Entry(source=(root / item["source"]).resolve(),
                          results=tuple(item["results"]), gpu_s=float(item["gpu_s"]),
                          cpu_s=float(item["cpu_s"]), needs_gpu=bool(item["needs_gpu"]),
                          note=str(item.get("note", "")),
                          smoke_s=None if "smoke_s" not in item else float(item["smoke_s"]))
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"{where}: needs source, results, gpu_s, cpu_s, needs_gpu ({err})"
                             ) from err
        if not entry.results or not all(isinstance(r, str) for r in entry.results):
            raise ValueError(f"{where}: results must be a non-empty list of result names")
        if min(entry.gpu_s, entry.cpu_s, entry.smoke_s or 0) < 0:
            raise ValueError(f"{where}: estimates must be >= 0 seconds")
        entries.append(entry)
    sources = [e.source for e in entries]
    if len(set(sources)) != len(sources):
        raise ValueError(f"{path}: a chapter is listed twice")
    return entries


def stored(name: str, scale: str) -> bool:
    """Whether result ``name`` is stored (verified) with provenance of ``scale``: in ``data/``
    at paper scale, in ``_build/smoke-data/`` at smoke scale."""
    from eit.core import store

    try:
        _, provenance = store.load_result_from(store.result_dir(), name)
    except (FileNotFoundError, store.DataError):
        return False
    return provenance.get("scale") == scale


def has_gpu(choice: str) -> bool:
    if choice != "auto":
        return choice == "gpu"
    from eit.core import device

    return device.device().type == "cuda"


def decide(entry: Entry, *, scale: str, gpu: bool, left: float, force: bool) -> str | None:
    """Why ``entry`` is skipped (one of the skip statuses), or None: run it."""
    if not force and all(stored(name, scale) for name in entry.results):
        return STORED
    if entry.needs_gpu and not gpu:
        return NO_GPU
    if entry.estimate(gpu, scale) > left:
        return BUDGET
    return None


def summary(rows: list[tuple[str, Entry, str]], budget: float, used: float, gpu: bool,
            scale: str = "paper") -> str:
    limit = "no budget" if budget == float("inf") else f"budget {budget:.0f} s"
    whose = "smoke run" if scale == "smoke" else "GPU" if gpu else "CPU"
    lines = [f"{scale}-scale summary ({limit}, {used:.0f} s used, estimates for the {whose}):"]
    for status, entry, detail in sorted(rows, key=lambda r: ORDER.index(r[0])):
        lines.append(f"  {status:<22} {relative(entry.source)}" + (f"  ({detail})" if detail
                                                                    else ""))
    counts = {s: sum(1 for r in rows if r[0] == s) for s in ORDER}
    lines.append("  " + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
    return "\n".join(lines)


def run_plan(plan: list[Entry], rows: list[tuple[str, Entry, str]], args: argparse.Namespace,
             *, out: Path, gpu: bool, start: float) -> int:
    """Run the plan, appending ``(status, entry, detail)`` to ``rows`` as each chapter ends
    (so that an interrupt keeps what was done); return the exit status."""
    status = 0
    for entry in plan:
        left = args.budget - (time.monotonic() - start)
        why = decide(entry, scale=args.scale, gpu=gpu, left=left, force=args.force)
        estimate = entry.estimate(gpu, args.scale)
        if why is not None:
            detail = (f"estimate {estimate:.0f} s > {max(left, 0):.0f} s left"
                      if why == BUDGET else "")
            rows.append((why, entry, detail))
            print(f"{why}: {relative(entry.source)}" + (f" ({detail})" if detail else ""),
                  flush=True)
            continue
        began = time.monotonic()
        try:
            failed = run_all([entry.source], jobs=1, output_dir=out, timeout=args.timeout)
        except KeyboardInterrupt:
            rows.append((INTERRUPTED, entry, f"after {time.monotonic() - began:.0f} s"))
            raise
        wall = time.monotonic() - began
        timing = f"{wall:.0f} s, estimate {estimate:.0f} s"
        absent = [name for name in entry.results if not stored(name, args.scale)]
        if failed:
            kept = [name for name in entry.results if name not in absent]
            rows.append((FAILED, entry, timing + (f"; stored {', '.join(kept)}" if kept else "")))
            status = 1
        elif absent:
            rows.append((FAILED, entry, f"{timing}; did not store {', '.join(absent)}"))
            status = 1
        else:
            rows.append((DONE, entry, timing))
    return status


def main(argv: list[str] | None = None) -> int:
    interruptible()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", type=Path,
                        help="chapter .md files of the plan (default: the whole plan)")
    parser.add_argument("--budget", type=float, default=float("inf"), metavar="SECONDS",
                        help="seconds: start a chapter only if its estimate fits in what is left")
    parser.add_argument("--list", action="store_true",
                        help="print the plan and what a run would do, without running")
    parser.add_argument("--force", action="store_true",
                        help="run chapters whose results are already stored")
    parser.add_argument("--scale", choices=("paper", "smoke"),
                        default="smoke" if os.environ.get("EIT_SCALE") == "smoke" else "paper",
                        help="paper (results in data/) or smoke (tiny sizes, results in "
                             "_build/smoke-data/)")
    parser.add_argument("--device", choices=("auto", "cpu", "gpu"), default="auto",
                        help="whose estimates to use and whether GPU-only chapters run "
                             "(default: detected)")
    parser.add_argument("--plan", type=Path, default=PLAN, help="the plan (TOML)")
    parser.add_argument("--output-dir", type=Path, default=None,
                        help="executed notebooks (default _build/<scale>-scale)")
    parser.add_argument("--timeout", type=int, default=7200, metavar="SECONDS",
                        help="seconds per cell")
    args = parser.parse_args(argv)
    if not args.budget >= 0:
        parser.error("--budget must be >= 0 seconds")

    os.environ["EIT_SCALE"] = args.scale
    root = book_root()
    os.environ.setdefault("EIT_BOOK_ROOT", str(root))  # where the chapters store results
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")
    try:
        plan = load_plan(args.plan, root)
    except (OSError, ValueError) as err:
        parser.error(str(err))
    if args.chapters:
        wanted = {p.resolve() for p in args.chapters}
        unknown = wanted - {e.source for e in plan}
        if unknown:
            parser.error(f"not in the plan {args.plan}: "
                         + ", ".join(str(p) for p in sorted(unknown)))
        plan = [e for e in plan if e.source in wanted]
    missing = [e.source for e in plan if not e.source.exists()]
    if missing:
        parser.error("chapter sources missing: " + ", ".join(map(str, missing)))
    out = (args.output_dir or root / "_build" / f"{args.scale}-scale").resolve()
    gpu = has_gpu(args.device)

    if args.list:
        left = args.budget
        print(f"plan {args.plan} at {args.scale} scale, estimates for the "
              f"{'smoke run' if args.scale == 'smoke' else 'GPU' if gpu else 'CPU'}"
              + ("" if args.budget == float("inf") else f", budget {args.budget:.0f} s") + ":")
        for i, entry in enumerate(plan, 1):
            why = decide(entry, scale=args.scale, gpu=gpu, left=left, force=args.force)
            if why is None:
                left -= entry.estimate(gpu, args.scale)
            smoke = (f", smoke {entry.estimate(gpu, 'smoke'):.0f} s" if args.scale == "smoke"
                     else "")
            print(f"{i:>3}. {relative(entry.source)}\n"
                  f"     results {', '.join(entry.results)}; GPU {entry.gpu_s:.0f} s, "
                  f"CPU {entry.cpu_s:.0f} s{smoke}{', needs a GPU' if entry.needs_gpu else ''}"
                  f"\n     would be: {why or 'run'}")
        return 0

    start = time.monotonic()
    rows: list[tuple[str, Entry, str]] = []
    try:
        status = run_plan(plan, rows, args, out=out, gpu=gpu, start=start)
    except KeyboardInterrupt:
        status = 130
    print(summary(rows, args.budget, time.monotonic() - start, gpu, args.scale), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
