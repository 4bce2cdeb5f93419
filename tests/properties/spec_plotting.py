"""Property specs of ``eit.plotting`` (see ``harness.py``).

The plotting functions draw on a Matplotlib axis (``FREE``: it takes any axis) or make their
own figure; their result holds nothing numeric (``finite_result=False``), so the contract
leaves them one way to treat a NaN or an inf: refuse it, naming the argument (Matplotlib
would silently leave a gap). Every ``make`` closes the figures of the previous call, so that
the many calls of one test do not pile up open figures.

Structured arguments (mappings of panels to series, of layers to tensors, sequences of
estimates) get kinds built by :func:`at`: the mutations of a base kind applied to one value
deep inside a valid argument, plus the wrong types of the container itself.
"""

from __future__ import annotations

import copy
import math

import matplotlib
import numpy as np
import sympy as sp
import torch
from hypothesis import strategies as st

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from eit.core.benchmarks import Benchmark  # noqa: E402
from eit.models.jacobian_budget import Budget  # noqa: E402
from eit.plotting import (  # noqa: E402
    benchmarks,
    budget,
    curves,
    distortion,
    families,
    layer_ratios,
    residual_bounds,
    series,
    weightnorm,
)
from eit.verdicts.stats import Estimate, proportion  # noqa: E402
from properties.harness import (  # noqa: E402
    ARRAY,
    CHOICE,
    COUNT,
    FREE,
    INDEX,
    INTS,
    POSITIVE,
    REAL,
    SEQUENCE,
    UNIT,
    Kind,
    Spec,
)

F64 = torch.float64


# --- custom kinds ----------------------------------------------------------------------------

def _get(obj, path):
    for key in path:
        obj = obj[key]
    return obj


def _put(obj, path, value):
    """A copy of ``obj`` with the entry at ``path`` replaced (containers copied on the way)."""
    if not path:
        return value
    key, rest = path[0], path[1:]
    if isinstance(obj, dict):
        out = dict(obj)
        out[key] = _put(obj[key], rest, value)
        return out
    items = list(obj)
    items[key] = _put(items[key], rest, value)
    if isinstance(obj, list):
        return items
    return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)


def at(path, base: Kind, *, types=(None, "abc", 3), degenerate=()) -> Kind:
    """The mutations of ``base`` at ``path`` inside the argument, plus wrong types of the
    argument itself (``types``) and degenerate containers (``degenerate``)."""
    def mutate(data, valid):
        inner = base.mutate(data, _get(valid, path))
        out = {label: [_put(valid, path, bad) for bad in bads] for label, bads in inner.items()}
        out.setdefault("type", []).extend(copy.copy(t) for t in types)
        if degenerate:
            out.setdefault("degenerate", []).extend(copy.copy(d) for d in degenerate)
        return out
    return Kind(f"{base.name} at {path}", mutate)


def _records(data, valid):
    """A sequence of records (Estimate, Proportion): other types, an empty sequence."""
    valid = list(valid)
    return {"type": [None, "abc", 3, [*valid[:-1], "abc"], [*valid[:-1], 1.0]],
            "degenerate": [[]]}


def _labels(data, valid):
    """A sequence of tick labels: other types, one label too few."""
    return {"type": [None, 3], "degenerate": [list(valid)[:-1], []]}


def _marks(data, valid):
    """A boolean mask: other dtypes, a wrong shape."""
    m = np.asarray(valid)
    return {"type": ["abc", 3, m.astype(float), m.astype(int).tolist()], "shape": [m[None]]}


def _optional_real(data, valid):
    """A real number or None (a legitimate value here: the default)."""
    nonfinite = data.draw(st.sampled_from([math.nan, math.inf, -math.inf]), label="non-finite")
    return {"nonfinite": [nonfinite], "type": ["1.0", 1 + 2j, {"a": 1}]}


def _boolean(data, valid):
    return {"type": [None, "abc", 1, 1.5]}


def _names(data, valid):
    """A sequence of names (str)."""
    return {"type": [None, 3, [3], "abc"]}


def _symbol(data, valid):
    return {"nonfinite": [sp.nan, sp.oo], "type": [None, "abc", 3, sp.Integer(2)]}


def _expr(data, valid):
    """A SymPy expression: non-finite SymPy values, strings, None, other symbols."""
    bad = data.draw(st.sampled_from([sp.nan, sp.zoo, sp.oo, -sp.oo]), label="sympy non-finite")
    return {"nonfinite": [bad, valid + bad], "type": ["abc", None, [valid]],
            "sentinel": [valid + sp.Symbol("m"), 1 / (sp.Symbol("n", positive=True) - 2)]}


def _bench(data, valid):
    """A :class:`Benchmark`: other types, a non-finite or a negative time."""
    nan = data.draw(st.sampled_from([math.nan, math.inf, -math.inf]), label="non-finite")
    return {"type": [None, "abc", 3, valid.rows],
            "nonfinite": [_benchmark(seconds=nan), _benchmark(median=nan)],
            "sentinel": [_benchmark(seconds=-1.0), _benchmark(nets=0)]}


def _optional_mapping(data, valid):
    """An optional mapping (None is legitimate): other types, a missing entry."""
    key = next(iter(valid))
    return {"type": ["abc", 3, {key: 3}], "degenerate": [{}]}


RECORDS = Kind("records", _records)
LABELS = Kind("labels", _labels)
MARKS = Kind("marks", _marks)
OPTIONAL_REAL = Kind("optional real", _optional_real)
BOOL = Kind("bool", _boolean)
NAMES = Kind("names", _names)
SYMBOL = Kind("sympy symbol", _symbol)
EXPR = Kind("sympy expression", _expr)
BENCH = Kind("benchmark", _bench)
TITLES = Kind("titles", _optional_mapping)


# --- valid calls -----------------------------------------------------------------------------

_AXES: dict[int, list] = {}


def _axes(n: int = 1) -> list:
    """``n`` axes to draw on: they serve 20 calls (a new figure costs more than the call),
    then fresh ones replace them; the figures the functions made are closed on the way."""
    uses = _AXES.setdefault(n, [])
    if not uses or len(uses) > 20:
        plt.close("all")
        _AXES.clear()
        uses = _AXES.setdefault(n, [list(np.atleast_1d(plt.subplots(1, n)[1]))])
    uses.append(None)
    return uses[0]


def _ax():
    return _axes(1)[0]


def _benchmark(*, seconds: float = 1.0, median: float = 1.5, nets: int = 2,
               wall: bool = False) -> Benchmark:
    rows = [dict(workload="w", size=f"d={d}", method=m, width=d, nets=nets,
                 seconds=[seconds * d, 2.0 * d], median=median * d)
            for d in (10, 100) for m in ("batched", "rng", "rng_stream")]
    return Benchmark({}, {"total_wall_s": 1.0} if wall else {}, rows)


def _samples():
    return torch.tensor([[1.0, 2.0, 3.0], [1.5, 2.5, 2.0], [0.5, 1.0, 4.0], [1.0, 3.0, 3.5]],
                        dtype=F64)


def _est(values):
    return [Estimate(float(x), 0.1, 9) for x in values]


def _budget():
    plt.close("all")
    b = Budget(1.0, torch.zeros(3, dtype=F64), torch.ones(2, 3, dtype=F64),
               torch.tensor([[0.5, 0.7, 0.6], [1.0, 1.2, 0.9]], dtype=F64))
    over = {(2, "near", j): Estimate(0.5 + j, 0.1, 3) for j in range(2)}
    return {"depths": [1, 4], "runs": {(2, "far"): b, (2, "near"): b}, "over_d6": over,
            "over_d3": dict(over)}


def _series():
    return [("theory", "t", [1.0, 2.0, 3.0], [1.0, 1.5, 2.0]),
            ("measured", "m", [1.0, 2.0, 3.0], _est([1.0, 1.4, 2.1])),
            ("points", "p", [1.0, 2.0, 3.0], [0.9, 1.6, 1.9], [0.1, 0.1, 0.2]),
            ("counts", "c", [1.0, 2.0, 3.0], [proportion(0, 8), proportion(3, 8),
                                               proportion(8, 8)]),
            ("band", "b", [1.0, 2.0, 3.0], [1.0, 1.0, 1.0], [0.1, 0.2, 0.1], {"color": "r"}),
            ("range", "r", [1.0, 2.0, 3.0], [0.5, 0.6, 0.7], [1.5, 1.6, 1.7])]


def _distortion():
    plt.close("all")
    gen = torch.Generator().manual_seed(0)
    d = torch.rand(1, 20, dtype=F64, generator=gen) / 10 + 0.01
    return {"widths": [100], "delta": 0.05, "distortion": {"ReLU layer": d},
            "stored": {"ReLU layer": np.array([[0.03, 0.001]])},
            "titles": {"ReLU layer": "ReLU"}}


def _ratio_panels():
    plt.close("all")
    r = np.array([[1.0, 1.1, 0.9, 1.2], [1.0, 0.8, 1.1, 1.0], [0.9, 1.0, 1.3, 1.1]])
    return {"runs": {"He": {10: r}}, "ylabel": "ratio",
            "curves": {"He": [("theory", np.ones(3))]},
            "paper": {"He": {4060: (np.ones(3), np.full(3, 0.1))}}, "log_panels": ["He"]}


def _k_constant():
    plt.close("all")
    n = sp.Symbol("n", positive=True)
    return {"dims": [2, 3], "measured": {"gaussian": _est([1.0, 1.0])},
            "readings": {"reading": 1 + 1 / n}, "n": n, "max_n": 10}


SPECS = [
    # benchmarks
    Spec(benchmarks.time_per_network,
         lambda: {"ax": _ax(), "bench": _benchmark(), "workload": "w", "xlabel": "d",
                  "title": "w"},
         {"ax": FREE, "bench": BENCH, "workload": CHOICE, "xlabel": FREE, "title": FREE},
         finite_result=False),
    Spec(benchmarks.side_by_side,
         lambda: {"axes": _axes(2),
                  "benches": {"CPU": _benchmark(), "GPU": _benchmark(wall=True)},
                  "workload": "w", "title": "w"},
         {"axes": FREE, "benches": at(("CPU",), BENCH, degenerate=({},)),
          "workload": CHOICE, "title": FREE},
         finite_result=False),
    # budget
    Spec(budget.budget_panels, _budget,
         {"depths": INTS,
          "runs": at(((2, "near"), 3), ARRAY, degenerate=({},)),
          "over_d6": at(((2, "near", 1),), Kind("estimate", lambda d, v: {
              "type": [None, "abc", 1.0]}), degenerate=({},)),
          "over_d3": at(((2, "near", 0),), Kind("estimate", lambda d, v: {
              "type": [None, "abc", 1.0]}), degenerate=({},))},
         finite_result=False),
    # curves
    Spec(curves.mean_band,
         lambda: {"ax": _ax(), "x": [1.0, 2.0, 3.0], "samples": _samples(), "dim": 0,
                  "floor": 0.0},
         {"ax": FREE, "x": ARRAY, "samples": ARRAY, "dim": INDEX, "floor": OPTIONAL_REAL},
         finite_result=False),
    Spec(curves.survival,
         lambda: {"ax": _ax(), "samples": np.array([0.3, 1.2, 0.7, 2.0])},
         {"ax": FREE, "samples": ARRAY}, finite_result=False),
    Spec(curves.runs,
         lambda: {"ax": _ax(), "x": [1.0, 2.0, 3.0], "samples": _samples().T, "label": "r",
                  "floor": 0.5},
         {"ax": FREE, "x": ARRAY, "samples": ARRAY, "label": FREE, "floor": OPTIONAL_REAL},
         finite_result=False),
    Spec(curves.mean_shaded,
         lambda: {"ax": _ax(), "x": [1.0, 2.0, 3.0], "samples": _samples(), "dim": 0,
                  "alpha": 0.25},
         {"ax": FREE, "x": ARRAY, "samples": ARRAY, "dim": INDEX, "alpha": UNIT},
         finite_result=False),
    Spec(curves.mean_band_above,
         lambda: {"ax": _ax(), "samples": _samples(), "floor": 1e-3, "label": "gap",
                  "color": "tab:blue", "band_floor": 1e-16, "alpha": 0.2, "dim": 0},
         {"ax": FREE, "samples": ARRAY, "floor": POSITIVE, "label": FREE, "color": FREE,
          "band_floor": POSITIVE, "alpha": UNIT, "dim": INDEX}),
    Spec(curves.log_axis_at, lambda: {"ax": _ax(), "values": [4, 16, 64], "axis": "x"},
         {"ax": FREE, "values": SEQUENCE, "axis": CHOICE}, finite_result=False),
    Spec(curves.proportion_bars,
         lambda: {"ax": _ax(), "x": [1.0, 2.0, 3.0],
                  "props": [proportion(0, 8), proportion(3, 8), proportion(8, 8)]},
         {"ax": FREE, "x": ARRAY, "props": RECORDS}, finite_result=False),
    Spec(curves.proportion_panels,
         lambda: {"panels": {"a": [("s", [1e-2, 1e-1], [proportion(2, 4)] * 2,
                                    {"marker": "o"}),
                                   ("t", [1e-2, 1e-1], [proportion(1, 4)] * 2)]},
                  "xlabel": "rate", "ylabel": "fraction", "spread": 0.05},
         {"panels": at(("a", 0, 1), ARRAY, types=(None, "abc", 3, {"a": "abc"},
                                                   {"a": [("s", [1.0], ["abc"])]}),
                       degenerate=({},)),
          "xlabel": FREE, "ylabel": FREE, "spread": REAL},
         finite_result=False),
    Spec(curves.annotated_grid,
         lambda: {"ax": _ax(), "values": [[0.5, 1.0], [0.2, 0.7]], "xticklabels": ["a", "b"],
                  "yticklabels": [1, 2], "marks": [[False, True], [True, False]],
                  "digits": 2, "dark_below": 0.6},
         {"ax": FREE, "values": ARRAY, "xticklabels": LABELS, "yticklabels": LABELS,
          "marks": MARKS, "digits": INDEX, "dark_below": REAL},
         finite_result=False),
    # distortion
    Spec(distortion.tail_figure,
         lambda: {"eps": 0.3, "widths": [100, 200],
                  "measured": {"measured": [proportion(30, 1000), proportion(3, 1000)]},
                  "grid": [50, 60]},
         {"eps": POSITIVE, "widths": INTS,
          "measured": at(("measured",), RECORDS, degenerate=({},)), "grid": INTS},
         finite_result=False),
    Spec(distortion.distortion_figure, _distortion,
         {"widths": INTS, "delta": UNIT,
          "distortion": at(("ReLU layer",), ARRAY, degenerate=({},)),
          "stored": at(("ReLU layer",), ARRAY, types=("abc", 3), degenerate=({},)),
          "titles": TITLES},
         finite_result=False),
    # families
    Spec(families.estimates,
         lambda: {"ax": _ax(), "x": [1.0, 2.0], "ests": _est([1.0, 2.0]), "label": "e"},
         {"ax": FREE, "x": ARRAY, "ests": RECORDS, "label": FREE}, finite_result=False),
    Spec(families.log10_estimates,
         lambda: {"ax": _ax(), "x": [1.0, 2.0], "ests": _est([1.0, 2.0]), "label": "e"},
         {"ax": FREE, "x": ARRAY, "ests": RECORDS, "label": FREE}, finite_result=False),
    Spec(families.legend_below,
         lambda: {"ax": _labelled_ax(), "ncol": 2, "fontsize": 8.0},
         {"ax": FREE, "ncol": COUNT, "fontsize": POSITIVE}, finite_result=False),
    # layer_ratios
    Spec(layer_ratios.ratio_panels, _ratio_panels,
         {"runs": at(("He", 10), ARRAY, degenerate=({}, {"He": {}})), "ylabel": FREE,
          "curves": at(("He", 0, 1), ARRAY, types=("abc", 3, {"He": "abc"},
                                                     {"He": [("t",)]})),
          "paper": at(("He", 4060, 0), ARRAY, types=("abc", 3, {"He": {4060: 3}})),
          "log_panels": NAMES},
         finite_result=False),
    # residual_bounds
    Spec(residual_bounds.residual_bounds_figure,
         lambda: {"blocks": [1, 2], "cos_x1": [0.0, 1.0],
                  "measured": {"plain": [_est([1.3, 1.4]), _est([2.0, 2.5])]},
                  "max_blocks": 4},
         {"blocks": INTS, "cos_x1": SEQUENCE,
          "measured": at(("plain", 0), RECORDS, degenerate=({},)), "max_blocks": COUNT},
         finite_result=False),
    # series
    Spec(series.panels,
         lambda: {"content": {"a": _series()}, "xlabel": "x", "ylabel": "y",
                  "legend_cols": 3, "sharey": True},
         {"content": at(("a", 2, 3), ARRAY, types=(None, "abc", 3, {"a": "abc"},
                                                   {"a": [("bogus", "t", [1.0], [1.0])]}),
                        degenerate=({}, [])),
          "xlabel": FREE, "ylabel": FREE, "legend_cols": COUNT, "sharey": BOOL},
         finite_result=False),
    Spec(series.draw, lambda: {"ax": _ax(), "series": _series()},
         {"ax": FREE,
          "series": at((0, 3), ARRAY, types=(None, "abc", 3, ["abc"], [("theory", "t")],
                                              [("bogus", "t", [1.0], [1.0])],
                                              [("measured", "m", [1.0], [1.0])],
                                              [("counts", "c", [1.0], ["abc"])]))},
         finite_result=False),
    # weightnorm
    Spec(weightnorm.k_constant_figure, _k_constant,
         {"dims": INTS, "measured": at(("gaussian",), RECORDS, degenerate=({},)),
          "readings": at(("reading",), EXPR), "n": SYMBOL, "max_n": COUNT},
         finite_result=False),
]


def _labelled_ax():
    plt.close("all")
    _AXES.clear()
    ax = plt.subplots()[1]
    ax.plot([0, 1], [0, 1], label="a line")
    return ax
