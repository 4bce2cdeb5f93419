"""Epochs to a target test accuracy for stacks of small ReLU nets (Hanin & Rolnick 2018).

Figures 1b, 2b and 3b of Hanin & Rolnick (2018) plot the mean number of epochs that plain SGD
needs to reach 20% test accuracy. This module trains ``n_nets`` independently initialized
networks of one architecture at once (batched matrix products; each net has its own
parameters and its own loss, so the runs do not interact) on a :class:`eit.train.sgd.Digits`
split, and records for each net the first epoch after which its test accuracy reaches the
target, or ``None`` (censored) when it does not within ``max_epochs`` or its loss diverges.

Two architectures: a fully connected ReLU net (widths, any initializer of
:mod:`eit.sample.laws`), and a residual net with a stream of width ``width`` whose modules are
the paper's single ReLU layers, ``x <- x + eta_l ReLU(W_l x)`` (module A of the residual
chapter), between a ReLU input layer and a linear read-out. Biases start at zero.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from ..core import validate as v
from ..core.device import DTYPE
from ..sample.laws import Initializer
from .sgd import Digits


def _weights(init: Initializer, n_nets: int, fan_out: int, fan_in: int,
             gen: torch.Generator) -> torch.Tensor:
    w = init(n_nets, fan_out, fan_in, gen).to(DTYPE)
    if w.shape != (n_nets, fan_out, fan_in):
        raise ValueError(f"init must return shape {(n_nets, fan_out, fan_in)}, "
                         f"got {tuple(w.shape)}")
    return w


class StackedNet:
    """``n_nets`` independent ReLU nets evaluated at once; ``__call__`` gives (n_nets, N, 10)."""

    def __init__(self, weights: list[torch.Tensor], etas: Sequence[float] | None = None):
        self.weights = [w.clone().requires_grad_(True) for w in weights]
        self.biases = [torch.zeros(w.shape[0], 1, w.shape[1], dtype=DTYPE, requires_grad=True)
                       for w in weights]
        self.etas = None if etas is None else [float(e) for e in etas]

    @property
    def params(self) -> list[torch.Tensor]:
        return self.weights + self.biases

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        h = x.unsqueeze(0).expand(self.weights[0].shape[0], -1, -1)
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            z = torch.baddbmm(b, h, w.transpose(1, 2))
            if i == last:
                return z
            if self.etas is not None and 1 <= i <= len(self.etas):
                h = h + self.etas[i - 1] * torch.relu(z)          # residual module i
            else:
                h = torch.relu(z)
        raise AssertionError("unreachable")


def mlp(widths: Sequence[int], init: Initializer, *, n_nets: int, gen: torch.Generator,
        n_in: int = 64, n_out: int = 10) -> StackedNet:
    """Fully connected ReLU nets ``n_in -> widths[0] -> ... -> widths[-1] -> n_out``.

    Every layer, the read-out included, is drawn from ``init`` (variance relative to fan-in).
    """
    hidden = v.widths("widths", widths)
    n_nets, n_in, n_out = (v.positive_int("n_nets", n_nets), v.positive_int("n_in", n_in),
                           v.positive_int("n_out", n_out))
    sizes = [n_in] + hidden + [n_out]
    return StackedNet([_weights(init, n_nets, o, i, gen) for i, o in zip(sizes[:-1], sizes[1:])])


def residual(etas: Sequence[float], init: Initializer, *, width: int, n_nets: int,
             gen: torch.Generator, n_in: int = 64, n_out: int = 10) -> StackedNet:
    """ReLU input layer ``n_in -> width``, modules ``x + eta_l ReLU(W_l x)``, linear read-out."""
    if isinstance(etas, (str, bytes)) or not isinstance(etas, Sequence) or not etas:
        raise ValueError(f"etas must be a non-empty sequence of scales, got {etas!r}")
    for i, e in enumerate(etas):
        if isinstance(e, bool) or not isinstance(e, (int, float)) or not math.isfinite(e) or e < 0:
            raise ValueError(f"etas[{i}] must be a finite number >= 0, got {e!r}")
    width, n_nets = v.positive_int("width", width), v.positive_int("n_nets", n_nets)
    n_in, n_out = v.positive_int("n_in", n_in), v.positive_int("n_out", n_out)
    sizes = [(width, n_in)] + [(width, width)] * len(etas) + [(n_out, width)]
    return StackedNet([_weights(init, n_nets, o, i, gen) for o, i in sizes], etas)


@torch.no_grad()
def test_accuracy(net: StackedNet, data: Digits) -> torch.Tensor:
    """Test accuracy of each of the nets, shape (n_nets,)."""
    return (net(data.x_test).argmax(-1) == data.y_test).to(DTYPE).mean(-1)


def epochs_to_accuracy(net: StackedNet, data: Digits, *, target: float, lr: float,
                       max_epochs: int, batch_size: int, gen: torch.Generator,
                       max_loss: float = 100.0) -> list[int | None]:
    """Plain mini-batch SGD (no momentum); the first epoch whose test accuracy is >= ``target``.

    All nets see the same mini-batches (drawn with ``gen``); each net's loss is its own mean
    cross-entropy. A net whose loss is not finite or exceeds ``max_loss`` stops training and
    counts as censored (``None``), as does one that misses the target for ``max_epochs``.
    Training stops once every net has reached the target or been censored.
    """
    if not isinstance(net, StackedNet):
        raise TypeError(f"net must be a StackedNet, got {type(net).__name__}")
    if not isinstance(data, Digits):
        raise TypeError(f"data must be a Digits split, got {type(data).__name__}")
    target = v.in_interval("target", target, 0.0, 1.0, closed_hi=True)
    lr, max_loss = v.positive_float("lr", lr), v.positive_float("max_loss", max_loss)
    max_epochs = v.positive_int("max_epochs", max_epochs)
    batch_size = v.positive_int("batch_size", batch_size)
    k = net.weights[0].shape[0]
    reached: list[int | None] = [None] * k
    alive = torch.ones(k, dtype=torch.bool)
    n = len(data.x_train)
    for epoch in range(1, max_epochs + 1):
        order = torch.randperm(n, generator=gen)
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            logits = net(data.x_train[idx])                             # (k, B, 10)
            y = data.y_train[idx].unsqueeze(0).expand(k, -1)
            losses = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="none"
            ).reshape(k, -1).mean(-1)
            bad = ~torch.isfinite(losses) | (losses > max_loss)
            alive &= ~bad.detach()
            if not alive.any():
                return reached
            total = torch.where(alive, losses, torch.zeros_like(losses)).sum()
            grads = torch.autograd.grad(total, net.params)
            with torch.no_grad():
                mask = alive.to(DTYPE).view(k, 1, 1)
                for p, g in zip(net.params, grads, strict=True):
                    p -= lr * torch.nan_to_num(g * mask, nan=0.0, posinf=0.0, neginf=0.0)
        acc = test_accuracy(net, data)
        for i in range(k):
            if alive[i] and reached[i] is None and acc[i].item() >= target:
                reached[i] = epoch
        if all(r is not None or not a for r, a in zip(reached, alive.tolist(), strict=True)):
            break
    return reached


__all__ = ["StackedNet", "epochs_to_accuracy", "mlp", "residual", "test_accuracy"]
