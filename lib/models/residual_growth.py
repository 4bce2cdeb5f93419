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
from ..core.scaling import rescaled

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

    States of any finite scale are handled exactly (power-of-two rescaling of the norms).

    Returns
    -------
    torch.Tensor
        ``(S,)``, float64.

    Raises
    ------
    TypeError
        ``features`` is not a sequence of floating-point tensors.
    ValueError
        Fewer than 2 states, states of different shapes, an inf or NaN, a zero state (the
        ratio is undefined), ``factors`` not one positive number per block, a non-finite
        ``offset``, or a ratio beyond float64.

    References
    ----------
    Arpit, Campos & Bengio (2019), Section 4 (residual networks) and Table 2.

    Examples
    --------
    >>> h0 = torch.ones(1, 2, 3, dtype=torch.float64)
    >>> block_growth_ratio([h0, 2 * h0], [4.0]).tolist()
    [1.0]
    """
    if isinstance(features, torch.Tensor) and features.ndim == 4:
        features = list(features.unbind(0))
    if isinstance(features, (str, bytes)) or not isinstance(features, Sequence):
        raise TypeError("features must be a sequence of (S, N, w) tensors, got "
                        f"{type(features).__name__}")
    feats = [v.tensor(f"features[{b}]", h, ndim=3).detach() for b, h in enumerate(features)]
    if len(feats) < 2:
        raise ValueError(f"features must hold at least 2 hidden states, got {len(feats)}")
    if len({h.shape for h in feats}) != 1:
        raise ValueError("features must all have one shape (S, N, w), got "
                         f"{[tuple(h.shape) for h in feats]}")
    q = v.scales("factors", factors)
    if len(q) != len(feats) - 1 or min(q) <= 0:
        raise ValueError(f"factors must hold {len(feats) - 1} positive values (one per block), "
                         f"got {factors!r}")
    c = v.finite_real("offset", offset)
    sq = torch.stack([h.square().sum(-1) for h in feats])
    qt = torch.tensor(q, dtype=torch.float64, device=sq.device)[:, None, None]
    # states of any scale: squared norms of exactly rescaled states, sq = sq' 4^e
    scaled, e = rescaled(torch.stack(feats), 3)
    sq_s = scaled.square().sum(-1)
    if bool((sq_s == 0).any()):
        raise ValueError("features hold a zero hidden state, where the ratio is undefined")
    ratio = _ldexp(sq_s[1:] / sq_s[:-1], 2 * (e[1:] - e[:-1]))
    if c != 0:
        ratio = ratio - _ldexp(c / sq_s[:-1], -2 * e[:-1])
    ratio = torch.where((e == 0).all(0), (sq[1:] - c) / (qt * sq[:-1]), ratio / qt)
    if not bool(torch.isfinite(ratio).all()):
        raise ValueError("features: the ratio overflows float64 (hidden states too small or "
                         "too large for the offset)")
    return ratio.mean((0, 2))


def _ldexp(x: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """``x 2^e`` in two exact steps (each power of two within float64's range)."""
    half = e.div(2, rounding_mode="floor")
    return torch.ldexp(torch.ldexp(x, half.to(x.dtype)), (e - half).to(x.dtype))
