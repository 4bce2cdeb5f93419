"""Many short SGD runs of one architecture at once (seeds x learning rates), on the digits.

The training experiments of the book train thousands of tiny networks. One after another, each
step of each run is a handful of small kernels and a host synchronization: the runs are bound
by overhead, not arithmetic. Here ``R`` independent runs of one architecture are stacked
(:mod:`eit.models.wn_stacked`) and trained together: one batched forward and backward pass per
step serves every run. Each run keeps its own learning rate (and warm-up), its own momentum
buffer, its own mini-batch order (drawn from its own generator, exactly as
:func:`eit.train.sgd.sgd` draws it) and its own divergence test. Runs are independent: the
gradient of the sum of their losses is the stack of their own gradients.

The semantics are those of :func:`eit.train.sgd.sgd`: plain SGD with momentum (PyTorch's:
``buf = grad`` at the first step, then ``buf = momentum * buf + grad``; ``p -= lr * buf``); a
run *diverges* when a mini-batch loss is not finite or exceeds ``max_loss`` (checked before the
step), or when its training loss after the last step does; following Figure 2 of Arpit, Campos
& Bengio (2019) its accuracies are then 0. A diverged run leaves the stack at once, so that its
non-finite numbers never reach the batched kernels and it costs nothing afterwards.

References
----------
Arpit, Campos & Bengio (2019), Section 5.1 and Tables 3 and 5 (SGD with momentum 0.9, batch
size 128, learning-rate warm-up).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ..core import validate as v
from .sgd import Digits

__all__ = ["Runs", "batched_sgd"]


@dataclass(frozen=True)
class Runs:
    """Outcomes of ``R`` runs (NumPy arrays of length ``R``).

    ``losses`` has shape ``(R, epochs)``: the mean training loss of each completed epoch, NaN
    after a divergence. ``diverged_at_step`` is -1 for runs that did not diverge.
    """

    diverged: np.ndarray
    diverged_at_step: np.ndarray
    losses: np.ndarray
    train_accuracy: np.ndarray
    test_accuracy: np.ndarray

    def __len__(self) -> int:
        return len(self.diverged)

    def select(self, index) -> Runs:
        """The runs at ``index`` (a slice, a mask or integer positions)."""
        return Runs(*(getattr(self, k)[index] for k in
                      ("diverged", "diverged_at_step", "losses", "train_accuracy",
                       "test_accuracy")))


def _per_run_ce(net, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of each run on its own inputs: x (R, N, d), y (R, N) -> (R,)."""
    logits = net(x)
    ce = F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none")
    return ce.view(y.shape).mean(1)


@torch.no_grad()
def _accuracy(net, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (net(x).argmax(-1) == y).double().mean(-1)


def batched_sgd(net, data: Digits, *, lr: Sequence[float], epochs: int, batch_size: int,
                gens: Sequence[torch.Generator], momentum: float = 0.0,
                warmup_steps: int = 0, max_loss: float = 100.0) -> Runs:
    """Train the ``R`` stacked networks of ``net`` with mini-batch SGD on the cross-entropy.

    Parameters
    ----------
    net : StackedWNMLP or StackedWNResNet
        ``R`` networks (:func:`eit.models.wn_stacked.stack`); consumed (the stack shrinks as
        runs diverge, so the trained networks are not returned).
    data : Digits
        The train/test split (:func:`eit.train.sgd.digits`).
    lr : sequence of float
        One learning rate per run.
    epochs, batch_size : int
        As in :func:`eit.train.sgd.sgd`.
    gens : sequence of torch.Generator
        One generator per run, drawing that run's mini-batch order at every epoch (runs that
        should share an order get generators in the same state).
    momentum, warmup_steps, max_loss
        As in :func:`eit.train.sgd.sgd` (warm-up: the learning rate rises linearly from
        ``lr / warmup_steps`` to ``lr`` over the first ``warmup_steps`` steps).

    Returns
    -------
    Runs

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.models.wn_init import wn_mlp_model
    >>> from eit.models.wn_stacked import stack
    >>> from eit.train.sgd import digits
    >>> data = digits(seed=0)
    >>> nets = stack([wn_mlp_model("proposed", d_in=64, widths=[16], d_out=10,
    ...                            gen=generator(s)) for s in range(2)])
    >>> runs = batched_sgd(nets, data, lr=[0.1, 1e3], epochs=1, batch_size=128,
    ...                    gens=[generator(5), generator(5)], momentum=0.9)
    >>> runs.diverged.tolist()
    [False, True]
    """
    if not isinstance(data, Digits):
        raise TypeError(f"data must be a Digits split, got {type(data).__name__}")
    params = list(net.parameters())
    r = params[0].shape[0]
    lrs = [v.positive_float(f"lr[{i}]", x) for i, x in enumerate(lr)]
    gens = list(gens)
    if len(lrs) != r or len(gens) != r:
        raise ValueError(f"lr and gens must have one entry per run ({r}), got {len(lrs)} and "
                         f"{len(gens)}")
    if not all(isinstance(g, torch.Generator) for g in gens):
        raise TypeError("gens must be torch.Generators (eit.core.seeds.generator)")
    epochs, batch_size = v.positive_int("epochs", epochs), v.positive_int("batch_size",
                                                                          batch_size)
    momentum = v.in_interval("momentum", momentum, 0.0, 1.0)
    if isinstance(warmup_steps, bool) or not isinstance(warmup_steps, int) or warmup_steps < 0:
        raise ValueError(f"warmup_steps must be a non-negative int, got {warmup_steps!r}")
    max_loss = v.positive_float("max_loss", max_loss)
    dev = data.x_train.device
    base = torch.tensor(lrs, dtype=params[0].dtype, device=dev)
    live = torch.arange(r, device=dev)           # the runs still training (original ids)
    bufs: list[torch.Tensor | None] = [None] * len(params)
    at_step = np.full(r, -1)
    losses = np.full((r, epochs), np.nan)
    n, step = len(data.x_train), 0
    for epoch in range(epochs):
        if len(live) == 0:
            break
        orders = torch.stack([torch.randperm(n, generator=gens[i], device=gens[i].device)
                              for i in live.tolist()]).to(dev)
        total = torch.zeros(len(live), dtype=params[0].dtype, device=dev)
        for start in range(0, n, batch_size):
            idx = orders[:, start:start + batch_size]
            loss = _per_run_ce(net, data.x_train[idx], data.y_train[idx])
            bad = ~torch.isfinite(loss) | (loss > max_loss)
            if bool(bad.any()):   # drop the diverged runs from the stack
                at_step[live[bad].cpu().numpy()] = step
                keep = torch.nonzero(~bad).flatten()
                live, orders, total = live[keep], orders[keep], total[keep]
                net = net.select(keep)
                params = list(net.parameters())
                bufs = [None if b is None else b[keep] for b in bufs]
                if len(live) == 0:
                    break
                loss = _per_run_ce(net, data.x_train[idx[keep]], data.y_train[idx[keep]])
                idx = idx[keep]
            grads = torch.autograd.grad(loss.sum(), params)
            rate = base[live] * (min(1.0, (step + 1) / warmup_steps) if warmup_steps else 1.0)
            with torch.no_grad():
                for i, (p, g) in enumerate(zip(params, grads, strict=True)):
                    if momentum and bufs[i] is not None:
                        bufs[i].mul_(momentum).add_(g)
                    else:
                        bufs[i] = g.clone()
                    p -= rate.view(-1, *([1] * (p.ndim - 1))) * bufs[i]
            total += loss.detach() * idx.shape[1]
            step += 1
        if len(live):
            losses[live.cpu().numpy(), epoch] = (total / n).cpu().numpy()
    train_acc, test_acc = np.zeros(r), np.zeros(r)
    if len(live):
        with torch.no_grad():
            logits = net(data.x_train)                                   # (R', N, 10)
            ce = F.cross_entropy(logits.flatten(0, 1),
                                 data.y_train.repeat(len(live)), reduction="none")
            final = ce.view(len(live), -1).mean(1)
            blown = ~torch.isfinite(final) | (final > max_loss)
            at_step[live[blown].cpu().numpy()] = step
            ok = ~blown
            rows = live[ok].cpu().numpy()
            train_acc[rows] = (logits[ok].argmax(-1) == data.y_train).double().mean(-1).cpu()
            test_acc[rows] = _accuracy(net.select(torch.nonzero(ok).flatten()), data.x_test,
                                       data.y_test).cpu().numpy()
    diverged = at_step >= 0
    return Runs(diverged, at_step, losses, train_acc, test_acc)
