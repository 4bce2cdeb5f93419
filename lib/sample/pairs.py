"""Pairs of vectors with a given inner product: random projections of a pair, and inputs at
given angles with the distances between their images.

By rotation invariance the joint law of ``(R u1, R u2)`` for a Gaussian matrix R depends on
unit u1, u2 only through ``<u1, u2>``: the pairs ``((R u1)_i, (R u2)_i)`` are i.i.d. centred
Gaussian pairs with that correlation, so they are sampled directly, without R.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import torch

from ..core import validate as v
from ..core.device import randn

__all__ = ["projection_gaps", "angle_inputs", "sq_distances_to_first"]


def projection_gaps(m: int, cos: float, samples: int, *, variance: float, gen: torch.Generator,
                    masked: bool = False) -> torch.Tensor:
    """``|<v1, v2> - <u1, u2>|`` for unit u1, u2 with ``<u1, u2> = cos``: ``(samples,)``.

    ``v_i = R u_i`` with ``R_ij ~ N(0, variance)`` (m rows), or ``v_i = (R u_i) * z`` with a
    Bernoulli(1/2) mask z when ``masked``. Draws, per call: two ``(samples, m)`` standard
    normal blocks, then (masked) a third whose signs give the mask.

    References
    ----------
    Arpit & Bengio (2019), Lemma 5 (eq. 141, after Kakade & Shakhnarovich) and Lemma 6
    (eq. 233): the failure probabilities of inner-product preservation.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> projection_gaps(50, 0.5, 3, variance=1 / 50, gen=generator(0)).shape
    torch.Size([3])
    """
    m, samples = v.positive_int("m", m), v.positive_int("samples", samples)
    cos = v.in_interval("cos", cos, -1.0, 1.0, closed_hi=True)
    variance = v.positive_float("variance", variance)
    if not isinstance(masked, bool):
        raise TypeError(f"masked must be a bool, got {type(masked).__name__}")
    z1, z2 = randn(samples, m, gen=gen), randn(samples, m, gen=gen)
    prod = variance * z1 * (cos * z1 + math.sqrt(1 - cos**2) * z2)
    if masked:
        prod = prod * (randn(samples, m, gen=gen) > 0)
    return (prod.sum(-1) - cos).abs()


def angle_inputs(thetas: Sequence[float], dim: int) -> torch.Tensor:
    """Unit inputs ``x1 = e1`` and ``x2(theta) = cos(theta) e1 + sin(theta) e2``.

    Returns
    -------
    torch.Tensor
        ``(1 + len(thetas), dim)``, float64: row 0 is x1, row i the x2 of ``thetas[i-1]``.

    References
    ----------
    Arpit & Bengio (2019), section 3.4: distances between pairs of inputs.

    Examples
    --------
    >>> angle_inputs([math.pi / 2], 3)
    tensor([[1.0000e+00, 0.0000e+00, 0.0000e+00],
            [6.1232e-17, 1.0000e+00, 0.0000e+00]], dtype=torch.float64)
    """
    if isinstance(thetas, (str, bytes)) or not isinstance(thetas, Iterable):
        raise TypeError(f"thetas must be a sequence of angles, got {type(thetas).__name__}")
    thetas = list(thetas)
    if not thetas:
        raise ValueError("thetas must not be empty")
    dim = v.positive_int("dim", dim)
    if dim < 2:
        raise ValueError(f"dim must be at least 2, got {dim}")
    x = torch.zeros(1 + len(thetas), dim, dtype=torch.float64)
    x[0, 0] = 1.0
    for i, th in enumerate(thetas, start=1):
        th = v.finite_real(f"thetas[{i - 1}]", th)
        x[i, 0], x[i, 1] = math.cos(th), math.sin(th)
    return x


def sq_distances_to_first(h_unit: torch.Tensor, log_norm: torch.Tensor) -> torch.Tensor:
    """``||h(x_i) - h(x_0)||^2`` for i >= 1, from unit directions and log-norms.

    An observer for :func:`eit.exact.engine.trace` (``observe={"sq_dist": ...}``).

    Parameters
    ----------
    h_unit : torch.Tensor
        ``(nets, inputs, width)`` unit vectors.
    log_norm : torch.Tensor
        ``(nets, inputs)`` their log-norms.

    Returns
    -------
    torch.Tensor
        ``(nets, inputs - 1)``.

    References
    ----------
    Arpit & Bengio (2019), section 3.4.

    Examples
    --------
    >>> h = torch.eye(2, dtype=torch.float64).expand(1, 2, 2)
    >>> sq_distances_to_first(h, torch.zeros(1, 2, dtype=torch.float64))
    tensor([[2.]], dtype=torch.float64)
    """
    h_unit = v.tensor("h_unit", h_unit, ndim=3)
    log_norm = v.tensor("log_norm", log_norm, ndim=2)
    if tuple(log_norm.shape) != tuple(h_unit.shape[:2]):
        raise ValueError(f"log_norm must have shape (nets, inputs) = {tuple(h_unit.shape[:2])} "
                         f"(that of h_unit), got {tuple(log_norm.shape)}")
    h = h_unit * log_norm.exp().unsqueeze(-1)
    out = (h[:, 1:] - h[:, :1]).square().sum(-1)
    if not bool(torch.isfinite(out).all()):
        raise ValueError("h_unit, log_norm: a squared distance exceeds float64")
    return out
