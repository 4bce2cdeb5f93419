"""The engines' benchmark files: read, pair repeats, and tabulate (``data/benchmarks/``).

``tools/benchmark.py`` times every method of a workload in interleaved repeats and writes one row
per (workload, size, method) with the seconds of each repeat and the random numbers drawn: CPU
time on one thread in ``cpu.json``; wall time on a GPU in ``cuda.json`` (its device mode), whose
rows add the work model's FLOP and bytes, the achieved rates, their fractions of the device's
peak and the share of the generator. This module reads those files for the performance chapter:
the rows by key, the ratios of paired repeats (the repeats of two methods ran back to back, so
their ratio cancels the machine's drift), and the rows of the chapter's tables. The CUDA file is
optional (:func:`load_cuda` gives None without it). ``op_counts.json`` (``tools/op_counts.py``)
holds the kernel launches and host synchronizations per layer of each engine, on the CPU's
path and on a device's (:func:`launch_rows`).
"""

from __future__ import annotations

import json
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .validate import finite_real

__all__ = ["Benchmark", "load", "load_cuda", "fmt", "launch_rows", "side_by_side_rows"]

#: the explicit methods and the exact engines, in the order the tables list them
METHODS = ("lean_loop", "vmap", "batched", "exact", "exact_vector", "rng", "rng_stream")


def fmt(x: float) -> str:
    """A time or rate to three significant digits, thousands separated from 100 on.

    Examples
    --------
    >>> fmt(12345.6), fmt(0.012345)
    ('12,346', '0.0123')
    """
    if isinstance(x, (np.integer, np.floating)):
        x = float(x)
    x = finite_real("x", x)        # a NaN or inf in a table is a bug upstream, never a cell
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def _shown(ratio: float, per_repeat: list[float]) -> str:
    return f"{ratio:.3g} [{min(per_repeat):.3g}, {max(per_repeat):.3g}]"


@dataclass(frozen=True)
class Benchmark:
    """The rows of a benchmark file, keyed by (workload, size, method).

    Attributes
    ----------
    provenance, protocol : dict
        As written by ``tools/benchmark.py`` (device, versions, date; threads, repeats).
    rows : list of dict
        One per (workload, size, method): ``seconds`` (per repeat), ``median``, ``samples``,
        ``normals``, ``other_random``, and the size's ``width``, ``inputs`` and ``nets``; in a
        device file also ``flops``, ``bytes``, ``flop_s``, ``byte_s``, ``flop_fraction``,
        ``byte_fraction`` and ``generator_fraction``.
    peak, budget : dict
        A device file's peak rates (and their source) and its budget (``complete``,
        ``skipped``); empty for the CPU file.
    """

    provenance: dict
    protocol: dict
    rows: list[dict]
    peak: dict = field(default_factory=dict)
    budget: dict = field(default_factory=dict)
    runs: dict = field(init=False, repr=False)

    def __post_init__(self) -> None:
        runs = {}
        for r in self.rows:
            key = (r["workload"], r["size"], r["method"])
            if key in runs:
                raise ValueError(f"rows: two rows for {key}")
            runs[key] = r
        object.__setattr__(self, "runs", runs)

    @property
    def sizes(self) -> dict[str, dict[str, dict]]:
        """workload -> size -> its first row (the size's width, inputs and nets), in file order."""
        out: dict[str, dict[str, dict]] = {}
        for r in self.rows:
            out.setdefault(r["workload"], {}).setdefault(r["size"], r)
        return out

    def row(self, workload: str, size: str, method: str) -> dict:
        """The row of one method at one size; ``KeyError`` naming the key if it was not run."""
        try:
            return self.runs[workload, size, method]
        except KeyError:
            raise KeyError(f"no benchmark row for {(workload, size, method)}") from None

    @property
    def wall(self) -> bool:
        """Whether the times are wall times of the device mode (else CPU times)."""
        return "total_wall_s" in self.protocol

    def summary(self) -> str:
        """Two lines: the machine and the protocol, the versions and the total time."""
        p, q, cpu = self.provenance, self.protocol, self.provenance.get("cpu", {})
        if self.wall:
            skipped = len(self.budget.get("skipped", ()))
            cut = "complete" if self.budget.get("complete", True) else "cut by the budget"
            peak = self.peak
            rates = (f"peak {peak['fp64_tensor_flop_s'] / 1e12:.3g} TFLOP/s float64, "
                     f"{peak['bytes_s'] / 1e12:.3g} TB/s" if peak.get("fp64_tensor_flop_s")
                     and peak.get("bytes_s") else "peak unknown")
            return (f"{p['device']}; {rates}; wall time, median of up to {q['repeats']} "
                    f"interleaved repeats after a warm-up\n"
                    f"torch {p['versions']['torch']}, {p['date']}; "
                    f"{q['total_wall_s']:.0f} s in all, {cut} ({skipped} methods or sizes "
                    "skipped)")
        return (f"{p['device']} ({cpu.get('model', '?')}, L3 {cpu.get('L3 cache', '?')}); "
                f"{q['threads']} thread, {q['repeats']} interleaved repeats\n"
                f"torch {p['versions']['torch']}, numpy {p['versions']['numpy']}, "
                f"{p['date']}; {q['total_cpu_s']:.0f} CPU s in all")

    def paired(self, workload: str, size: str, fast: str, slow: str
               ) -> tuple[float, list[float]]:
        """Time of ``slow`` over time of ``fast``: the ratio of medians, and of paired repeats.

        Examples
        --------
        >>> rows = [dict(workload="w", size="s", method=m, seconds=t, median=sorted(t)[1])
        ...         for m, t in (("a", [1.0, 2.0, 4.0]), ("b", [3.0, 4.0, 8.0]))]
        >>> Benchmark({}, {}, rows).paired("w", "s", "a", "b")
        (2.0, [3.0, 2.0, 2.0])
        """
        a = self.row(workload, size, fast)["seconds"]
        b = self.row(workload, size, slow)["seconds"]
        if len(a) != len(b):
            raise ValueError(f"{fast} and {slow} at {workload}/{size} have "
                             f"{len(a)} and {len(b)} repeats: they are not paired")
        return statistics.median(b) / statistics.median(a), [y / x for x, y in zip(a, b)]

    def paired_shown(self, workload: str, size: str, fast: str, slow: str) -> str:
        """:meth:`paired` as text: ratio of medians [range over the paired repeats]."""
        return _shown(*self.paired(workload, size, fast, slow))

    def timing_rows(self, workload: str) -> list[list]:
        """Rows (size, nets, method, median, range, samples per CPU s, normals) of a workload."""
        return [[s, first["nets"], m, fmt(r["median"]),
                 f"{fmt(min(r['seconds']))} to {fmt(max(r['seconds']))}",
                 fmt(r["samples"] / r["median"]), f"{r['normals']:,}"]
                for s, first in self.sizes[workload].items() for m in METHODS
                if (r := self.runs.get((workload, s, m)))]

    def exact_draw_rows(self) -> list[list]:
        """Rows for the exact engines: median, own draws, and the share their normals take.

        The share is the time the measured generator rate (``rng``) needs for the engine's
        normals, over the engine's time.
        """
        rows = []
        for w, points in self.sizes.items():
            for s in points:
                if (w, s, "exact") not in self.runs or (w, s, "rng") not in self.runs:
                    continue                        # not run there (a device file's skips)
                exact, rng = self.row(w, s, "exact"), self.row(w, s, "rng")
                rng_time = exact["normals"] / rng["normals"] * rng["median"]
                rows.append([w, s, fmt(exact["median"]), f"{exact['normals']:,}",
                             f"{exact['other_random']:,}",
                             f"{rng_time / exact['median']:.2f}"])
        return rows

    def device_rows(self, workload: str) -> list[list]:
        """Rows (size, nets, method, median ms, GFLOP/s, % of peak, GB/s, % of peak, share of
        the generator) of a device file's workload; '-' where the peak is unknown.

        Examples
        --------
        >>> row = dict(workload="w", size="s", method="vmap", nets=2, seconds=[0.002],
        ...            median=0.002, flop_s=3e12, flop_fraction=0.045, byte_s=1.2e12,
        ...            byte_fraction=0.25, generator_fraction=0.5)
        >>> Benchmark({}, {}, [row]).device_rows("w")
        [['s', 2, 'vmap', '2', '3,000', '4.5', '1,200', '25', '0.50']]
        """
        def pct(x):
            return "-" if x is None else f"{100 * x:.2g}"

        return [[s, first["nets"], m, fmt(1e3 * r["median"]), fmt(r["flop_s"] / 1e9),
                 pct(r.get("flop_fraction")), fmt(r["byte_s"] / 1e9),
                 pct(r.get("byte_fraction")),
                 "-" if r.get("generator_fraction") is None
                 else f"{r['generator_fraction']:.2f}"]
                for s, first in self.sizes[workload].items() for m in METHODS
                if (r := self.runs.get((workload, s, m)))]

    def normals_avoided(self, workload: str, size: str) -> float:
        """Normals of the batched path over all random numbers the exact engine draws."""
        exact = self.row(workload, size, "exact")
        return (self.row(workload, size, "batched")["normals"]
                / (exact["normals"] + exact["other_random"]))


def _path(path, default: str) -> Path:
    if path is None:   # the checkout's data/, or the copy installed with eit (no clone)
        from .store import stored_dir

        return stored_dir() / "benchmarks" / default
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or a path, got {type(path).__name__}")
    return Path(path)


def load(path: str | Path | None = None) -> Benchmark:
    """Read a benchmark file (default ``data/benchmarks/cpu.json`` of the book)."""
    path = _path(path, "cpu.json")
    if not path.is_file():
        raise FileNotFoundError(f"path: no benchmark file at {path} (run tools/benchmark.py)")
    raw = json.loads(path.read_text())
    missing = {"provenance", "protocol", "rows"} - set(raw)
    if missing:
        raise ValueError(f"path: {path} lacks {sorted(missing)}")
    return Benchmark(raw["provenance"], raw["protocol"], raw["rows"], raw.get("peak", {}),
                     raw.get("budget", {}))


def load_cuda(path: str | Path | None = None) -> Benchmark | None:
    """The GPU benchmark file (default ``data/benchmarks/cuda.json``), or None if absent.

    Written by ``python tools/benchmark.py --device cuda`` on a machine with a GPU.

    Examples
    --------
    >>> load_cuda("no/such/file.json") is None
    True
    """
    path = _path(path, "cuda.json")
    if not path.is_file():
        return None
    bench = load(path)
    if not bench.wall:
        raise ValueError(f"path: {path} is not a device-mode file (no protocol.total_wall_s)")
    return bench


def side_by_side_rows(cpu: Benchmark, cuda: Benchmark, workload: str) -> list[list]:
    """Rows (size, nets, method, CPU median s, GPU median s, CPU over GPU) for the sizes and
    methods measured in both files (same size label, same number of networks).

    The CPU time is the CPU time of one thread, the GPU time is wall time.

    Examples
    --------
    >>> a = Benchmark({}, {}, [dict(workload="w", size="s", method="vmap", nets=2,
    ...                             seconds=[1.0], median=1.0)])
    >>> b = Benchmark({}, {}, [dict(workload="w", size="s", method="vmap", nets=2,
    ...                             seconds=[0.01], median=0.01)])
    >>> side_by_side_rows(a, b, "w")
    [['s', 2, 'vmap', '1', '0.01', '100']]
    """
    for arg, bench in (("cpu", cpu), ("cuda", cuda)):
        if not isinstance(bench, Benchmark):
            raise TypeError(f"{arg} must be a Benchmark (load, load_cuda), got "
                            f"{type(bench).__name__}")
    if not isinstance(workload, str):
        raise TypeError(f"workload must be a str, got {type(workload).__name__}")
    rows = []
    for s, first in cpu.sizes.get(workload, {}).items():
        for m in METHODS:
            a, b = cpu.runs.get((workload, s, m)), cuda.runs.get((workload, s, m))
            if a is None or b is None or a.get("nets") != b.get("nets"):
                continue
            rows.append([s, first["nets"], m, fmt(a["median"]), fmt(b["median"]),
                         fmt(a["median"] / b["median"])])
    return rows


def launch_rows(path: str | Path | None = None) -> list[list]:
    """Rows (engine, CPU launches, device launches, vmap launches, device over vmap, host
    synchronizations on the device) per layer, from ``op_counts.json`` (default
    ``data/benchmarks/op_counts.json``, written by ``tools/op_counts.py``).

    Launches are ATen operations per layer (:func:`eit.core.dispatch_counts.per_layer`); the
    device's are counted on the simulated device of :mod:`eit.core.guard`, whose paths are
    CUDA's; vmap's are the one-network function of ``tools/benchmark.py`` under
    ``torch.func.vmap`` on the same workload.

    Examples
    --------
    >>> rows = launch_rows()
    >>> rows[0][0], len(rows[0])
    ('batched, one input (hr18)', 6)
    """
    path = _path(path, "op_counts.json")
    if not path.is_file():
        raise FileNotFoundError(f"path: no op-count file at {path} (run tools/op_counts.py)")
    raw = json.loads(path.read_text())
    if not isinstance(raw, dict) or not isinstance(raw.get("rows"), list):
        raise ValueError(f"path: {path} has no list of rows")
    out = []
    for r in raw["rows"]:
        cpu_, dev, vm = (finite_real(f"rows[{r.get('engine')!r}].{k}", r.get(k))
                         for k in ("cpu_launches", "device_launches", "vmap_launches"))
        syncs = finite_real(f"rows[{r.get('engine')!r}].device_syncs", r.get("device_syncs"))
        out.append([r["engine"], fmt(cpu_), fmt(dev), fmt(vm),
                    fmt(dev / vm) if vm > 0 else "-", fmt(syncs)])
    return out
