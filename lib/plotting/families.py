"""Figure scaffolding for families of curves: estimates with error bars, theory lines, and a
legend that never covers the data.

A chapter draws one curve per initialization or architecture; these helpers take the
:class:`~eit.verdicts.stats.Estimate` objects the verdicts use, so a figure shows exactly the
numbers that were tested.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..verdicts.stats import Estimate
from . import measured

__all__ = ["estimates", "log10_estimates", "legend_below"]

_LN10 = math.log(10)


def _checked(ests: Sequence[Estimate]) -> list[Estimate]:
    ests = list(ests)
    for i, e in enumerate(ests):
        if not isinstance(e, Estimate):
            raise TypeError(f"ests[{i}] must be an Estimate, got {type(e).__name__}")
    return ests


def estimates(ax, x, ests: Sequence[Estimate], *, label: str | None, **kw):
    """Estimates with ±2 SE error bars."""
    ests = _checked(ests)
    return measured(ax, x, [e.value for e in ests], [e.se for e in ests], label=label, **kw)


def log10_estimates(ax, x, ests: Sequence[Estimate], *, label: str | None, **kw):
    """Estimates of a *natural* logarithm (``stats.log_mean``), drawn in decades (±2 SE)."""
    ests = _checked(ests)
    return measured(ax, x, [e.value / _LN10 for e in ests], [e.se / _LN10 for e in ests],
                    label=label, **kw)


def legend_below(ax, *, ncol: int = 2, fontsize: float = 8, **kw):
    """A legend under the axes (outside the data), in ``ncol`` columns."""
    kw.setdefault("loc", "upper center")
    kw.setdefault("bbox_to_anchor", (0.5, -0.2))
    return ax.legend(ncol=ncol, fontsize=fontsize, **kw)
