"""Batched forward and backward passes of many random ReLU networks at once.

Networks are the fully connected ReLU nets of Arpit & Bengio (2019), eq. (1), with zero
biases: ``a^l = W^l h^{l-1}``, ``h^l = ReLU(a^l)``. The pass streams layer by layer and keeps
only per-layer statistics. It tracks *log-norms*: after every layer each activation vector is
rescaled to unit length and its log-length is accumulated, which is exact because ReLU is
positively homogeneous, so depth 1000 in an exploding or vanishing regime gives finite logs.

The backward pass keeps the weights when they fit in :data:`KEEP_WEIGHTS_BYTES`; beyond, it
re-draws each weight matrix from the generator state saved in the forward pass, so memory is
one layer of weights plus the ReLU masks (and the random stream is the same either way).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from ..core import validate as v
from ..core.device import DTYPE, device, rand, randn
from .laws import Initializer

#: Weights up to this size are kept for the backward pass; larger stacks are re-drawn from
#: the saved generator states (same numbers either way).
KEEP_WEIGHTS_BYTES = 2**28

#: Gradient of the loss with respect to the last hidden layer: ``(n_nets, N, n_L) -> same``.
LossGrad = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class MLPStats:
    """Per-layer log-norms of a batch of ReLU networks (natural logarithms).

    ``log_h[l]`` is log ||h^l|| for l = 0..L (l = 0 is the input), shape (L+1, n_nets, N).
    ``log_delta[l-1]`` is log ||dloss/da^l|| for l = 1..L, shape (L, n_nets, N), or None.
    """

    log_h: torch.Tensor
    log_delta: torch.Tensor | None

    @property
    def depth(self) -> int:
        return self.log_h.shape[0] - 1

    @property
    def log_h_ratio(self) -> torch.Tensor:
        """log(||h^l|| / ||x||), l = 0..L."""
        return self.log_h - self.log_h[0]

    @property
    def log_grad_w(self) -> torch.Tensor:
        """log ||dloss/dW^l||_F = log ||dloss/da^l|| + log ||h^{l-1}|| (eq. 9), l = 1..L."""
        if self.log_delta is None:
            raise ValueError("log_grad_w needs a backward pass: call relu_mlp with delta set")
        return self.log_delta + self.log_h[:-1]

    @property
    def log_grad_w_ratio(self) -> torch.Tensor:
        """log(||dloss/dW^l||_F / (||delta|| ||x||)), the ratio of eq. (7), l = 1..L."""
        return self.log_grad_w - self.log_delta[-1] - self.log_h[0]


def _normalize(h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Rescale the last axis to unit norm; return (unit vectors, log-norms). 0 stays 0."""
    r = h.norm(dim=-1)
    safe = torch.where(r > 0, r, torch.ones_like(r))
    return h / safe.unsqueeze(-1), torch.log(r)


def _inputs(x: torch.Tensor, n_nets: int) -> torch.Tensor:
    x = v.tensor("x", x, ndim=(2, 3))
    if x.ndim == 2:
        x = x.unsqueeze(0).expand(n_nets, -1, -1)
    elif x.shape[0] != n_nets:
        raise ValueError(f"x has {x.shape[0]} networks on axis 0 but n_nets = {n_nets}")
    return x.to(device=device(), dtype=DTYPE)


def relu_mlp(x: torch.Tensor, widths: Sequence[int], init: Initializer, *, n_nets: int,
             gen: torch.Generator, delta: str | LossGrad | None = None) -> MLPStats:
    """Propagate inputs through ``n_nets`` independent random ReLU networks.

    Args:
        x: inputs, ``(N, n_0)`` shared by all networks or ``(n_nets, N, n_0)``.
        widths: hidden widths ``[n_1, ..., n_L]``.
        init: weight sampler, e.g. ``initializers.he('fan_out')``.
        n_nets: number of independent networks.
        gen: random generator (see :func:`eit.core.device.generator`).
        delta: backward pass. None: forward only. ``'random'``: dloss/da^L is a standard
            Gaussian vector independent of the network (the independence assumption of
            Arpit & Bengio's Theorem 2). A callable ``loss_grad(h_L)`` returning dloss/dh^L:
            then dloss/da^L = 1(a^L) * loss_grad(h^L) (a real loss head).
    Returns:
        :class:`MLPStats` with per-layer, per-network, per-input log-norms.
    """
    widths = v.widths("widths", widths)
    n_nets = v.positive_int("n_nets", n_nets)
    if not callable(init):
        raise TypeError(f"init must be callable (an Initializer), got {type(init).__name__}")
    if not (delta is None or delta == "random" or callable(delta)):
        raise ValueError(f"delta must be None, 'random' or a callable, got {delta!r}")
    h = _inputs(x, n_nets)
    fans = [h.shape[-1], *widths]

    h, log_norm = _normalize(h)
    log_h = [log_norm]
    states, masks, kept = [], [], []
    # keep the weights for the backward pass when they fit in KEEP_WEIGHTS_BYTES, else re-draw
    keep = delta is not None and n_nets * sum(
        i * o for i, o in zip(fans[:-1], fans[1:])) * h.element_size() <= KEEP_WEIGHTS_BYTES
    for fan_in, fan_out in zip(fans[:-1], fans[1:], strict=True):
        states.append(gen.get_state())
        w = init(n_nets, fan_out, fan_in, gen)
        if keep:
            kept.append(w)
        a = torch.matmul(h, w.transpose(-2, -1))
        mask = a > 0
        h, log_r = _normalize(a.clamp_min_(0))
        log_norm = log_norm + log_r
        log_h.append(log_norm)
        if delta is not None:
            masks.append(mask)
    stats_h = torch.stack(log_h)
    if delta is None:
        return MLPStats(stats_h, None)

    if delta == "random":
        g = randn(*h.shape, gen=gen)
    else:
        h_last = h * torch.exp(log_norm).unsqueeze(-1)
        g = masks[-1] * delta(h_last)
    g, log_g = _normalize(g)
    log_delta = [log_g]
    after = gen.get_state()
    for l in range(len(widths) - 1, 0, -1):  # from dloss/da^{l+1} to dloss/da^l
        if keep:
            w = kept[l]
        else:
            gen.set_state(states[l])
            w = init(n_nets, fans[l + 1], fans[l], gen)
        g, log_r = _normalize(masks[l - 1] * torch.matmul(g, w))
        log_g = log_g + log_r
        log_delta.append(log_g)
    gen.set_state(after)
    return MLPStats(stats_h, torch.stack(log_delta[::-1]))


def one_layer(u: torch.Tensor, m: int, *, n_nets: int, gen: torch.Generator,
              variance: float | None = None, mask: str = "relu", p: float = 0.5,
              chunk: int = 2**24) -> torch.Tensor:
    """||v||^2 / ||u||^2 for ``n_nets`` independent draws of one layer R applied to fixed u.

    ``mask='relu'``: v = ReLU(R u) (Arpit & Bengio 2019, Lemmas 1-2). ``mask='bernoulli'``:
    v = (R u) * z with z_i ~ Bernoulli(p) independent of R (Lemmas 3-4, the backward pass),
    a fresh z for every input. R has i.i.d. N(0, variance) entries, by default 2/m for ReLU
    and 1/(p m) for the mask. ``u`` is one input ``(n,)`` or a batch ``(N, n)`` sharing each R;
    the result has shape ``(n_nets,)`` or ``(n_nets, N)``. Weight matrices are materialized,
    in chunks of at most ``chunk`` entries.
    """
    u = v.tensor("u", u, ndim=(1, 2)).to(device=device(), dtype=DTYPE)
    single = u.ndim == 1
    u = u.reshape(-1, u.shape[-1])
    if (u.square().sum(-1) == 0).any():
        raise ValueError("u must be non-zero (the ratio ||v||^2/||u||^2 is undefined at 0)")
    m, n_nets = v.positive_int("m", m), v.positive_int("n_nets", n_nets)
    if mask not in ("relu", "bernoulli"):
        raise ValueError(f"mask must be 'relu' or 'bernoulli', got {mask!r}")
    p = v.in_interval("p", p, 0.0, 1.0, closed_hi=True)
    if p == 0:
        raise ValueError("p must be > 0")
    if variance is None:
        variance = 2.0 / m if mask == "relu" else 1.0 / (p * m)
    std = v.positive_float("variance", variance) ** 0.5
    n_in, n = u.shape
    per = max(1, chunk // (m * max(n, n_in)))
    out = []
    for start in range(0, n_nets, per):
        k = min(per, n_nets - start)
        a = std * torch.matmul(randn(k, m, n, gen=gen), u.T)  # (k, m, N)
        if mask == "relu":
            a = a.clamp_min(0)
        else:
            a = a * (rand(k, m, n_in, gen=gen) < p)
        out.append(a.square().sum(-2))
    ratio = torch.cat(out) / u.square().sum(-1)
    return ratio[:, 0] if single else ratio
