"""Least-squares slopes with standard errors: of samples, and of independent estimates.

A law in depth or width is often a straight line on some scale (``log10`` of a learning rate
against depth, a log time constant against log width); its slope is the statistic a verdict
tests. Two cases:

* :func:`sample_slope`: a least-squares line through samples ``(x_i, y_i)`` (several samples
  per ``x``), with the usual standard error and ``n - 2`` degrees of freedom;
* :func:`slope_of`: the least-squares slope through *estimates*, one per ``x``, each with its
  own standard error: a fixed linear combination ``sum_i w_i y_i`` whose error follows from
  the estimates' (delta method, independent estimates); :func:`slope_weights` gives the
  ``w_i``, so that exact curves get the same slope statistic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.stats import linregress

from .stats import Estimate

__all__ = ["slope_weights", "slope_of", "sample_slope"]


def slope_weights(x) -> np.ndarray:
    """The weights ``w`` of the least-squares slope ``w @ y`` of points ``(x_i, y_i)``.

    ``w_i = (x_i - mean(x)) / sum_j (x_j - mean(x))^2``.

    Examples
    --------
    >>> w = slope_weights([0.0, 1.0, 2.0])
    >>> w.tolist(), float(w @ [1.0, 3.0, 5.0])
    ([-0.5, 0.0, 0.5], 2.0)
    """
    xs = np.asarray(x, dtype=float)
    if xs.ndim != 1 or xs.size < 2 or not np.isfinite(xs).all():
        raise ValueError(f"x must be at least 2 finite numbers, got {x!r}")
    with np.errstate(over="ignore", invalid="ignore"):
        centred = xs - xs.mean()
        ss = (centred**2).sum()
    if not (np.isfinite(centred).all() and math.isfinite(ss)):    # extreme scales: rescale
        scale = np.abs(xs).max()
        z = xs / scale
        zc = z - z.mean()
        return zc / (zc**2).sum() / scale if (zc**2).sum() > 0 else _constant(x)
    if not ss > 0:
        _constant(x)
    return centred / ss


def _constant(x):
    raise ValueError(f"x must not be constant, got {x!r}")


def slope_of(x, estimates: Sequence[Estimate], *, df: float | None) -> Estimate:
    """The least-squares slope of independent estimates against ``x``, with its error.

    Parameters
    ----------
    x : array_like
        ``(k,)`` abscissae (not all equal).
    estimates : sequence of Estimate
        ``k`` independent estimates, one per ``x``.
    df : float or None
        The degrees of freedom the slope is judged with (for example those of the smallest
        sample, which is conservative).

    Returns
    -------
    Estimate
        ``sum_i w_i y_i`` (:func:`slope_weights`), ``se = sqrt(sum_i w_i^2 se_i^2)``, ``n``
        the smallest sample.

    References
    ----------
    Meterez et al. (2024), Figure 1 (the time constant against the width, on log-log axes).

    Examples
    --------
    >>> e = slope_of([0.0, 1.0], [Estimate(1.0, 0.1, 10), Estimate(3.0, 0.1, 10)], df=9)
    >>> round(e.value, 6), round(e.se, 4), e.df
    (2.0, 0.1414, 9.0)
    """
    ests = list(estimates)
    for i, e in enumerate(ests):
        if not isinstance(e, Estimate):
            raise TypeError(f"estimates[{i}] must be an Estimate, got {type(e).__name__}")
    w = slope_weights(x)
    if len(ests) != w.size:
        raise ValueError(f"estimates must have one entry per x ({w.size}), got {len(ests)}")
    fit = sum((wi * e for wi, e in zip(w, ests, strict=True)), Estimate(0.0, 0.0, 1))
    return Estimate(fit.value, fit.se, fit.n, df=df)


def sample_slope(x, y) -> Estimate:
    """The least-squares slope of samples ``y`` against ``x``, with ``n - 2`` degrees of freedom.

    Examples
    --------
    >>> e = sample_slope([1, 1, 2, 2, 3, 3], [1.0, 1.2, 2.0, 2.2, 3.0, 3.2])
    >>> round(e.value, 6), e.n, e.df
    (1.0, 6, 4.0)
    """
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if xs.ndim != 1 or xs.shape != ys.shape or xs.size < 3:
        raise ValueError(f"x and y must be 1-d of equal length >= 3, got shapes {xs.shape} "
                         f"and {ys.shape}")
    if not (np.isfinite(xs).all() and np.isfinite(ys).all()):
        raise ValueError("x and y must be finite")
    if xs.min() == xs.max():
        raise ValueError("x must not be constant")
    with np.errstate(all="ignore"):
        fit = linregress(xs, ys)
    slope, se = float(fit.slope), float(fit.stderr)
    if not (math.isfinite(slope) and math.isfinite(se)):
        raise ValueError("x and y are too large for a least-squares slope in floating point "
                         "(it overflows); rescale them")
    return Estimate(slope, se, xs.size, df=xs.size - 2)
