"""Norm preservation over a whole subspace (Arpit & Bengio 2019, Theorems 3 and 6).

Eq. (16) (and eq. 242 for the masked layer of the backward pass) guarantees, with
probability at least 1 - delta, | ||ReLU(Ru)|| - ||u|| | <= eps ||u|| for every u of a
d-dimensional subspace once the width m is at least

    (d log(2/Delta) + log(4/delta)) / g(eps/3),   Delta = min(eps/(3 sqrt d), second term),

with g the exponent of Lemma 2 (:func:`eit.exact.chernoff.exponent`). The paper prints the
second term of Delta as sqrt(eps)/sqrt(3d); its proof needs sqrt(eps/3)/d
(``printed=False``, the default). :func:`width` is the bound, :func:`width_ceil` the smallest
integer width it allows (exact, SymPy), :func:`eps_at` the eps it guarantees at a width.

For d = 1 the worst case over the subspace (u and -u) has an exact law: with K ~ Bin(m, 1/2)
active units, ||ReLU(a)||^2 and ||ReLU(-a)||^2 are (2/m) chi^2_K and (2/m) chi^2_(m-K),
independent given K (:func:`relu_line_tail`); the masked layer maps u and -u to vectors of the
same norm, (2/m) chi^2_K (:func:`masked_line_tail`).

References
----------
Arpit & Bengio (2019), Theorem 3, eqs. (16)-(17) and (156)-(167); Theorem 6, eqs. (242)-(243).
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
from scipy import optimize
from scipy import stats as st

from ..core import validate as v
from .chernoff import exponent

__all__ = ["grid_size", "width", "width_ceil", "eps_at", "relu_line_tail", "masked_line_tail"]


def grid_size(eps, d, printed: bool = False):
    """Delta of eq. (16): min(eps/(3 sqrt d), sqrt(eps/3)/d), or the printed second term
    sqrt(eps)/sqrt(3d). Numbers give a float, SymPy expressions an expression.

    Examples
    --------
    >>> round(grid_size(0.3, 4), 6)
    0.05
    """
    if isinstance(eps, sp.Basic) or isinstance(d, sp.Basic):
        second = sp.sqrt(eps) / sp.sqrt(3 * d) if printed else sp.sqrt(eps / 3) / d
        return sp.Min(eps / (3 * sp.sqrt(d)), second)
    second = math.sqrt(eps) / math.sqrt(3 * d) if printed else math.sqrt(eps / 3) / d
    return min(eps / (3 * math.sqrt(d)), second)


def width(eps, d, delta, printed: bool = False):
    """The width of eq. (16) (a float, or a SymPy expression for SymPy arguments).

    Examples
    --------
    >>> round(width(0.1, 1, 0.05))
    82875
    """
    if not any(isinstance(x, sp.Basic) for x in (eps, d, delta)):
        eps = v.in_interval("eps", float(eps), 0.0, 1.0)
        d, delta = v.positive_int("d", d), v.in_interval("delta", float(delta), 0.0, 1.0)
        if eps == 0:
            raise ValueError("eps must be > 0")
    grid = grid_size(eps, d, printed)
    log = sp.log if isinstance(grid, sp.Basic) else math.log
    return (d * log(2 / grid) + log(4 / delta)) / exponent(eps / 3)


def width_ceil(eps, d: int, delta, printed: bool = False) -> int:
    """The smallest integer width that eq. (16) allows, computed exactly (SymPy).

    ``eps`` and ``delta`` are taken as exact rationals (``sp.Rational(str(x))`` for a float).

    Examples
    --------
    >>> width_ceil(0.1, 1, 0.05)
    82876
    """
    e, dl = (sp.Rational(str(x)) if not isinstance(x, sp.Basic) else x for x in (eps, delta))
    return int(sp.ceiling(width(e, sp.Integer(v.positive_int("d", d)), dl, printed)))


def eps_at(m: float, d: int, delta: float) -> float:
    """The eps that eq. (16) guarantees at width ``m`` (inf when no eps < 1 suffices).

    Examples
    --------
    >>> eps_at(100, 4, 0.05)
    inf
    """
    m = v.positive_float("m", float(m))
    hi = 1 - 1e-9
    if width(hi, d, delta) > m:
        return math.inf
    return optimize.brentq(lambda x: width(x, d, delta) - m, 1e-6, hi, xtol=1e-13)


def _binomial(m: int) -> tuple[np.ndarray, np.ndarray]:
    k = np.arange(m + 1)
    return k, st.binom.pmf(k, m, 0.5)


def _outside(m: int, k: np.ndarray, eps: float) -> np.ndarray:
    """P(| sqrt((2/m) chi^2_k) - 1 | > eps) for each k (chi^2_0 = 0), without cancellation."""
    kk = np.maximum(k, 1)
    upper = st.chi2.sf(m * (1 + eps) ** 2 / 2, kk)
    lower = st.chi2.cdf(m * (1 - eps) ** 2 / 2, kk) if eps < 1 else np.zeros(len(k))
    return np.where(k == 0, 1.0 if eps < 1 else 0.0, upper + lower)


def relu_line_tail(m: int, eps: float) -> float:
    """P(max over u = +-e of | ||ReLU(a u)|| - 1 | > eps), a ~ N(0, (2/m) I): d = 1, exact.

    Examples
    --------
    >>> 0 < relu_line_tail(100, 0.2) < 1
    True
    """
    m = v.positive_int("m", m)
    eps = v.in_interval("eps", float(eps), 0.0, math.inf)
    k, w = _binomial(m)
    a, b = _outside(m, k, eps), _outside(m, m - k, eps)
    return float(np.dot(w, a + b - a * b))


def masked_line_tail(m: int, eps: float) -> float:
    """P(| ||z * (a u)|| - 1 | > eps) for the masked layer, d = 1 (u and -u alike), exact.

    Examples
    --------
    >>> masked_line_tail(100, 0.2) < relu_line_tail(100, 0.2)
    True
    """
    m = v.positive_int("m", m)
    eps = v.in_interval("eps", float(eps), 0.0, math.inf)
    k, w = _binomial(m)
    return float(np.dot(w, _outside(m, k, eps)))
