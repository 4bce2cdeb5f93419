"""The batched training engine: ``R`` independent SGD runs of one stacked model at once.

The training experiments of the book train thousands of tiny networks. One after another,
each step of each run is a handful of small kernels: the runs are bound by overhead, not by
arithmetic. Here the ``R`` runs of one architecture are a *stacked model* (parameters with a
leading run axis, :mod:`eit.models.wn_stacked`, :mod:`eit.models.relu_stacked`,
:mod:`eit.models.shaped_mlp`) and one batched forward and backward pass per step serves them
all. The runs share no parameter, so the gradient of the sum of their losses is the stack of
their own gradients: run ``r`` follows exactly the trajectory it would follow alone
(:func:`eit.train.sgd.sgd`, the single-run reference it is tested against), up to the
summation order of the batched kernels.

Each run has its own learning rate, its own mini-batch order and its own divergence test; the
optimizer is PyTorch's SGD, run by run:

* the step's rate is ``lr[r] * 0.5 ** (epoch // halve_every) * min(1, (step + 1) /
  warmup_steps)`` (the halving schedule of Arpit & Bengio 2019, the linear warm-up of Goyal et
  al. 2017 used by Arpit, Campos & Bengio 2019);
* ``d = grad + weight_decay * p``; with momentum ``buf = d`` at the first step, then ``buf =
  momentum * buf + d``, and ``p -= rate * buf`` (``momentum = 0``: vanilla SGD, ``p -= rate *
  grad``, as in Meterez et al. 2024);
* a run *diverges* when a mini-batch loss is not finite or exceeds ``max_loss`` (checked
  before the step, which it then does not take), or when its training loss after the last
  step is. From then on it is frozen (its updates are masked, on the device, without a host
  synchronization), and, with ``on_divergence="drop"``, it leaves the stack so that it costs
  nothing afterwards. Following Figure 2 of Arpit, Campos & Bengio (2019), a diverged run's
  accuracies are 0.

References
----------
Arpit & Bengio (2019), section 5 (Figure 5: momentum 0.9, weight decay, the learning rate
halved every 10 epochs). Arpit, Campos & Bengio (2019), Section 5.1, Tables 3 and 5 (momentum
0.9, batch size 128, warm-up, divergence). Hanin & Rolnick (2018), Figures 1b-3b (epochs to a
target accuracy). Meterez et al. (2024), Section 4 (vanilla SGD).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F

from ..core import validate as v
from . import _checks
from .sgd import Digits

__all__ = ["Result", "accuracies", "run_losses", "train"]

POLICIES = ("freeze", "drop", "raise")


@dataclass(frozen=True)
class Result:
    """The outcomes of ``R`` runs trained together (NumPy arrays, one entry per run).

    Attributes
    ----------
    losses : numpy.ndarray
        ``(R, epochs)``: the mean training loss of each epoch (over its mini-batches, weighted
        by their sizes); NaN from the epoch in which a run diverged on, and for epochs not run
        (training stopped early at ``target``).
    diverged : numpy.ndarray
        ``(R,)`` bool.
    diverged_at_step : numpy.ndarray
        ``(R,)`` int: the step whose mini-batch loss was not finite or above ``max_loss``
        (the total number of steps when the final training loss was), -1 if the run did not
        diverge.
    train_accuracy, test_accuracy : numpy.ndarray
        ``(R,)``: accuracy after training on the whole training and test splits; 0 for a
        diverged run.
    reached : numpy.ndarray or None
        ``(R,)`` int, with ``target``: the first epoch after which the run's test accuracy was
        at least ``target``, -1 if it never was (or diverged first); else None.
    records : list
        What ``record(model, epoch)`` returned, before training (epoch 0) and after every
        epoch; empty without ``record``.
    model : object
        The trained stack: the model passed in (trained in place), or with
        ``on_divergence="drop"`` after a divergence, the stack of the runs that survived.
    """

    losses: np.ndarray
    diverged: np.ndarray
    diverged_at_step: np.ndarray
    train_accuracy: np.ndarray
    test_accuracy: np.ndarray
    reached: np.ndarray | None = None
    records: list = field(default_factory=list)
    model: Any = None

    def __len__(self) -> int:
        return len(self.diverged)

    def select(self, index) -> Result:
        """The runs at ``index`` (a slice, a boolean mask or integer positions)."""
        return Result(self.losses[index], self.diverged[index], self.diverged_at_step[index],
                      self.train_accuracy[index], self.test_accuracy[index],
                      None if self.reached is None else self.reached[index], self.records,
                      None)

    def epochs_to_target(self) -> list[int | None]:
        """``reached`` as a list, ``None`` for a run that never reached the target."""
        if self.reached is None:
            raise ValueError("the runs were trained without a target accuracy")
        return [None if int(e) < 0 else int(e) for e in self.reached]


def _params(model) -> list[torch.Tensor]:
    if not callable(model) or not callable(getattr(model, "parameters", None)):
        raise TypeError("model must be a stacked model: callable, with parameters(), got "
                        f"{type(model).__name__}")
    params = list(model.parameters())
    if not params:
        raise ValueError("model.parameters() must be a non-empty list of tensors")
    runs = params[0].shape[0] if params[0].ndim else 0
    for i, p in enumerate(params):
        if not isinstance(p, torch.Tensor) or not p.is_leaf or not p.requires_grad:
            raise ValueError(f"model.parameters()[{i}] must be a leaf tensor requiring grad")
        if p.ndim == 0 or p.shape[0] != runs:
            raise ValueError(f"model.parameters()[{i}] must have the run axis first "
                             f"({runs} runs), got shape {tuple(p.shape)}")
    return params


def run_losses(model, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of every run on its own samples.

    The samples and labels are moved to the model's device (and the samples cast to its
    precision): the samples meet the weights.

    Parameters
    ----------
    model : stacked model
        Called on ``x`` of shape ``(R, N, d)`` (or ``(R, N, 1, 8, 8)``), it gives logits
        ``(R, N, C)``.
    x : torch.Tensor
        ``(R, N, ...)``: run ``r``'s samples.
    y : torch.Tensor
        ``(R, N)`` labels.

    Returns
    -------
    torch.Tensor
        ``(R,)``; NaN or inf where a run's samples or weights carry one.

    Raises
    ------
    TypeError
        ``model`` is not a stacked model, ``x`` not a floating-point tensor, ``y`` not
        integer labels.
    ValueError
        ``x`` without a run, sample and feature axis, ``y`` not ``(R, N)``, or a label
        outside ``[0, C)``.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.models.relu_stacked import mlp
    >>> from eit.sample.laws import he
    >>> net = mlp([8], he(), n_nets=3, gen=generator(0))
    >>> x = torch.rand(3, 5, 64, dtype=torch.float64)
    >>> run_losses(net, x, torch.zeros(3, 5, dtype=torch.long)).shape
    torch.Size([3])
    """
    params = _params(model)
    runs = params[0].shape[0]
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError(f"x must be a floating-point tensor (R, N, ...), got "
                        f"{getattr(x, 'dtype', type(x).__name__)}")
    if x.ndim < 3 or x.shape[0] != runs:
        raise ValueError(f"x must be (R, N, ...) with R = {runs} runs, got shape "
                         f"{tuple(x.shape)}")
    y = v.labels("y", y, shape=tuple(x.shape[:2]))
    x = x.to(params[0].device, params[0].dtype)   # the samples meet the weights
    y = y.to(params[0].device)
    logits = model(x)
    _checks.classes(y, logits)
    return _losses(logits, y)


def _losses(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none").view(
        y.shape).mean(1)


def _run_losses(model, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """:func:`run_losses` without the checks (the engine's own, validated batches)."""
    return _losses(model(x), y)


@torch.no_grad()
def accuracies(model, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Fraction of the samples whose arg-max logit is the label, for every run.

    The whole split goes through the model in one batch (batch normalization then uses its
    statistics), cast to the model's precision.

    Parameters
    ----------
    model : stacked model
        ``R`` runs (see :func:`train`).
    x : torch.Tensor
        ``(N, ...)``: the samples, shared by the runs.
    y : torch.Tensor
        ``(N,)`` labels.

    Returns
    -------
    torch.Tensor
        ``(R,)``, float64.

    Raises
    ------
    TypeError
        ``model`` is not a stacked model, ``x`` not a floating-point tensor, ``y`` not
        integer labels.
    ValueError
        ``x`` and ``y`` of different lengths, an inf or NaN in ``x`` (an arg-max of NaN
        logits is no prediction), or a label outside ``[0, C)``.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.models.relu_stacked import mlp
    >>> from eit.sample.laws import he
    >>> net = mlp([8], he(), n_nets=3, gen=generator(0))
    >>> y = torch.zeros(5, dtype=torch.long)
    >>> accuracies(net, torch.rand(5, 64, dtype=torch.float64), y).shape
    torch.Size([3])
    """
    _params(model)
    x, y = _checks.samples(x, y)
    return _accuracies(model, x, y, check=True)


@torch.no_grad()
def _accuracies(model, x: torch.Tensor, y: torch.Tensor, *, check: bool = False
                ) -> torch.Tensor:
    """:func:`accuracies` without the checks of its arguments (the engine's own splits)."""
    params = _params(model)
    runs = params[0].shape[0]
    x = x.to(params[0].device, params[0].dtype)   # the samples meet the weights
    logits = model(x.unsqueeze(0).expand(runs, *x.shape))
    y = y.to(logits.device)
    if check:
        _checks.classes(y, logits)
    return (logits.argmax(-1) == y).double().mean(-1)


def _per_run(name: str, values, runs: int, check: Callable) -> list:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        return [check(name, values)] * runs
    if len(values) != runs:
        raise ValueError(f"{name} must have one entry per run ({runs}), got {len(values)}")
    return [check(f"{name}[{i}]", x) for i, x in enumerate(values)]


def _generator(name: str, g) -> torch.Generator:
    if not isinstance(g, torch.Generator):
        raise TypeError(f"{name} must be a torch.Generator (eit.core.seeds.generator), got "
                        f"{type(g).__name__}")
    return g


def _orders(gens, live: list[int], n: int, device: torch.device) -> torch.Tensor:
    """This epoch's mini-batch order of every live run, ``(R', n)``."""
    if isinstance(gens, torch.Generator):     # one stream: every run its own permutation
        keys = torch.rand(len(live), n, generator=gens, device=gens.device)
        return keys.argsort(dim=1).to(device)
    return torch.stack([torch.randperm(n, generator=gens[i], device=gens[i].device)
                        for i in live]).to(device)


def train(model, data: Digits, *, lr: float | Sequence[float], epochs: int, batch_size: int,
          gens: torch.Generator | Sequence[torch.Generator], momentum: float = 0.0,
          weight_decay: float = 0.0, warmup_steps: int = 0, halve_every: int | None = None,
          max_loss: float = 100.0, on_divergence: Literal["freeze", "drop", "raise"] = "freeze",
          drop_last: bool = False, target: float | None = None,
          record: Callable[[Any, int], Any] | None = None) -> Result:
    """Train the ``R`` runs of a stacked model with mini-batch SGD on the cross-entropy.

    Parameters
    ----------
    model : stacked model
        ``parameters()`` returns leaf tensors requiring gradients, each with the run axis first
        (``R``); ``model(x)`` maps ``x`` of shape ``(R, B, ...)`` (run ``r``'s mini-batch) to
        logits ``(R, B, C)``. Trained in place. ``on_divergence="drop"`` also needs
        ``select(index)``, the stack of the runs at ``index`` (copies).
    data : Digits
        The train/test split (:func:`eit.train.sgd.digits`), cast to the model's precision.
    lr : float or sequence of float
        The base learning rate, shared or one per run (``R``).
    epochs, batch_size : int
        Passes over the training set (at most: see ``target``), samples per step.
    gens : torch.Generator or sequence of torch.Generator
        One generator per run (``R``): run ``r`` draws its order at every epoch with
        ``torch.randperm(n, generator=gens[r])``, as :func:`eit.train.sgd.sgd` does (runs that
        should share an order get generators in the same state). One generator: every run
        still gets its own permutation, all drawn at once from that stream.
    momentum, weight_decay : float
        In ``[0, 1)``; PyTorch's SGD (``buf = grad`` at the first step).
    warmup_steps : int
        The rate rises linearly from ``lr / warmup_steps`` to ``lr`` over the first
        ``warmup_steps`` steps; 0: no warm-up.
    halve_every : int, optional
        Halve the rate every ``halve_every`` epochs.
    max_loss : float
        A mini-batch loss above it (or not finite) is a divergence; ``math.inf``: only a
        non-finite loss is.
    on_divergence : {"freeze", "drop", "raise"}
        A diverged run is frozen in the stack, or leaves it (once per epoch on an accelerator,
        at once on a CPU where checking costs no synchronization), or the training stops with
        :class:`FloatingPointError` at the end of the epoch.
    drop_last : bool
        Drop the last, incomplete mini-batch of every epoch (every step then has
        ``batch_size`` samples, which batch normalization needs).
    target : float, optional
        A test accuracy in ``[0, 1]``: the test accuracy of every run is measured after every
        epoch, ``Result.reached`` records when it first reaches ``target``, and training stops
        once every live run has reached it.
    record : callable, optional
        ``record(model, epoch)``, called before training (epoch 0) and after every epoch.

    Returns
    -------
    Result

    Raises
    ------
    TypeError
        ``data`` is not a :class:`~eit.train.sgd.Digits`, ``model`` not a stacked model, a
        generator not a ``torch.Generator``.
    ValueError
        A per-run argument of the wrong length, an argument out of range (named).
    FloatingPointError
        ``on_divergence="raise"`` and a run diverged.

    References
    ----------
    Arpit & Bengio (2019), section 5; Arpit, Campos & Bengio (2019), Section 5.1 and Figure 2;
    Hanin & Rolnick (2018), Figures 1b-3b; Meterez et al. (2024), Section 4.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.models.wn_init import wn_mlp_model
    >>> from eit.models.wn_stacked import stack
    >>> from eit.train.sgd import digits
    >>> data = digits(seed=0)
    >>> nets = stack([wn_mlp_model("proposed", d_in=64, widths=[16], d_out=10,
    ...                            gen=generator(s)) for s in range(2)])
    >>> res = train(nets, data, lr=[0.1, 1e3], epochs=1, batch_size=128,
    ...             gens=[generator(5), generator(5)], momentum=0.9)
    >>> res.diverged.tolist(), res.losses.shape
    ([False, True], (2, 1))
    """
    if not isinstance(data, Digits):
        raise TypeError(f"data must be a Digits split, got {type(data).__name__}")
    data.check()             # NaN pixels would read as a divergence, label -1 as an index
    params = _params(model)
    runs = params[0].shape[0]
    lrs = _per_run("lr", lr, runs, v.positive_float)
    if isinstance(gens, torch.Generator):
        pass
    elif isinstance(gens, Sequence) and not isinstance(gens, (str, bytes)):
        gens = [_generator(f"gens[{i}]", g) for i, g in enumerate(gens)]
        if len(gens) != runs:
            raise ValueError(f"gens must have one generator per run ({runs}), got {len(gens)}")
    else:
        raise TypeError("gens must be a torch.Generator or a sequence of them, got "
                        f"{type(gens).__name__}")
    epochs, batch_size = v.positive_int("epochs", epochs), v.positive_int("batch_size",
                                                                          batch_size)
    momentum = v.in_interval("momentum", momentum, 0.0, 1.0)
    weight_decay = v.in_interval("weight_decay", weight_decay, 0.0, 1.0)
    if isinstance(warmup_steps, bool) or not isinstance(warmup_steps, int) or warmup_steps < 0:
        raise ValueError(f"warmup_steps must be a non-negative int, got {warmup_steps!r}")
    if halve_every is not None:
        halve_every = v.positive_int("halve_every", halve_every)
    if max_loss != math.inf:
        max_loss = v.positive_float("max_loss", max_loss)
    on_divergence = v.choice("on_divergence", on_divergence, POLICIES)
    if not isinstance(drop_last, bool):
        raise TypeError(f"drop_last must be a bool, got {type(drop_last).__name__}")
    if target is not None:
        target = v.in_interval("target", target, 0.0, 1.0, closed_hi=True)
    if record is not None and not callable(record):
        raise TypeError(f"record must be callable, got {type(record).__name__}")
    n = len(data.x_train)
    if drop_last and batch_size > n:
        raise ValueError(f"batch_size must be <= {n} (the training set) with drop_last, got "
                         f"{batch_size}")

    dtype, dev = params[0].dtype, params[0].device
    x_train, y_train = data.x_train.to(dev, dtype), data.y_train.to(dev)
    x_test, y_test = data.x_test.to(dev, dtype), data.y_test.to(dev)
    starts = range(0, n - batch_size + 1 if drop_last else n, batch_size)
    sizes = torch.tensor([min(batch_size, n - s) for s in starts], dtype=dtype, device=dev)
    st = _Stack(model, params, runs, epochs, torch.tensor(lrs, dtype=dtype, device=dev))
    out = _Out(np.full((runs, epochs), np.nan), np.full(runs, -1))
    reached = np.full(runs, -1) if target is not None else None
    records = [] if record is None else [record(model, 0)]
    drop_now = on_divergence == "drop" and dev.type == "cpu"
    step = 0
    for epoch in range(epochs):
        halving = 0.5 ** (epoch // halve_every) if halve_every else 1.0
        orders = _orders(gens, st.ids, n, dev)
        total = torch.zeros(len(st.ids), dtype=dtype, device=dev)
        for k, start in enumerate(starts):
            idx = orders[:, start:start + batch_size]
            loss = _run_losses(st.model, x_train[idx], y_train[idx])
            bad = ~torch.isfinite(loss) | (loss > max_loss)
            st.died = torch.where(st.alive & bad, step, st.died)
            st.alive = st.alive & ~bad
            if drop_now and bool(bad.any()):   # on a CPU: leave the stack at once
                keep = st.alive.clone()
                st.drop(keep, out)
                if not st.ids:
                    break
                orders, total, idx = orders[keep], total[keep], idx[keep]
                loss = _run_losses(st.model, x_train[idx], y_train[idx])
            grads = torch.autograd.grad(torch.where(st.alive, loss, 0.0).sum(), st.params)
            warm = min(1.0, (step + 1) / warmup_steps) if warmup_steps else 1.0
            rate = torch.where(st.alive, st.lr * (halving * warm), 0.0)
            with torch.no_grad():
                for i, (p, g) in enumerate(zip(st.params, grads, strict=True)):
                    if weight_decay:
                        g = g.add_(p, alpha=weight_decay)
                    if momentum and st.bufs[i] is not None:
                        g = st.bufs[i].mul_(momentum).add_(g)
                    if momentum:
                        st.bufs[i] = g
                    p.addcmul_(rate.view(-1, *([1] * (p.ndim - 1))), g, value=-1.0)
            total += torch.where(st.alive, loss.detach(), 0.0) * sizes[k]
            step += 1
        if not st.ids:
            break
        st.losses[:, epoch] = torch.where(st.alive, total / sizes.sum(), math.nan)
        if on_divergence == "raise" and not bool(st.alive.all()):
            raise FloatingPointError(f"{int((~st.alive).sum())} of {runs} runs diverged (a "
                                     f"mini-batch loss not finite or above max_loss "
                                     f"{max_loss}); lower lr")
        if on_divergence == "drop" and not bool(st.alive.all()):
            st.drop(st.alive.clone(), out)
            if not st.ids:
                break
        if record is not None:
            records.append(record(st.model, epoch + 1))
        if target is not None:
            acc = _accuracies(st.model, x_test, y_test).cpu().numpy()
            ok, ids = st.alive.cpu().numpy(), np.asarray(st.ids)
            reached[ids[ok & (acc >= target) & (reached[ids] < 0)]] = epoch + 1
            if ((reached[ids] >= 0) | ~ok).all():
                break
    return _finish(st, out, reached, records, step, max_loss, (x_train, y_train),
                   (x_test, y_test), on_divergence)


@dataclass
class _Out:
    """The records of the runs that left the stack (original ids)."""

    losses: np.ndarray
    died: np.ndarray


class _Stack:
    """The runs still in the stack: the model, its optimizer state, per-run flags on the device."""

    def __init__(self, model, params, runs: int, epochs: int, lr: torch.Tensor):
        dev = lr.device
        self.model, self.params, self.lr = model, params, lr
        self.bufs: list[torch.Tensor | None] = [None] * len(params)
        self.ids = list(range(runs))
        self.alive = torch.ones(runs, dtype=torch.bool, device=dev)
        self.died = torch.full((runs,), -1, dtype=torch.long, device=dev)
        self.losses = torch.full((runs, epochs), math.nan, dtype=lr.dtype, device=dev)

    def drop(self, keep: torch.Tensor, out: _Out) -> None:
        """Write the records of the runs where ``keep`` is False, then remove them."""
        gone = np.asarray(self.ids)[~keep.cpu().numpy()]
        out.died[gone] = self.died[~keep].cpu().numpy()
        out.losses[gone] = self.losses[~keep].cpu().double().numpy()
        index = torch.nonzero(keep).flatten()
        self.ids = [self.ids[i] for i in index.tolist()]
        if not self.ids:
            return
        self.model = self.model.select(index)
        self.params = _params(self.model)
        self.bufs = [None if b is None else b[index] for b in self.bufs]
        self.lr, self.alive = self.lr[index], self.alive[index]
        self.died, self.losses = self.died[index], self.losses[index]


def _finish(st: _Stack, out: _Out, reached, records, step, max_loss, train_split, test_split,
            on_divergence) -> Result:
    runs = len(out.died)
    train_acc, test_acc = np.zeros(runs), np.zeros(runs)
    if st.ids:
        with torch.no_grad():
            x, y = train_split
            r = len(st.ids)
            logits = st.model(x.unsqueeze(0).expand(r, *x.shape))
            final = F.cross_entropy(logits.flatten(0, 1), y.repeat(r),
                                    reduction="none").view(r, -1).mean(1)
            blown = st.alive & (~torch.isfinite(final) | (final > max_loss))
            st.died = torch.where(blown, step, st.died)
            st.alive = st.alive & ~blown
            ok, ids = st.alive.cpu().numpy(), np.asarray(st.ids)
            train_acc[ids[ok]] = (logits.argmax(-1) == y).double().mean(-1).cpu().numpy()[ok]
            test_acc[ids[ok]] = _accuracies(st.model, *test_split).cpu().numpy()[ok]
            out.died[ids] = st.died.cpu().numpy()
            out.losses[ids] = st.losses.cpu().double().numpy()
    diverged = out.died >= 0
    if on_divergence == "raise" and diverged.any():
        raise FloatingPointError(f"{int(diverged.sum())} of {runs} runs diverged (training "
                                 f"loss not finite or above max_loss {max_loss}); lower lr")
    return Result(out.losses, diverged, out.died, train_acc, test_acc, reached, records,
                  st.model)
