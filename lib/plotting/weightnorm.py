"""The constant K_n of weight-normalized layers against the fan-in (Arpit & Bengio 2019).

One panel on a logarithmic fan-in axis: the measured ``E||v||^2/||u||^2`` of weight-normalized
ReLU layers for several row laws (points with ±2 SE error bars, spread a little along the
axis so that they do not hide each other), the derived value ``K_n = 1``, and readings of the
printed formulas as curves over the fan-in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import sympy as sp

from ..core import validate as v
from ..verdicts.stats import Estimate
from .series import panels

__all__ = ["k_constant_figure"]

_STYLES = ({"color": "tab:red", "ls": ":"}, {"color": "tab:orange", "ls": "-."})


def _curve(name: str, expr, n: sp.Symbol, grid: list[int]) -> list[float]:
    """``expr`` (an expression in ``n`` alone) at every ``n`` of ``grid``, finite."""
    if not isinstance(expr, sp.Expr):
        raise TypeError(f"{name} must be a SymPy expression in n, got {type(expr).__name__}")
    if expr.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        raise ValueError(f"{name} must be finite, got {expr}")
    if not expr.free_symbols <= {n}:
        raise ValueError(f"{name} must depend on n = {n} alone, got the symbols "
                         f"{sorted(map(str, expr.free_symbols))}")
    out = []
    for g in grid:
        try:
            value = float(expr.subs(n, g))
        except (TypeError, ValueError):
            value = math.nan
        if not math.isfinite(value):
            raise ValueError(f"{name} is not a finite real number at {n} = {g}")
        out.append(value)
    return out


def k_constant_figure(dims: Sequence[int], measured: Mapping[str, Sequence],
                      readings: Mapping[str, sp.Expr], n: sp.Symbol, *, max_n: int = 500):
    """Draw the figure; returns ``(fig, axes)``.

    Parameters
    ----------
    dims : sequence of int
        The measured fan-ins n.
    measured : mapping str -> sequence of Estimate
        Row law -> one estimate of ``K_n`` per fan-in (at most three laws: markers o, s, ^).
    readings : mapping str -> sympy.Expr
        Label -> a reading of the printed ``K_n`` as an expression in ``n`` (at most two),
        drawn for n = 2..max_n.
    n : sympy.Symbol
        The fan-in symbol of ``readings``.
    max_n : int
        The largest fan-in of the curves.

    References
    ----------
    Arpit & Bengio (2019), Theorem 4, eqs. (20) and (171).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from eit.verdicts.stats import Estimate
    >>> n = sp.Symbol("n", positive=True)
    >>> fig, axes = k_constant_figure([2, 3], {"gaussian": [Estimate(1.0, 0.01, 9)] * 2},
    ...                               {"reading": 1 + 1 / n}, n, max_n=10)
    >>> len(axes)
    1
    """
    dims = v.widths("dims", dims)
    if not isinstance(measured, Mapping):
        raise TypeError(f"measured must be a mapping of row law -> estimates, got "
                        f"{type(measured).__name__}")
    if not 1 <= len(measured) <= 3:
        raise ValueError(f"measured must hold one to three row laws, got {len(measured)}")
    for law, est in measured.items():
        if isinstance(est, (str, bytes, Mapping)) or not isinstance(est, Sequence) \
                or not all(isinstance(e, Estimate) for e in est):
            raise TypeError(f"measured[{law!r}] must be a sequence of Estimate, got {est!r}")
        if len(est) != len(dims):
            raise ValueError(f"measured[{law!r}] must have one estimate per entry of dims "
                             f"({len(dims)}), got {len(est)}")
    if not isinstance(n, sp.Symbol):
        raise TypeError(f"n must be a SymPy Symbol, got {type(n).__name__}")
    if not isinstance(readings, Mapping):
        raise TypeError(f"readings must be a mapping of label -> SymPy expression, got "
                        f"{type(readings).__name__}")
    if len(readings) > 2:
        raise ValueError(f"readings takes at most two curves, got {len(readings)}")
    max_n = v.positive_int("max_n", max_n)
    if max_n < 2:
        raise ValueError(f"max_n must be >= 2 (the curves start at n = 2), got {max_n}")
    grid = list(range(2, max_n + 1))
    curves = {label: _curve(f"readings[{label!r}]", expr, n, grid)
              for label, expr in readings.items()}
    series = [("measured", f"measured, {law} rows", [d * (1 + 0.08 * (i - 1)) for d in dims],
               est, {"marker": marker})
              for i, ((law, est), marker) in enumerate(zip(measured.items(), "os^"))]
    series.append(("theory", r"derived: $K_n = 1$ (= eq. 20, $n$-sphere $S_n$)", [1, max_n],
                   [1, 1]))
    for (label, values), style in zip(curves.items(), _STYLES):
        series.append(("theory", label, grid, values, style))
    return panels(series, xlabel="fan-in $n$ (dimensions)",
                  ylabel=r"$\mathbb{E}\Vert v\Vert^2/\Vert u\Vert^2$ (dimensionless)",
                  xscale="log", legend_cols=2)
