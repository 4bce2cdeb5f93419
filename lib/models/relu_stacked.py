"""Stacks of small ReLU nets of one architecture, for the batched trainer (Hanin & Rolnick 2018).

Figures 1b, 2b and 3b of Hanin & Rolnick (2018) count the epochs that plain SGD needs to reach
20% test accuracy, over many independently initialized networks. Here ``n_nets`` such
networks are one *stacked model* (parameters with a leading run axis) that
:func:`eit.train.batched.train` trains at once. Two architectures: a fully connected ReLU net
(widths, any initializer of :mod:`eit.sample.laws`), and a residual net with a stream of width
``width`` whose modules are the paper's single ReLU layers, ``x <- x + eta_l ReLU(W_l x)``
(module A of the residual chapter), between a ReLU input layer and a linear read-out. Biases
start at zero.

References
----------
Hanin & Rolnick (2018), Figures 1b, 2b and 3b; Section 3 (residual modules).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from ..core import validate as v
from ..core.device import DTYPE
from ..sample.laws import Initializer

__all__ = ["StackedReLUNet", "mlp", "residual"]


def _init(init) -> Initializer:
    if not callable(init):
        raise TypeError(f"init must be callable (an Initializer), got {type(init).__name__}")
    return init


def _weights(init: Initializer, n_nets: int, fan_out: int, fan_in: int,
             gen: torch.Generator) -> torch.Tensor:
    w = init(n_nets, fan_out, fan_in, gen).to(DTYPE)
    if w.shape != (n_nets, fan_out, fan_in):
        raise ValueError(f"init must return shape {(n_nets, fan_out, fan_in)}, "
                         f"got {tuple(w.shape)}")
    return w


class StackedReLUNet:
    """``n_nets`` independent ReLU nets: ``weights[i]`` ``(n_nets, out, in)``, biases
    ``(n_nets, 1, out)``; called on ``(N, d)`` (shared inputs) or ``(n_nets, N, d)`` it gives
    logits ``(n_nets, N, 10)``."""

    def __init__(self, weights: list[torch.Tensor], etas: Sequence[float] | None = None,
                 biases: list[torch.Tensor] | None = None):
        self.weights = [w.detach().clone().requires_grad_(True) for w in weights]
        self.biases = ([torch.zeros(w.shape[0], 1, w.shape[1], dtype=w.dtype, device=w.device,
                                    requires_grad=True) for w in weights] if biases is None
                       else [b.detach().clone().requires_grad_(True) for b in biases])
        self.etas = None if etas is None else [float(e) for e in etas]

    def parameters(self) -> list[torch.Tensor]:
        return self.weights + self.biases

    @property
    def runs(self) -> int:
        return self.weights[0].shape[0]

    def select(self, index: torch.Tensor) -> StackedReLUNet:
        """The nets at ``index``, as a new stack (copies)."""
        return StackedReLUNet([w.detach()[index] for w in self.weights], self.etas,
                              [b.detach()[index] for b in self.biases])

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        h = x.unsqueeze(0).expand(self.runs, -1, -1) if x.ndim == 2 else x
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            z = torch.bmm(h, w.transpose(1, 2)).add_(b)
            if i == last:
                return z
            if self.etas is not None and 1 <= i <= len(self.etas):
                h = h + self.etas[i - 1] * torch.relu(z)          # residual module i
            else:
                h = torch.relu(z)
        raise AssertionError("unreachable")


def mlp(widths: Sequence[int], init: Initializer, *, n_nets: int, gen: torch.Generator,
        n_in: int = 64, n_out: int = 10) -> StackedReLUNet:
    """Fully connected ReLU nets ``n_in -> widths[0] -> ... -> widths[-1] -> n_out``.

    Every layer, the read-out included, is drawn from ``init`` (variance relative to fan-in).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.sample.laws import he
    >>> net = mlp([7, 5], he(), n_nets=3, gen=generator(0))
    >>> net(torch.rand(4, 64, dtype=torch.float64)).shape
    torch.Size([3, 4, 10])
    """
    hidden = v.widths("widths", widths)
    n_nets, n_in, n_out = (v.positive_int("n_nets", n_nets), v.positive_int("n_in", n_in),
                           v.positive_int("n_out", n_out))
    init, gen = _init(init), v.generator("gen", gen, optional=False)
    sizes = [n_in] + hidden + [n_out]
    return StackedReLUNet([_weights(init, n_nets, o, i, gen)
                           for i, o in zip(sizes[:-1], sizes[1:])])


def residual(etas: Sequence[float], init: Initializer, *, width: int, n_nets: int,
             gen: torch.Generator, n_in: int = 64, n_out: int = 10) -> StackedReLUNet:
    """ReLU input layer ``n_in -> width``, modules ``x + eta_l ReLU(W_l x)``, linear read-out."""
    if isinstance(etas, (str, bytes)) or not isinstance(etas, Sequence) or not etas:
        raise ValueError(f"etas must be a non-empty sequence of scales, got {etas!r}")
    for i, e in enumerate(etas):
        if isinstance(e, bool) or not isinstance(e, (int, float)) or not math.isfinite(e) or e < 0:
            raise ValueError(f"etas[{i}] must be a finite number >= 0, got {e!r}")
    width, n_nets = v.positive_int("width", width), v.positive_int("n_nets", n_nets)
    n_in, n_out = v.positive_int("n_in", n_in), v.positive_int("n_out", n_out)
    init, gen = _init(init), v.generator("gen", gen, optional=False)
    sizes = [(width, n_in)] + [(width, width)] * len(etas) + [(n_out, width)]
    return StackedReLUNet([_weights(init, n_nets, o, i, gen) for o, i in sizes], etas)
