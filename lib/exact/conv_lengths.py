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
    image = v.tensor("image", image, ndim=3)
    chans = v.widths("channels", channels)
    prof = mean_profile(image, chans, kappa=kappa, kernel=kernel, padding=padding)
    widths = np.array([image.shape[0]] + chans, dtype=float)
    prof = prof.detach().cpu().numpy()
    return prof / prof[0] * widths[0] / widths


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
    return torch.nan_to_num(steps / kappa - 1, nan=0.0).mean(0)


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
    sq = v.tensor("sq", sq, ndim=2)
    if sq.shape[0] != len(chans):
        raise ValueError(f"sq must have one row per entry of channels ({len(chans)}), got "
                         f"{sq.shape[0]}")
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
    if steps.numel() == 0:
        raise ValueError("no layer of any network survived: rho is undefined")
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
    image = v.tensor("image", image, ndim=3)
    if not isinstance(inits, Mapping):
        raise TypeError(f"inits must be a mapping of names to (init, kappa), got "
                        f"{type(inits).__name__}")
    depths = v.widths("depths", depths)
    n_nets = v.positive_int("n_nets", n_nets)
    shape = (len(inits), len(depths), n_nets)
    log_len, factor = np.zeros(shape), np.zeros(shape)
    for i, (init, kappa) in enumerate(inits.values()):
        for k, depth in enumerate(depths):
            chans = [image.shape[0], *channels(depth)]
            sq, win = conv_relu_lengths(image, chans[1:], init, n_nets=n_nets, gen=gen)
            log_len[i, k] = torch.log(length_ratio(sq, chans)).cpu().numpy()
            factor[i, k] = one_layer_factors(sq, win, chans, kappa=kappa).cpu().numpy()
    return {"log_length": log_len, "factor": factor}


def _one_layer_steps(sq: torch.Tensor, window: torch.Tensor, channels: Sequence[int]
                     ) -> torch.Tensor:
    """``F_l``, l = 1..L: ``||x_l||^2`` over its exact conditional mean at ``kappa = 1``."""
    chans = v.widths("channels", channels)
    growth = torch.tensor([c2 / c1 for c1, c2 in zip(chans[:-1], chans[1:])],
                          dtype=sq.dtype, device=sq.device)
    return sq[1:] / (growth.unsqueeze(-1) * window[:-1])
