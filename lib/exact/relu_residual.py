"""Residual networks whose modules are one ReLU layer: exact one-module laws and bands.

The module of Hanin & Rolnick (2018, section 3.2; "module A" in the book) maps the stream
``x`` (width n) to ``ReLU(W x)`` with ``W`` i.i.d. ``N(0, 2/n)``, and
``x_l = x_{l-1} + eta_l ReLU(W_l x_{l-1})``. Given the stream, ``W x ~ N(0, (2/n)||x||^2 I)``,
so with ``c = eta sqrt(2/n)``, ``R = ReLU(Z)`` (Z standard normal in R^n) and the unit stream
``u = x / ||x||`` whose coordinate sum is ``s``:

``M_l / M_{l-1} = 1 + 2 c <u, R> + c^2 ||R||^2``  (``M_l = ||x_l||^2``).

Its conditional moments are polynomials in ``s`` with non-negative coefficients:

* ``E[M_l | x] / M_{l-1} = 1 + eta^2 + 2 eta s / sqrt(n pi)``;
* ``E[M_l^2 | x] / M_{l-1}^2 = 1 + 4 c E<u,R> + 2 c^2 E||R||^2 + 4 c^2 E<u,R>^2
  + 4 c^3 E[<u,R> ||R||^2] + c^4 E||R||^4`` with ``E<u,R> = s / sqrt(2 pi)``,
  ``E<u,R>^2 = 1/2 + (s^2 - 1)/(2 pi)``,
  ``E[<u,R>||R||^2] = s (sqrt(2/pi) + (n-1)/(2 sqrt(2 pi)))``,
  ``E||R||^2 = n/2``, ``E||R||^4 = 3n/2 + n(n-1)/4``.

For a non-negative input every later stream is non-negative, so ``1 <= s <= sqrt(n)``, and
both moments of ``M_L`` lie between the products of the factors at ``s = 1`` and
``s = sqrt(n)`` (:func:`bands`). The chapter on residual scales derives these formulas with
SymPy and checks this module against the derivation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import sympy as sp
import torch

from ..core import validate as v
from ..verdicts.stats import mean
from .symbolic import _expr

__all__ = ["mean_factor", "second_factor", "bands", "empirical_variance_bounds",
           "relative_variance_bound", "chain_moment"]


def _consts(*args):
    """sqrt and pi: SymPy's when an argument is symbolic (exact results), else floats."""
    if any(isinstance(a, sp.Basic) for a in args):
        return sp.sqrt, sp.pi
    return math.sqrt, math.pi


def _operand(name: str, value, lo=None):
    """A number, a SymPy expression, or a real array or tensor (finite; ``>= lo``)."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        v.array(name, value)
        if lo is not None and bool((value < lo).any()):
            raise ValueError(f"{name} must be >= {lo} everywhere")
        return value
    return _expr(name, value, lo=lo)


def _overflow(names: str) -> ValueError:
    return ValueError(f"{names}: the result overflows float64 (inf); use smaller values")


def _evaluate(fn, names: str, *args):
    """``fn(*args)``, with an overflow (inf, or Python's OverflowError) named by ``names``."""
    try:
        with np.errstate(over="ignore"):
            out = fn(*args)
    except OverflowError:
        raise _overflow(names) from None
    return _finite(out, names)


def _finite(out, names: str):
    """A float, array or tensor result that overflowed is refused (SymPy results pass)."""
    if isinstance(out, torch.Tensor):
        ok = bool(torch.isfinite(out).all())
    elif isinstance(out, (float, np.floating, np.ndarray)):
        ok = bool(np.isfinite(out).all())
    else:
        return out
    if not ok:
        raise _overflow(names)
    return out


def _mean_factor(eta, s, n: int):
    sqrt, pi = _consts(eta, s)
    return 1 + eta * eta + 2 * eta * s / sqrt(n * pi)


def _second_factor(eta, s, n: int):
    sqrt, pi = _consts(eta, s)
    two = sp.Integer(2) if sqrt is sp.sqrt else 2.0
    c = eta * sqrt(two / n)
    e_a = s / sqrt(two * pi)
    e_a2 = 1 / two + (s * s - 1) / (two * pi)
    e_ab = s * (sqrt(two / pi) + (n - 1) / (two * sqrt(two * pi)))
    e_b, e_b2 = n / two, 3 * n / two + n * (n - 1) / (two * two)
    return (1 + 4 * c * e_a + 2 * c**2 * e_b + 4 * c**2 * e_a2 + 4 * c**3 * e_ab
            + c**4 * e_b2)


def mean_factor(eta: float, s, n: int):
    """``E[M_l | x] / M_{l-1}`` for a stream whose unit vector has coordinate sum ``s``.

    ``s`` may be a float, an array (tensor) of them, or a SymPy expression (then the result
    is exact); so may ``eta`` (>= 0).

    Raises
    ------
    TypeError
        If ``eta`` or ``s`` is not a number, array, tensor or SymPy expression.
    ValueError
        If ``eta`` is negative, ``eta`` or ``s`` is not finite, ``n`` is not a positive
        int, or the factor overflows float64.

    Examples
    --------
    >>> round(mean_factor(1.0, 1.0, 5), 6)
    2.504627
    """
    n = v.positive_int("n", n)
    eta, s = _operand("eta", eta, lo=0), _operand("s", s)
    return _evaluate(_mean_factor, "eta, s", eta, s, n)


def second_factor(eta: float, s, n: int):
    """``E[M_l^2 | x] / M_{l-1}^2`` for a stream whose unit vector has coordinate sum ``s``.

    Examples
    --------
    >>> round(second_factor(0.0, 1.0, 5), 12)
    1.0
    """
    n = v.positive_int("n", n)
    eta, s = _operand("eta", eta, lo=0), _operand("s", s)
    return _evaluate(_second_factor, "eta, s", eta, s, n)


def bands(etas: Sequence[float], n: int, m0: float = 1.0) -> dict[str, np.ndarray]:
    """Exact two-sided bounds on ``E[M_l]`` and ``E[M_l^2]``, l = 0..L (non-negative input).

    Returns
    -------
    dict of str -> numpy.ndarray
        ``mean_lo``, ``mean_hi``, ``second_lo``, ``second_hi``, each of shape ``(L+1,)``:
        the cumulative products of the factors at ``s = 1`` and ``s = sqrt(n)``.

    Examples
    --------
    >>> b = bands([1.0, 1.0], 5)
    >>> bool((b["mean_lo"] <= b["mean_hi"]).all())
    True
    """
    etas = v.scales("etas", etas)
    n = v.positive_int("n", n)
    m0 = v.positive_float("m0", m0)
    root = math.sqrt(n)

    def band(fn, power: int, s: float) -> np.ndarray:
        return np.float64(m0) ** power * np.cumprod([1.0] + [fn(e, s, n) for e in etas])

    return {f"{name}_{end}": _evaluate(band, "etas, n, m0", fn, power, s)
            for name, fn, power in (("mean", _mean_factor, 1), ("second", _second_factor, 2))
            for end, s in (("lo", 1.0), ("hi", root))}


def empirical_variance_bounds(etas: Sequence[float], n: int, m0: float = 1.0
                              ) -> tuple[float, float]:
    """Exact bounds on ``E[Var^[M^res]]`` over modules 1..L (non-negative input).

    Upper: ``Var^ <= (1/L) sum_l M_l^2``, so ``E[Var^] <= mean of second_hi[1..L]``.
    Lower: each network's ``M_l`` is non-decreasing, ``Var^ = (1/L^2) sum_{j<k} (M_k - M_j)^2``
    and, by Jensen and ``E[M_k | x_j] >= M_j prod_{j<i<=k} mean_factor(eta_i, 1)``,
    ``E[(M_k - M_j)^2] >= (mean_lo[k] - mean_lo[j])^2``.

    Examples
    --------
    >>> lo, hi = empirical_variance_bounds([1.0] * 10, 5)
    >>> 0 < lo < hi
    True
    """
    b = bands(etas, n, m0)
    lo_mean = b["mean_lo"][1:]
    L = lo_mean.size
    diff = lo_mean[None, :] - lo_mean[:, None]            # [j, k] = lo_k - lo_j
    with np.errstate(over="ignore"):
        lower = float((np.triu(diff, 1) ** 2).sum()) / L**2
        upper = float(b["second_hi"][1:].mean())
    _finite(np.array([lower, upper]), "etas, n, m0")
    return lower, upper


def relative_variance_bound(etas: Sequence[float], n: int) -> np.ndarray:
    """An exact upper bound on ``Var[M_l] / E[M_l]^2``, l = 0..L (non-negative input).

    ``second_hi / mean_lo^2 - 1`` from :func:`bands`: the largest second moment over the
    smallest squared mean. Shape ``(L+1,)``.

    References
    ----------
    Hanin & Rolnick (2018), Theorem 4 (the second moment of ``M_L^res``).

    Examples
    --------
    >>> relative_variance_bound([1.0, 1.0], 5).shape
    (3,)
    """
    b = bands(etas, n)
    with np.errstate(over="ignore"):
        return _finite(b["second_hi"] / b["mean_lo"] ** 2 - 1, "etas, n")


def chain_moment(log_len, unit_sum, etas: Sequence[float], L: int, n: int, power: int = 1):
    """``E[M_L^power]`` (``M_0 = 1``): the exact one-step law averaged over samples of the stream.

    The stream after ``L - 1`` modules is sampled (by :func:`eit.exact.moments.
    relu_residual_chain`, or by the explicit networks); the last module's conditional moment
    (:func:`mean_factor` or :func:`second_factor`) is exact given it. The average over the
    samples is an unbiased Monte Carlo prediction of ``E[M_L^power]``.

    Parameters
    ----------
    log_len, unit_sum : torch.Tensor
        ``log ||x_l||`` and the coordinate sum of ``x_l / ||x_l||``, shape ``(L'+1, n_samples)``
        with ``L' >= L - 1``.
    etas : sequence of float
        The scales of the modules (at least ``L``).
    L : int
        The module whose output is predicted.
    n : int
        The width of the stream.
    power : int
        1 (the mean) or 2 (the second moment).

    Returns
    -------
    Estimate
        The mean over the samples, with its standard error.

    References
    ----------
    Hanin & Rolnick (2018), Theorems 2, 4 and 6, Lemma 2 (the one-module step).

    Examples
    --------
    >>> import torch
    >>> z = torch.zeros(2, 3, dtype=torch.float64)
    >>> round(chain_moment(z, z + 1.0, [1.0], 1, 5).value, 6)
    2.504627
    """
    log_len = v.tensor("log_len", log_len, ndim=2)
    unit_sum = v.tensor("unit_sum", unit_sum, ndim=2)
    if unit_sum.shape != log_len.shape:
        raise ValueError(f"unit_sum must have the shape of log_len {tuple(log_len.shape)}, got "
                         f"{tuple(unit_sum.shape)}")
    L, n = v.positive_int("L", L), v.positive_int("n", n)
    if isinstance(power, bool) or not isinstance(power, int) or power not in (1, 2):
        raise ValueError(f"power must be 1 or 2, got {power!r}")
    etas = v.scales("etas", etas)
    if L > len(etas) or L > log_len.shape[0]:
        raise ValueError(f"L must be at most the number of modules sampled, got {L}")
    step = _mean_factor if power == 1 else _second_factor
    values = torch.exp(2 * power * log_len[L - 1]) * step(etas[L - 1], unit_sum[L - 1], n)
    names = "log_len, unit_sum, etas"
    _finite(values, names)
    try:
        return mean(values)
    except ValueError as e:   # the sum of the samples overflows
        raise ValueError(f"{names}: {e}") from None
