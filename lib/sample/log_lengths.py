"""The squared length of equal-width ReLU nets on a log scale: per-network samples.

At width equal to depth the law of ``M_d / M_0`` (``M_j = ||act^(j)||^2 / n_j``) is close to
log-normal with a variance of order ``e^5``: its sample mean misses the rare long networks, so
Hanin & Rolnick's Figure 1a is tested through ``log(M_d / M_0)``, whose tails are light.
:func:`log_length_per_net` reads that statistic off a trace of many networks and inputs;
:func:`equal_width_log_lengths` samples it at any size, with the exact norm chain
(:func:`eit.exact.chains.norm_chain`) where the weights are Gaussian and explicit networks
(:func:`eit.sample.mlps.relu_mlp`) otherwise.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..core import validate as v
from ..core.device import DTYPE
from ..exact.chains import norm_chain
from .laws import Initializer
from .mlps import relu_mlp

__all__ = ["log_length_per_net", "equal_width_log_ratios", "equal_width_log_lengths",
           "layer_factor_deviation"]


def log_length_per_net(log_ratio: torch.Tensor) -> torch.Tensor:
    """``log(M_d / M_0)`` per network at equal widths: the mean over its living inputs.

    Parameters
    ----------
    log_ratio : torch.Tensor
        ``log(||act^(d)|| / ||act^(0)||)`` of shape ``(n_nets, N)`` (``-inf`` where the
        network kills the input), e.g. ``Trace.log_h_ratio[d]``; ``n_d = n_0``, so
        ``log(M_d / M_0)`` is twice it.

    Returns
    -------
    torch.Tensor
        Shape ``(n_alive,)``: one value per network with at least one living input (networks
        that kill every input are left out: their log length is undefined).

    References
    ----------
    Hanin & Rolnick (2018), Figure 1a.

    Examples
    --------
    >>> lr = torch.tensor([[0.5, -float("inf")], [-float("inf"), -float("inf")]])
    >>> log_length_per_net(lr)
    tensor([1.])
    """
    lr = log_ratio
    if not isinstance(lr, torch.Tensor) or lr.ndim != 2 or not torch.is_floating_point(lr):
        raise TypeError("log_ratio must be a floating-point tensor of shape (n_nets, N)")
    if bool(torch.isnan(lr).any()) or bool((lr == float("inf")).any()):
        raise ValueError("log_ratio must be finite or -inf (a dead input), got NaN or +inf")
    alive = torch.isfinite(lr)
    per_net = torch.where(alive, 2 * lr, 0.0).sum(-1) / alive.sum(-1)
    return per_net[alive.any(-1)]


def equal_width_log_ratios(init: Initializer, depth: int, *, n_inputs: int, n_nets: int,
                           gen: torch.Generator) -> torch.Tensor:
    """``log(||act^(j)|| / ||act^(0)||)`` of nets of width = depth = n_0 on random unit inputs.

    ``n_inputs`` Gaussian directions (drawn first from ``gen``) go through ``n_nets``
    explicit ReLU networks of ``depth`` layers of width ``depth`` (:func:`eit.sample.mlps.
    relu_mlp`, zero biases).

    Returns
    -------
    torch.Tensor
        ``Trace.log_h_ratio``, shape ``(depth + 1, n_nets, n_inputs)`` (``-inf`` after a
        network kills an input).

    References
    ----------
    Hanin & Rolnick (2018), Figure 1a (width equal to depth, random unit inputs).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.sample.laws import he
    >>> equal_width_log_ratios(he(), 5, n_inputs=2, n_nets=3, gen=generator(0)).shape
    torch.Size([6, 3, 2])
    """
    depth, n_inputs = v.positive_int("depth", depth), v.positive_int("n_inputs", n_inputs)
    _check_init(init)
    v.positive_int("n_nets", n_nets)
    v.generator("gen", gen, optional=False)       # every check before the first draw
    x = torch.randn(n_inputs, depth, generator=gen, device=gen.device, dtype=DTYPE)
    x = x / x.norm(dim=-1, keepdim=True)
    return relu_mlp(x, [depth] * depth, init, n_nets=n_nets, gen=gen).log_h_ratio


def equal_width_log_lengths(init: Initializer, depth: int, *, n_nets: int,
                            gen: torch.Generator,
                            chain_variance: float | None = None) -> np.ndarray:
    """``log(M_d / M_0)`` of ``n_nets`` nets of width = depth = n_0, one random unit input each.

    Parameters
    ----------
    init : Initializer
        The weight law of the explicit networks (ignored by the chain).
    depth : int
        The depth d, also every width and the input dimension.
    n_nets : int
        The number of networks.
    gen : torch.Generator
        The random generator.
    chain_variance : float, optional
        When given, the weights are Gaussian of this variance and the exact norm chain
        samples the law (two draws per layer instead of ``depth^2``); otherwise a random unit
        input (Gaussian direction) goes through explicit networks.

    Returns
    -------
    numpy.ndarray
        Shape ``(n_nets,)``, NaN for a network that kills its input.

    References
    ----------
    Hanin & Rolnick (2018), Figure 1a at the paper's size (1,000 networks per point).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.sample.laws import he
    >>> equal_width_log_lengths(he(), 4, n_nets=3, gen=generator(0)).shape
    (3,)
    >>> equal_width_log_lengths(he(), 4, n_nets=3, gen=generator(0), chain_variance=0.5).shape
    (3,)
    """
    depth, n_nets = v.positive_int("depth", depth), v.positive_int("n_nets", n_nets)
    _check_init(init)
    v.generator("gen", gen, optional=False)
    if chain_variance is not None:
        var = [v.positive_float("chain_variance", chain_variance)] * depth
        lh = norm_chain(depth, [depth] * depth, var, n_nets=n_nets, gen=gen).log_h[:, :, 0]
        lr = lh[depth] - lh[0]
    else:
        lr = equal_width_log_ratios(init, depth, n_inputs=1, n_nets=n_nets,
                                    gen=gen)[depth, :, 0]
    return torch.nan_to_num(2 * lr, neginf=np.nan).cpu().numpy()


def _check_init(init) -> None:
    if not callable(init):
        raise TypeError(f"init must be callable (an Initializer), got {type(init).__name__}")


def layer_factor_deviation(log_ratio: torch.Tensor, kappa: float) -> torch.Tensor:
    """Per network, the mean over layers and inputs of ``M_j / (kappa M_{j-1}) - 1``.

    ``E[M_j / M_{j-1}] = kappa`` for every symmetric weight law of variance ``2 kappa / n``
    (equal widths), so every term has mean 0. A layer after which every unit is off ends the
    network: its term there is ``-1`` and later terms (``0/0``) count as 0, so that early
    deaths do not bias the average (the terms stay martingale differences).

    Parameters
    ----------
    log_ratio : torch.Tensor
        ``log(||act^(j)|| / ||act^(0)||)`` for j = 0..d, shape ``(d+1, n_nets, N)``
        (``Trace.log_h_ratio``; ``-inf`` after a death), equal widths.
    kappa : float
        The weight variance over ``2 / fan-in``.

    Returns
    -------
    torch.Tensor
        Shape ``(n_nets,)``.

    Raises
    ------
    ValueError
        If ``log_ratio`` has fewer than two rows, holds NaN or +inf, a finite value after
        -inf, or factors ``M_j / (kappa M_{j-1})`` beyond float64.

    References
    ----------
    Hanin & Rolnick (2018), Theorem 1 and Corollary 1 (one layer at a time).

    Examples
    --------
    >>> lr = torch.log(torch.tensor([[[1.0]], [[2.0]], [[0.0]]]).sqrt())  # M: 1, 2, 0
    >>> layer_factor_deviation(lr, 2.0)                                    # 0 and -1
    tensor([-0.5000])
    """
    if not isinstance(log_ratio, torch.Tensor) or log_ratio.ndim != 3 \
            or not torch.is_floating_point(log_ratio):
        raise TypeError("log_ratio must be a floating-point tensor of shape (d+1, n_nets, N)")
    if log_ratio.shape[0] < 2 or log_ratio[0].numel() == 0:
        raise ValueError(f"log_ratio must have at least two rows (d >= 1) and one network "
                         f"and input, got shape {tuple(log_ratio.shape)}")
    if bool(torch.isnan(log_ratio).any()) or bool((log_ratio == math.inf).any()):
        raise ValueError("log_ratio must be finite or -inf (after a death), got NaN or +inf")
    dead = torch.isneginf(log_ratio)
    if bool((dead[:-1] & ~dead[1:]).any()):
        raise ValueError("log_ratio: a finite value follows -inf (a death is final)")
    kappa = v.positive_float("kappa", kappa)
    steps = torch.exp(2 * torch.diff(log_ratio, dim=0))       # M_j / M_{j-1}, NaN after death
    terms = steps / kappa - 1
    if bool(torch.isposinf(terms).any()):
        raise ValueError("log_ratio, kappa: a term M_j / (kappa M_(j-1)) exceeds float64")
    out = torch.nan_to_num(terms, nan=0.0).mean(dim=(0, 2))
    if not bool(torch.isfinite(out).all()):
        raise ValueError("log_ratio, kappa: the mean of the terms exceeds float64")
    return out
