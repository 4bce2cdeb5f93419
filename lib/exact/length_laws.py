"""Closed forms of the squared length's second moment (FM2), exact and at high precision.

For a fully connected ReLU net with Gaussian weights of variance ``2/n_{j-1}`` and no bias,
the general recursion of :func:`eit.exact.moments.moment_recursion` collapses to
``E[M_j^2] = M_0^2 prod_{k<=j} (1 + 5/n_k)`` (:func:`gaussian_second_moments`). With zero
biases ``(M_j)`` is a martingale, so the mean empirical variance of ``M_1, ..., M_d`` is a
signed combination of the second moments (:func:`martingale_empirical_variance`). Theorem 5's
bounds are exponentials in ``sum_j 1/n_j``; :func:`exponential_in_reciprocals` evaluates them
at 50 digits, so that a rational ``E[M_d^2]`` is compared with them without rounding.

References
----------
Hanin & Rolnick (2018), Theorem 5 (eq. 5), Corollary 2 and its proof (appendix B).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import mpmath

from ..core import validate as v
from ..models.width_profiles import reciprocal_sum
from .symbolic import _expr

__all__ = ["gaussian_second_moments", "martingale_empirical_variance", "to_mpf",
           "exponential_in_reciprocals", "gaussian_second_moment_bounds"]

DPS = 50


def gaussian_second_moments(widths: Sequence[int]) -> list[Fraction]:
    """``E[M_j^2] / M_0^2 = prod_{k<=j} (1 + 5/n_k)`` for j = 0..d (Gaussian weights, no bias).

    Parameters
    ----------
    widths : sequence of int
        ``[n_1, ..., n_d]`` (the input width does not enter).

    Returns
    -------
    list of Fraction
        ``d + 1`` exact values, the first one 1.

    References
    ----------
    Hanin & Rolnick (2018), Theorem 5 (the exact form of eq. 12 at kurtosis 3).

    Examples
    --------
    >>> gaussian_second_moments([10, 5])
    [Fraction(1, 1), Fraction(3, 2), Fraction(3, 1)]
    """
    out = [Fraction(1)]
    for n in v.widths("widths", widths):
        out.append(out[-1] * (1 + Fraction(5, n)))
    return out


def martingale_empirical_variance(second: Sequence) -> Fraction:
    """``E[Var^[M]] = (1/d^2) sum_{j=1}^d (2j - d - 1) E[M_j^2]`` for a martingale ``(M_j)``.

    With ``E[M_j M_k] = E[M_min(j,k)^2]`` the pairs with minimum j number ``2(d - j) + 1``
    (the corrected identity of Corollary 2's proof).

    Parameters
    ----------
    second : sequence
        ``[E[M_0^2], E[M_1^2], ..., E[M_d^2]]`` (entry 0, the input, does not enter), d >= 1;
        exact numbers give an exact result.

    References
    ----------
    Hanin & Rolnick (2018), proof of Corollary 2 (appendix B), corrected.

    Examples
    --------
    >>> martingale_empirical_variance([1, Fraction(3, 2), Fraction(9, 4)])
    Fraction(3, 16)
    """
    if isinstance(second, (str, bytes)) or not isinstance(second, Sequence) or len(second) < 2:
        raise ValueError(f"second must hold E[M_0^2] and at least one layer, got {second!r}")
    second = [_expr(f"second[{j}]", m, lo=0) for j, m in enumerate(second)]
    d = len(second) - 1
    total = sum(((2 * j - d - 1) * second[j] for j in range(1, d + 1)), Fraction(0))
    out = total * Fraction(1, d * d)
    if isinstance(out, float) and not math.isfinite(out):
        raise ValueError("second: the weighted sum overflows float64; give exact values")
    return out


def _rational(q, name: str = "m0") -> Fraction:
    """An int, Fraction or SymPy Rational as a Fraction (floats are refused: not exact)."""
    if hasattr(q, "q") and hasattr(q, "p") and not isinstance(q, Fraction):
        q = Fraction(int(q.p), int(q.q))
    if isinstance(q, bool) or not isinstance(q, (int, Fraction)):
        raise TypeError(f"{name} must be an exact rational, got {type(q).__name__}")
    return Fraction(q)


def to_mpf(q, dps: int = DPS) -> mpmath.mpf:
    """A rational number (int, Fraction, SymPy Rational) at ``dps`` digits.

    Examples
    --------
    >>> to_mpf(Fraction(1, 3)) * 3 == 1
    True
    """
    q = _rational(q, "q")
    with mpmath.workdps(v.positive_int("dps", dps)):
        return mpmath.mpf(q.numerator) / q.denominator


def exponential_in_reciprocals(widths: Sequence[int], *, rate, factor=1,
                               dps: int = DPS) -> mpmath.mpf:
    """``factor * exp(rate * sum_j 1/n_j)`` at ``dps`` digits (the shape of eq. 5's bounds).

    Parameters
    ----------
    widths : sequence of int
        ``[n_1, ..., n_d]``.
    rate, factor : int, Fraction or SymPy Rational
        Exact constants (``C_2`` and ``C_1`` of eq. 5).

    References
    ----------
    Hanin & Rolnick (2018), Theorem 5, eq. (5).

    Examples
    --------
    >>> float(exponential_in_reciprocals([2, 2], rate=1))
    2.718281828459045
    """
    factor, rate = _rational(factor, "factor"), _rational(rate, "rate")
    with mpmath.workdps(v.positive_int("dps", dps)):
        return to_mpf(factor, dps) * mpmath.exp(to_mpf(rate * reciprocal_sum(widths), dps))


def gaussian_second_moment_bounds(widths: Sequence[int], m0, *, lower_rate=Fraction(1, 2),
                                  upper_rate=5, dps: int = DPS) -> tuple:
    """``(lower, exact, upper)``: ``M_0^2 e^{lower_rate S}``, ``E[M_d^2]`` and
    ``M_0^2 e^{upper_rate S}`` with ``S = sum_j 1/n_j``, all at ``dps`` digits.

    The exact value is :func:`gaussian_second_moments` times ``M_0^2`` (Gaussian weights, no
    bias); the defaults are the corrected bounds of eq. (5).

    Parameters
    ----------
    widths : sequence of int
        ``[n_0, n_1, ..., n_d]`` including the input width (which does not enter).
    m0 : int, Fraction or SymPy Rational
        ``M_0`` of the input.

    References
    ----------
    Hanin & Rolnick (2018), Theorem 5, eq. (5), corrected.

    Examples
    --------
    >>> lo, e2, up = gaussian_second_moment_bounds([3, 10], 1)
    >>> bool(lo <= e2 <= up), float(e2)
    (True, 1.5)
    """
    widths = v.widths("widths", widths)
    if len(widths) < 2:
        raise ValueError(f"widths must hold n_0 and at least one layer, got {widths!r}")
    _rational(lower_rate, "lower_rate"), _rational(upper_rate, "upper_rate")
    m0 = _rational(m0)
    if m0 < 0:
        raise ValueError(f"m0 must be >= 0 (a mean square), got {m0}")
    exact = to_mpf(m0 * m0 * gaussian_second_moments(widths[1:])[-1], dps)
    lower = exponential_in_reciprocals(widths[1:], rate=lower_rate, factor=m0 * m0, dps=dps)
    upper = exponential_in_reciprocals(widths[1:], rate=upper_rate, factor=m0 * m0, dps=dps)
    return lower, exact, upper


def increment_second_moment(moments, j: int, k: int, *, kappa=1, nu2=0):
    """``E[(M_k - M_j)^2] = E[M_k^2] + E[M_j^2] - 2 E[M_j M_k]`` for ``j <= k``, exactly.

    Parameters
    ----------
    moments : eit.exact.moments.Moments
        The exact moments of :func:`eit.exact.moments.moment_recursion`.
    j, k : int
        Layers, ``0 <= j <= k <= d``.
    kappa, nu2
        As given to :func:`~eit.exact.moments.moment_recursion` (for the cross moment,
        :func:`eit.exact.moments.cross_moment`).

    References
    ----------
    Hanin & Rolnick (2018), Theorem 5 (the L^2 convergence of M_d, with eq. 11).

    Examples
    --------
    >>> from eit.exact.moments import moment_recursion
    >>> increment_second_moment(moment_recursion([5, 5, 5], 1, 1), 1, 2)  # 4 - 2 (martingale)
    Fraction(2, 1)
    """
    from .moments import cross_moment

    cross = cross_moment(moments, j, k, kappa=kappa, nu2=nu2)   # checks every argument
    out = moments.second[k] + moments.second[j] - 2 * cross
    if isinstance(out, float) and not math.isfinite(out):
        raise ValueError("moments, kappa, nu2: E[(M_k - M_j)^2] overflows float64; give exact "
                         "values (int, Fraction, SymPy)")
    return out


__all__ += ["increment_second_moment"]
