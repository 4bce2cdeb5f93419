"""Learning-rate sweeps: every seed at every rate of a grid, trained together, and their summary.

Arpit, Campos & Bengio (2019) judge an initialization by the learning rates at which training
does not diverge (Figures 2 and 4): a seed fixes the network and the order of its mini-batches,
and every seed is trained at every rate of a grid. :func:`lr_sweep` trains all these runs as
one batched computation (:func:`eit.train.batched.train`), and :class:`Sweep` summarizes them
per seed and per rate:

* :meth:`Sweep.log_eta_star`: ``log10`` of each seed's *largest surviving rate*;
* :meth:`Sweep.fractions`: the fraction of seeds that survive at each rate;
* :meth:`Sweep.diverged_everywhere`: the seeds that diverge at every rate;
* :meth:`Sweep.diverged_at_best_rate`: the seeds that diverge at the rate with the most
  survivors.

References
----------
Arpit, Campos & Bengio (2019), Section 5.1, Figures 2 and 4, Tables 3 and 5.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..core import validate as v
from ..core.seeds import generator
from ..verdicts.stats import Proportion, proportion
from .batched import Result, train
from .sgd import Digits

__all__ = ["Sweep", "log_largest_rate", "lr_sweep"]


def _rates(lrs) -> list[float]:
    if isinstance(lrs, (str, bytes)) or not isinstance(lrs, Sequence) or not lrs:
        raise ValueError(f"lrs must be a non-empty sequence of rates, got {lrs!r}")
    return [v.positive_float(f"lrs[{i}]", lr) for i, lr in enumerate(lrs)]


def log_largest_rate(survived, lrs: Sequence[float]) -> np.ndarray:
    """``log10`` of each seed's largest surviving rate (the smallest rate if none survives).

    Parameters
    ----------
    survived : array_like of bool
        ``(seeds, rates)``: whether the run of a seed at a rate did not diverge.
    lrs : sequence of float
        The rates, one per column (positive).

    Returns
    -------
    numpy.ndarray
        ``(seeds,)``. A seed that diverges at every rate gets the smallest rate tried, which
        understates how far below the grid it lies (count such seeds separately).

    Examples
    --------
    >>> log_largest_rate([[True, True, False], [False, False, False]], [1e-3, 1e-2, 1e-1])
    array([-2., -3.])
    """
    if isinstance(survived, torch.Tensor):
        survived = survived.detach().cpu().numpy()
    ok = np.asarray(survived)
    if ok.dtype != bool or ok.ndim != 2:
        raise ValueError(f"survived must be a 2-d bool array (seeds, rates), got {ok.dtype} "
                         f"of shape {ok.shape}")
    logs = np.log10(_rates(lrs))
    if ok.shape[1] != logs.size:
        raise ValueError(f"lrs must have one rate per column of survived ({ok.shape[1]}), "
                         f"got {logs.size}")
    return np.where(ok, logs, -np.inf).max(1).clip(min=logs.min())


@dataclass(frozen=True)
class Sweep:
    """The runs of a sweep: ``result`` holds run ``i * len(lrs) + j`` = seed ``i`` at rate ``j``.

    Attributes
    ----------
    result : eit.train.batched.Result
        The batched training result of all ``seeds * rates`` runs.
    lrs : tuple of float
        The rates of the grid.
    """

    result: Result
    lrs: tuple[float, ...]

    @property
    def survived(self) -> np.ndarray:
        """``(seeds, rates)`` bool: the runs that did not diverge."""
        return ~self.result.diverged.reshape(-1, len(self.lrs))

    @property
    def seeds(self) -> int:
        """The number of seeds."""
        return self.survived.shape[0]

    def per_seed(self, values) -> np.ndarray:
        """A per-run array of the result (``test_accuracy``, ...) as ``(seeds, rates)``."""
        return np.asarray(values).reshape(self.survived.shape)

    def log_eta_star(self) -> np.ndarray:
        """``(seeds,)``: :func:`log_largest_rate` of the sweep."""
        return log_largest_rate(self.survived, self.lrs)

    def fractions(self) -> list[Proportion]:
        """The fraction of seeds that survive, one Clopper-Pearson proportion per rate."""
        return [proportion(int(c), self.seeds) for c in self.survived.sum(0)]

    def diverged_everywhere(self) -> Proportion:
        """The fraction of seeds that diverge at every rate."""
        return proportion(int((~self.survived.any(1)).sum()), self.seeds)

    def diverged_at_best_rate(self) -> Proportion:
        """The fraction of seeds that diverge at the rate with the most survivors (ties: the
        first rate of the grid)."""
        j = int(np.argmax(self.survived.sum(0)))
        return proportion(int((~self.survived[:, j]).sum()), self.seeds)


def lr_sweep(build: Callable[[torch.Generator], object], data: Digits, *,
             lrs: Sequence[float], seeds: Sequence[int], stack: Callable, epochs: int,
             batch_size: int, dtype: torch.dtype = torch.float32, **train_kw) -> Sweep:
    """Train every seed at every rate of ``lrs``, all runs together.

    Seed ``s`` draws its network with ``build(generator(s))``; the generator's state after
    that draw then draws the seed's mini-batch orders, the same at every rate. The runs are
    stacked with ``stack(nets, dtype=dtype)`` and trained by :func:`eit.train.batched.train`
    with ``on_divergence="drop"``.

    Parameters
    ----------
    build : callable
        ``build(gen) -> network``: one seed's (unstacked) network, drawn from ``gen``.
    data : Digits
        The train/test split.
    lrs : sequence of float
        The rates of the grid (positive).
    seeds : sequence of int
        The seeds (each shifted by ``EIT_SEED``, :func:`eit.core.seeds.generator`).
    stack : callable
        ``stack(nets, dtype=...)``, e.g. :func:`eit.models.wn_stacked.stack`.
    epochs, batch_size : int
        As in :func:`eit.train.batched.train`.
    dtype : torch.dtype
        The precision of training (PyTorch's default single precision).
    **train_kw
        Further arguments of :func:`eit.train.batched.train` (``momentum``,
        ``warmup_steps``, ``max_loss``, ...).

    Returns
    -------
    Sweep

    References
    ----------
    Arpit, Campos & Bengio (2019), Section 5.1 (every seed at every rate of Table 3's grid).

    Examples
    --------
    >>> from eit.models.wn_init import wn_mlp_model
    >>> from eit.models.wn_stacked import stack
    >>> from eit.train.sgd import digits
    >>> data = digits(seed=0)
    >>> def build(gen):
    ...     return wn_mlp_model("proposed", d_in=64, widths=[4], d_out=10, gen=gen)
    >>> sw = lr_sweep(build, data, lrs=[1e-2, 1e6], seeds=[0, 1], stack=stack, epochs=1,
    ...               batch_size=256)
    >>> sw.survived.tolist()
    [[True, False], [True, False]]
    >>> sw.log_eta_star().tolist()
    [-2.0, -2.0]
    """
    for name, fn in (("build", build), ("stack", stack)):
        if not callable(fn):
            raise TypeError(f"{name} must be callable, got {type(fn).__name__}")
    if not isinstance(data, Digits):
        raise TypeError(f"data must be a Digits split, got {type(data).__name__}")
    lrs = tuple(_rates(lrs))
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence) or not seeds:
        raise ValueError(f"seeds must be a non-empty sequence of ints, got {seeds!r}")
    seeds = [v.nonnegative_int(f"seeds[{i}]", int(s) if isinstance(s, np.integer) else s)
             for i, s in enumerate(seeds)]
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")
    nets, gens = [], []
    for seed in seeds:
        gen = generator(seed)
        net = build(gen)
        state = gen.get_state()
        for _ in lrs:
            nets.append(net)
            gens.append(generator(seed))
            gens[-1].set_state(state)
    runs = train(stack(nets, dtype=dtype), data, lr=list(lrs) * len(seeds), epochs=epochs,
                 batch_size=batch_size, gens=gens, on_divergence="drop", **train_kw)
    return Sweep(runs, lrs)
