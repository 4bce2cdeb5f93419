"""Many independent SGD runs of one weight-normalized MLP trained at once.

Training thousands of tiny networks one after another is bound by per-operation overhead
(Issue 16). Runs that share an architecture but differ in initialization, learning rate and
mini-batch order can be trained *together*: their parameters are stacked along a leading run
axis, every layer is one batched matrix product (``baddbmm``), each run draws its own
mini-batches from its own generator, and one backward pass of the sum of the runs' losses
gives every run its own gradient (the runs share no parameter). The optimizer is
:func:`eit.train.sgd.sgd`'s, run by run: SGD with momentum and L2 weight decay (PyTorch's
update), the learning rate halved every ``halve_every`` epochs, a run *diverging* when a
mini-batch loss is not finite or exceeds ``max_loss`` (from then on it is frozen, and its
:class:`~eit.train.sgd.Run` records the epochs it completed, with accuracies 0). The result is
one :class:`~eit.train.sgd.Run` per run, the same record as the sequential trainer; the
numbers differ from it only by rounding (batched kernels sum in another order).

References
----------
Arpit & Bengio (2019), section 5 (the training protocol of Figure 5).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from ..core import validate as v
from ..models.wn_init import WNMLP
from .sgd import Digits, Run

__all__ = ["stacked_sgd"]


def _stack(nets: Sequence[WNMLP], dtype: torch.dtype) -> list[list[torch.Tensor]]:
    """Per layer [v, g, b], stacked over the runs: (R, out, in), (R, out), (R, out)."""
    depth = nets[0].depth
    layers = []
    for i in range(depth + 1):
        per_run = [(n.hidden + [n.head])[i] for n in nets]
        layers.append([torch.stack([getattr(p, k).detach() for p in per_run]).to(dtype)
                       .clone().requires_grad_(True) for k in ("v", "g", "b")])
    return layers


def _logits(layers: list[list[torch.Tensor]], x: torch.Tensor) -> torch.Tensor:
    """x (R, B, d_in) -> logits (R, B, d_out): ReLU after every layer but the last."""
    h = x
    for i, (vv, g, b) in enumerate(layers):
        w = g.unsqueeze(-1) * vv / vv.norm(dim=-1, keepdim=True)      # (R, out, in)
        h = torch.baddbmm(b.unsqueeze(1), h, w.transpose(1, 2))
        if i < len(layers) - 1:
            h = torch.relu(h)
    return h


def _run_losses(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of each run, (R,)."""
    r, b, c = logits.shape
    return F.cross_entropy(logits.reshape(r * b, c), y.reshape(r * b),
                           reduction="none").view(r, b).mean(1)


def stacked_sgd(nets: Sequence[WNMLP], data: Digits, *, lrs: Sequence[float], epochs: int,
                batch_size: int, gens: Sequence[torch.Generator], momentum: float = 0.0,
                weight_decay: float = 0.0, halve_every: int | None = None,
                max_loss: float = 100.0, dtype: torch.dtype | None = None) -> list[Run]:
    """Train ``nets`` (one architecture, R runs) together; run r uses ``lrs[r]``, ``gens[r]``.

    Parameters
    ----------
    nets : sequence of WNMLP
        The initialized networks (:func:`eit.models.wn_init.wn_mlp_model`), all with the same
        widths; they are not modified (their parameters are copied into the stack).
    data : Digits
        The training and test split.
    lrs : sequence of float
        The base learning rate of every run.
    epochs, batch_size : int
        As in :func:`eit.train.sgd.sgd`.
    gens : sequence of torch.Generator
        Every run's generator for its mini-batch order (one permutation per epoch).
    momentum, weight_decay, halve_every, max_loss
        As in :func:`eit.train.sgd.sgd`.
    dtype : torch.dtype, optional
        The precision of the training (parameters and data); default that of the data.
        ``torch.float32`` halves the cost of the products on a CPU.

    Returns
    -------
    list of Run
        One per run, in the order of ``nets``.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.models.wn_init import wn_mlp_model
    >>> from eit.train.sgd import digits
    >>> d = digits(seed=0)
    >>> gens = [generator(s) for s in (1, 2)]
    >>> nets = [wn_mlp_model("proposed", d_in=64, widths=[8], d_out=10, gen=g,
    ...                      on=torch.device("cpu")) for g in gens]
    >>> runs = stacked_sgd(nets, d, lrs=[0.1, 0.01], epochs=2, batch_size=100, gens=gens)
    >>> [len(r.losses) for r in runs]
    [2, 2]
    """
    if not isinstance(data, Digits):
        raise TypeError(f"data must be a Digits split, got {type(data).__name__}")
    nets = list(nets)
    if not nets or not all(isinstance(n, WNMLP) for n in nets):
        raise TypeError("nets must be a non-empty sequence of WNMLP")
    shapes = {tuple(p.shape for p in n.parameters()) for n in nets}
    if len(shapes) != 1:
        raise ValueError("nets must share one architecture (the same widths)")
    r_count = len(nets)
    if len(lrs) != r_count or len(gens) != r_count:
        raise ValueError(f"lrs and gens must have one entry per net ({r_count}), got "
                         f"{len(lrs)} and {len(gens)}")
    dtype = data.x_train.dtype if dtype is None else dtype
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")
    x_train, x_test = data.x_train.to(dtype), data.x_test.to(dtype)
    lr = torch.tensor([v.positive_float(f"lrs[{i}]", float(x)) for i, x in enumerate(lrs)],
                      dtype=dtype, device=x_train.device)
    epochs, batch_size = v.positive_int("epochs", epochs), v.positive_int("batch_size", batch_size)
    momentum = v.in_interval("momentum", momentum, 0.0, 1.0)
    weight_decay = v.in_interval("weight_decay", weight_decay, 0.0, 1.0)
    max_loss = v.positive_float("max_loss", max_loss)
    if halve_every is not None:
        halve_every = v.positive_int("halve_every", halve_every)
    layers = _stack(nets, dtype)
    params = [p for layer in layers for p in layer]
    bufs = [None] * len(params)
    n = len(x_train)
    alive = torch.ones(r_count, dtype=torch.bool, device=lr.device)
    died = torch.full((r_count,), -1, dtype=torch.long)
    totals = torch.zeros(epochs, r_count, dtype=lr.dtype, device=lr.device)
    step = 0
    for epoch in range(epochs):
        rate = lr * (0.5 ** (epoch // halve_every) if halve_every else 1.0)
        order = torch.stack([torch.randperm(n, generator=g, device=g.device).to(lr.device)
                             for g in gens])                             # (R, n)
        for start in range(0, n, batch_size):
            idx = order[:, start:start + batch_size]
            losses = _run_losses(_logits(layers, x_train[idx]), data.y_train[idx])
            bad = ~torch.isfinite(losses) | (losses > max_loss)
            newly = alive & bad
            died[newly.cpu()] = step
            alive &= ~bad
            for p in params:
                p.grad = None
            torch.where(alive, losses, torch.zeros_like(losses)).sum().backward()
            with torch.no_grad():
                if bool(alive.all()):           # the usual case: plain in-place updates
                    for i, p in enumerate(params):
                        d_p = p.grad.add_(p, alpha=weight_decay) if weight_decay else p.grad
                        if momentum:
                            if bufs[i] is None:
                                bufs[i] = d_p.clone()
                            else:
                                bufs[i].mul_(momentum).add_(d_p)
                            d_p = bufs[i]
                        p.addcmul_(rate.view(-1, *([1] * (p.ndim - 1))), d_p, value=-1.0)
                else:                           # frozen runs keep their parameters
                    for i, p in enumerate(params):
                        keep = alive.view(-1, *([1] * (p.ndim - 1)))
                        d_p = torch.where(keep, p.grad + weight_decay * p,
                                          torch.zeros_like(p))
                        if momentum:
                            bufs[i] = d_p.clone() if bufs[i] is None else torch.where(
                                keep, momentum * bufs[i] + d_p, bufs[i])
                            d_p = bufs[i]
                        p -= torch.where(keep, rate.view_as(keep) * d_p,
                                         torch.zeros_like(p))
            totals[epoch] += torch.where(alive, losses.detach(), 0.0) * idx.shape[1]
            step += 1
    with torch.no_grad():
        xs = lambda x: x.unsqueeze(0).expand(r_count, -1, -1)          # noqa: E731
        final = _run_losses(_logits(layers, xs(x_train)), data.y_train.expand(r_count, -1))
        acc = {k: (_logits(layers, xs(x)).argmax(-1) == y).double().mean(-1)
               for k, (x, y) in {"train": (x_train, data.y_train),
                                 "test": (x_test, data.y_test)}.items()}
    runs = []
    for r in range(r_count):
        if int(died[r]) >= 0:
            completed = int(died[r]) // math.ceil(n / batch_size)
            runs.append(Run(tuple(float(t) / n for t in totals[:completed, r]), True,
                            int(died[r]), 0.0, 0.0))
            continue
        f = float(final[r])
        if not math.isfinite(f) or f > max_loss:
            runs.append(Run(tuple(float(t) / n for t in totals[:, r]), True, step, 0.0, 0.0))
            continue
        runs.append(Run(tuple(float(t) / n for t in totals[:, r]), False, None,
                        float(acc["train"][r]), float(acc["test"][r])))
    return runs
