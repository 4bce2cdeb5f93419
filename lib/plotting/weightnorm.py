"""The constant K_n of weight-normalized layers against the fan-in (Arpit & Bengio 2019).

One panel on a logarithmic fan-in axis: the measured ``E||v||^2/||u||^2`` of weight-normalized
ReLU layers for several row laws (points with ±2 SE error bars, spread a little along the
axis so that they do not hide each other), the derived value ``K_n = 1``, and readings of the
printed formulas as curves over the fan-in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import sympy as sp

from .series import panels

__all__ = ["k_constant_figure"]

_STYLES = ({"color": "tab:red", "ls": ":"}, {"color": "tab:orange", "ls": "-."})


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
    if not 1 <= len(measured) <= 3:
        raise ValueError(f"measured must hold one to three row laws, got {len(measured)}")
    if len(readings) > 2:
        raise ValueError(f"readings takes at most two curves, got {len(readings)}")
    grid = list(range(2, max_n + 1))
    series = [("measured", f"measured, {law} rows", [d * (1 + 0.08 * (i - 1)) for d in dims],
               est, {"marker": marker})
              for i, ((law, est), marker) in enumerate(zip(measured.items(), "os^"))]
    series.append(("theory", "derived: K_n = 1 (= eq. 20, n-sphere S_n)", [1, max_n],
                   [1, 1]))
    for (label, expr), style in zip(readings.items(), _STYLES):
        series.append(("theory", label, grid, [float(expr.subs(n, g)) for g in grid], style))
    return panels(series, xlabel="fan-in n (dimensions)",
                  ylabel="E||v||² / ||u||² (dimensionless)", xscale="log", legend_cols=2)
