"""The mean length of purely convolutional ReLU nets, and its one-layer test statistic.

For a convolutional layer with ``C_{l-1}`` input channels, a k x k kernel and weights of
variance ``2 kappa / (C_{l-1} k^2)`` (fan-in = channels x kernel size, Hanin & Rolnick 2018,
section 3.5), the channel-summed squared activation per pixel obeys, in expectation and for
every symmetric weight law, ``E[e_l | layer l-1] = kappa (C_l / C_{l-1}) B e_{l-1}`` with B
the k x k box *average* (zeros outside the image for zero padding):
:func:`eit.sample.convnets.mean_profile`. Two consequences used by the book:

* :func:`normalized_mean`: ``E[M_l] / M_0`` with ``M_l = ||x_l||^2 / (C_l * pixels)``;
* :func:`one_layer_factors`: the realized ``||x_l||^2`` divided by its exact conditional mean
  at ``kappa = 1``, ``(C_l / C_{l-1}) sum_p (B e_{l-1})(p)``, has mean ``kappa`` at every layer
  (the tower property); ``F_l / kappa - 1`` averaged over the layers of a network is a
  light-tailed statistic of the law with mean 0, unlike ``M_d`` itself, whose typical value at
  few channels lies orders of magnitude below its mean.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch

from ..core import validate as v
from ..core.scaling import rescaled
from ..sample.convnets import conv_relu_lengths, mean_profile
from ..sample.laws import Initializer

__all__ = ["normalized_mean", "one_layer_factors", "length_ratio", "one_layer_second_moment",
           "depth_sweep"]


def normalized_mean(image: torch.Tensor, channels: Sequence[int], *, kappa: float = 1.0,
                    kernel: int = 3, padding: str = "zeros") -> np.ndarray:
    """Exact ``E[M_l] / M_0`` for l = 0..L (shape ``(L+1,)``).

    Examples
    --------
    >>> img = torch.ones(1, 6, 6, dtype=torch.float64)
    >>> normalized_mean(img, [2, 2], padding="circular").round(12).tolist()
    [1.0, 1.0, 1.0]
    """
    image = _scaled_image(image)
    chans = v.widths("channels", channels)
    prof = mean_profile(image, chans, kappa=kappa, kernel=kernel, padding=padding)
    widths = np.array([image.shape[0]] + chans, dtype=float)
    prof = prof.detach().cpu().numpy()
    out = prof / prof[0] * widths[0] / widths
    if not np.isfinite(out).all():
        raise ValueError(f"E[M_l] overflows a float at kappa = {kappa!r} over {len(chans)} "
                         "layers (kappa too large)")
    return out


def one_layer_factors(sq: torch.Tensor, window: torch.Tensor, channels: Sequence[int],
                      kappa: float = 1.0) -> torch.Tensor:
    """Per network, ``(1/L) sum_l (F_l / kappa - 1)`` with ``F_l = ||x_l||^2`` over its exact
    conditional mean at ``kappa = 1`` (shape ``(n_nets,)``): mean 0 exactly under the law.

    A network whose activations all vanish at layer l contributes ``F_l = 0`` there and
    nothing after (``F = 0/0``): each term is a martingale difference given the past, so the
    average over the fixed L layers stays unbiased (an average over the layers a network
    survives would not be: it weights early deaths).

    Parameters
    ----------
    sq, window : torch.Tensor
        ``(L+1, n_nets)`` from :func:`eit.sample.convnets.conv_relu_lengths`.
    channels : sequence of int
        ``[C_0, C_1, ..., C_L]``, the input channels included.

    Examples
    --------
    >>> sq = torch.tensor([[4.0], [2.0]]); win = torch.tensor([[2.0], [1.0]])
    >>> one_layer_factors(sq, win, [1, 1]).tolist()
    [0.0]
    """
    kappa = v.positive_float("kappa", kappa)
    steps = _one_layer_steps(sq, window, channels)               # NaN after a dead net
    return torch.where(torch.isnan(steps), 0.0, steps / kappa - 1).mean(0)


def length_ratio(sq: torch.Tensor, channels: Sequence[int]) -> torch.Tensor:
    """``M_L / M_0`` per network, with ``M_l = ||x_l||^2 / (C_l * pixels)``.

    Parameters
    ----------
    sq : torch.Tensor
        ``(L+1, n_nets)`` squared lengths from :func:`eit.sample.convnets.conv_relu_lengths`.
    channels : sequence of int
        ``[C_0, ..., C_L]``, the input channels included.

    Returns
    -------
    torch.Tensor
        Shape ``(n_nets,)``; comparable with ``normalized_mean(...)[-1]``.

    References
    ----------
    Hanin & Rolnick (2018), section 3.5 (the length ``M_d`` of Figure 4).

    Examples
    --------
    >>> length_ratio(torch.tensor([[3.0], [8.0]]), [3, 4]).tolist()
    [2.0]
    """
    chans = v.widths("channels", channels)
    sq = _lengths("sq", sq, chans)
    if not bool((sq[0] > 0).all()):
        raise ValueError("sq[0] (the squared length of the input) must be > 0")
    return sq[-1] / sq[0] * chans[0] / chans[-1]


def one_layer_second_moment(sq: torch.Tensor, window: torch.Tensor,
                            channels: Sequence[int]) -> float:
    """``rho = E[F^2] / E[F]^2`` of the one-layer growth factor ``F``, pooled over layers.

    ``F_l`` is ``||x_l||^2`` over its exact conditional mean at ``kappa = 1`` (as in
    :func:`one_layer_factors`), pooled over the layers and networks a network survives (a dead
    network's ``0/0`` is left out). Were the layers independent, the relative second moment of
    ``M_L`` would be ``rho^L``: a sample mean of ``N`` networks needs ``N >> rho^L``.

    Parameters
    ----------
    sq, window : torch.Tensor
        ``(L+1, n_nets)`` from :func:`eit.sample.convnets.conv_relu_lengths`.
    channels : sequence of int
        ``[C_0, C_1, ..., C_L]``, the input channels included.

    References
    ----------
    Hanin & Rolnick (2018), section 3.5 and Figure 4.

    Examples
    --------
    >>> sq = torch.tensor([[4.0, 4.0], [1.0, 3.0]]); win = torch.tensor([[2.0, 2.0], [1.0, 1.0]])
    >>> one_layer_second_moment(sq, win, [1, 1])
    1.25
    """
    steps = _one_layer_steps(sq, window, channels)
    steps = steps[torch.isfinite(steps)]
    if steps.numel() == 0 or not bool((steps > 0).any()):
        raise ValueError("sq: no layer of any network survived (every factor is 0 or 0/0): "
                         "rho is undefined")
    # rho is scale-free: divide by a power of two (exact) so that F^2 cannot overflow
    steps = torch.ldexp(steps, -torch.frexp(steps.amax()).exponent)
    return (steps.square().mean() / steps.mean() ** 2).item()


def depth_sweep(image: torch.Tensor, inits: Mapping[str, tuple[Initializer, float]],
                depths: Sequence[int], channels: Callable[[int], list[int]], *,
                n_nets: int, gen: torch.Generator) -> dict[str, np.ndarray]:
    """Log-lengths and one-layer factors of convolutional ReLU nets over laws and depths.

    For every law (in the order of ``inits``) and every depth (in the order of ``depths``),
    ``n_nets`` networks of :func:`eit.sample.convnets.conv_relu_lengths` with
    ``channels(depth)``; the paper-scale path of Figure 4.

    Parameters
    ----------
    image : torch.Tensor
        ``(C_0, H, W)``.
    inits : mapping of str to (Initializer, float)
        Per law, the kernel law and its ``kappa`` (variance over ``2 / fan-in``).
    depths : sequence of int
        The depths.
    channels : callable
        ``depth -> [C_1, ..., C_depth]``.
    n_nets : int
        Networks per point.
    gen : torch.Generator
        The random generator.

    Returns
    -------
    dict of str to numpy.ndarray
        ``log_length`` (``log M_d/M_0``, ``-inf`` for a dead network) and ``factor``
        (:func:`one_layer_factors`), each ``(len(inits), len(depths), n_nets)``.

    References
    ----------
    Hanin & Rolnick (2018), section 3.5 and Figure 4.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.sample.laws import he
    >>> out = depth_sweep(torch.ones(1, 4, 4, dtype=torch.float64), {"He": (he(), 1.0)},
    ...                   [2, 3], lambda d: [2] * d, n_nets=5, gen=generator(0))
    >>> out["factor"].shape
    (1, 2, 5)
    """
    image = _scaled_image(image)
    laws = _inits(inits)
    depths = v.widths("depths", depths)
    n_nets = v.positive_int("n_nets", n_nets)
    v.generator("gen", gen, optional=False)
    if not callable(channels):
        raise TypeError(f"channels must be callable (depth -> [C_1, ..., C_depth]), got "
                        f"{type(channels).__name__}")
    shape = (len(laws), len(depths), n_nets)
    log_len, factor = np.zeros(shape), np.zeros(shape)
    for i, (init, kappa) in enumerate(laws):
        for k, depth in enumerate(depths):
            chans = [image.shape[0], *channels(depth)]
            sq, win = conv_relu_lengths(image, chans[1:], init, n_nets=n_nets, gen=gen)
            log_len[i, k] = torch.log(length_ratio(sq, chans)).cpu().numpy()
            factor[i, k] = one_layer_factors(sq, win, chans, kappa=kappa).cpu().numpy()
    return {"log_length": log_len, "factor": factor}


def _scaled_image(image) -> torch.Tensor:
    """``image`` checked (finite, not zero) and, when its scale would overflow or underflow
    squared lengths, divided by a power of two (exact; every statistic here is scale-free)."""
    image = v.tensor("image", image, ndim=3)
    if not bool((image != 0).any()):
        raise ValueError("image must not be zero (its length normalizes every statistic)")
    return rescaled(image.unsqueeze(0), 1)[0][0]


def _inits(inits) -> list[tuple[Initializer, float]]:
    """The ``(Initializer, kappa)`` pairs of ``inits``, checked."""
    if not isinstance(inits, Mapping):
        raise TypeError(f"inits must be a mapping of names to (init, kappa), got "
                        f"{type(inits).__name__}")
    if not inits:
        raise ValueError("inits must hold at least one law")
    out = []
    for name, pair in inits.items():
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"inits[{name!r}] must be a pair (init, kappa), got {pair!r}")
        init, kappa = pair
        if not callable(init):
            raise TypeError(f"inits[{name!r}]: the init must be callable (an Initializer), "
                            f"got {type(init).__name__}")
        out.append((init, v.positive_float(f"inits[{name!r}] kappa", kappa)))
    return out


def _lengths(name: str, value, chans: list[int]) -> torch.Tensor:
    """Squared lengths ``(L+1, n_nets)``: finite, >= 0, one row per entry of ``chans``."""
    value = v.tensor(name, value, ndim=2)
    if value.shape[0] != len(chans) or len(chans) < 2:
        raise ValueError(f"{name} must have one row per entry of channels ({len(chans)}, at "
                         f"least 2: the input and one layer), got shape {tuple(value.shape)}")
    if not bool((value >= 0).all()):
        raise ValueError(f"{name} must be >= 0 (squared lengths)")
    return value


def _one_layer_steps(sq: torch.Tensor, window: torch.Tensor, channels: Sequence[int]
                     ) -> torch.Tensor:
    """``F_l``, l = 1..L: ``||x_l||^2`` over its exact conditional mean at ``kappa = 1``.

    NaN where a network is dead (``0/0``); an error where the arguments contradict each
    other (a layer alive after a dead window) or ``F`` overflows.
    """
    chans = v.widths("channels", channels)
    sq, window = _lengths("sq", sq, chans), _lengths("window", window, chans)
    if sq.shape != window.shape:
        raise ValueError(f"sq and window must have the same shape, got {tuple(sq.shape)} and "
                         f"{tuple(window.shape)}")
    if bool(((window[:-1] == 0) & (sq[1:] != 0)).any()):
        raise ValueError("window is 0 before a layer whose sq is not: a dead network cannot "
                         "come back to life (sq and window do not belong together)")
    growth = torch.tensor([c2 / c1 for c1, c2 in zip(chans[:-1], chans[1:])],
                          dtype=sq.dtype, device=sq.device)
    steps = sq[1:] / (growth.unsqueeze(-1) * window[:-1])
    if bool(torch.isinf(steps).any()):
        raise ValueError("sq / window overflows a float (sq too large for window)")
    return steps
