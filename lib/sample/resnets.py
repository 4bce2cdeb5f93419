"""Residual networks with per-block scales (Hanin & Rolnick 2018, section 3.2, eq. 1).

``N_0^res(x) = x``, ``N_l^res(x) = N_{l-1}^res(x) + eta_l N_l(N_{l-1}^res(x))``, l = 1..L.

A *block* (residual module) is a layer description (:mod:`eit.sample.layers`) that keeps the
stream width, e.g. :func:`relu_layer` or :func:`relu_then_linear`; the network is
``serial(Residual(block, eta_1), ..., Residual(block, eta_L))`` and
:func:`residual_log_lengths` is the explicit engine on it (fresh weights in every module).
Blocks built here have zero biases and are positively homogeneous, so the engine's log-norms
are exact at any depth.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch

from ..core import validate as v
from .engine import trace
from .laws import Initializer
from .layers import Dense, Layer, ReLU, Residual, Serial, serial

#: A residual module: a layer description that keeps the stream width.
Block = Layer

__all__ = ["Block", "linear_readout_moments", "linear_readout_relative_variance", "ramp_input",
           "relu_layer", "relu_then_linear", "residual_log_lengths", "residual_net"]


def _init(name: str, init) -> None:
    if not callable(init):
        raise TypeError(f"{name} must be callable (an Initializer: a weight law), got "
                        f"{type(init).__name__}")


def relu_layer(init: Initializer) -> Serial:
    """One fully connected ReLU layer ``h -> ReLU(W h)``, W square (width preserved).

    With He weights (variance 2/n) this is the module of Figure 2 ("a single layer of width
    5") in the paper's own definition: a fully connected ReLU net, ReLU on its output.

    Examples
    --------
    >>> from eit.sample.laws import he
    >>> relu_layer(he()).out_shape((5,))
    (5,)
    """
    _init("init", init)
    return serial(Dense(None, init), ReLU())


def relu_then_linear(hidden: int, init_in: Initializer, init_out: Initializer) -> Serial:
    """``h -> V ReLU(W h)`` with W (hidden, n) and V (n, hidden): a linear read-out layer.

    The output has conditional mean zero (V is symmetric and independent of the rest), the
    usual form of a residual branch; V maps back to the width of the enclosing block's stream
    (``Dense(None)``).

    Examples
    --------
    >>> from eit.sample.laws import he
    >>> from eit.sample.layers import Residual
    >>> Residual(relu_then_linear(3, he(), he())).out_shape((5,))
    (5,)
    """
    hidden = v.positive_int("hidden", hidden)
    _init("init_in", init_in)
    _init("init_out", init_out)
    return serial(Dense(hidden, init_in), ReLU(), Dense(None, init_out))


def residual_net(blocks: Layer | Sequence[Layer], etas: Sequence[float]) -> Serial:
    """``serial(Residual(block_1, eta_1), ..., Residual(block_L, eta_L))``.

    ``blocks`` is one description used (with fresh weights) for every module, or one per
    module; ``etas`` are finite and non-negative.

    Examples
    --------
    >>> from eit.sample.laws import he
    >>> residual_net(relu_layer(he()), [0.5, 0.5]).depth
    2
    """
    etas = v.scales("etas", etas)
    if isinstance(blocks, Layer):
        blocks = [blocks] * len(etas)
    elif not isinstance(blocks, Sequence) or len(blocks) != len(etas):
        raise ValueError("blocks must be a block or a sequence with one block per eta")
    for i, block in enumerate(blocks):
        if not isinstance(block, Layer):
            raise TypeError(f"blocks[{i}] must be a layer description (eit.sample.layers), "
                            f"got {type(block).__name__}")
    return Serial(tuple(Residual(b, eta) for b, eta in zip(blocks, etas, strict=True)))


def residual_log_lengths(x: torch.Tensor, blocks: Layer | Sequence[Layer],
                         etas: Sequence[float], *, n_nets: int, gen: torch.Generator,
                         observe: Callable[[torch.Tensor], torch.Tensor] | None = None,
                         ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """log ||N_l^res(x)|| for l = 0..L of ``n_nets`` independent residual networks.

    Parameters
    ----------
    x : torch.Tensor
        Inputs ``(N, n)`` shared by all networks; no zero rows.
    blocks : Layer or sequence of Layer
        One block used (with fresh weights) for every module, or one per module.
    etas : sequence of float
        The scales ``[eta_1, ..., eta_L]`` (finite, non-negative).
    n_nets : int
        The number of independent networks.
    gen : torch.Generator
        The random generator.
    observe : callable, optional
        A statistic of the unit-length stream, ``(n_nets, N, n) -> (n_nets, N)``, recorded
        before every module and after the last (e.g. the coordinate sum).

    Returns
    -------
    torch.Tensor or tuple
        Natural log-lengths, shape ``(L+1, n_nets, N)``; with ``observe`` the pair
        (log-lengths, observed values of shape ``(L+1, n_nets, N)``).

    References
    ----------
    Hanin & Rolnick (2018), section 3.2, eq. (1).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.sample.laws import he
    >>> residual_log_lengths(torch.ones(2, 5, dtype=torch.float64), relu_layer(he()),
    ...                      [0.5] * 3, n_nets=4, gen=generator(0)).shape
    torch.Size([4, 4, 2])
    """
    x = v.tensor("x", x, ndim=2)
    if not bool((x != 0).any(dim=-1).all()):     # (not the norm: it underflows at 1e-170)
        raise ValueError("x must have no zero rows")
    if observe is not None and not callable(observe):
        raise TypeError(f"observe must be None or callable, got {type(observe).__name__}")
    net = residual_net(blocks, etas)
    seen = None if observe is None else {"observed": lambda h, log_r: observe(h)}
    t = trace(net, x, n_nets=n_nets, gen=gen, observe=seen)
    if observe is None:
        return t.log_h
    return t.log_h, t.observed["observed"]


def linear_readout_moments(etas: Sequence[float], *, width: int, hidden: int,
                           m0: float = 1.0) -> tuple[list[float], list[float], float]:
    """Exact E[M_l], E[M_l^2] (l = 0..L) and E[Var^[M^res]] for :func:`relu_then_linear` blocks.

    Blocks ``V ReLU(W x)`` with W ~ N(0, 2/width), V ~ N(0, 1/hidden), zero biases, and
    ``M_l = ||N_l^res(x)||^2`` (Hanin & Rolnick 2018, section 3.2; the derivation is in the
    chapter on residual scales): per module
    ``E[M_l | x] = (1 + eta^2) M_{l-1}`` and
    ``E[M_l^2 | x] = M_{l-1}^2 (1 + 2 eta^2 + 4 eta^2/width + eta^4 (1 + 2/width)(1 + 5/hidden))``.
    Var^ is the empirical variance over l = 1..L (section 3.4), whose mean follows from
    ``E[M_j M_k] = E[M_j^2] prod_{j<i<=k} (1 + eta_i^2)``.

    Examples
    --------
    >>> mean, second, evar = linear_readout_moments([0.5, 0.5], width=5, hidden=5)
    >>> mean
    [1.0, 1.25, 1.5625]
    """
    width, hidden = v.positive_int("width", width), v.positive_int("hidden", hidden)
    m0 = v.positive_float("m0", m0)
    etas = v.scales("etas", etas)
    mean, second = [m0], [m0 * m0]
    try:                                 # eta^2 of an eta beyond 1e154 overflows
        for eta in etas:
            e2 = float(eta) ** 2
            mean.append(mean[-1] * (1 + e2))
            second.append(second[-1] * (1 + 2 * e2 + 4 * e2 / width
                                        + e2 * e2 * (1 + 2 / width) * (1 + 5 / hidden)))
        n_mod = len(etas)
        pairs = 0.0
        for j in range(1, n_mod + 1):
            gain, gains = 1.0, 0.0
            for i in range(j + 1, n_mod + 1):
                gain *= 1 + float(etas[i - 1]) ** 2
                gains += gain
            pairs += second[j] * (1 + 2 * gains)
        evar = sum(second[1:]) / n_mod - pairs / n_mod**2
    except OverflowError:
        evar = math.inf
    if not all(math.isfinite(x) for x in [*mean, *second, evar]):
        raise ValueError("etas, m0: the moments E[M_l^2] (m0^2 times the factors of the "
                         "etas) exceed float64")
    return mean, second, evar


def linear_readout_relative_variance(etas: Sequence[float], *, width: int, hidden: int
                                     ) -> np.ndarray:
    """Exact ``Var[M_l] / E[M_l]^2``, l = 0..L, for :func:`relu_then_linear` blocks.

    From the exact moments of :func:`linear_readout_moments`. Shape ``(L+1,)``.

    References
    ----------
    Hanin & Rolnick (2018), section 3.2 and Theorem 4.

    Examples
    --------
    >>> linear_readout_relative_variance([1.0], width=5, hidden=5).round(6).tolist()
    [0.0, 0.65]
    """
    mean, second, _ = linear_readout_moments(etas, width=width, hidden=hidden)
    return np.array(second) / np.array(mean) ** 2 - 1


def ramp_input(n: int) -> torch.Tensor:
    """The fixed unit input ``x = (1, 2, ..., n) / ||(1, 2, ..., n)||``, shape ``(1, n)``.

    Non-negative, so that every later stream of a residual network with ReLU-output modules
    is non-negative and the exact bands of :mod:`eit.exact.relu_residual` apply; not aligned
    with the diagonal, so that its coordinate sum lies strictly inside ``[1, sqrt(n)]``.

    References
    ----------
    Hanin & Rolnick (2018), section 3.2 (Figure 2a: one input, fixed).

    Examples
    --------
    >>> x = ramp_input(5)
    >>> tuple(x.shape), round(float(x.norm()), 12)
    ((1, 5), 1.0)
    """
    n = v.positive_int("n", n)
    x = torch.arange(1, n + 1, dtype=torch.float64).unsqueeze(0)
    return x / x.norm()
