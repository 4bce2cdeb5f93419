"""The typical length of a Gaussian ReLU network: exact moments of log M_d.

For Gaussian weights of variance ``2 kappa / n_{j-1}`` and zero biases, given layer j-1 the
pre-activations of layer j are i.i.d. ``N(0, 2 kappa M_{j-1})``, so (Hanin & Rolnick 2018,
section 3.1; the law the norm chain samples)

``M_j = M_{j-1} (2 kappa / n_j) chi^2_{K_j}``,  ``K_j ~ Binomial(n_j, 1/2)`` independent,

with ``M_j = ||act^(j)||^2 / n_j``. A network is *alive* when some unit is on in every layer
(``K_j >= 1`` for all j); given that, ``log(M_d / M_0)`` is a sum of independent terms with

``E[log((2 kappa / n) chi^2_K) | K >= 1] = log(2 kappa / n) + log 2 + E[psi(K/2) | K >= 1]``,
``Var[log chi^2_K | K >= 1] = E[psi'(K/2) | K >= 1] + Var[psi(K/2) | K >= 1]``

(``psi`` the digamma function: ``E log chi^2_k = log 2 + psi(k/2)``, ``Var = psi'(k/2)``).
The mean ``E[M_d] = kappa^d M_0`` is carried by rare long networks; ``exp(E log M_d)`` is
where the typical network lies, and ``log M_d`` has light tails, so sample means of it can be
tested with ordinary t intervals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import special, stats

from ..core import validate as v

__all__ = ["log_step", "log_length_moments", "alive_probability"]


def _alive_binomial(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Values k = 1..n and the law of K ~ Bin(n, 1/2) conditioned on K >= 1."""
    k = np.arange(1, n + 1)
    p = stats.binom.pmf(k, n, 0.5)
    return k, p / p.sum()


def log_step(n: int, kappa: float = 1.0) -> tuple[float, float]:
    """Mean and variance of ``log(M_j / M_{j-1})`` for one layer of width ``n``, given alive.

    Parameters
    ----------
    n : int
        The width of the layer.
    kappa : float
        The weight variance is ``2 kappa / fan-in``.

    Returns
    -------
    tuple of float
        ``(E, Var)`` of the log of the one-layer factor, conditionally on ``K >= 1``.

    References
    ----------
    Hanin & Rolnick (2018), section 3.1 and eq. (10).

    Examples
    --------
    >>> mean, var = log_step(1)        # K = 1: log(2 chi^2_1) = log 2 + log 2 + psi(1/2)
    >>> round(mean - (2 * math.log(2) + float(special.digamma(0.5))), 12)
    0.0
    >>> round(var - math.pi**2 / 2, 12)
    0.0
    """
    n = v.positive_int("n", n)
    kappa = v.positive_float("kappa", kappa)
    k, p = _alive_binomial(n)
    psi = special.digamma(k / 2)
    mean = math.log(2 * kappa / n) + math.log(2) + float(p @ psi)
    var = float(p @ special.polygamma(1, k / 2)) + float(p @ (psi - p @ psi) ** 2)
    return mean, var


def log_length_moments(widths: Sequence[int], kappa: float = 1.0) -> tuple[float, float]:
    """Mean and variance of ``log(M_d / M_0)`` through layers ``widths = [n_1, ..., n_d]``.

    The sum of :func:`log_step` over the layers (the factors are independent), conditionally
    on the network being alive.

    Examples
    --------
    >>> mean, var = log_length_moments([100] * 100)
    >>> round(mean, 3), round(var, 3)      # the typical net lies e^-2.5 below the mean
    (-2.542, 5.194)
    """
    widths = v.widths("widths", widths)
    mean = var = 0.0
    for n in widths:
        m, s2 = log_step(n, kappa)
        mean, var = mean + m, var + s2
    return mean, var


def alive_probability(widths: Sequence[int]) -> float:
    """P(some unit is on in every layer) ``= prod_j (1 - 2^-n_j)``.

    Examples
    --------
    >>> alive_probability([1, 1])
    0.25
    """
    widths = v.widths("widths", widths)
    return float(np.prod([1 - 0.5**n for n in widths]))
