"""The engines' benchmark file: read, pair repeats, and tabulate (``data/benchmarks/cpu.json``).

``tools/benchmark.py`` times every method of a workload in interleaved repeats and writes one row
per (workload, size, method) with the CPU seconds of each repeat and the random numbers drawn.
This module reads that file for the performance chapter: the rows by key, the ratios of paired
repeats (the repeats of two methods ran back to back, so their ratio cancels the machine's drift),
and the rows of the chapter's tables.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from .paths import data_dir

__all__ = ["Benchmark", "load", "fmt"]

#: the explicit methods and the exact engines, in the order the tables list them
METHODS = ("lean_loop", "vmap", "batched", "exact", "exact_vector", "rng", "rng_stream")


def fmt(x: float) -> str:
    """A time or rate to three significant digits, thousands separated from 100 on.

    Examples
    --------
    >>> fmt(12345.6), fmt(0.012345)
    ('12,346', '0.0123')
    """
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
        ``normals``, ``other_random``, and the size's ``width``, ``inputs`` and ``nets``.
    """

    provenance: dict
    protocol: dict
    rows: list[dict]
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

    def summary(self) -> str:
        """Two lines: the machine and the protocol, the versions and the total CPU time."""
        p, q, cpu = self.provenance, self.protocol, self.provenance.get("cpu", {})
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
                exact, rng = self.row(w, s, "exact"), self.row(w, s, "rng")
                rng_time = exact["normals"] / rng["normals"] * rng["median"]
                rows.append([w, s, fmt(exact["median"]), f"{exact['normals']:,}",
                             f"{exact['other_random']:,}",
                             f"{rng_time / exact['median']:.2f}"])
        return rows

    def normals_avoided(self, workload: str, size: str) -> float:
        """Normals of the batched path over all random numbers the exact engine draws."""
        exact = self.row(workload, size, "exact")
        return (self.row(workload, size, "batched")["normals"]
                / (exact["normals"] + exact["other_random"]))


def load(path: str | Path | None = None) -> Benchmark:
    """Read a benchmark file (default ``data/benchmarks/cpu.json`` of the book)."""
    path = Path(path) if path is not None else data_dir() / "benchmarks" / "cpu.json"
    if not path.is_file():
        raise FileNotFoundError(f"path: no benchmark file at {path} (run tools/benchmark.py)")
    raw = json.loads(path.read_text())
    missing = {"provenance", "protocol", "rows"} - set(raw)
    if missing:
        raise ValueError(f"path: {path} lacks {sorted(missing)}")
    return Benchmark(raw["provenance"], raw["protocol"], raw["rows"])
