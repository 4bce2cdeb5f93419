"""Batched purely convolutional ReLU networks (Hanin & Rolnick 2018, section 3.5, Figure 4).

Layer l maps ``C_{l-1}`` channels to ``C_l`` channels with a k x k kernel, stride 1, no bias,
no pooling: ``x_l = ReLU(W_l * x_{l-1})``. The fan-in of a unit is ``C_{l-1} k^2`` (the paper's
remark in section 3.5), and the kernels are drawn by any :data:`eit.sample.laws.Initializer`
as a ``(n_nets, C_l, C_{l-1} k^2)`` stack, reshaped to ``(C_l, C_{l-1}, k, k)`` per network.

Padding: ``'circular'`` (every output pixel sees a full window, so the one-layer mean factor is
exactly that of a fully connected layer) or ``'zeros'`` (Keras/PyTorch ``'same'``: pixels near
the border see fewer inputs). With zero padding the mean is still exact: the channel-summed
squared activation per pixel, ``e_l(p) = E sum_c x_{l,c}(p)^2``, obeys the linear recursion
``e_l = kappa (C_l / C_{l-1}) B e_{l-1}`` with B the k x k box average (zeros outside), see
:func:`mean_profile`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from ..core import validate as v
from ..core.device import DTYPE, device
from ..core.scaling import rescaled
from .engine import trace
from .laws import Initializer
from .layers import Conv, ReLU, Serial, serial

_PADDINGS = ("circular", "zeros")


def _check_kernel(kernel: int) -> int:
    kernel = v.positive_int("kernel", kernel)
    if kernel % 2 == 0:
        raise ValueError(f"kernel must be odd (centred windows), got {kernel}")
    return kernel


def _box_sum(e: torch.Tensor, kernel: int, padding: str) -> torch.Tensor:
    """Sum of ``e`` (..., H, W) over the k x k window around each pixel."""
    shape = e.shape
    flat = e.reshape(-1, 1, *shape[-2:])
    half = kernel // 2
    if padding == "circular":
        flat = F.pad(flat, (half, half, half, half), mode="circular")
    else:
        flat = F.pad(flat, (half, half, half, half))
    ones = torch.ones(1, 1, kernel, kernel, dtype=e.dtype, device=e.device)
    return F.conv2d(flat, ones).reshape(shape)


def conv_net(channels: Sequence[int], init: Initializer, *, kernel: int = 3,
             padding: str = "zeros") -> Serial:
    """``serial(serial(Conv(C_1), ReLU()), ..., serial(Conv(C_L), ReLU()))``, stride 1.

    Examples
    --------
    >>> from eit.sample.laws import he
    >>> conv_net([4, 4], he()).widths((1, 5, 5))
    (25, 100, 100)
    """
    chans = v.widths("channels", channels)
    kernel = _check_kernel(kernel)
    if padding not in _PADDINGS:
        raise ValueError(f"padding must be one of {_PADDINGS}, got {padding!r}")
    if not callable(init):
        raise TypeError(f"init must be callable (an Initializer), got {type(init).__name__}")
    return Serial(tuple(serial(Conv(c, kernel, init, padding), ReLU()) for c in chans))


def conv_relu_lengths(image: torch.Tensor, channels: Sequence[int], init: Initializer, *,
                      n_nets: int, gen: torch.Generator, kernel: int = 3,
                      padding: str = "zeros") -> tuple[torch.Tensor, torch.Tensor]:
    """Per-layer squared lengths of ``n_nets`` random convolutional ReLU nets on one image.

    The explicit engine (:func:`eit.sample.engine.trace`) on :func:`conv_net`, with the
    window statistic observed at every layer.

    Parameters
    ----------
    image : torch.Tensor
        ``(C_0, H, W)``.
    channels : sequence of int
        ``[C_1, ..., C_L]``.
    init : Initializer
        The kernel law, called as ``init(n_nets, C_l, C_{l-1} * kernel**2, gen)``.
    n_nets : int
        The number of independent networks.
    gen : torch.Generator
        The random generator.
    kernel : int
        The odd kernel size k.
    padding : str
        ``'zeros'`` or ``'circular'``.

    Returns
    -------
    tuple of torch.Tensor
        ``(sq, window)``, both ``(L+1, n_nets)``: ``sq[l] = ||x_l||^2`` and
        ``window[l] = sum_p sum_{q in window(p)} ||x_l(q)||^2 / k^2`` (the quantity whose
        multiple is the conditional mean of the next layer; row L is computed too).

    Raises
    ------
    ValueError
        On bad arguments (naming them), or where a squared length exceeds float64 (the
        log-lengths of :func:`eit.sample.engine.trace` carry any scale).

    References
    ----------
    Hanin & Rolnick (2018), section 3.5 and Figure 4.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.sample.laws import he
    >>> sq, win = conv_relu_lengths(torch.ones(1, 5, 5, dtype=torch.float64), [3, 3], he(),
    ...                             n_nets=2, gen=generator(0))
    >>> tuple(sq.shape)
    (3, 2)
    """
    image = v.tensor("image", image, ndim=3)
    net = conv_net(channels, init, kernel=kernel, padding=padding)
    v.positive_int("n_nets", n_nets)

    def window(h: torch.Tensor, log_r: torch.Tensor) -> torch.Tensor:
        u = h[:, 0]                                       # (n_nets, C, H, W), unit length
        box = _box_sum(u.square().sum(1), kernel, padding).flatten(1).sum(-1) / kernel**2
        return 2 * log_r[:, 0] + torch.log(box)

    t = trace(net, image.unsqueeze(0), n_nets=n_nets, gen=gen, observe={"window": window})
    sq, win = torch.exp(2 * t.log_h[..., 0]), torch.exp(t.observed["window"])
    if not (bool(torch.isfinite(sq).all()) and bool(torch.isfinite(win).all())):
        raise ValueError("image: a squared length exceeds float64 (the log-lengths of "
                         "eit.sample.engine.trace carry any scale)")
    return sq, win


def mean_profile(image: torch.Tensor, channels: Sequence[int], *, kappa: float = 1.0,
                 kernel: int = 3, padding: str = "zeros") -> torch.Tensor:
    """Exact E||x_l||^2 for l = 0..L with weights of variance ``2 kappa / (C_{l-1} k^2)``.

    The per-pixel recursion ``e_l = kappa (C_l / C_{l-1}) B e_{l-1}``, B the k x k box average,
    holds for every symmetric weight law (the conditional mean of a squared ReLU unit is half
    that of its pre-activation). Returns shape ``(L+1,)``. Images of any finite scale (an
    exact power-of-two rescaling); a ValueError names ``image`` and ``kappa`` where a mean
    exceeds float64.

    Examples
    --------
    >>> mean_profile(torch.ones(1, 4, 4, dtype=torch.float64), [2, 2], padding='circular')
    tensor([16., 32., 32.], dtype=torch.float64)
    """
    image = v.tensor("image", image, ndim=3).to(device=device(), dtype=DTYPE)
    chans = v.widths("channels", channels)
    kappa = v.positive_float("kappa", kappa)
    kernel = _check_kernel(kernel)
    if padding not in _PADDINGS:
        raise ValueError(f"padding must be one of {_PADDINGS}, got {padding!r}")
    # any finite scale: the image times an exact power of two 2^-s (s = 0 at ordinary
    # scales, bit for bit), the squared lengths times 4^s at the end
    flat, s = rescaled(image.reshape(1, -1), 1)
    image, s = flat.reshape(image.shape), int(s[0])
    e = image.square().sum(0)
    out = [e.sum()]
    c_in = image.shape[0]
    for c_out in chans:
        e = kappa * (c_out / c_in) * _box_sum(e, kernel, padding) / kernel**2
        out.append(e.sum())
        c_in = c_out
    out = torch.stack(out)
    if s != 0:                           # 4^s in two factors, each within float64
        out = torch.ldexp(torch.ldexp(out, torch.tensor(float(s), dtype=out.dtype,
                                                        device=out.device)),
                          torch.tensor(float(s), dtype=out.dtype, device=out.device))
    if not bool(torch.isfinite(out).all()):
        raise ValueError("image, kappa: E||x_l||^2 exceeds float64 (the image's squared "
                         "length times the layer factors kappa C_l / C_(l-1))")
    return out


__all__ = ["conv_net", "conv_relu_lengths", "mean_profile"]
