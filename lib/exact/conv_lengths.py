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

from collections.abc import Sequence

import numpy as np
import torch

from ..core import validate as v
from ..sample.convnets import mean_profile

__all__ = ["normalized_mean", "one_layer_factors"]


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
    chans = v.widths("channels", channels)
    kappa = v.positive_float("kappa", kappa)
    growth = torch.tensor([c2 / c1 for c1, c2 in zip(chans[:-1], chans[1:])],
                          dtype=sq.dtype, device=sq.device)
    steps = sq[1:] / (growth.unsqueeze(-1) * window[:-1])        # NaN after a dead net
    return torch.nan_to_num(steps / kappa - 1, nan=0.0).mean(0)
