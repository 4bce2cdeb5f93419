"""Tail events measured from samples: certified thresholds and envelope failures.

A probability bound ``P(X > eps) <= delta`` is tested by counting exceedances
(:func:`eit.verdicts.stats.proportion_of`, an exact interval); read the other way, a sample
of X *certifies* the smallest ``eps`` at which the upper confidence limit of ``P(X > eps)``
is at most ``delta``, which measures how loose a bound's ``eps`` is. A bound on a product of
per-layer ratios fails when any of them leaves its envelope ``(1 +- eps)^k``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from ..core import validate as v
from .stats import proportion

__all__ = ["certified_threshold", "leaves_envelope"]


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
