"""The one result type of the engines: a :class:`Trace` of per-layer log-norms.

Both the explicit engine (:func:`eit.sample.engine.trace`) and the exact engines
(:func:`eit.exact.engine.trace`) return a Trace, so that a chapter can overlay them. One axis
order for everything: ``(layer, net, input)``, i.e. ``(L+1, n_nets, N)`` for the quantities
defined at every row (row 0 is the input, row l the output of the l-th element of the
description) and ``(L, n_nets, ...)`` for the statistics that an element defines (row l-1 for
element l). Norms are natural logarithms; a zero vector has log-norm ``-inf`` (never NaN).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import torch

__all__ = ["Trace", "UndefinedRatio"]


class UndefinedRatio(ValueError):
    """A ratio of norms whose reference norm is 0 (0/0 or x/0): the ratio has no value.

    Examples
    --------
    >>> issubclass(UndefinedRatio, ValueError)
    True
    """


def _ratio(num: torch.Tensor, ref: torch.Tensor, what: str) -> torch.Tensor:
    dead = torch.isneginf(ref)
    if bool(dead.any()):
        raise UndefinedRatio(
            f"{what}: the reference norm is 0 for {int(dead.sum())} of {dead.numel()} entries, "
            "where the ratio is undefined; use the log-norms themselves, or mask those "
            "networks or inputs first")
    return num - ref


@dataclass(frozen=True)
class Trace:
    """Per-layer log-norms of ``n_nets`` networks on N inputs (natural logarithms).

    Attributes
    ----------
    log_h : torch.Tensor
        ``log ||h^l||`` per network and input, shape ``(L+1, n_nets, N)``; row 0 is the input.
    log_grad : torch.Tensor or None
        ``log ||dL/dh^l||`` (backward pass), shape ``(L+1, n_nets, N)``, or None.
    stats : dict
        Statistics that the elements define, each ``(L, n_nets, ...)`` (row l-1 for element
        l): for example ``log_delta`` (log ||dL/da^l|| at a dense layer's output),
        ``log_grad_w`` (log ||dL/dW^l||_F per input), ``isometry_gap`` (batch norm),
        ``log_branch`` (residual blocks). Also reachable as attributes (``trace.log_delta``).
    observed : dict
        Functions of the state recorded at every row, each ``(L+1, n_nets, ...)``.
    widths : tuple of int
        ``(n_0, n_1, ..., n_L)``, the number of features of every row.
    meta : dict
        What the engine or a paper's construction adds (method, gains, stage boundaries).

    Examples
    --------
    >>> import torch
    >>> t = Trace(torch.zeros(3, 2, 1, dtype=torch.float64), widths=(4, 5, 6))
    >>> t.depth, t.n_nets, tuple(t.log_h_ratio.shape)
    (2, 2, (3, 2, 1))
    """

    log_h: torch.Tensor
    log_grad: torch.Tensor | None = None
    stats: dict[str, torch.Tensor] = field(default_factory=dict)
    observed: dict[str, torch.Tensor] = field(default_factory=dict)
    widths: tuple[int, ...] = ()
    meta: dict = field(default_factory=dict)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        for table in ("stats", "observed", "meta"):
            values = object.__getattribute__(self, table)
            if name in values:
                return values[name]
        raise AttributeError(
            f"Trace has no field or statistic {name!r} (statistics: "
            f"{sorted(self.stats)}, observed: {sorted(self.observed)}, meta: {sorted(self.meta)})")

    # ------------------------------------------------------------------------- shape
    @property
    def depth(self) -> int:
        """L, the number of elements."""
        return self.log_h.shape[0] - 1

    @property
    def n_nets(self) -> int:
        """The number of networks."""
        return self.log_h.shape[1]

    # ------------------------------------------------------------------------ ratios
    @property
    def log_h_ratio(self) -> torch.Tensor:
        """``log(||h^l|| / ||x||)``, l = 0..L, shape ``(L+1, n_nets, N)``.

        Raises
        ------
        UndefinedRatio
            If an input is the zero vector.
        """
        return _ratio(self.log_h, self.log_h[0], "log_h_ratio")

    @property
    def log_grad_ratio(self) -> torch.Tensor:
        """``log(||dL/dh^l|| / ||dL/dh^L||)``, l = 0..L (needs a backward pass).

        Raises
        ------
        UndefinedRatio
            If the gradient at the output is 0.
        """
        if self.log_grad is None:
            raise ValueError("log_grad_ratio needs a backward pass: trace(..., backward=...)")
        return _ratio(self.log_grad, self.log_grad[-1], "log_grad_ratio")

    @property
    def log_grad_w_ratio(self) -> torch.Tensor:
        """``log(||dL/dW^l||_F / (||dL/da^L|| ||x||))``, the ratio of Arpit & Bengio (2019),
        eq. (7), for l = 1..L; needs the ``log_grad_w`` and ``log_delta`` statistics.

        Raises
        ------
        UndefinedRatio
            If ``||dL/da^L||`` or ``||x||`` is 0.
        """
        ref = self.stat("log_delta")[-1] + self.log_h[0]
        return _ratio(self.stat("log_grad_w"), ref, "log_grad_w_ratio")

    @property
    def mean_square(self) -> torch.Tensor:
        """``M_l = ||h^l||^2 / n_l`` (Hanin & Rolnick 2018, Definition 1), shape (L+1, n_nets, N).

        Overflows to inf where the lengths exceed float64 (use ``log_h`` at such depths).
        """
        if not self.widths:
            raise ValueError("mean_square needs the widths of the trace")
        n = torch.tensor(self.widths, dtype=self.log_h.dtype, device=self.log_h.device)
        shape = (-1,) + (1,) * (self.log_h.ndim - 1)
        return torch.exp(2 * self.log_h - torch.log(n).view(shape))

    # ------------------------------------------------------------------------- access
    def stat(self, name: str) -> torch.Tensor:
        """The statistic ``name`` (a key of :attr:`stats` or :attr:`observed`).

        Raises
        ------
        KeyError
            If the trace does not hold it (naming the ones it holds).
        """
        if name in self.stats:
            return self.stats[name]
        if name in self.observed:
            return self.observed[name]
        raise KeyError(f"the trace has no statistic {name!r}; it has {sorted(self.stats)} "
                       f"and observed {sorted(self.observed)} (the backward statistics need "
                       "backward=...)")

    def renamed(self, **names: str) -> Trace:
        """A copy with statistics renamed, ``new=old`` (e.g. the names of a paper).

        Examples
        --------
        >>> import torch
        >>> t = Trace(torch.zeros(2, 1, 1), stats={"log_branch": torch.zeros(1, 1, 1)})
        >>> sorted(t.renamed(log_f="log_branch").stats)
        ['log_f']
        """
        stats = dict(self.stats)
        for new, old in names.items():
            if old not in stats:
                raise KeyError(f"the trace has no statistic {old!r} to rename")
            stats[new] = stats.pop(old)
        return replace(self, stats=stats)

    def with_meta(self, **meta) -> Trace:
        """A copy with entries added to :attr:`meta`."""
        return replace(self, meta={**self.meta, **meta})

    def __repr__(self) -> str:
        grad = "" if self.log_grad is None else ", backward"
        extra = sorted(self.stats) + sorted(self.observed)
        return (f"Trace(depth={self.depth}, n_nets={self.n_nets}, "
                f"inputs={math.prod(self.log_h.shape[2:])}{grad}, stats={extra})")
