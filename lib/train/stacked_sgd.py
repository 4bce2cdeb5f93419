"""Plain mini-batch SGD for many independent runs at once (stacked parameters).

A *stacked model* holds ``runs`` networks of one architecture as tensors whose first dimension
is the run (for example :class:`eit.models.shaped_mlp.ShapedMLP`): called on ``(runs, n, p)``
it returns logits ``(runs, n, classes)``. Each run draws its own mini-batches (its own
permutation of the training set at every epoch), has its own cross-entropy, and the sum of the
runs' losses is differentiated once: since no parameter is shared, every run receives exactly
its own gradient. One batched pass serves all runs, with no host synchronization inside an
epoch (the epoch's losses are read once, at its end).

Vanilla SGD as in Meterez et al. (2024, Section 4): ``p <- p - lr * grad``, no momentum, no
weight decay. Accuracies are evaluated on the whole split in one batch, so that batch
normalization uses the statistics of that split.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..core import validate as v
from .sgd import Digits

__all__ = ["History", "train", "accuracies"]


@dataclass(frozen=True)
class History:
    """Per-epoch records of a stacked training run.

    Attributes
    ----------
    loss : torch.Tensor
        Mean training loss of each epoch, (epochs, runs).
    records : list
        What ``record(model, epoch)`` returned after each epoch (epoch 0: before training).
    diverged : torch.Tensor
        (runs,) bool: a mini-batch loss was not finite.
    """

    loss: torch.Tensor
    records: list
    diverged: torch.Tensor


@torch.no_grad()
def accuracies(model, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Fraction of samples whose arg-max logit is the label, per run: (runs,)."""
    runs = model.runs
    x = x.to(model.params[0].dtype)
    logits = model(x.unsqueeze(0).expand(runs, *x.shape))
    return (logits.argmax(dim=-1) == y.unsqueeze(0)).double().mean(dim=1)


def train(model, data: Digits, *, lr: float, epochs: int, batch_size: int,
          gen: torch.Generator, record: Callable | None = None) -> History:
    """Train every run of ``model`` with plain SGD on the cross-entropy.

    Parameters
    ----------
    model
        A stacked model with ``params`` (leaf tensors, first dimension the run), ``runs``,
        and ``__call__(x: (runs, n, p)) -> (runs, n, classes)``.
    data : Digits
        The training split (``x_train``, ``y_train``).
    lr : float
        Learning rate.
    epochs, batch_size : int
        Passes over the training set, samples per step (the last incomplete batch of an epoch
        is dropped, so every step has the same batch size).
    gen : torch.Generator
        Draws the runs' permutations.
    record : callable, optional
        ``record(model, epoch) -> object`` after every epoch and once before training.
    """
    if not isinstance(data, Digits):
        raise TypeError(f"data must be a Digits split, got {type(data).__name__}")
    lr = v.positive_float("lr", lr)
    epochs, batch_size = v.positive_int("epochs", epochs), v.positive_int("batch_size", batch_size)
    n = data.x_train.shape[0]
    if batch_size > n:
        raise ValueError(f"batch_size must be <= {n} (the training set), got {batch_size}")
    params, runs = model.params, model.runs
    x_train = data.x_train.to(params[0].dtype)
    records = [] if record is None else [record(model, 0)]
    losses, diverged = [], torch.zeros(runs, dtype=torch.bool)
    steps = n // batch_size
    for epoch in range(1, epochs + 1):
        keys = torch.rand(runs, n, generator=gen, device=gen.device).to(data.x_train.device)
        order = keys.argsort(dim=1)
        total = torch.zeros(runs, dtype=x_train.dtype)
        for step in range(steps):
            idx = order[:, step * batch_size:(step + 1) * batch_size]
            logits = model(x_train[idx])
            per_run = torch.nn.functional.cross_entropy(
                logits.transpose(1, 2), data.y_train[idx], reduction="none").mean(dim=1)
            grads = torch.autograd.grad(per_run.sum(), params)
            with torch.no_grad():
                for p, g in zip(params, grads, strict=True):
                    p -= lr * g
            total += per_run.detach()
        mean = total / steps
        diverged |= ~torch.isfinite(mean)
        losses.append(mean)
        if record is not None:
            records.append(record(model, epoch))
    if bool(diverged.any()):
        bad = int(diverged.sum())
        raise FloatingPointError(f"{bad} of {runs} runs diverged (non-finite loss); lower lr")
    return History(torch.stack(losses), records, diverged)
