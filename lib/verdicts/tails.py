"""Tail events measured from samples: certified thresholds and envelope failures.

A probability bound ``P(X > eps) <= delta`` is tested by counting exceedances
(:func:`eit.verdicts.stats.proportion_of`, an exact interval); read the other way, a sample
of X *certifies* the smallest ``eps`` at which the upper confidence limit of ``P(X > eps)``
is at most ``delta``, which measures how loose a bound's ``eps`` is. A bound on a product of
per-layer ratios fails when any of them leaves its envelope ``(1 +- eps)^k``. Where the law
of such a product is known, its tail is computed exactly (:func:`depth_ratio_tail`), so that
a sampled tail and an approximation of it can be compared with the exact value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from scipy import special
from scipy import stats as st

from ..core import validate as v
from .stats import proportion

__all__ = ["MAX_TAIL_WIDTH", "certified_threshold", "depth_ratio_tail", "leaves_envelope"]


def _samples(samples) -> torch.Tensor:
    v.array("samples", samples, min_size=1)       # real, finite, not empty (named errors)
    if not isinstance(samples, torch.Tensor):
        samples = torch.as_tensor(np.asarray(samples, dtype=float))
    return samples.detach().reshape(-1)


def certified_threshold(samples, delta: float, confidence: float = 0.95) -> float:
    """The smallest ``eps`` that ``samples`` certify: ``P(X > eps) <= delta`` at ``confidence``.

    With K the largest count whose Clopper-Pearson upper limit (two-sided interval at
    ``confidence``) is at most ``delta``, it is the (K+1)-th largest sample: above it at
    most K samples exceed, and K exceedances out of n are compatible with ``delta``.

    Parameters
    ----------
    samples : array_like or torch.Tensor
        n independent draws of X, any shape (flattened).
    delta : float
        The tail probability, in (0, 1).
    confidence : float
        Of the Clopper-Pearson interval.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If even zero exceedances out of n have an upper limit above ``delta`` (too few
        samples to certify anything at this ``delta``).

    Notes
    -----
    The upper limit increases with the count, so K is found by bisection: ``O(log n)``
    quantiles of the beta law and one partial sort, ``O(n log n)`` in all.

    References
    ----------
    Arpit & Bengio (2019), Theorems 3 and 6: the distortion a sample certifies at the
    failure probability delta, against the eps of eq. (16).

    Examples
    --------
    >>> certified_threshold(torch.arange(100.0), 0.05)
    99.0
    """
    s = _samples(samples)
    delta = v.in_interval("delta", delta, 0.0, 1.0)
    confidence = v.in_interval("confidence", confidence, 0.0, 1.0)
    if confidence == 0:
        raise ValueError("confidence must lie in (0, 1), got 0")
    n = s.numel()

    def upper(j: int) -> float:  # the Clopper-Pearson upper limit, increasing in j
        return proportion(j, n, confidence).hi

    if upper(0) > delta:
        raise ValueError(f"samples: {n} samples cannot certify a tail probability of "
                         f"delta={delta} at confidence {confidence}")
    lo, hi = 0, n            # upper(lo) <= delta; upper(n) = 1 > delta: bisect in between
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if upper(mid) <= delta else (lo, mid)
    k = lo
    return float(torch.topk(s, k + 1).values[k])


def leaves_envelope(log_sq_ratio: torch.Tensor, steps: Sequence[float],
                    eps: float) -> torch.Tensor:
    """Whether a sample leaves the envelope ``(1 - eps)^k <= ratio <= (1 + eps)^k`` anywhere.

    Row i of ``log_sq_ratio`` is the log of a squared norm ratio that a bound keeps within
    ``[(1 - eps)^k_i, (1 + eps)^k_i]`` with ``k_i = steps[i]`` (the number of layers it
    passed); a sample fails when any row leaves its envelope.

    Parameters
    ----------
    log_sq_ratio : torch.Tensor
        ``(rows, samples)`` log squared ratios.
    steps : sequence of float
        One exponent per row.
    eps : float
        In (0, 1).

    Returns
    -------
    torch.Tensor
        ``(samples,)`` bool.

    References
    ----------
    Arpit & Bengio (2019), Theorem 2, eqs. (13)-(14): ``(1 - eps)^l ||x||^2 <= ||h^l||^2
    <= (1 + eps)^l ||x||^2`` and the same with ``L`` for the weight gradients.

    Examples
    --------
    >>> r = torch.log(torch.tensor([[1.05, 1.2], [1.0, 1.0]]))
    >>> leaves_envelope(r, [1, 2], 0.1)
    tensor([False,  True])
    """
    log_sq_ratio = v.tensor("log_sq_ratio", log_sq_ratio, ndim=2)
    steps = v.real_sequence("steps", steps)
    if len(steps) != log_sq_ratio.shape[0]:
        raise ValueError(f"steps must have one entry per row of log_sq_ratio "
                         f"({log_sq_ratio.shape[0]}), got {len(steps)}")
    eps = v.in_interval("eps", eps, 0.0, 1.0)
    k = torch.tensor(steps, dtype=log_sq_ratio.dtype,
                     device=log_sq_ratio.device).unsqueeze(-1)
    up, lo = math.log1p(eps), math.log1p(-eps)
    return ((log_sq_ratio > k * up) | (log_sq_ratio < k * lo)).any(0)


#: The widths at which :func:`depth_ratio_tail` keeps its accuracy (the log-gamma terms of the
#: characteristic function grow with the width, and so does their rounding).
MAX_TAIL_WIDTH = 100_000


def _log_moment(lp: np.ndarray, a: np.ndarray, log_scale: float, theta: float) -> float:
    """``log E[Y^theta]`` of one layer's ratio ``Y = (2/n) chi^2_K``, over ``a = K/2``."""
    return float(special.logsumexp(lp + theta * log_scale + special.gammaln(a + theta)
                                   - special.gammaln(a)))


def _chernoff_edge(log_moments, budget: float) -> float:
    """The smallest ``s`` with ``min_theta E[R^theta] e^{-theta s} <= budget`` over the given
    ``(theta, log E[R^theta])`` pairs: ``P(log R >= s) <= budget`` (Markov's inequality)."""
    return min((lm + math.log(1 / budget)) / th for th, lm in log_moments)


def depth_ratio_tail(width: int, depth: int, eps: float, tol: float = 1e-9) -> float:
    """``P(| ||h^L||^2/||x||^2 - 1 | > eps)`` for He weights ``N(0, 2/n)``, exactly.

    With every hidden width ``n`` and weights ``N(0, 2/n)`` (He, fan-out), the squared norm
    ratio is a product of ``L`` independent layer ratios ``Y = (2/n) chi^2_K``, ``K ~ Bin(n,
    1/2)`` (:mod:`eit.exact.norm_product`). The law of ``log R = sum log Y`` is inverted from
    its characteristic function ``phi(t)^L``, ``phi(t) = E Y^{it} = sum_K P(K) (4/n)^{it}
    Gamma(K/2 + it)/Gamma(K/2)``, by Gil-Pelaez's formula ``F(x) = 1/2 - (1/pi) int_0^inf
    Im(e^{-itx} phi(t)^L)/t dt`` with the midpoint rule of step ``h``. No approximation of the
    law enters; the result is within ``tol`` of the exact probability, by bounds computed
    along (Notes).

    Parameters
    ----------
    width : int
        ``n``, at most :data:`MAX_TAIL_WIDTH`.
    depth : int
        ``L``.
    eps : float
        The tolerance, ``>= 0``.
    tol : float
        The absolute error allowed, in ``[1e-12, 0.01]``.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        On a width above :data:`MAX_TAIL_WIDTH`, a ``tol`` outside its range, or arguments
        that are not a positive int (``width``, ``depth``) or a non-negative finite number.

    Notes
    -----
    The error has four parts, each bounded by a fraction of ``tol``:

    * *aliasing*: the midpoint sum equals ``1/2 - E sq(h(X - x)/2)/2``, ``sq`` the square wave
      ``sign(sin)``, which is ``P(X < x)`` up to ``P(|X - x| >= 2 pi/h)``; ``h`` is chosen so
      that Markov's inequality on ``E R^{+-theta}`` (exact Gamma ratios, the best ``theta`` of
      a grid) bounds that mass by ``tol/10`` per side and point. A tail that the same
      inequality bounds by ``tol/10`` is set to 0 without the series;
    * *truncation*: ``|Gamma(a + it)|`` decreases in ``t`` and is at most ``Gamma(a) a/t``, so
      ``M(t) = sum_K P(K)|Gamma(K/2 + it)/Gamma(K/2)|`` bounds ``|phi|``, decreases, and is at
      most ``E(K/2)/t``; after the term ``j`` (``t = (j + 1/2) h``) the rest of the series is
      at most ``[M(t)^L log(J/(j + 1/2)) + (E(K/2)/(h(J - 1)))^L/L]/pi`` for any ``J > j +
      3/2`` (``J = E(K/2)/(h M(t))`` where larger), and the series stops when that is at most
      ``tol/10``;
    * the binomial weights below ``tol/(20 n L)`` are dropped (mass below ``tol/20`` in all
      layers); ``K = 0`` (ratio 0, probability ``2^-n`` per layer) is counted exactly;
    * rounding: the terms are computed in double precision from log-gamma values below
      ``10^6``, relative error about ``10^-10`` at the largest width.

    References
    ----------
    Arpit & Bengio (2019), Theorem 1 and Corollary 1 (the failure probability of one input).
    Gil-Pelaez (1951); Hughett (1998) for the midpoint rule's aliasing error.

    Examples
    --------
    >>> round(depth_ratio_tail(4060, 10, 0.15), 6)
    0.173932

    One layer has a closed form (a sum of chi-squared tails), which it reproduces:

    >>> from eit.exact.one_layer import relu_layer_tail
    >>> abs(depth_ratio_tail(100, 1, 0.1) - relu_layer_tail(100, 0.1)) < 1e-9
    True
    """
    n = v.positive_int("width", width)
    if n > MAX_TAIL_WIDTH:
        raise ValueError(f"width must be at most {MAX_TAIL_WIDTH} for the exact tail, got {n}")
    depth = v.positive_int("depth", depth)
    eps = v.nonnegative_float("eps", eps)
    tol = v.in_interval("tol", tol, 1e-12, 0.01, closed_hi=True)
    k = np.arange(1, n + 1)
    lp = st.binom.logpmf(k, n, 0.5)
    keep = lp >= math.log(tol / (20 * n * depth))
    k, lp = k[keep], lp[keep]
    lp = lp - special.logsumexp(lp)              # the law given K >= 1 (and kept)
    a = k / 2.0
    log_scale = math.log(4.0 / n)
    # Markov's inequality on R^theta and R^-theta, theta on a grid (E R^-theta needs theta < a)
    ups = [(th, depth * _log_moment(lp, a, log_scale, th)) for th in 2.0 ** np.arange(-2, 12)]
    downs = [(th, depth * _log_moment(lp, a, log_scale, -th))
             for th in 2.0 ** np.arange(-2, 12) if th < a[0]]
    budget = tol / 10
    above, below = _chernoff_edge(ups, budget), -_chernoff_edge(downs, budget)
    xs = {"hi": math.log1p(eps)} | ({"lo": math.log1p(-eps)} if eps < 1 else {})
    # P(X > x_hi) and P(X < x_lo); a point beyond an edge has them within tol/10 of 0 or 1
    tails = {"hi": float(xs["hi"] <= below), "lo": float(xs.get("lo", below) >= above)}
    live = {s: x for s, x in xs.items() if below < x < above}
    if live:
        width_w = max(max(above - x, x - below) for x in live.values())
        h = 2 * math.pi / width_w
        c = float(np.exp(special.logsumexp(lp + np.log(a))))      # E(K/2)
        sums = dict.fromkeys(live, 0.0)
        g_a = special.gammaln(a)
        j0, chunk, budget_terms = 0, 64, 5 * 10**7
        while True:
            j = np.arange(j0, j0 + chunk) + 0.5
            t = j * h
            log_terms = lp + special.loggamma(a + 1j * t[:, None]) - g_a      # (t, K)
            phi = np.exp(log_terms).sum(1) * np.exp(1j * t * log_scale)
            majorant = float(np.exp(log_terms.real).sum(1)[-1])
            alive = phi != 0                   # an underflowed phi contributes nothing
            log_phi_l = depth * np.log(np.where(alive, phi, 1.0))
            for s, x in live.items():
                terms = np.where(alive, np.exp(log_phi_l - 1j * t * x), 0.0)
                sums[s] += float(np.sum(np.imag(terms) / j))
            j0 += chunk
            if majorant == 0.0:
                break
            j_last = j0 - 0.5                    # the last term's j + 1/2
            j2 = max(j_last + 2, c / (h * majorant))
            # terms up to j2: |phi|^L <= M(t_last)^L; beyond: |phi| <= E(K/2)/t
            log_far = depth * math.log(c / (h * (j2 - 1)))
            rest = (majorant**depth * math.log(j2 / j_last)
                    + (math.exp(log_far) / depth if log_far < 700 else math.inf)) / math.pi
            if rest <= tol / 10:
                break
            if j0 * k.size > budget_terms:
                raise ValueError(f"width={n}, depth={depth}, eps={eps}: the series needs "
                                 f"more than {budget_terms} terms at tol={tol}")
        if not all(map(math.isfinite, sums.values())):     # never a silent wrong result
            raise ValueError(f"width={n}, depth={depth}, eps={eps}: the series did not give "
                             "a finite sum")
        cdf = {s: 0.5 - sums[s] / math.pi for s in live}
        tails["hi"] = 1.0 - cdf["hi"] if "hi" in live else 0.0
        tails["lo"] = cdf["lo"] if "lo" in live else 0.0
    p_cond = min(1.0, max(0.0, tails["hi"] + tails["lo"]))
    log_all_active = depth * math.log1p(-(0.5**n))          # P(K >= 1 at every layer)
    some_zero = -math.expm1(log_all_active)               # a zero ratio fails when eps < 1
    return float(min(1.0, max(0.0, (some_zero if eps < 1 else 0.0)
                                   + math.exp(log_all_active) * p_cond)))
