"""Figure scaffolding for the engines' benchmark: CPU time per network against size."""

from __future__ import annotations

import statistics

from . import theory

__all__ = ["time_per_network"]

#: marker of each timed method; the generator limits are drawn as lines
MARKERS = {"lean_loop": "s", "vmap": "D", "batched": "o", "exact": "^", "exact_vector": "v"}
LIMITS = {"rng": "--", "rng_stream": ":"}


def time_per_network(ax, bench, workload: str, *, xlabel: str, title: str) -> None:
    """One panel: median CPU time per network of every method, bars from fastest to slowest.

    ``bench`` is an :class:`eit.core.benchmarks.Benchmark`; the x axis is the width of each
    size of ``workload``. The generator limits (time of the normals alone, fresh memory and
    reused buffers) are drawn as lines.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> from eit.core.benchmarks import Benchmark
    >>> rows = [dict(workload="w", size=f"d={d}", method=m, width=d, nets=2,
    ...              seconds=[1.0 * d, 2.0 * d], median=1.5 * d) for d in (10, 100)
    ...         for m in ("batched", "rng", "rng_stream")]
    >>> fig, ax = plt.subplots()
    >>> time_per_network(ax, Benchmark({}, {}, rows), "w", xlabel="d", title="w")
    """
    sizes = bench.sizes.get(workload)
    if not sizes:
        raise ValueError(f"workload: no rows for {workload!r}")
    xs = [first["width"] for first in sizes.values()]
    nets = [first["nets"] for first in sizes.values()]
    for m, marker in MARKERS.items():
        if (workload, next(iter(sizes)), m) not in bench.runs:
            continue
        t = [[x / k for x in bench.row(workload, s, m)["seconds"]] for s, k in zip(sizes, nets)]
        med = [statistics.median(ti) for ti in t]
        bars = [[a - min(ti) for a, ti in zip(med, t)], [max(ti) - a for a, ti in zip(med, t)]]
        ax.errorbar(xs, med, yerr=bars, marker=marker, ms=5, capsize=2, label=m)
    for m, ls in LIMITS.items():
        limit = [bench.row(workload, s, m)["median"] / k for s, k in zip(sizes, nets)]
        theory(ax, xs, limit, label=f"generator limit ({m})", ls=ls)
    ax.set(xscale="log", yscale="log", xlabel=xlabel, ylabel="CPU time per network (s)")
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.set_xticks([], minor=True)
    ax.legend(fontsize=8, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.18))
    ax.set_title(title, fontsize=10)
