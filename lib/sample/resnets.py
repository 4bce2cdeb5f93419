"""Batched residual networks with per-block scales (Hanin & Rolnick 2018, section 3.2, eq. 1).

``N_0^res(x) = x``, ``N_l^res(x) = N_{l-1}^res(x) + eta_l N_l(N_{l-1}^res(x))``, l = 1..L.

A *block* (residual module) is any function ``block(h, gen) -> same shape`` acting on a
stack ``h`` of shape ``(n_nets, N, n)`` (n_nets independent networks, N inputs, stream width
n) that draws its own weights from ``gen`` through :mod:`eit.sample.laws`. Blocks built here
have zero biases and are positively homogeneous of degree 1 (``block(c h) = c block(h)`` for
c > 0), so the forward pass can rescale the stream to unit length after every block and
accumulate log-lengths exactly, as :func:`eit.sample.mlp.relu_mlp` does: no overflow at any
depth.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ..core import validate as v
from ..core.device import DTYPE, device
from .laws import Initializer

#: A residual module: ``block(h, gen) -> (n_nets, N, n)`` for ``h`` of shape (n_nets, N, n).
Block = Callable[[torch.Tensor, torch.Generator], torch.Tensor]


def _check_init(name: str, init) -> None:
    if not callable(init):
        raise TypeError(f"{name} must be callable (an Initializer), got {type(init).__name__}")


def relu_layer(init: Initializer) -> Block:
    """One fully connected ReLU layer ``h -> ReLU(W h)``, W of shape (n, n) (width preserved).

    With He weights (variance 2/n) this is the module of Figure 2 ("a single layer of width
    5") in the paper's own definition: a fully connected ReLU net, ReLU on its output.
    """
    _check_init("init", init)

    def block(h: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        n_nets, n = h.shape[0], h.shape[-1]
        return torch.matmul(h, init(n_nets, n, n, gen).transpose(-2, -1)).clamp_min(0)

    return block


def relu_then_linear(hidden: int, init_in: Initializer, init_out: Initializer) -> Block:
    """``h -> V ReLU(W h)`` with W (hidden, n) and V (n, hidden): a linear read-out layer.

    The output has conditional mean zero (V is symmetric and independent of the rest), the
    usual form of a residual branch.
    """
    hidden = v.positive_int("hidden", hidden)
    _check_init("init_in", init_in)
    _check_init("init_out", init_out)

    def block(h: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        n_nets, n = h.shape[0], h.shape[-1]
        a = torch.matmul(h, init_in(n_nets, hidden, n, gen).transpose(-2, -1)).clamp_min(0)
        return torch.matmul(a, init_out(n_nets, n, hidden, gen).transpose(-2, -1))

    return block


def residual_log_lengths(x: torch.Tensor, blocks: Block | Sequence[Block],
                         etas: Sequence[float], *, n_nets: int, gen: torch.Generator,
                         observe: Callable[[torch.Tensor], torch.Tensor] | None = None,
                         ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """log ||N_l^res(x)|| for l = 0..L of ``n_nets`` independent residual networks.

    Args:
        x: inputs ``(N, n)`` shared by all networks.
        blocks: one block used (with fresh weights) for every module, or one per module.
        etas: the scales ``[eta_1, ..., eta_L]`` (non-negative).
        n_nets: number of independent networks.
        gen: random generator (see :func:`eit.core.device.generator`).
        observe: optional statistic of the unit-length stream, ``(n_nets, N, n) -> (n_nets, N)``,
            recorded before every module and after the last (e.g. the coordinate sum).
    Returns:
        natural log-lengths, shape ``(L+1, n_nets, N)``; exact for positively homogeneous
        blocks (the stream is rescaled to unit length after every module). With ``observe``,
        the pair (log-lengths, observed values of shape ``(L+1, n_nets, N)``).
    """
    x = v.tensor("x", x, ndim=2).to(device=device(), dtype=DTYPE)
    n_nets = v.positive_int("n_nets", n_nets)
    if isinstance(etas, (str, bytes)) or not isinstance(etas, Sequence) or len(etas) == 0:
        raise ValueError(f"etas must be a non-empty sequence of numbers, got {etas!r}")
    for i, eta in enumerate(etas):
        if isinstance(eta, bool) or not isinstance(eta, (int, float)) or not eta >= 0:
            raise ValueError(f"etas[{i}] must be a non-negative number, got {eta!r}")
    if callable(blocks):
        blocks = [blocks] * len(etas)
    elif not isinstance(blocks, Sequence) or len(blocks) != len(etas):
        raise ValueError("blocks must be a block or a sequence with one block per eta")
    for i, block in enumerate(blocks):
        if not callable(block):
            raise TypeError(f"blocks[{i}] must be callable, got {type(block).__name__}")
    if observe is not None and not callable(observe):
        raise TypeError(f"observe must be None or callable, got {type(observe).__name__}")
    h = x.unsqueeze(0).expand(n_nets, -1, -1)
    r = h.norm(dim=-1)
    if not bool((r > 0).all()):
        raise ValueError("x must have no zero rows")
    h = h / r.unsqueeze(-1)
    log_len = torch.log(r)
    out = [log_len]
    seen = [] if observe is None else [observe(h)]
    for eta, block in zip(etas, blocks, strict=True):
        h = h + eta * block(h, gen)
        r = h.norm(dim=-1)
        h = h / r.unsqueeze(-1)
        log_len = log_len + torch.log(r)
        out.append(log_len)
        if observe is not None:
            seen.append(observe(h))
    if observe is None:
        return torch.stack(out)
    return torch.stack(out), torch.stack(seen)


def linear_readout_moments(etas: Sequence[float], *, width: int, hidden: int,
                           m0: float = 1.0) -> tuple[list[float], list[float], float]:
    """Exact E[M_l], E[M_l^2] (l = 0..L) and E[Var^[M^res]] for :func:`relu_then_linear` blocks.

    Blocks ``V ReLU(W x)`` with W ~ N(0, 2/width), V ~ N(0, 1/hidden), zero biases, and
    ``M_l = ||N_l^res(x)||^2`` (Hanin & Rolnick 2018, section 3.2; the derivation is in the
    chapter on residual scales): per module
    ``E[M_l | x] = (1 + eta^2) M_{l-1}`` and
    ``E[M_l^2 | x] = M_{l-1}^2 (1 + 2 eta^2 + 4 eta^2/width + eta^4 (1 + 2/width)(1 + 5/hidden))``.
    Var^ is the empirical variance over l = 1..L (section 3.4), whose mean follows from
    ``E[M_j M_k] = E[M_j^2] prod_{j<i<=k} (1 + eta_i^2)``.
    """
    width, hidden = v.positive_int("width", width), v.positive_int("hidden", hidden)
    m0 = v.positive_float("m0", m0)
    if isinstance(etas, (str, bytes)) or not isinstance(etas, Sequence) or len(etas) == 0:
        raise ValueError(f"etas must be a non-empty sequence of numbers, got {etas!r}")
    mean, second = [m0], [m0 * m0]
    for eta in etas:
        e2 = float(eta) ** 2
        mean.append(mean[-1] * (1 + e2))
        second.append(second[-1] * (1 + 2 * e2 + 4 * e2 / width
                                    + e2 * e2 * (1 + 2 / width) * (1 + 5 / hidden)))
    n_mod = len(etas)
    pairs = 0.0
    for j in range(1, n_mod + 1):
        gain, gains = 1.0, 0.0
        for i in range(j + 1, n_mod + 1):
            gain *= 1 + float(etas[i - 1]) ** 2
            gains += gain
        pairs += second[j] * (1 + 2 * gains)
    return mean, second, sum(second[1:]) / n_mod - pairs / n_mod**2
