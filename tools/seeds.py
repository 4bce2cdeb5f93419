"""Seed invariance: re-execute chapters with another seed and compare their verdicts.

    python tools/seeds.py [CHAPTER.md ...] [--seed N] [--jobs J]

Every chapter is executed with ``EIT_SEED=N`` (default 1), which shifts every random stream
of the book (:mod:`eit.core.seeds`), into ``_build/seed-N/``; the committed notebooks are not
touched. Its verdict records are then compared with the committed ones by the rules of
:mod:`eit.verdicts.compare`: the same claims in the same order, the same outcome, scope and
kind, every exact value equal and every estimate in agreement with the committed one. A
verdict that a seed can flip rests on too few samples or a miscalibrated test (DESIGN.md
section 3). Exit status 1 when any chapter differs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from execute import chapter_sources, execute  # noqa: E402

from eit.verdicts.compare import compare_records  # noqa: E402
from eit.verdicts.records import MIME_VERDICT  # noqa: E402


def records(path: Path) -> list[dict]:
    """The verdict records of an executed notebook, in order."""
    nb = json.loads(path.read_text())
    return [out["metadata"][MIME_VERDICT] for cell in nb["cells"]
            for out in cell.get("outputs", []) if MIME_VERDICT in out.get("metadata", {})]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", type=Path, help="chapter .md files (default all)")
    parser.add_argument("--seed", type=int, default=1, help="the seed shift EIT_SEED (>= 1)")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 1)),
                        help="chapters executed in parallel (one thread each)")
    args = parser.parse_args(argv)
    if args.seed < 1:
        parser.error("--seed must be >= 1 (0 is the committed reference)")
    sources = [p.resolve() for p in args.chapters] or chapter_sources()
    out_dir = ROOT / "_build" / f"seed-{args.seed}"
    os.environ["EIT_SEED"] = str(args.seed)
    failed, problems, tolerated = [], 0, 0
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(execute, s, 900, out_dir): s for s in sources}
        for future in as_completed(futures):
            source = futures[future]
            rel = source.relative_to(ROOT)
            try:
                future.result()
            except Exception as error:  # report every failure, keep going
                failed.append(rel)
                print(f"FAILED to execute {rel}: {error}"[:3000], flush=True)
                continue
            ref = records(source.with_suffix(".ipynb"))
            new = records(out_dir / rel.with_suffix(".ipynb"))
            result = compare_records(ref, new, str(rel.with_suffix("")))
            tolerated += len(result.tolerated)
            if result.ok:
                print(f"same verdicts  {rel} ({len(ref)} verdicts)", flush=True)
            else:
                failed.append(rel)
                problems += len(result.problems)
                print(f"DIFFERENT      {rel}:", flush=True)
                for line in result.problems:
                    print(f"    {line}", flush=True)
    print(f"seed {args.seed}: {len(sources) - len(failed)} of {len(sources)} chapters give the "
          f"same verdicts; {tolerated} estimates moved within the statistical tolerance"
          + (f"; {problems} differences" if problems else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
