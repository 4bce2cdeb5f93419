"""Exact moments of weight laws given by a density on an interval (SymPy).

Every moment is normalized by the mass of the density on its support, so an unnormalized
density (a normal density restricted to ``[-2, 2]``, say) gives the moments of the
*conditioned* law. Hanin & Rolnick (2018) need the variance (section 3.1: the variance of each
named initialization) and the kurtosis ``mu_4 / mu_2^2`` (Lemma 1, Theorem 5: it enters
``E[M_d^2]`` through ``2 (mu4~ - 3) ||act||_4^4 / n^2``).
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp

from .symbolic import _expr

__all__ = ["x", "mass", "moment", "variance", "kurtosis", "normal_density",
           "truncated_normal"]

x = sp.Symbol("x", real=True)


def _support(support) -> tuple:
    """``(lo, hi)`` as SymPy numbers: finite or infinite ends, ``lo < hi`` where decidable."""
    if not (isinstance(support, tuple) and len(support) == 2):
        raise ValueError(f"support must be a pair (lo, hi), got {support!r}")
    lo, hi = (sp.sympify(_expr(f"support[{i}]", end, infinite=True))
              for i, end in enumerate(support))
    if sp.Le(hi, lo) == sp.true:   # decidable for numbers and infinities, kept for symbols
        raise ValueError(f"support must be an interval lo < hi, got {support!r}")
    return lo, hi


def _density(density):
    return sp.sympify(_expr("density", density, lo=0))


@lru_cache(maxsize=256)
def _integral(expr: sp.Expr, lo, hi) -> sp.Expr:
    return sp.simplify(sp.integrate(expr, (x, lo, hi)))


def mass(density: sp.Expr, support=(-sp.oo, sp.oo)) -> sp.Expr:
    """The integral of ``density`` over ``support`` (1 for a normalized density)."""
    lo, hi = _support(support)
    return _integral(_density(density), lo, hi)


def moment(density: sp.Expr, k: int, support=(-sp.oo, sp.oo)) -> sp.Expr:
    """``E[X^k]`` for the law with (possibly unnormalized) ``density`` on ``support``.

    Examples
    --------
    >>> moment(sp.Integer(1), 2, (-1, 1))        # uniform on [-1, 1], unnormalized
    1/3
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"k must be an int >= 0, got {k!r}")
    lo, hi = _support(support)
    total = mass(density, support)
    if total == 0:
        raise ValueError("density must have a positive mass on support, got 0")
    return sp.simplify(_integral(x**k * _density(density), lo, hi) / total)


def variance(density: sp.Expr, support=(-sp.oo, sp.oo)) -> sp.Expr:
    """``Var[X]`` of a symmetric law (its second moment)."""
    return moment(density, 2, support)


def kurtosis(density: sp.Expr, support=(-sp.oo, sp.oo)) -> sp.Expr:
    """``mu_4 / mu_2^2`` of a symmetric law, from normalized moments.

    Examples
    --------
    >>> kurtosis(sp.Integer(1), (-1, 1))
    9/5
    >>> round(float(kurtosis(normal_density(), (-2, 2))), 4)
    2.3655
    """
    return sp.simplify(moment(density, 4, support) / moment(density, 2, support) ** 2)


def normal_density(std=1) -> sp.Expr:
    """The density of ``N(0, std^2)``."""
    std = _expr("std", std, lo=0, strict=True)
    return sp.exp(-(x / std) ** 2 / 2) / (sp.sqrt(2 * sp.pi) * std)


def truncated_normal(std=1, k=2) -> tuple[sp.Expr, tuple]:
    """``(density, support)`` of ``N(0, std^2)`` conditioned on ``|X| <= k std``."""
    k = _expr("k", k, lo=0, strict=True)
    return normal_density(std), (-k * std, k * std)


def normal(variance=1) -> tuple[sp.Expr, tuple]:
    """``(density, support)`` of ``N(0, variance)``.

    Examples
    --------
    >>> variance(*normal(sp.Rational(2, 3)))
    2/3
    """
    variance = _expr("variance", variance, lo=0, strict=True)
    return normal_density(sp.sqrt(sp.sympify(variance))), (-sp.oo, sp.oo)


def uniform(variance=1) -> tuple[sp.Expr, tuple]:
    """``(density, support)`` of the uniform law of this variance, on
    ``[-sqrt(3 variance), sqrt(3 variance)]`` (unnormalized: the moments divide by the mass).

    Examples
    --------
    >>> variance(*uniform(sp.Rational(2, 3)))
    2/3
    >>> kurtosis(*uniform())
    9/5
    """
    variance = _expr("variance", variance, lo=0, strict=True)
    half_width = sp.sqrt(3 * sp.sympify(variance))
    return sp.Integer(1), (-half_width, half_width)


__all__ += ["normal", "uniform"]
