"""Exact laws used as theory against which Monte Carlo estimates are compared.

One ReLU layer with Gaussian weights (Arpit & Bengio 2019, Lemmas 1-4): for a fixed input u
and R_ij ~ N(0, 2/m), the coordinates a_i = R_i.u are i.i.d. N(0, 2||u||^2/m), so the number
K of active units is Binomial(m, 1/2) and, given K, (m/2)||ReLU(Ru)||^2/||u||^2 is chi-squared
with K degrees of freedom. Hence ||v||^2/||u||^2 = (2/m) chi^2_K exactly, at every width. The
masked layer of Lemma 4 has the same law (a symmetric a_i is independent of its sign).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as st

from ..core import validate as v

#: Widths up to this sum over every K; above, over the bulk ``|K - m/2| <= 20 sqrt(m)`` only
#: (the rest has probability below ``2 exp(-800)``, under the smallest double).
_FULL_SUM = 100_000
#: The largest width whose law is computed (the bulk then has about 4 million terms).
MAX_WIDTH = 10**10


def _width(m) -> int:
    m = v.positive_int("m", m)
    if m > MAX_WIDTH:
        raise ValueError(f"m must be at most {MAX_WIDTH} for the exact law, got {m}")
    return m


def _binomial_weights(m: int) -> tuple[np.ndarray, np.ndarray]:
    if m <= _FULL_SUM:
        k = np.arange(m + 1)
    else:
        half = 20 * math.sqrt(m)
        k = np.arange(max(0, math.floor(m / 2 - half)), min(m, math.ceil(m / 2 + half)) + 1)
    return k, st.binom.pmf(k, m, 0.5)


def _probability(p: float) -> float:
    """A sum of probabilities of disjoint events, rounded into [0, 1]."""
    return float(min(1.0, max(0.0, p)))


def relu_layer_sq_ratio_cdf(m: int, t: float) -> float:
    """P(||ReLU(Ru)||^2 / ||u||^2 <= t) for R_ij ~ N(0, 2/m) (exact).

    Parameters
    ----------
    m : int
        The width of the layer.
    t : float
        A finite threshold.

    Returns
    -------
    float
        The probability (sum over K ~ Bin(m, 1/2) of chi-squared CDFs).

    Raises
    ------
    ValueError
        If ``m`` is not a positive int or ``t`` is not finite.

    References
    ----------
    Arpit & Bengio (2019), Lemmas 1-2.

    Examples
    --------
    >>> round(relu_layer_sq_ratio_cdf(1, 0.0), 12)
    0.5
    """
    m = _width(m)
    t = v.finite_real("t", t)
    if t < 0:
        return 0.0
    k, w = _binomial_weights(m)
    # K = 0: the ratio is exactly 0 <= t
    cdf = np.where(k > 0, st.chi2.cdf(m * t / 2, np.maximum(k, 1)), 1.0)
    return _probability(np.dot(w, cdf))


def relu_layer_tail(m: int, eps: float) -> float:
    """P(| ||v||^2/||u||^2 - 1 | > eps), the failure probability of Lemmas 2 and 4 (exact).

    References
    ----------
    Arpit & Bengio (2019), Lemmas 2 and 4.

    Examples
    --------
    >>> 0 < relu_layer_tail(100, 0.5) < 1
    True
    """
    m = _width(m)
    eps = v.in_interval("eps", eps, 0.0, float("inf"))
    k, w = _binomial_weights(m)
    upper = np.where(k > 0, st.chi2.sf(m * (1 + eps) / 2, np.maximum(k, 1)), 0.0)
    # P(ratio < 1 - eps): the CDF (continuous for K >= 1; the atom at 0 lies below 1 - eps).
    lower = relu_layer_sq_ratio_cdf(m, 1 - eps) if eps < 1 else 0.0
    return _probability(np.dot(w, upper) + lower)


def relu_layer_mean_distortion(m: int) -> float:
    """E| 1 - ||v|| / ||u|| |, the distortion of Figure 6 (Appendix B, eq. 35), exactly.

    With X ~ chi_K and c = sqrt(2/m): E|1 - cX| = 1 - c mu_K + 2 [c mu_K (1 - F_{K+1}(1/c^2))
    - (1 - F_K(1/c^2))], using x f_{chi_K}(x) = mu_K f_{chi_{K+1}}(x); F are chi-squared CDFs.

    Examples
    --------
    >>> 0 < relu_layer_mean_distortion(64) < 1
    True
    """
    m = _width(m)
    k, w = _binomial_weights(m)
    c2 = 2.0 / m
    kk = np.maximum(k, 1).astype(float)
    mu = st.chi.mean(kk)
    c = np.sqrt(c2)
    out = np.where(k > 0, 1 - c * mu + 2 * (c * mu * st.chi2.sf(1 / c2, kk + 1)
                                            - st.chi2.sf(1 / c2, kk)), 1.0)  # K = 0: 1
    return float(max(0.0, np.dot(w, out)))


def relu_layer_distortion_quantile(m: int, q: float) -> float:
    """The q-quantile of | 1 - ||v||/||u|| | (exact law, solved by bisection).

    Examples
    --------
    >>> relu_layer_distortion_quantile(64, 0.5) > 0
    True
    """
    m = _width(m)
    q = v.in_interval("q", q, 0.0, 1.0)

    def prob_below(e: float) -> float:  # P(|1 - sqrt(R)| <= e), R = (2/m) chi2_K
        return relu_layer_sq_ratio_cdf(m, (1 + e) ** 2) - (
            relu_layer_sq_ratio_cdf(m, (1 - e) ** 2) if e < 1 else 0.0)

    lo, hi = 0.0, 1.0
    if prob_below(hi) < q:
        hi = 2.0
        while prob_below(hi) < q:
            hi *= 2
            if hi > 1e100:
                raise ValueError(f"q={q} is too close to 1 for the precision of the exact law")
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if prob_below(mid) < q else (lo, mid)
    return hi


__all__ = ["MAX_WIDTH", "relu_layer_distortion_quantile", "relu_layer_mean_distortion",
           "relu_layer_sq_ratio_cdf", "relu_layer_tail", "gaussian_layer_tail"]


def gaussian_layer_tail(m: int, eps: float) -> float:
    """P(| ||Ru||^2/||u||^2 - 1 | > eps) for a linear layer with i.i.d. N(0, 1/m) entries.

    The ratio is chi^2_m / m whatever u is, so the tail is exact: ``P(chi^2_m > m(1 + eps))
    + P(chi^2_m < m(1 - eps))``. It is also the failure probability of inner-product
    preservation at ``u1 = u2`` (Lemma 5 of Arpit & Bengio 2019, after Kakade and
    Shakhnarovich), where the inner product has its largest variance.

    References
    ----------
    Arpit & Bengio (2019), Lemma 5, eq. (141).

    Examples
    --------
    >>> round(gaussian_layer_tail(200, 0.2), 3)
    0.045
    """
    m = _width(m)
    eps = v.in_interval("eps", eps, 0.0, float("inf"))
    return _probability(st.chi2.sf(m * (1 + eps), m) + st.chi2.cdf(m * (1 - eps), m))
