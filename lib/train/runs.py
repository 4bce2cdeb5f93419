"""Milestones of training curves: the epoch at which a run first reaches a level.

Losses are recorded once per epoch, ``(runs, epochs)``; epoch numbers are 1-based, and a run
that never reaches the level is given ``epochs + 1`` (censored at the end of training, so
that rank tests can still compare it).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import torch

from .batched import Result

__all__ = ["first_epoch_below", "split_runs"]


def first_epoch_below(losses, level: float) -> list[int]:
    """Per run, the first epoch whose loss is below ``level`` (``epochs + 1`` if none).

    Parameters
    ----------
    losses : array_like or torch.Tensor
        ``(runs, epochs)`` per-epoch losses. NaN (the epochs after a divergence and those
        not run, in :class:`~eit.train.batched.Result`) and +inf (a diverged loss) are above
        every level; -inf is no loss and is refused.
    level : float
        A finite level.

    Returns
    -------
    list of int
        One 1-based epoch per run.

    References
    ----------
    Arpit & Bengio (2019), Figure 5: how long a network stays at its initial loss.

    Examples
    --------
    >>> first_epoch_below([[2.3, 2.0, 1.0], [2.3, 2.3, 2.3]], 2.2)
    [2, 4]
    """
    if isinstance(losses, torch.Tensor):
        losses = losses.detach().cpu().numpy()
    if losses is None or isinstance(losses, (str, bytes, dict)):
        raise TypeError(f"losses must be a (runs, epochs) array, got {type(losses).__name__}")
    try:
        a = np.asarray(losses, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"losses must be a (runs, epochs) array of numbers: {err}") from None
    if a.ndim != 2 or a.shape[1] == 0:
        raise ValueError(f"losses must be (runs, epochs) with at least one epoch, got shape "
                         f"{a.shape}")
    if np.isneginf(a).any():
        raise ValueError("losses contains -inf, which no loss can be")
    if isinstance(level, bool) or not isinstance(level, (int, float)) or np.isnan(level):
        raise TypeError(f"level must be a real number, got {level!r}")
    if not np.isfinite(level):
        raise ValueError(f"level must be finite, got {level!r}")
    below = a < level
    return [int(np.argmax(row)) + 1 if row.any() else a.shape[1] + 1 for row in below]


def split_runs(result: Result, labels: Sequence[Hashable]) -> dict[Hashable, Result]:
    """The runs of ``result`` grouped by their ``labels`` (one label per run).

    Parameters
    ----------
    result : Result
        R runs trained together.
    labels : sequence
        R hashable labels, for example ``(initialization, depth, learning rate)``; runs with
        equal labels (the seeds of one configuration) form one group, in run order.

    Returns
    -------
    dict
        Label -> :class:`~eit.train.batched.Result` of its runs, in order of first appearance.

    References
    ----------
    Arpit & Bengio (2019), Figure 5: the seeds of each configuration, trained in one stack.

    Examples
    --------
    >>> r = Result(np.zeros((3, 2)), np.zeros(3, bool), -np.ones(3, int), np.ones(3),
    ...            np.arange(3.0))
    >>> {k: g.test_accuracy.tolist() for k, g in split_runs(r, "aba").items()}
    {'a': [0.0, 2.0], 'b': [1.0]}
    """
    if not isinstance(result, Result):
        raise TypeError(f"result must be an eit.train.batched.Result, got "
                        f"{type(result).__name__}")
    if isinstance(labels, (bytes, dict)) or not hasattr(labels, "__iter__"):
        raise TypeError(f"labels must be a sequence of hashable labels, got "
                        f"{type(labels).__name__}")
    labels = list(labels)
    for i, lab in enumerate(labels):
        try:
            hash(lab)
        except TypeError:
            raise TypeError(f"labels[{i}] must be hashable, got {type(lab).__name__}") from None
    if len(labels) != len(result):
        raise ValueError(f"labels must have one entry per run ({len(result)}), got "
                         f"{len(labels)}")
    return {key: result.select(np.array([lab == key for lab in labels]))
            for key in dict.fromkeys(labels)}
