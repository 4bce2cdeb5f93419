"""The depth-L norm ratio of a Gaussian ReLU network as a product of independent layers
(Arpit & Bengio 2019, Theorems 1-2 and Corollary 1; this book's derivation).

For Gaussian weights N(0, sigma_l^2) and one input, ||h^l||^2 = sigma_l^2 ||h^{l-1}||^2
chi^2_{K_l} with K_l ~ Bin(n_l, 1/2), whatever h^{l-1} is: the per-layer ratios are
independent, and ||h^L||^2/||x||^2 is their product. This module gives the exact moments of
one layer's ratio (SymPy, from the moment generating functions), the expected squared
gradient ratio of every layer from the unrolled exact backward chain, and the normal
approximation of the log-ratio used to find the width at which a tolerance fails with a given
probability.

References
----------
Arpit & Bengio (2019), Theorems 1-2, Corollary 1, Figures 1-2.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import sympy as sp
from scipy import optimize
from scipy import stats as st

from ..core import validate as v
from .symbolic import _expr

__all__ = ["binomial_moments", "chi2_moments", "layer_ratio_moments", "gradient_ratio",
           "variances", "normal_failure", "width_at_failure"]


def _fan(name: str, value):
    """A fan (a width): a positive int or a SymPy expression (positive where SymPy can tell)."""
    if isinstance(value, sp.Basic):
        return _expr(name, value, lo=0, strict=True)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be a positive int or a SymPy expression, got "
                        f"{type(value).__name__}")
    return v.positive_int(name, value)


def binomial_moments(n) -> tuple[sp.Expr, sp.Expr]:
    """(E K, E K^2) of K ~ Bin(n, 1/2), from its MGF ((1 + e^t)/2)^n.

    Examples
    --------
    >>> binomial_moments(sp.Symbol("n", positive=True))
    (n/2, n**2/4 + n/4)
    """
    n = _expr("n", n, lo=0)
    t = sp.Symbol("t")
    mgf = ((1 + sp.exp(t)) / 2) ** n
    return tuple(sp.expand(sp.simplify(sp.diff(mgf, t, k).subs(t, 0))) for k in (1, 2))


def chi2_moments(k) -> tuple[sp.Expr, sp.Expr]:
    """(E X, E X^2) of X ~ chi^2_k, from its MGF (1 - 2t)^(-k/2).

    Examples
    --------
    >>> chi2_moments(sp.Symbol("k", positive=True))
    (k, k**2 + 2*k)
    """
    k = _expr("k", k, lo=0)
    t = sp.Symbol("t")
    mgf = (1 - 2 * t) ** (-k / 2)
    return tuple(sp.expand(sp.simplify(sp.diff(mgf, t, j).subs(t, 0))) for j in (1, 2))


def layer_ratio_moments(n, variance=None) -> tuple[sp.Expr, sp.Expr]:
    """(E X, E X^2) of one layer's ratio X = sigma^2 chi^2_K, K ~ Bin(n, 1/2).

    ``variance`` defaults to He's 2/n (the paper's fan-out form for a square layer): then
    E X = 1 and E X^2 = 1 + 5/n.

    Examples
    --------
    >>> n = sp.Symbol("n", positive=True)
    >>> layer_ratio_moments(n)
    (1, 1 + 5/n)
    """
    n = _expr("n", n, lo=0, strict=True)
    s2 = 2 / n if variance is None else _expr("variance", variance, lo=0)
    k = sp.Symbol("K", positive=True)
    ek, ek2 = binomial_moments(n)
    c1, c2 = (sp.Poly(c, k) for c in chi2_moments(k))    # E[X | K]: polynomials in K
    moments = {0: 1, 1: ek, 2: ek2}
    first, second = (sum(coef * moments[deg] for (deg,), coef in c.terms()) for c in (c1, c2))
    return sp.simplify(s2 * first), sp.expand(sp.simplify(s2**2 * second))


def variances(scheme: str, fan_0, width, depth: int) -> list:
    """sigma_l^2, l = 1..L, of a network fan_0 -> width (L layers): ``'He'`` in the paper's
    fan-out form 2/n_l, or ``'Glorot'`` 2/(n_{l-1} + n_l). Symbols or numbers.

    Examples
    --------
    >>> variances("Glorot", 500, 100, 2)
    [1/300, 1/100]
    """
    depth = v.positive_int("depth", depth)
    scheme = v.choice("scheme", scheme, ("He", "Glorot"))
    fans = [_fan("fan_0", fan_0)] + [_fan("width", width)] * depth
    if scheme == "He":
        rule = lambda fi, fo: sp.Integer(2) / fo  # noqa: E731
    elif scheme == "Glorot":
        rule = lambda fi, fo: sp.Integer(2) / (fi + fo)  # noqa: E731
    else:
        raise ValueError(f"scheme must be 'He' or 'Glorot', got {scheme!r}")
    return [rule(fans[j], fans[j + 1]) for j in range(depth)]


def gradient_ratio(var: Sequence, fans: Sequence, layer: int, exact: bool = True) -> sp.Expr:
    """E ||dl/dW^l||_F^2 / (||delta||^2 ||x||^2) for a Gaussian ReLU net, delta independent.

    ``exact=True``: the unrolled exact backward chain q_l = c^2/r_l + sigma_{l+1}^2 q_{l+1}
    chi^2_{K_l - 1} (:func:`eit.exact.chains.norm_chain`), up to terms of order 2^-n from
    K_l = 0; ``exact=False``: the naive product of the forward factors n_j sigma_j^2 / 2 below
    l and the backward factors n_{j-1} sigma_j^2 / 2 above it.

    Examples
    --------
    >>> n = sp.Symbol("n", positive=True)
    >>> gradient_ratio([2 / n] * 3, [n] * 4, 2)
    1
    """
    if isinstance(var, (str, bytes)) or not isinstance(var, Sequence):
        raise TypeError(f"var must be a sequence of variances, got {type(var).__name__}")
    if len(var) == 0:
        raise ValueError("var must hold one variance per layer, got none")
    depth = len(var)
    var = [_expr(f"var[{i}]", s, lo=0) for i, s in enumerate(var)]
    if isinstance(fans, (str, bytes)) or not isinstance(fans, Sequence) or len(fans) != depth + 1:
        raise TypeError(f"fans must be a sequence of {depth + 1} fans (n_0, ..., n_L), got "
                        f"{fans!r}")
    fans = [_fan(f"fans[{i}]", f) for i, f in enumerate(fans)]
    if isinstance(layer, bool) or not isinstance(layer, int) or not 1 <= layer <= depth:
        raise ValueError(f"layer must be an int in 1..{depth}, got {layer!r}")
    if not isinstance(exact, bool):
        raise TypeError(f"exact must be a bool, got {type(exact).__name__}")
    s2 = lambda j: var[j - 1]                       # noqa: E731  (1-based layers)
    f = lambda j: s2(j) * fans[j] / 2               # noqa: E731  forward: E r_j / r_{j-1}
    forward = sp.prod([f(j) for j in range(1, layer)])
    if not exact:
        return sp.simplify(forward * sp.prod([s2(j) * fans[j - 1] / 2
                                              for j in range(layer + 1, depth + 1)]))
    b = lambda j: s2(j + 1) * (fans[j] / 2 - 1)     # noqa: E731  E sigma_{j+1}^2 X_j
    via_c = sum(s2(depth) * sp.prod([f(j) for j in range(m + 1, depth)])
                * sp.prod([b(j) for j in range(layer, m)]) for m in range(layer, depth))
    return sp.factor(sp.simplify(forward * (via_c + sp.prod([b(j)
                                                             for j in range(layer, depth)]))))


def normal_failure(width: float, depth: int, eps: float) -> float:
    """P(| ||h^L||^2/||x||^2 - 1 | > eps) for He weights, by the normal approximation of the
    log-ratio: mean -5L/(2n), variance 5L/n (from E X = 1, Var X = 5/n).

    Examples
    --------
    >>> round(normal_failure(4060, 10, 0.15), 3)
    0.174
    """
    width = v.positive_float("width", width)
    depth = v.positive_int("depth", depth)
    eps = v.in_interval("eps", eps, 0.0, 1.0)
    mu, sd = -2.5 * depth / width, math.sqrt(5 * depth / width)
    above = st.norm.sf((math.log1p(eps) - mu) / sd)
    below = st.norm.cdf((math.log1p(-eps) - mu) / sd)
    return float(above + below)


def width_at_failure(depth: int, eps: float, target: float, inputs: int = 1) -> float:
    """The width at which ``inputs * normal_failure`` equals ``target`` (one input: the width
    below which the tolerance fails more often than ``target``; ``inputs = N``: a width that
    suffices for all N inputs by a union bound over the inputs).

    Examples
    --------
    >>> round(width_at_failure(10, 0.15, 0.05))
    8510
    """
    depth = v.positive_int("depth", depth)
    eps = v.in_interval("eps", eps, 0.0, 1.0)
    target = v.in_interval("target", target, 0.0, 1.0)
    inputs = v.positive_int("inputs", inputs)
    lo, hi = 10.0, 1e10

    def excess(w: float) -> float:
        return inputs * normal_failure(w, depth, eps) - target

    if not excess(lo) > 0 > excess(hi):
        raise ValueError(f"target={target} (with depth={depth}, eps={eps}, inputs={inputs}) "
                         f"is not reached between widths {lo:g} and {hi:g}")
    return optimize.brentq(excess, lo, hi, xtol=1e-6)
