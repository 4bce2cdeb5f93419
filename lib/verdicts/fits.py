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

from ..core import validate as v
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
    xs = _vector("x", x, 2)
    # on the scale of max |x| (a power of 2: exact), so that the squares neither overflow
    # nor underflow
    scale = _power_of_two(xs)
    if scale == 0:
        _constant(x)
    z = xs / scale
    zc = z - z.mean()
    ss = float((zc**2).sum())
    if not ss > 0:
        _constant(x)
    w = zc / ss / scale
    if not np.isfinite(w).all():
        raise ValueError("x is spread too little for its scale: the slope weights overflow "
                         "the floating-point range; rescale x")
    return w


def _constant(x):
    raise ValueError(f"x must not be constant, got {x!r}")


def _power_of_two(a: np.ndarray) -> float:
    """A power of 2 in ``(m / 2, m]`` with ``m = max |a|`` (0 for zeros): dividing by it is
    exact."""
    top = float(np.abs(a).max())
    return 0.0 if top == 0 else math.ldexp(1.0, math.frexp(top)[1] - 1)


def _vector(name: str, value, min_size: int) -> np.ndarray:
    """A finite one-dimensional real array of at least ``min_size`` entries, as float64."""
    if hasattr(value, "detach"):                                  # a torch tensor
        value = value.detach().cpu().numpy()
    v.array(name, value, ndim=1, min_size=min_size)
    return np.asarray(value, dtype=float)


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
    if isinstance(estimates, (str, bytes, Estimate)) or not isinstance(estimates, Sequence):
        raise TypeError(f"estimates must be a sequence of Estimates, got "
                        f"{type(estimates).__name__}")
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
    xs, ys = _vector("x", x, 3), _vector("y", y, 3)
    if xs.shape != ys.shape:
        raise ValueError(f"x and y must be 1-d of equal length >= 3, got shapes {xs.shape} "
                         f"and {ys.shape}")
    if not (np.isfinite(xs).all() and np.isfinite(ys).all()):
        raise ValueError("x and y must be finite")
    if xs.min() == xs.max():
        raise ValueError("x must not be constant")
    # fitted on the scales of max |x| and max |y| (powers of 2: exact), then scaled back
    sx, sy = _power_of_two(xs), _power_of_two(ys) or 1.0
    with np.errstate(all="ignore"):
        fit = linregress(xs / sx, ys / sy)
        slope, se = float(fit.slope) * sy / sx, float(fit.stderr) * sy / sx
    if not (math.isfinite(slope) and math.isfinite(se)):
        raise ValueError("x and y are too far apart in scale for a least-squares slope in "
                         "floating point (it overflows); rescale them")
    return Estimate(slope, se, xs.size, df=xs.size - 2)
