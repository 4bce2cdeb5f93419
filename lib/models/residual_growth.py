"""The growth of the squared norm of the hidden state through the blocks of a residual network.

For a block ``h -> h + F(h)`` an initialization scheme fixes, in expectation and conditionally
on the block's input, an affine law ``E[||h^{b+1}||^2 | h^b] = q_b ||h^b||^2 + c``
(Arpit, Campos & Bengio 2019: ``q_b = 1 + 1/B`` for the proposed scheme, ``1 + 0.81^b`` for
the stage-wise Hanin scheme, an affine law with biases for PyTorch's default).
:func:`block_growth_ratio` measures how well networks follow it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..core import validate as v

__all__ = ["block_growth_ratio"]


def block_growth_ratio(features: Sequence[torch.Tensor], factors: Sequence[float],
                       offset: float = 0.0) -> torch.Tensor:
    """Per network, the mean over blocks and inputs of ``(||h^{b+1}||^2 - c) / (q_b ||h^b||^2)``.

    Its expectation is 1 under the law ``E[||h^{b+1}||^2 | h^b] = q_b ||h^b||^2 + c``.

    Parameters
    ----------
    features : sequence of torch.Tensor
        The hidden states ``h^0, ..., h^B`` of ``S`` stacked networks on ``N`` inputs, each
        ``(S, N, w)`` (``model.features(x)`` of :mod:`eit.models.wn_stacked`).
    factors : sequence of float
        ``q_1..q_B``, one per block.
    offset : float
        ``c``.

    Returns
    -------
    torch.Tensor
        ``(S,)``, float64.

    References
    ----------
    Arpit, Campos & Bengio (2019), Section 4 (residual networks) and Table 2.

    Examples
    --------
    >>> h0 = torch.ones(1, 2, 3, dtype=torch.float64)
    >>> block_growth_ratio([h0, 2 * h0], [4.0]).tolist()
    [1.0]
    """
    feats = list(features)
    if len(feats) < 2:
        raise ValueError(f"features must hold at least 2 hidden states, got {len(feats)}")
    q = v.scales("factors", list(factors))
    if len(q) != len(feats) - 1 or min(q) <= 0:
        raise ValueError(f"factors must hold {len(feats) - 1} positive values (one per block), "
                         f"got {factors!r}")
    c = v.finite_real("offset", offset)
    sq = torch.stack([h.detach().square().sum(-1) for h in feats])
    qt = torch.tensor(q, dtype=torch.float64, device=sq.device)[:, None, None]
    return ((sq[1:] - c) / (qt * sq[:-1])).mean((0, 2))
