"""Residual ReLU networks whose blocks are scaled by gamma = 1/B (Arpit & Bengio 2019, App. A).

``h^{b+1} = h^b + gamma F_b(h^b)``, b = 1..B, every block ``F_b`` a ReLU network of
``block_depth`` square layers: Gaussian weights N(0, 2/fan-out) (eq. 1) or weight-normalized
layers with the gain sqrt(2 fan-in / fan-out) of eq. (30). The description runs on the
explicit engine (:func:`eit.sample.engine.trace`) and, one input per network, on the exact
conditional engine (:func:`eit.exact.engine.trace`).

References
----------
Arpit & Bengio (2019), Appendix A, eq. (31) and Theorem 5.
"""

from __future__ import annotations

import torch

from ..core import validate as v
from ..exact.engine import trace as exact_trace
from ..sample.engine import trace as explicit_trace
from ..sample.laws import he
from ..sample.layers import Dense, ReLU, Residual, Serial, WeightNorm, serial

__all__ = ["scaled_resnet", "output_sq_ratios"]


def scaled_resnet(width: int, blocks: int, *, weight_norm: bool = False,
                  block_depth: int = 2, gamma: float | None = None) -> Serial:
    """The description of a residual network with ``blocks`` blocks scaled by ``gamma``.

    Parameters
    ----------
    width : int
        The width of the residual stream and of every block layer.
    blocks : int
        B, the number of residual blocks.
    weight_norm : bool
        False: dense layers with N(0, 2/fan-out) weights (eq. 1); True: weight-normalized
        layers with isotropic rows and gain sqrt(2 fan-in/fan-out) (eq. 30).
    block_depth : int
        The number of ReLU layers in a block.
    gamma : float, optional
        The block scale, 1/B by default (Theorem 5).

    Returns
    -------
    Serial
        One element per block (the rows of the trace are the blocks).

    Examples
    --------
    >>> scaled_resnet(8, 3).depth
    3
    >>> scaled_resnet(8, 3, weight_norm=True).widths(8)
    (8, 8, 8, 8)
    """
    width, blocks = v.positive_int("width", width), v.positive_int("blocks", blocks)
    block_depth = v.positive_int("block_depth", block_depth)
    gamma = 1.0 / blocks if gamma is None else v.positive_float("gamma", gamma)
    if not isinstance(weight_norm, bool):
        raise TypeError(f"weight_norm must be a bool, got {type(weight_norm).__name__}")
    layer = (lambda: WeightNorm(width)) if weight_norm else (lambda: Dense(width, he("fan_out")))
    branch = serial(*[e for _ in range(block_depth) for e in (layer(), ReLU())])
    return Serial(tuple(Residual(branch, gamma) for _ in range(blocks)))


def output_sq_ratios(x: torch.Tensor, blocks: int, *, weight_norm: bool, n_nets: int,
                     gen: torch.Generator, explicit: bool = False) -> torch.Tensor:
    """``||f(x)||^2/||x||^2`` of :func:`scaled_resnet` networks (width ``x.shape[-1]``).

    Parameters
    ----------
    x : torch.Tensor
        ``(k, width)``: k inputs.
    blocks : int
        B, the number of blocks (``gamma = 1/B``).
    weight_norm : bool
        The block type (see :func:`scaled_resnet`).
    n_nets : int
        The number of independent networks.
    gen : torch.Generator
        The random generator.
    explicit : bool
        True: weights drawn (:func:`eit.sample.engine.trace`), the k inputs through the same
        networks; False: the exact conditional engine (:func:`eit.exact.engine.trace`), one
        input per network, input after input.

    Returns
    -------
    torch.Tensor
        ``(n_nets, k)``.

    References
    ----------
    Arpit & Bengio (2019), Appendix A, Theorem 5.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> x = torch.ones(2, 8, dtype=torch.float64)
    >>> output_sq_ratios(x, 3, weight_norm=True, n_nets=4, gen=generator(0)).shape
    torch.Size([4, 2])
    """
    x = v.tensor("x", x, ndim=2)
    if not isinstance(explicit, bool):
        raise TypeError(f"explicit must be a bool, got {type(explicit).__name__}")
    if bool((x == 0).all(-1).any()):
        raise ValueError("x must have no zero row (the ratio ||f(x)||^2/||x||^2 is undefined)")
    net = scaled_resnet(x.shape[-1], blocks, weight_norm=weight_norm)
    if explicit:
        log_r = explicit_trace(net, x, n_nets=n_nets, gen=gen).log_h_ratio[-1]
    else:
        log_r = torch.stack([exact_trace(net, x_[None], n_nets=n_nets, gen=gen,
                                         method="conditional").log_h_ratio[-1, :, 0]
                             for x_ in x], -1)
    return (2 * log_r).exp()
