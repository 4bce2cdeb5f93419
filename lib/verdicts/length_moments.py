"""Moments of the squared length ``M_l = ||h_l||^2`` of many random networks, from log-lengths.

The engines return natural log-lengths ``log ||h_l||`` (rows ``l = 0..L``, one column per
independent network). The laws of Hanin & Rolnick (2018) are laws of the moments of ``M_l``
and of its one-step growth ``M_l / M_{l-1}``; these functions turn log-lengths into
:class:`~eit.verdicts.stats.Estimate` objects of those moments, and choose, before any
measurement, the points at which a sample mean of ``M_l`` can be tested at all (a heavy-tailed
``M_l`` has a sample mean whose standard error is no guide).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import torch

from ..core import validate as v
from .stats import Estimate, mean

__all__ = ["length_moment", "step_deviation", "relative_variance_limit", "testable_points"]


def _log_lengths(name: str, value, ndim: int) -> torch.Tensor:
    value = v.tensor(name, value, ndim=ndim)
    if not bool(torch.isfinite(value).all()):
        raise ValueError(f"{name} contains inf or NaN (a zero length has no log)")
    if value.shape[-1] < 2:
        raise ValueError(f"{name} needs at least 2 networks (its last dimension) for a "
                         f"standard error, got shape {tuple(value.shape)}")
    return value


def length_moment(log_len: torch.Tensor, power: int = 1) -> Estimate:
    """``E[M^power]`` with ``M = ||h||^2``, from the log-lengths of independent networks.

    Parameters
    ----------
    log_len : torch.Tensor
        ``log ||h||``, shape ``(n_nets,)``: one value per independent network.
    power : int
        The moment (1: the mean squared length, 2: its second moment).

    Returns
    -------
    Estimate
        The sample mean of ``exp(2 power log_len)`` with its standard error.

    References
    ----------
    Hanin & Rolnick (2018), eq. (2) (the mean of ``M_d``) and Theorem 4 (its second moment).

    Examples
    --------
    >>> log_len = torch.log(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
    >>> round(length_moment(log_len).value, 9)
    4.666666667
    """
    power = v.positive_int("power", power)
    m = torch.exp(2 * power * _log_lengths("log_len", log_len, 1))
    if not bool(torch.isfinite(m).all()):
        raise ValueError(f"log_len is too large: exp(2 * {power} * log_len) overflows")
    return mean(m)


def step_deviation(log_len: torch.Tensor, factor) -> Estimate:
    """Mean over networks of the one-step martingale differences ``M_l / M_{l-1} - factor_l``.

    Given the stream after ``l - 1`` steps, a one-step law states ``E[M_l / M_{l-1}] =
    factor_l``; the differences are then uncorrelated with mean 0. They are averaged over the
    ``L`` steps of each network, and the estimate is the mean of these per-network averages
    (light-tailed where ``M_l`` itself is not).

    Parameters
    ----------
    log_len : torch.Tensor
        ``log ||h_l||``, shape ``(L+1, n_nets)``.
    factor : torch.Tensor or float
        The conditional mean of each step (finite, > 0): a number, or a tensor of shape
        ``(L, 1)`` (one per step) or ``(L, n_nets)`` (per step and network). A vector
        ``(L,)`` is refused: it would broadcast along the networks.

    Returns
    -------
    Estimate
        Mean 0 under the law.

    References
    ----------
    Hanin & Rolnick (2018), Lemma 2 (the one-module step of a residual network).

    Examples
    --------
    >>> log_len = torch.log(torch.tensor([[1.0, 1.0], [2.0, 1.0]], dtype=torch.float64))
    >>> round(step_deviation(log_len, 2.5).value, 9)
    0.0
    """
    log_len = _log_lengths("log_len", log_len, 2)
    if log_len.shape[0] < 2:
        raise ValueError(f"log_len needs at least two rows (one step), got {log_len.shape[0]}")
    ratio = torch.exp(2 * torch.diff(log_len, dim=0))
    if not bool(torch.isfinite(ratio).all()):
        raise ValueError("log_len changes too much in one step: exp(2 * step) overflows")
    steps, nets = ratio.shape
    if isinstance(factor, torch.Tensor):
        if not (factor.ndim == 0 or (factor.ndim == 2 and factor.shape[0] == steps
                                     and factor.shape[1] in (1, nets))):
            raise ValueError(f"factor must be a number or a tensor of shape (L, 1) = "
                             f"({steps}, 1) or (L, n_nets) = ({steps}, {nets}), got shape "
                             f"{tuple(factor.shape)}")
        if factor.is_complex() or not bool((torch.isfinite(factor) & (factor > 0)).all()):
            raise ValueError("factor must be finite and > 0 (a conditional mean of a ratio of "
                             "lengths)")
        factor = factor.to(device=ratio.device, dtype=ratio.dtype)
    else:
        factor = v.finite_real("factor", factor)
        if factor <= 0:
            raise ValueError(f"factor must be > 0 (a conditional mean of a ratio of lengths), "
                             f"got {factor}")
    return mean((ratio - factor).mean(0))


def relative_variance_limit(margin: float, sizes: Sequence[int], *, z: float) -> float:
    """The largest relative variance ``R = Var[M]/E[M]^2`` at which a mean of ``M`` is testable.

    A relative-margin test compares a sample mean (or a ratio of independent sample means of
    ``sizes[0], sizes[1], ...`` samples, each of relative variance at most ``R``) with its
    prediction; its relative standard error is ``sqrt(R sum_i 1/N_i)``. The point is admitted
    when ``z`` such standard errors fit in the margin: ``z sqrt(R sum_i 1/N_i) <= margin``.

    Parameters
    ----------
    margin : float
        The relative margin of the test (> 0).
    sizes : sequence of int
        The sample sizes of the means that enter the test.
    z : float
        Standard errors that must fit in the margin (> 0): a conservative stand-in for the
        quantile of the test, since the standard error of a heavy-tailed mean fluctuates.

    Examples
    --------
    >>> relative_variance_limit(0.1, [10_000], z=5)
    4.0
    """
    margin, z = v.positive_float("margin", margin), v.positive_float("z", z)
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Sequence) or not sizes:
        raise ValueError(f"sizes must be a non-empty sequence of ints, got {sizes!r}")
    sizes = [v.positive_int(f"sizes[{i}]", n) for i, n in enumerate(sizes)]
    try:
        limit = (margin / z) ** 2 / sum(1 / n for n in sizes)
    except OverflowError:
        limit = math.inf
    if not math.isfinite(limit):
        raise ValueError(f"margin / z = {margin / z:g} is too large: the limit overflows")
    return limit


def testable_points(relative_variance: Mapping[str, Sequence[float]], at: Sequence[int],
                    limit: float) -> list[tuple[str, int]]:
    """The points ``(name, l)`` whose relative variance is at most ``limit``.

    Parameters
    ----------
    relative_variance : mapping of str to sequence of float
        Per curve, the exact (or bounded) relative variance of ``M_l``, ``l = 0..L``: each
        >= 0 (``inf`` where it is unbounded: never testable), never NaN.
    at : sequence of int
        The candidate rows ``l``; those beyond a curve's length are skipped.
    limit : float
        From :func:`relative_variance_limit`.

    Returns
    -------
    list of (str, int)
        In the order of the mapping, then of ``at``.

    Examples
    --------
    >>> testable_points({"a": [0.0, 0.5, 3.0], "b": [0.0, 0.1]}, [1, 2], 1.0)
    [('a', 1), ('b', 1)]
    """
    if not isinstance(relative_variance, Mapping):
        raise TypeError("relative_variance must be a mapping of names to sequences, got "
                        f"{type(relative_variance).__name__}")
    if isinstance(at, (str, bytes)) or not isinstance(at, Sequence):
        raise TypeError(f"at must be a sequence of ints, got {type(at).__name__}")
    at = [v.positive_int(f"at[{i}]", a) for i, a in enumerate(at)]
    limit = v.finite_real("limit", limit)
    if limit < 0:
        raise ValueError(f"limit must be >= 0 (a relative variance), got {limit}")
    curves = {}
    for name, r in relative_variance.items():
        if isinstance(r, torch.Tensor):
            r = r.detach().cpu().tolist() if r.ndim == 1 else r
        elif isinstance(r, np.ndarray) and r.ndim == 1:
            r = r.tolist()
        if isinstance(r, (str, bytes)) or not isinstance(r, Sequence):
            raise TypeError(f"relative_variance[{name!r}] must be a one-dimensional sequence "
                            f"of numbers, got {type(r).__name__}")
        values = []
        for i, x in enumerate(r):
            where = f"relative_variance[{name!r}][{i}]"
            if isinstance(x, bool) or not isinstance(x, (int, float)):
                try:
                    x = float(x)
                except (TypeError, ValueError) as err:
                    raise TypeError(f"{where} must be a real number, got {x!r}") from err
            if math.isnan(x) or x < 0:
                raise ValueError(f"{where} must be >= 0 (a variance), got {x}")
            values.append(float(x))
        curves[name] = values
    return [(name, a) for name, r in curves.items() for a in at
            if a < len(r) and r[a] <= limit]
