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
import os
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", type=Path, help="chapter .md files (default all)")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 1) // 2),
                        help="chapters executed in parallel")
    parser.add_argument("--output-dir", type=Path, default=None,
                        help="write executed notebooks here instead of next to the sources")
    args = parser.parse_args(argv)
    if os.environ.get("EIT_SCALE") == "paper" and args.output_dir is None:
        parser.error("at paper scale give --output-dir: the committed notebooks hold the "
                     "default-scale outputs that nbval checks")
    sources = [p.resolve() for p in args.chapters] or chapter_sources()
    for p in sources:
        if p.suffix != ".md" or not p.exists():
            parser.error(f"not a chapter source: {p}")
    # one thread per chapter unless told otherwise: `./book` sets the same for `test`
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")
    failed = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(execute, source, 900, args.output_dir and args.output_dir.resolve()):
                   source for source in sources}
        for future in as_completed(futures):
            try:
                name, wall = future.result()
                print(f"executed {name} in {wall:.1f} s", flush=True)
            except Exception as error:  # report every failure, keep executing the others
                failed.append(futures[future])
                print(f"FAILED {futures[future].relative_to(ROOT)}: {error}"[:4000], flush=True)
    if failed:
        print(f"{len(failed)} chapter(s) failed; their notebooks were not written")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
