"""Seed invariance: re-execute chapters with another seed and compare their verdicts.

    python tools/seeds.py [CHAPTER.md ...] [--seed N] [--jobs J]

Every chapter is executed with ``EIT_SEED=N`` (default 1), which shifts every random stream
of the book (:mod:`eit.core.seeds`), into ``_build/seed-N/``; the committed notebooks are not
touched. Its verdict records are then compared with the committed ones by the rules of
:mod:`eit.verdicts.compare`: the same claims in the same order, the same outcome, scope and
kind, every exact value equal and every estimate in agreement with the committed one. A
verdict that a seed can flip rests on too few samples or a miscalibrated test (DESIGN.md
section 3). Exit status 1 when any chapter differs.

Even a book of stable records is not flip-free: each statistical record is re-decided alike
with its probability ``p`` (:mod:`eit.verdicts.stability`, at least 0.99), so a run of many
chapters flips ``sum(1 - p)`` outcomes on average. The summary prints that expectation and the
chance of no flip at all; a flipped record is printed with its own ``p``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from execute import book_root, chapter_sources, interruptible, output_path, relative, run_all  # noqa: E402

from eit.verdicts import stability  # noqa: E402
from eit.verdicts.compare import compare_records  # noqa: E402
from eit.verdicts.records import MIME_VERDICT  # noqa: E402


def records(path: Path) -> list[dict]:
    """The verdict records of an executed notebook, in order."""
    nb = json.loads(path.read_text())
    return [out["metadata"][MIME_VERDICT] for cell in nb["cells"]
            for out in cell.get("outputs", []) if MIME_VERDICT in out.get("metadata", {})]


def main(argv: list[str] | None = None) -> int:
    interruptible()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", type=Path, help="chapter .md files (default all)")
    parser.add_argument("--seed", type=int, default=1, help="the seed shift EIT_SEED (>= 1)")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 1)),
                        help="chapters executed in parallel (one thread each)")
    args = parser.parse_args(argv)
    if args.seed < 1:
        parser.error("--seed must be >= 1 (0 is the committed reference)")
    sources = [p.resolve() for p in args.chapters] or chapter_sources()
    out_dir = book_root() / "_build" / f"seed-{args.seed}"
    os.environ["EIT_SEED"] = str(args.seed)
    tally = {"problems": 0, "tolerated": 0, "different": [], "agree": []}

    def compare(source: Path) -> None:
        rel = relative(source)
        ref = records(source.with_suffix(".ipynb"))
        new = records(output_path(source, out_dir))
        result = compare_records(ref, new, str(rel.with_suffix("")))
        tally["tolerated"] += len(result.tolerated)
        agree = [stability.of_record(r) for r in ref]
        tally["agree"] += [a.probability for a in agree if a is not None]
        if result.ok:
            print(f"    same verdicts ({len(ref)})", flush=True)
            return
        tally["different"].append(rel)
        tally["problems"] += len(result.problems)
        print(f"    DIFFERENT verdicts in {rel}:", flush=True)
        for line in result.problems:
            print(f"        {line}", flush=True)
        for r, n, a in zip(ref, new, agree):
            if r["outcome"] != n["outcome"] and a is not None:
                print(f"        ({r['claim']}: its recorded re-run agreement is "
                      f"{a.probability:.4g})", flush=True)

    try:
        failed = run_all(sources, jobs=args.jobs, output_dir=out_dir, timeout=900, done=compare)
    except KeyboardInterrupt:
        return 130
    failed += tally["different"]
    problems, tolerated = tally["problems"], tally["tolerated"]
    print(f"seed {args.seed}: {len(sources) - len(failed)} of {len(sources)} chapters give the "
          f"same verdicts; {tolerated} estimates moved within the statistical tolerance"
          + (f"; {problems} differences" if problems else ""))
    agree = tally["agree"]
    print(f"the {len(agree)} statistical records compared predict "
          f"{sum(1 - p for p in agree):.2f} outcome flips on average; no flip with probability "
          f"{math.prod(agree):.2f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
