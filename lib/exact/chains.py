"""The norm chain and the Gram chain: exact samplers of Gaussian ReLU networks, by name.

Thin functions over :func:`eit.exact.engine.trace` with per-layer weight variances:

* :func:`norm_chain`: one input; the chain of scalars r_l = ||h^l||^2 =
  sigma_l^2 r_{l-1} chi^2_{K_l}, K_l ~ Bin(n_l, 1/2), O(1) per layer, backward pass included
  (conditionally on the forward pass W^{l+1} = a^{l+1} h^l^T / r_l + Z P_perp, and
  c = a^l . dloss/da^l is the same at every layer by Euler's identity, so
  q_l = ||dloss/da^l||^2 = c^2 / r_l + sigma_{l+1}^2 q_{l+1} chi^2_{K_l - 1});
* :func:`gram_chain`: N inputs; the pre-activations given the previous layer are n_l i.i.d.
  Gaussian vectors of covariance sigma^2 H H^T, O(n_l N^2 + N^3) per layer.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ..core import validate as v
from ..core.device import DTYPE, device
from ..sample.laws import gaussian_fixed
from ..sample.layers import Dense, ReLU, Serial, serial
from ..sample.traces import Trace
from .engine import trace

__all__ = ["gaussian_relu_mlp", "gram_chain", "norm_chain"]


def _layer_variances(widths: list[int], variances: Sequence[float]) -> list[float]:
    """Validate one positive weight variance per layer."""
    if isinstance(variances, np.ndarray):
        variances = variances.tolist()
    if isinstance(variances, (int, float)):
        raise ValueError(f"variances must be a sequence of positive numbers, got {variances!r}")
    return v.per_layer("variances", variances, len(widths))


def gaussian_relu_mlp(widths: Sequence[int], variances: Sequence[float]) -> Serial:
    """The description of a ReLU network with N(0, variances[l]) weights in layer l.

    Examples
    --------
    >>> gaussian_relu_mlp([4, 5], [0.5, 0.4]).widths(3)
    (3, 4, 5)
    """
    widths = v.widths("widths", widths)
    sig2 = _layer_variances(widths, variances)
    return Serial(tuple(serial(Dense(n, gaussian_fixed(s2)), ReLU())
                        for n, s2 in zip(widths, sig2, strict=True)))


def norm_chain(n0: int, widths: Sequence[int], variances: Sequence[float], *, n_nets: int,
               gen: torch.Generator, delta: str | None = None) -> Trace:
    """Exact law of (log ||h^l||, log ||dloss/da^l||) for one input of norm 1, ``n_nets`` nets.

    The law of :func:`eit.sample.mlps.relu_mlp` with Gaussian weights of variance
    ``variances[l]`` in layer l and ``delta='random'`` (a standard Gaussian dloss/da^L
    independent of the network). ``n0`` is the input dimension (it enters the law of the
    gradient at the input, ``log_grad[0]``). Dead networks give ``-inf``, as the explicit pass.

    Parameters
    ----------
    n0 : int
        The input dimension.
    widths : sequence of int
        ``[n_1, ..., n_L]``.
    variances : sequence of float
        The weight variance of every layer.
    n_nets : int
        The number of networks.
    gen : torch.Generator
        The random generator.
    delta : None or 'random'
        The backward pass.

    Returns
    -------
    Trace
        ``log_h`` (L+1, n_nets, 1); with ``delta``: ``log_delta``, ``log_grad_w`` (L, n_nets,
        1) and ``log_grad`` (L+1, n_nets, 1).

    References
    ----------
    Arpit & Bengio (2019), Theorem 2; Hanin & Rolnick (2018), section 3.1.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> t = norm_chain(10, [10] * 1000, [0.2] * 1000, n_nets=50, gen=generator(0),
    ...                delta="random")
    >>> bool(torch.isnan(t.log_delta).any())
    False
    """
    n0 = v.positive_int("n0", n0)
    net = gaussian_relu_mlp(widths, variances)
    v.positive_int("n_nets", n_nets)
    if delta not in (None, "random"):
        raise ValueError(f"delta must be None or 'random', got {delta!r}")
    x = torch.zeros(1, n0, dtype=DTYPE, device=device())
    x[0, 0] = 1.0
    backward = None if delta is None else "random_preactivation"
    return trace(net, x, n_nets=n_nets, gen=gen, backward=backward, method="norm")


def gram_chain(x: torch.Tensor, widths: Sequence[int], variances: Sequence[float], *,
               n_nets: int, gen: torch.Generator) -> Trace:
    """Forward log-norms of N inputs through ``n_nets`` Gaussian ReLU nets via Gram matrices.

    The law of the forward pass of :func:`eit.sample.mlps.relu_mlp` with Gaussian weights of
    variance ``variances[l]``; cost O(n_l N^2 + N^3) per layer, n_l N random numbers.

    Parameters
    ----------
    x : torch.Tensor
        ``(N, n_0)`` inputs shared by the networks.
    widths, variances, n_nets, gen
        As in :func:`norm_chain`.

    Returns
    -------
    Trace
        ``log_h`` of shape (L+1, n_nets, N).

    References
    ----------
    Hanin & Rolnick (2018), section 3.1; the conditional Gaussian law of
    :mod:`eit.exact.engine`.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> x = torch.eye(3, dtype=torch.float64)
    >>> tuple(gram_chain(x, [8, 8], [0.25, 0.25], n_nets=4, gen=generator(0)).log_h.shape)
    (3, 4, 3)
    """
    x = v.tensor("x", x, ndim=2)
    net = gaussian_relu_mlp(widths, variances)
    return trace(net, x, n_nets=n_nets, gen=gen, method="conditional")
