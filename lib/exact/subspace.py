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
import numbers

import numpy as np
import sympy as sp
from scipy import optimize
from scipy import stats as st

from ..core import validate as v
from .chernoff import exponent
from .symbolic import _expr

__all__ = ["grid_size", "width", "width_ceil", "eps_at", "relu_line_tail", "masked_line_tail"]


def _real(name: str, value) -> float:
    """A real number (not a bool, a string or a SymPy object) as a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or isinstance(value, sp.Basic):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    return float(value)


def _open_unit(name: str, value) -> float:
    """A real number in (0, 1): a distortion eps or a failure probability delta."""
    value = v.in_interval(name, _real(name, value), 0.0, 1.0)
    if value == 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return value


def _flag(printed) -> bool:
    if not isinstance(printed, bool):
        raise TypeError(f"printed must be a bool, got {type(printed).__name__}")
    return printed


_NO_DELTA = object()


def _arguments(eps, d, delta=_NO_DELTA) -> tuple:
    """Numbers checked (eps, delta in (0, 1), d a positive int), or SymPy expressions when one
    of them is symbolic (each checked: finite, positive where SymPy can tell)."""
    given = (eps, d) if delta is _NO_DELTA else (eps, d, delta)
    if any(isinstance(x, sp.Basic) for x in given):
        out = tuple(_expr(name, x, lo=0, strict=True)
                    for name, x in zip(("eps", "d", "delta"), given))
    else:
        out = (_open_unit("eps", eps), v.positive_int("d", d)) + (
            () if delta is _NO_DELTA else (_open_unit("delta", delta),))
    return out


def grid_size(eps, d, printed: bool = False):
    """Delta of eq. (16): min(eps/(3 sqrt d), sqrt(eps/3)/d), or the printed second term
    sqrt(eps)/sqrt(3d). Numbers give a float, SymPy expressions an expression.

    Examples
    --------
    >>> round(grid_size(0.3, 4), 6)
    0.05
    """
    eps, d = _arguments(eps, d)
    printed = _flag(printed)
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
    eps, d, delta = _arguments(eps, d, delta)
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
    d = v.positive_int("d", d)
    e, dl = (x if isinstance(x, sp.Basic) else sp.Rational(str(_open_unit(name, x)))
             for name, x in (("eps", eps), ("delta", delta)))
    return int(sp.ceiling(width(e, sp.Integer(d), dl, printed)))


def eps_at(m: float, d: int, delta: float) -> float:
    """The eps that eq. (16) guarantees at width ``m`` (inf when no eps < 1 suffices).

    Examples
    --------
    >>> eps_at(100, 4, 0.05)
    inf
    """
    m = v.positive_float("m", _real("m", m))
    d, delta = v.positive_int("d", d), _open_unit("delta", delta)
    lo, hi = 1e-6, 1 - 1e-9
    if width(hi, d, delta) > m:
        return math.inf
    if width(lo, d, delta) <= m:
        raise ValueError(f"m={m:g} guarantees an eps below {lo:g}, beyond the precision of "
                         "the exponent g(eps/3)")
    return optimize.brentq(lambda x: width(x, d, delta) - m, lo, hi, xtol=1e-13)


def _binomial(m: int) -> tuple[np.ndarray, np.ndarray]:
    k = np.arange(m + 1)
    return k, st.binom.pmf(k, m, 0.5)


def _outside(m: int, k: np.ndarray, eps: float) -> np.ndarray:
    """P(| sqrt((2/m) chi^2_k) - 1 | > eps) for each k (chi^2_0 = 0), without cancellation."""
    kk = np.maximum(k, 1)
    with np.errstate(over="ignore"):   # a huge eps: the threshold is inf, the tail 0
        upper = st.chi2.sf(m * np.float64(1 + eps) ** 2 / 2, kk)
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
    eps = v.in_interval("eps", _real("eps", eps), 0.0, math.inf)
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
    eps = v.in_interval("eps", _real("eps", eps), 0.0, math.inf)
    k, w = _binomial(m)
    return float(np.dot(w, _outside(m, k, eps)))
