"""Estimates of mean squared norm ratios from the log-norms of many random networks.

The engines return log-norms (a :class:`~eit.sample.traces.Trace`, axes ``(row, net,
input)``). The laws that weight-normalized and residual networks obey exactly are laws of the
*mean square* of a ratio of norms (Arpit, Campos & Bengio 2019; Arpit & Bengio 2019): these
functions turn log-ratios into estimates of ``E[ratio^2]``, averaging the squared ratio over
the inputs of each network and then over independent networks (the unit of independence).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..exact.layer_products import cumulative_law
from .stats import Estimate, batch_mean, mean

__all__ = ["mean_square_ratio", "mean_square_ratios", "mean_square_profile", "Profile",
           "profile", "pooled"]


def _log_ratio(log_ratio, ndim: int) -> torch.Tensor:
    if not isinstance(log_ratio, torch.Tensor):
        raise TypeError(f"log_ratio must be a torch.Tensor, got {type(log_ratio).__name__}")
    if log_ratio.ndim != ndim:
        raise ValueError(f"log_ratio must have {ndim} dimensions, got shape "
                         f"{tuple(log_ratio.shape)}")
    if not bool(torch.isfinite(log_ratio).all()):
        raise ValueError("log_ratio contains inf or NaN (a zero norm has no ratio)")
    if log_ratio.shape[-2] < 2 or log_ratio.shape[-1] < 1:
        raise ValueError(f"log_ratio needs at least 2 networks and 1 input (its last two "
                         f"dimensions), got shape {tuple(log_ratio.shape)}")
    return log_ratio


def _flag(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def mean_square_ratio(log_ratio: torch.Tensor, *, batches: int | None = None) -> Estimate:
    """``E[ratio^2]`` from log-ratios of shape ``(n_nets, N)`` (network, input).

    The squared ratios ``exp(2 log_ratio)`` are averaged over the N inputs of each network;
    the estimate is the mean of these per-network values, with its standard error from the
    networks (:func:`~eit.verdicts.stats.mean`), or from ``batches`` equal batch means
    (:func:`~eit.verdicts.stats.batch_mean`).

    References
    ----------
    Arpit, Campos & Bengio (2019), Theorems 1-4 and Figure 1: the laws of ``E||h^l||^2``.

    Examples
    --------
    >>> import math, torch
    >>> e = mean_square_ratio(torch.log(torch.tensor([[1.0, 1.0], [2.0, 2.0]])))
    >>> e.value, e.n
    (2.5, 2)
    """
    r = (2 * _log_ratio(log_ratio, 2)).exp().mean(-1)
    if not bool(torch.isfinite(r).all()):
        raise ValueError("log_ratio is too large: exp(2 log_ratio) overflows; compare logs")
    return mean(r) if batches is None else batch_mean(r, batches)


def mean_square_ratios(log_ratio: torch.Tensor, *,
                       batches: int | None = None) -> list[Estimate]:
    """:func:`mean_square_ratio` for every row of ``(rows, n_nets, N)`` log-ratios.

    References
    ----------
    Arpit, Campos & Bengio (2019), Figure 1: one estimate per layer.

    Examples
    --------
    >>> import torch
    >>> [e.value for e in mean_square_ratios(torch.zeros(3, 4, 2))]
    [1.0, 1.0, 1.0]
    """
    return [mean_square_ratio(row, batches=batches) for row in _log_ratio(log_ratio, 3)]


def mean_square_profile(log_ratio: torch.Tensor, *, backward: bool = False,
                        batches: int | None = None) -> tuple[list[Estimate], list[Estimate]]:
    """The cumulative mean squares of a network and its per-layer factors.

    Parameters
    ----------
    log_ratio : torch.Tensor
        ``(L+1, n_nets, N)`` log-ratios to a reference row: row 0 (the input) forward, row
        L (the output) backward.
    backward : bool
        Whether the reference row is the last one (a gradient) rather than the first.
    batches : int, optional
        Standard errors from this many batch means over the networks.

    Returns
    -------
    curve : list of Estimate
        ``E[ratio^2]`` at the L rows other than the reference (which is 1 by definition),
        in row order.
    factors : list of Estimate
        The L per-layer factors: ``E[(||h^l|| / ||h^(l-1)||)^2]`` forward, l = 1..L, and
        ``E[(||g^(l-1)|| / ||g^l||)^2]`` backward, l = 1..L. Each has an exact (or, for
        gradients, approximate) conditional law, and the curve is their product in mean
        (tower property).

    References
    ----------
    Arpit, Campos & Bengio (2019), Figure 1 and Theorems 1-2 (per-layer laws).

    Examples
    --------
    >>> import torch
    >>> lr = torch.log(torch.tensor([1.0, 2.0, 4.0])).view(3, 1, 1).expand(3, 2, 1)
    >>> curve, factors = mean_square_profile(lr)
    >>> [e.value for e in curve], [e.value for e in factors]
    ([4.0, 16.0], [4.0, 4.0])
    """
    log_ratio = _log_ratio(log_ratio, 3)
    backward = _flag("backward", backward)
    if log_ratio.shape[0] < 2:
        raise ValueError(f"log_ratio needs at least 2 rows, got shape {tuple(log_ratio.shape)}")
    ms = mean_square_ratios(log_ratio, batches=batches)
    if backward:
        return ms[:-1], mean_square_ratios(log_ratio[:-1] - log_ratio[1:], batches=batches)
    return ms[1:], mean_square_ratios(log_ratio[1:] - log_ratio[:-1], batches=batches)


@dataclass(frozen=True)
class Profile:
    """A measured mean-square profile of a family of networks and its law.

    Attributes
    ----------
    curve, factors : list of Estimate
        As returned by :func:`mean_square_profile`.
    curve_law, factor_law : list of float
        The law of each point of ``curve`` and ``factors``.
    label : str
        The name of the family (scheme, widths), used in the labels of the points.
    first : int
        The row index of ``curve[0]`` (the reference row, 1 by definition, is left out).
    """

    curve: list[Estimate]
    curve_law: list[float]
    factors: list[Estimate]
    factor_law: list[float]
    label: str
    first: int

    @property
    def rows(self) -> list[int]:
        """The row index of every point of the curve."""
        return list(range(self.first, self.first + len(self.curve)))


def profile(log_ratio: torch.Tensor, factor_law: Sequence, *, label: str, row0: int = 0,
            backward: bool = False, batches: int | None = None) -> Profile:
    """Measure the mean-square profile of ``log_ratio`` and attach its law.

    Parameters
    ----------
    log_ratio : torch.Tensor
        ``(L+1, n_nets, N)`` log-ratios to the reference row (see
        :func:`mean_square_profile`).
    factor_law : sequence
        The L per-layer factors of the law, exact numbers or SymPy expressions; the curve's
        law is their running product (:func:`eit.exact.layer_products.cumulative_law`),
        taken exactly before the conversion to float.
    label : str
        The family's name.
    row0 : int
        The row index of ``log_ratio[0]`` (1 when the rows are layers 1..L).
    backward, batches
        As in :func:`mean_square_profile`.

    References
    ----------
    Arpit, Campos & Bengio (2019), Figure 1.

    Examples
    --------
    >>> import torch
    >>> p = profile(torch.zeros(3, 4, 2), [1, 1], label="isometry")
    >>> p.rows, p.curve_law, [e.value for e in p.factors]
    ([1, 2], [1.0, 1.0], [1.0, 1.0])
    """
    if not isinstance(label, str):
        raise TypeError(f"label must be a str, got {type(label).__name__}")
    if isinstance(row0, bool) or not isinstance(row0, int):
        raise TypeError(f"row0 must be an int, got {type(row0).__name__}")
    if row0 < 0:
        raise ValueError(f"row0 must be >= 0 (a row index), got {row0}")
    if isinstance(factor_law, (str, bytes)) or not isinstance(factor_law, Sequence):
        raise TypeError(f"factor_law must be a sequence of one factor per layer, got "
                        f"{type(factor_law).__name__}")
    curve, factors = mean_square_profile(log_ratio, backward=backward, batches=batches)
    if len(factor_law) != len(factors):
        raise ValueError(f"factor_law must have one factor per layer ({len(factors)}), got "
                         f"{len(factor_law)}")
    factor_floats = [_law(f"factor_law[{i}]", f) for i, f in enumerate(factor_law)]
    # the running products stay exact (SymPy, fractions) until the conversion below
    try:
        running = cumulative_law(list(factor_law), backward=backward)
    except (TypeError, ValueError) as err:
        raise type(err)(f"factor_law: {err}") from err
    curve_law = [_law(f"the running product of factor_law (row {i})", f)
                 for i, f in enumerate(running)]
    return Profile(curve, curve_law, factors, factor_floats, label,
                   row0 + (0 if backward else 1))


def _law(name: str, value) -> float:
    """A mean-square law as a float: finite and > 0 (a mean of squared ratios of norms)."""
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a number (or a SymPy number), got {value!r}") from err
    if not (math.isfinite(x) and x > 0):
        raise ValueError(f"{name} must be finite and > 0 (a mean of squared ratios), got {x}")
    return x


def pooled(profiles: Sequence[Profile], part: str) -> dict:
    """The points of several profiles as ``estimate``, ``theory`` and ``labels`` lists.

    ``part`` is ``"curve"`` or ``"factors"``; the result is ready for
    ``eit.verdicts.agree(..., **pooled(profiles, part))``; each label names the family and
    the row.

    Examples
    --------
    >>> import torch
    >>> p = profile(torch.zeros(3, 4, 2), [1, 1], label="net")
    >>> pooled([p], "factors")["labels"]
    ['net, row 1', 'net, row 2']
    """
    if part not in ("curve", "factors"):
        raise ValueError(f"part must be 'curve' or 'factors', got {part!r}")
    if isinstance(profiles, (str, bytes, Profile)) or not isinstance(profiles, Sequence):
        raise TypeError(f"profiles must be a sequence of Profiles, got "
                        f"{type(profiles).__name__}")
    profiles = list(profiles)
    for i, p in enumerate(profiles):
        if not isinstance(p, Profile):
            raise TypeError(f"profiles[{i}] must be a Profile, got {type(p).__name__}")
    law = "curve_law" if part == "curve" else "factor_law"
    return dict(estimate=[e for p in profiles for e in getattr(p, part)],
                theory=[t for p in profiles for t in getattr(p, law)],
                labels=[f"{p.label}, row {i + p.first}" for p in profiles
                        for i in range(len(getattr(p, part)))])
