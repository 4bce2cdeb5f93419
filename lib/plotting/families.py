"""Figure scaffolding for families of curves: estimates with error bars, theory lines, and a
legend that never covers the data.

A chapter draws one curve per initialization or architecture; these helpers take the
:class:`~eit.verdicts.stats.Estimate` objects the verdicts use, so a figure shows exactly the
numbers that were tested.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ..core import validate as v
from ..verdicts.stats import Estimate
from . import _np, measured

__all__ = ["estimates", "log10_estimates", "legend_below"]

_LN10 = math.log(10)
#: the largest font size a legend takes (points): beyond it no figure can hold the text
_MAX_FONT = 1000.0


def _checked(x, ests: Sequence[Estimate]) -> tuple[np.ndarray, list[Estimate]]:
    """``x`` (one finite value per estimate) and ``ests`` (Estimates), checked."""
    if isinstance(ests, (str, bytes, Mapping)) or not isinstance(ests, Iterable):
        raise TypeError(f"ests must be a sequence of Estimate, got {type(ests).__name__}")
    ests = list(ests)
    for i, e in enumerate(ests):
        if not isinstance(e, Estimate):
            raise TypeError(f"ests[{i}] must be an Estimate, got {type(e).__name__}")
    x = _np(x, "x")
    if x.shape != (len(ests),):
        raise ValueError(f"x must have one value per estimate of ests ({len(ests)}), got "
                         f"shape {x.shape}")
    return x, ests


def estimates(ax, x, ests: Sequence[Estimate], *, label: str | None, **kw):
    """Estimates with ±2 SE error bars.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> _ = estimates(ax, [1, 2], [Estimate(1.0, 0.1, 9), Estimate(2.0, 0.1, 9)], label="e")
    """
    x, ests = _checked(x, ests)
    return measured(ax, x, [e.value for e in ests], [e.se for e in ests], label=label, **kw)


def log10_estimates(ax, x, ests: Sequence[Estimate], *, label: str | None, **kw):
    """Estimates of a *natural* logarithm (``stats.log_mean``), drawn in decades (±2 SE)."""
    x, ests = _checked(x, ests)
    return measured(ax, x, [e.value / _LN10 for e in ests], [e.se / _LN10 for e in ests],
                    label=label, **kw)


def legend_below(ax, *, ncol: int = 2, fontsize: float = 8, **kw):
    """A legend under the axes (outside the data), in ``ncol`` columns."""
    ncol = v.positive_int("ncol", ncol)
    fontsize = v.positive_float("fontsize", fontsize)
    if fontsize > _MAX_FONT:
        raise ValueError(f"fontsize must be at most {_MAX_FONT} points, got {fontsize!r}")
    kw.setdefault("loc", "upper center")
    kw.setdefault("bbox_to_anchor", (0.5, -0.2))
    return ax.legend(ncol=ncol, fontsize=fontsize, **kw)
