"""Chernoff bounds of one random ReLU layer and the widths they give.

For a fixed input ``u``, one ReLU layer ``v = ReLU(Ru)`` with ``R_ij ~ N(0, 2/m)`` (or the
masked layer of the backward pass, which has the same law) satisfies Lemma 2 of Arpit &
Bengio (2019), eq. (5):

    P(| ||v||^2/||u||^2 - 1 | > eps) <= 2 exp(-m g(eps)),
    g(eps) = eps/4 + log(2 / (1 + sqrt(1 + eps))).

This module evaluates that bound, inverts it (the ``eps`` it guarantees at a width and a
failure probability, the width it needs for an ``eps`` and a union over ``events``), computes
the best bound of the same (Chernoff) form, and inverts the *exact* failure probability of
:func:`eit.exact.one_layer.relu_layer_tail` for comparison. :func:`exponent` also accepts a
SymPy expression, so that a chapter can check it against its own derivation.

References
----------
Arpit & Bengio (2019), Lemmas 2 and 4, eqs. (5), (11), (44)-(74); Theorem 2 and Corollary 1,
eqs. (12) and (15).
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
from scipy import optimize

from ..core import validate as v
from .one_layer import relu_layer_tail

__all__ = ["exponent", "failure_bound", "eps_at", "width_for", "optimal_exponents",
           "optimal_bound", "exact_eps_at"]


#: below this distortion :func:`exponent` sums the series of its two cancelling terms
_SMALL_EPS = 1e-2


def _py(x):
    """A NumPy scalar as the Python number the validators expect."""
    return x.item() if isinstance(x, np.generic) else x


def exponent(eps):
    """g(eps) = eps/4 + log(2/(1 + sqrt(1 + eps))), the exponent of eq. (5).

    Parameters
    ----------
    eps : float or sympy.Expr
        The distortion (a number in [0, inf) or a SymPy expression).

    Returns
    -------
    float or sympy.Expr
        A float for a number, an expression for an expression.

    Examples
    --------
    >>> round(exponent(0.3), 6)
    0.007259
    >>> e = sp.Symbol("e", positive=True)
    >>> sp.series(exponent(e), e, 0, 3).removeO()
    3*e**2/32
    """
    if isinstance(eps, sp.Basic):
        if not isinstance(eps, sp.Expr) or eps.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
            raise ValueError(f"eps must be a finite SymPy expression, got {eps!r}")
        return eps / 4 + sp.log(2 / (1 + sp.sqrt(1 + eps)))
    eps = v.in_interval("eps", _py(eps), 0.0, math.inf)
    if eps >= _SMALL_EPS:
        # log(2/(1 + sqrt(1+eps))) = -log1p((sqrt(1+eps) - 1)/2)
        return eps / 4 - math.log1p(eps / (2 * (1 + math.sqrt(1 + eps))))
    # small eps: eps/4 - log1p(y), y = eps/(2(1 + s)), s = sqrt(1 + eps), cancels; split it as
    # (eps/4 - y) + (y - log1p(y)) = eps^2/(4(1 + s)^2) + sum_{k>=2} (-1)^k y^k / k
    s = math.sqrt(1 + eps)
    y = eps / (2 * (1 + s))
    tail = sum((-1) ** k * y**k / k for k in range(9, 1, -1))
    return eps**2 / (4 * (1 + s) ** 2) + tail


def failure_bound(m: int, eps: float, events: float = 2.0) -> float:
    """``events * exp(-m g(eps))``: the failure bound of Lemma 2 (``events = 2``), or of a
    union over ``events`` one-sided events (``4NL`` in Theorem 2). Not capped at 1.

    Examples
    --------
    >>> round(failure_bound(100, 0.3), 4)
    0.9677
    """
    m = v.positive_float("m", _py(m))
    events = v.positive_float("events", events)
    return events * math.exp(-m * exponent(eps))


def eps_at(m: int, delta: float, events: float = 2.0) -> float:
    """The eps at which ``events * exp(-m g(eps)) = delta`` (Figure 6's theory curve).

    Raises
    ------
    ValueError
        If no eps in (0, 1) reaches ``delta`` at this width.

    Examples
    --------
    >>> round(eps_at(500, 0.05), 4)
    0.3026
    """
    m = v.positive_float("m", _py(m))
    delta = v.probability("delta", _py(delta), open_ends=True)
    events = v.positive_float("events", _py(events))
    f = lambda x: failure_bound(m, x, events) - delta  # noqa: E731
    lo, hi = 1e-12, 1 - 1e-12
    at = f"m = {m!r}, delta = {delta!r}, events = {events!r}"
    if f(hi) > 0:
        raise ValueError(f"no eps < 1 brings the failure bound events * exp(-m g(eps)) down to "
                         f"delta at {at} (m too small, or events too large)")
    if events <= delta:
        raise ValueError(f"the failure bound is below delta at every eps >= 0 at {at} "
                         "(events <= delta): no eps solves it")
    if f(lo) > 0:
        return optimize.brentq(f, lo, hi, xtol=1e-14)
    # a very wide layer: eps below 1e-12, where g(eps) = 3 eps^2 / 32 to rounding
    guess = math.sqrt(32 * math.log(events / delta) / (3 * m))
    lo, hi = guess / 2, min(guess * 2, lo)
    if not (guess > 0 and f(lo) > 0 and f(hi) <= 0):
        raise ValueError(f"the eps solving the failure bound underflows at {at} (m too large)")
    return optimize.brentq(f, lo, hi, xtol=hi * 1e-15, rtol=1e-15)


def width_for(eps: float, delta: float, events: float = 2.0) -> float:
    """The width ``log(events/delta) / g(eps)`` at which the bound reaches ``delta``.

    With ``events = 4NL`` and the per-layer ``eps'`` this is eq. (15).

    Examples
    --------
    >>> round(width_for(0.15, 0.05, 4 * 2000 * 10))
    7329
    """
    delta = v.probability("delta", _py(delta), open_ends=True)
    events = v.positive_float("events", _py(events))
    g = exponent(eps)
    if g <= 0:
        raise ValueError(f"eps must be > 0 and large enough that g(eps) = 3 eps^2/32 does not "
                         f"underflow, got {eps!r}")
    if events <= delta:
        raise ValueError(f"events ({events!r}) must exceed delta ({delta!r}): below it the "
                         "bound holds at every width")
    return math.log(events / delta) / g


def _log_mgf(lam: float) -> float:
    """log E exp(lam ReLU(Z)^2) = log(1/2 + 1/(2 sqrt(1 - 2 lam))), lam < 1/2."""
    return math.log(0.5 + 0.5 / math.sqrt(1 - 2 * lam))


def optimal_exponents(eps: float) -> tuple[float, float]:
    """The best per-unit Chernoff exponents (upper tail, lower tail) at distortion ``eps``.

    sup over lam of ``lam (1 + eps)/2 - log M(lam)`` and of ``-lam (1 - eps)/2 - log M(-lam)``,
    with M the moment generating function of ReLU(Z)^2 (Cramer's rate function).

    Examples
    --------
    >>> up, lo = optimal_exponents(0.01)
    >>> round(up / 0.01**2, 3), round(lo / 0.01**2, 3)
    (0.099, 0.101)
    """
    eps = v.in_interval("eps", _py(eps), 0.0, 1.0)
    up = optimize.minimize_scalar(lambda l: -(l * (1 + eps) / 2 - _log_mgf(l)),
                                  bounds=(1e-12, 0.5 - 1e-12), method="bounded",
                                  options={"xatol": 1e-12})
    lo = optimize.minimize_scalar(lambda l: -(-l * (1 - eps) / 2 - _log_mgf(-l)),
                                  bounds=(1e-12, 1e3), method="bounded",
                                  options={"xatol": 1e-12})
    return float(-up.fun), float(-lo.fun)


def optimal_bound(m: int, eps: float) -> float:
    """``exp(-m I_+) + exp(-m I_-)``: the best two-sided bound of the Chernoff form.

    Examples
    --------
    >>> optimal_bound(100, 0.3) < failure_bound(100, 0.3)
    True
    """
    m = v.positive_float("m", _py(m))
    up, lo = optimal_exponents(eps)
    return math.exp(-m * up) + math.exp(-m * lo)


def exact_eps_at(m: int, delta: float) -> float:
    """The eps at which the *exact* failure probability ``relu_layer_tail(m, eps)`` equals
    ``delta`` (the (1 - delta)-quantile of | ||v||^2/||u||^2 - 1 |).

    Examples
    --------
    >>> e = exact_eps_at(500, 0.05)
    >>> abs(relu_layer_tail(500, e) - 0.05) < 1e-9
    True
    """
    m = v.positive_int("m", _py(m))
    delta = v.probability("delta", _py(delta), open_ends=True)
    hi = 1.0
    while relu_layer_tail(m, hi) > delta:
        hi *= 2
    return optimize.brentq(lambda x: relu_layer_tail(m, x) - delta, 1e-12, hi, xtol=1e-14)
