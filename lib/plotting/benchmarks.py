"""Figure scaffolding for the engines' benchmarks: time per network against size, on the CPU
and, side by side, on a GPU."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping

from . import theory

__all__ = ["side_by_side", "time_per_network"]

#: marker of each timed method; the generator limits are drawn as lines
MARKERS = {"lean_loop": "s", "vmap": "D", "batched": "o", "exact": "^", "exact_vector": "v"}
LIMITS = {"rng": "--", "rng_stream": ":"}


def _sizes(name: str, bench, workload) -> dict[str, dict]:
    """The sizes of ``workload`` in ``bench`` (a Benchmark), whose every row is checked: a
    positive int of networks and finite positive times (a log axis drops the others)."""
    from ..core.benchmarks import Benchmark

    if not isinstance(bench, Benchmark):
        raise TypeError(f"{name} must be an eit.core.benchmarks.Benchmark, got "
                        f"{type(bench).__name__}")
    if not isinstance(workload, str):
        raise TypeError(f"workload must be a str, got {type(workload).__name__}")
    sizes = bench.sizes.get(workload)
    if not sizes:
        raise ValueError(f"workload: no rows for {workload!r} in {name}")
    for (w, size, method), row in bench.runs.items():
        if w != workload:
            continue
        where = f"{name}: the row ({w!r}, {size!r}, {method!r})"
        nets = row.get("nets")
        if isinstance(nets, bool) or not isinstance(nets, int) or nets < 1:
            raise ValueError(f"{where} must have a positive int of nets, got {nets!r}")
        times = list(row.get("seconds") or []) + [row.get("median")]
        if not times[:-1] or not all(isinstance(t, (int, float)) and not isinstance(t, bool)
                                     and math.isfinite(t) and t > 0 for t in times):
            raise ValueError(f"{where} must have finite positive seconds and median, got "
                             f"{row.get('seconds')!r} and {row.get('median')!r}")
    return sizes


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
    sizes = _sizes("bench", bench, workload)
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


def side_by_side(axes, benches, workload: str, *, title: str | None = None) -> None:
    """One panel per device: median time per network of every method at every size.

    ``benches`` maps a panel's name (``"CPU"``, ``"GPU"``) to an
    :class:`eit.core.benchmarks.Benchmark` (the CPU file, the device file), ``axes`` has one
    axis per entry. The x axis lists the sizes of ``workload`` in each file (a device file
    has larger batches), the y axes are logarithmic and shared, so that the devices compare
    at a glance; the generator limit (``rng``) is a dashed line. The y label says which time
    it is: the CPU time of one thread, or wall time.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> from eit.core.benchmarks import Benchmark
    >>> rows = [dict(workload="w", size=f"d={d}", method=m, width=d, nets=2,
    ...              seconds=[1.0 * d, 2.0 * d], median=1.5 * d) for d in (10, 100)
    ...         for m in ("batched", "rng")]
    >>> fig, axes = plt.subplots(1, 2)
    >>> side_by_side(axes, {"CPU": Benchmark({}, {}, rows),
    ...                     "GPU": Benchmark({}, {"total_wall_s": 1.0}, rows)}, "w")
    >>> axes[1].get_ylabel()
    'wall time per network (s)'
    """
    if not isinstance(benches, Mapping):
        raise TypeError(f"benches must be a mapping of panel name -> Benchmark, got "
                        f"{type(benches).__name__}")
    benches = dict(benches)
    if not benches:
        raise ValueError("benches must hold at least one Benchmark")
    checked = {name: _sizes(f"benches[{name!r}]", bench, workload)
               for name, bench in benches.items()}
    axes = list(axes) if not hasattr(axes, "ravel") else list(axes.ravel())
    if len(axes) != len(benches):
        raise ValueError(f"axes: {len(axes)} axes for {len(benches)} benchmark files (benches)")
    lows, highs = [], []
    for ax, (name, bench) in zip(axes, benches.items()):
        sizes = checked[name]
        labels, nets = list(sizes), [first["nets"] for first in sizes.values()]
        xs = list(range(len(labels)))
        for m, marker in MARKERS.items():
            points = [(x, bench.row(workload, s, m)["seconds"], k)
                      for x, s, k in zip(xs, labels, nets) if (workload, s, m) in bench.runs]
            if not points:
                continue
            t = [[v / k for v in times] for _, times, k in points]
            med = [statistics.median(ti) for ti in t]
            bars = [[a - min(ti) for a, ti in zip(med, t)],
                    [max(ti) - a for a, ti in zip(med, t)]]
            ax.errorbar([p[0] for p in points], med, yerr=bars, marker=marker, ms=5,
                        capsize=2, label=m, ls="-" if len(points) > 1 else "none")
            lows.append(min(min(ti) for ti in t))
            highs.append(max(max(ti) for ti in t))
        limit = [(x, bench.row(workload, s, "rng")["median"] / k)
                 for x, s, k in zip(xs, labels, nets) if (workload, s, "rng") in bench.runs]
        if limit:
            theory(ax, [p[0] for p in limit], [p[1] for p in limit],
                   label="generator limit (rng)")
            lows.append(min(p[1] for p in limit))
            highs.append(max(p[1] for p in limit))
        clock = "wall time" if bench.wall else "CPU time"
        ax.set(yscale="log", ylabel=f"{clock} per network (s)")
        ax.set_xticks(xs, [f"{s}\n{k:,} nets" for s, k in zip(labels, nets)], fontsize=7,
                      rotation=30, ha="right")
        ax.set_title(name if title is None else f"{name}: {title}", fontsize=10)
        ax.legend(fontsize=7, ncol=2)
    if lows and highs:
        for ax in axes:
            ax.set_ylim(min(lows) / 2, max(highs) * 2)
