"""Figure scaffolding for Monte Carlo curves: means with error bars, survival functions.

Every function draws on a given Matplotlib axis in the book's style (:mod:`eit.plotting`) and
refuses infinite or NaN values (plot log-norms instead).
"""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = ["mean_band", "survival"]


def _np(a) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        a = a.detach().cpu().double().numpy()
    arr = np.asarray(a, dtype=float)
    if not np.isfinite(arr).all():
        raise ValueError("refusing to plot inf or NaN: track log-norms instead")
    return arr


def mean_band(ax, x, samples, *, dim: int = 0, floor: float | None = None, **kw):
    """The mean of ``samples`` along ``dim`` (the independent runs) with ±2 SE error bars.

    ``samples`` has one entry per x along the other dimension. With ``floor`` the means are
    clipped below at it (for log axes). Other keywords go to ``ax.errorbar``.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> _ = mean_band(ax, [1, 2], torch.tensor([[1.0, 2.0], [3.0, 4.0]]), label="runs")
    """
    s = _np(samples)
    if s.ndim != 2:
        raise ValueError(f"samples must be two-dimensional (runs x points), got {s.shape}")
    s = np.moveaxis(s, dim, 0)
    n = s.shape[0]
    if n < 2:
        raise ValueError("samples needs at least 2 runs for an error bar")
    m, se = s.mean(axis=0), s.std(axis=0, ddof=1) / math.sqrt(n)
    if floor is not None:
        m = np.maximum(m, floor)
    style = {"marker": "o", "ms": 3, "capsize": 2, **kw}
    return ax.errorbar(_np(x), m, yerr=2 * se, **style)


def survival(ax, samples, **kw):
    """The empirical survival function ``P(X >= x)`` of one-dimensional ``samples``."""
    s = np.sort(_np(samples).ravel())
    if s.size == 0:
        raise ValueError("samples must not be empty")
    return ax.plot(s, 1.0 - np.arange(s.size) / s.size, **kw)
