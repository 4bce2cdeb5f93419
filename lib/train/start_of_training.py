"""Statistics of the start of training: censored epoch counts, their summaries and ranks.

Hanin & Rolnick (2018, Figures 1b, 2b, 3b) plot the mean number of epochs to 20% test accuracy.
A run that never reaches the target within ``max_epochs`` (or diverges) is *censored*: its
time is at least ``max_epochs + 1``, and that is the value it takes in the statistics below
(a conservative choice for rank tests: every censored run ties with the others at the end).

An epoch count is an int in ``[1, max_epochs]`` or ``None``; anything else (the ``-1`` that
:class:`eit.train.batched` stores for "never reached", 0, a count above the budget, 3.7) is an
error naming the argument, never a number averaged into a statistic.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core import validate as v
from ..verdicts.stats import (
    Estimate,
    Proportion,
    Statistic,
    kendall_detectable,
    kendall_tau,
    mean,
    proportion,
)

__all__ = ["censored_epochs", "epoch_summary", "pooled_kendall", "mean_epochs",
           "rank_association"]


def _reached(name: str, reached, max_epochs: int) -> list[int | None]:
    """The epoch counts of ``reached``, validated (see the module docstring)."""
    if isinstance(reached, (str, bytes)) or not isinstance(reached, (Sequence, np.ndarray)):
        raise TypeError(f"{name} must be a sequence of epochs (int or None), got "
                        f"{type(reached).__name__}")
    if len(reached) == 0:
        raise ValueError(f"{name} must hold at least one run")
    out = []
    for i, r in enumerate(reached):
        if r is None:
            out.append(None)
            continue
        if isinstance(r, (bool, np.bool_)) or not isinstance(r, (int, np.integer)):
            raise TypeError(f"{name}[{i}] must be an int epoch or None (never reached), got "
                            f"{r!r}")
        if r == -1:
            raise ValueError(f"{name}[{i}] is -1, the 'never reached' sentinel of "
                             "eit.train.batched: pass None (Result.epochs_to_target())")
        if not 1 <= r <= max_epochs:
            raise ValueError(f"{name}[{i}] must lie in [1, max_epochs={max_epochs}] (or be "
                             f"None), got {r}")
        out.append(int(r))
    return out


def censored_epochs(reached: Sequence[int | None], max_epochs: int) -> np.ndarray:
    """Epochs per run, a censored run (``None``) counted as ``max_epochs + 1``.

    Raises
    ------
    ValueError, TypeError
        An epoch that is not an int in ``[1, max_epochs]`` or None (named).

    Examples
    --------
    >>> censored_epochs([3, None, 5], 10).tolist()
    [3.0, 11.0, 5.0]
    """
    max_epochs = v.positive_int("max_epochs", max_epochs)
    reached = _reached("reached", reached, max_epochs)
    return np.array([max_epochs + 1 if r is None else r for r in reached], dtype=float)


def epoch_summary(reached: Sequence[int | None], max_epochs: int
                  ) -> tuple[Estimate, Proportion]:
    """Mean epochs (censored runs at ``max_epochs + 1``) and the share of runs that reached it.

    Examples
    --------
    >>> e, p = epoch_summary([3, None, 5, 4], 10)
    >>> e.value, p.successes
    (5.75, 3)
    """
    epochs = censored_epochs(reached, max_epochs)
    done = sum(r is not None for r in reached)
    return mean(epochs), proportion(done, len(epochs))


def pooled_kendall(predictor: Sequence[float], runs: Sequence[Sequence[int | None]],
                   max_epochs: int) -> tuple[Statistic, float]:
    """Kendall's tau_b between a predictor (one value per point) and every run's epochs.

    Returns the statistic and its two-sided p-value (ties, censored runs included, are
    handled by tau_b).

    Examples
    --------
    >>> tau, p = pooled_kendall([0.0, 1.0, 2.0], [[1, 2], [3, 4], [5, None]], 10)
    >>> round(tau.value, 3)
    0.894
    """
    max_epochs = v.positive_int("max_epochs", max_epochs)
    for name, value in (("predictor", predictor), ("runs", runs)):
        if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
            raise TypeError(f"{name} must be a sequence, got {type(value).__name__}")
    if len(predictor) != len(runs):
        raise ValueError(f"predictor and runs must pair up, got {len(predictor)} and "
                         f"{len(runs)}")
    numeric = (np.floating, np.integer)
    predictor = [v.finite_real(f"predictor[{i}]", float(p) if isinstance(p, numeric) else p)
                 for i, p in enumerate(predictor)]
    epochs = []
    for i, r in enumerate(runs):
        r = _reached(f"runs[{i}]", r, max_epochs)
        epochs.append(np.array([max_epochs + 1 if e is None else e for e in r], dtype=float))
    x = [p for p, r in zip(predictor, epochs, strict=True) for _ in r]
    return kendall_tau(x, np.concatenate(epochs))


def mean_epochs(reached: Sequence[int | None], max_epochs: int) -> Estimate:
    """Mean epochs to the target, a censored run counted as ``max_epochs + 1``.

    The first half of :func:`epoch_summary`.

    Examples
    --------
    >>> mean_epochs([3, None, 5, 4], 10).value
    5.75
    """
    return mean(censored_epochs(reached, max_epochs))


def rank_association(predictor: Sequence[float], runs: Sequence[Sequence[int | None]],
                     max_epochs: int, *, alpha: float) -> tuple[Statistic, float, float]:
    """A one-sided test that the epochs increase with a predictor (Kendall tau_b > 0).

    Parameters
    ----------
    predictor : sequence of float
        One value per point.
    runs : sequence of sequences
        Per point, the epoch at which each run reached the target (``None``: censored).
    max_epochs : int
        The epoch budget.
    alpha : float
        The level of the test, for the smallest detectable tau.

    Returns
    -------
    tuple of (Statistic, float, float)
        Kendall's tau_b over every run (:func:`pooled_kendall`), its one-sided p-value
        (positive association) and the smallest tau the test detects at ``alpha`` with this
        many runs (:func:`eit.verdicts.stats.kendall_detectable`).

    References
    ----------
    Hanin & Rolnick (2018), Figures 1b, 2b and 3b.

    Examples
    --------
    >>> tau, p, tau_min = rank_association([0.0, 1.0, 2.0], [[1, 2], [3, 4], [5, None]], 10,
    ...                                    alpha=0.01)
    >>> p < 0.05
    True
    """
    alpha = v.probability("alpha", alpha, open_ends=True)
    tau, p_two = pooled_kendall(predictor, runs, max_epochs)
    p_one = p_two / 2 if tau.value > 0 else 1 - p_two / 2
    return tau, p_one, kendall_detectable(sum(len(r) for r in runs), alpha)
