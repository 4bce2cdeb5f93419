"""The exact length chain of a Gaussian ReLU net with biases, on NumPy's generator.

Weights of layer j are ``N(0, 2 kappa / n_{j-1})``, biases ``N(0, nu2_j)``. Given layer j-1
the pre-activations of layer j are i.i.d. ``N(0, s^2)`` with ``s^2 = 2 kappa M_{j-1} + nu2_j``
(``M = ||act||^2 / n``), and ``sum_i ReLU(Z_i)^2`` over ``n_j`` standard normals is a
chi-square with ``K ~ Binomial(n_j, 1/2)`` degrees of freedom, ``2 Gamma(K/2)``. Hence

``M_j = s^2 chi^2_K / n_j``:

two draws per layer and network whatever the width (Hanin & Rolnick 2018, Theorem 5 with
Gaussian weights and biases). This is the law of
:func:`eit.exact.moments.gaussian_bias_length_chain`, drawn with NumPy's binomial (BTPE) and
gamma samplers, which are several times faster on a CPU than torch's, and keeping only the
requested depths (a chain of depth 1,000 over 30,000 networks would otherwise hold 240 MB).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core import validate as v

__all__ = ["bias_length_chain"]


def bias_length_chain(widths: Sequence[int], *, n_nets: int, rng: np.random.Generator,
                      nu2=0.0, kappa: float = 1.0, m0: float = 1.0,
                      keep: Sequence[int] | None = None) -> dict[int, np.ndarray]:
    """Exact samples of ``M_j`` at the depths ``keep`` (default: every depth 0..d).

    Parameters
    ----------
    widths : sequence of int
        ``[n_1, ..., n_d]``.
    n_nets : int
        The number of independent networks.
    rng : numpy.random.Generator
        The generator (:func:`eit.core.seeds.numpy_rng`).
    nu2 : float or sequence of float
        The bias variance, one value or one per layer (>= 0).
    kappa, m0 : float
        The weight variance factor and ``M_0``.
    keep : sequence of int, optional
        The depths to return.

    Returns
    -------
    dict of int -> numpy.ndarray
        ``{j: M_j}`` with arrays of shape ``(n_nets,)``.

    Examples
    --------
    >>> out = bias_length_chain([4, 4], n_nets=3, rng=np.random.default_rng(0), keep=[2])
    >>> sorted(out), out[2].shape
    ([2], (3,))
    """
    widths = v.widths("widths", widths)
    n_nets = v.positive_int("n_nets", n_nets)
    kappa, m0 = v.positive_float("kappa", kappa), v.positive_float("m0", m0)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    d = len(widths)
    b2 = ([float(nu2)] * d if np.isscalar(nu2) else [float(b) for b in nu2])
    if len(b2) != d or any(not np.isfinite(b) or b < 0 for b in b2):
        raise ValueError(f"nu2 must be one finite value >= 0 or one per layer ({d})")
    keep = set(range(d + 1)) if keep is None else {int(k) for k in keep}
    if any(k < 0 or k > d for k in keep):
        raise ValueError(f"keep must hold depths in 0..{d}, got {sorted(keep)}")
    m = np.full(n_nets, m0)
    out = {0: m.copy()} if 0 in keep else {}
    for j, (n, b) in enumerate(zip(widths, b2, strict=True), start=1):
        on = rng.binomial(n, 0.5, size=n_nets)
        chi2 = 2 * rng.standard_gamma(np.maximum(on, 1) / 2) * (on > 0)
        m = (2 * kappa * m + b) * chi2 / n
        if j in keep:
            out[j] = m
    return out
