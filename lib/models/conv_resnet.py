"""All-convolutional residual networks (Hardt & Ma 2017, section 4, Table 1).

The network: a standard convolution from the input channels to ``c_1`` channels (the *stem*),
then stages of residual blocks ``x + C_2(ReLU(C_1 x))`` with k x k kernels and no bias, no
batch normalization, no dropout, no pooling inside the blocks; the first block of every stage
after the first has stride 2 in ``C_1`` and maps ``c_{s-1}`` to ``c_s`` channels, its skip path
being a 2 x 2 average pool followed by zero channels ("averaging pooling and padding"). A
global average pool and a **fixed random projection** ``c_S -> n_classes`` (not trained, unless
``train_head=True``) give the logits.

Initializations of the residual convolutions (``c`` = output channels, as in the paper):

* ``'small'``: Gaussian with standard deviation ``1 / (k^2 c)`` (the paper's proposal);
* ``'standard'``: Gaussian with standard deviation ``1 / (k sqrt(c))``.

The stem always uses the standard one. With ``padding='circular'`` every output pixel of a
stride-1 convolution sees a full k x k window, so for Gaussian kernels of variance s^2 and a
fixed input x, ``E ||C x||^2 = k^2 c s^2 ||x||^2`` exactly, and a block multiplies the expected
squared norm by exactly ``1 + (k^2 c s^2)^2 / 2`` (:func:`block_factor`). Zero padding
(``'zeros'``) loses mass at the border and makes that law an upper bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..core import validate as v
from ..core.device import DTYPE, device, randn
from ..core.scaling import rescaled
from ..sample.engine import trace
from ..sample.laws import gaussian_fixed
from ..sample.layers import Conv, ReLU, Residual, Serial, serial
from ..train.sgd import Digits

INITS = ("small", "standard")
_PADDINGS = ("circular", "zeros")


def init_std(init: str, kernel: int, channels: int) -> float:
    """Standard deviation of a residual convolution's weights: 1/(k^2 c) or 1/(k sqrt c).

    Examples
    --------
    >>> init_std('small', 3, 4)
    0.027777777777777776
    """
    if init not in INITS:
        raise ValueError(f"init must be one of {INITS}, got {init!r}")
    kernel, channels = _kernel(kernel), v.positive_int("channels", channels)
    return 1.0 / (kernel**2 * channels) if init == "small" else 1.0 / (kernel * math.sqrt(channels))


def block_factor(init: str, kernel: int, channels: int) -> float:
    """Exact E||x + C2 ReLU(C1 x)||^2 / ||x||^2, circular padding: 1 + (k^2 c s^2)^2 / 2.

    Examples
    --------
    >>> round(block_factor('standard', 3, 8), 12)
    1.5
    """
    std = init_std(init, kernel, channels)
    g = kernel**2 * channels * std**2
    return 1.0 + g * g / 2.0


def _kernel(kernel) -> int:
    kernel = v.positive_int("kernel", kernel)
    if kernel % 2 == 0:
        raise ValueError(f"kernel must be odd (centred windows), got {kernel}")
    return kernel


def _padding(padding) -> str:
    if padding not in _PADDINGS:
        raise ValueError(f"padding must be one of {_PADDINGS}, got {padding!r}")
    return padding


def _conv(x: torch.Tensor, w: torch.Tensor, padding: str, stride: int = 1,
          groups: int = 1) -> torch.Tensor:
    half = w.shape[-1] // 2
    if padding == "circular":
        return F.conv2d(F.pad(x, (half,) * 4, mode="circular"), w, stride=stride, groups=groups)
    return F.conv2d(x, w, stride=stride, padding=half, groups=groups)


def _shortcut(x: torch.Tensor, c_out: int, stride: int) -> torch.Tensor:
    if stride == 2:
        x = F.avg_pool2d(x, 2, ceil_mode=True)
    extra = c_out - x.shape[1]
    return F.pad(x, (0, 0, 0, 0, 0, extra)) if extra else x


@dataclass
class ConvResNet:
    """An all-convolutional residual network; call it on ``(N, C_in, H, W)`` to get logits.

    ``blocks`` holds ``(C1, C2, stride)`` per residual block; ``head`` is the fixed random
    projection ``(c_S, n_classes)``. :meth:`parameters` lists the trained tensors: the stem and
    the residual kernels (and the head only when ``train_head`` is set).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> net = conv_resnet('small', channels=2, blocks=1, gen=generator(0))
    >>> net(torch.ones(3, 1, 8, 8, dtype=torch.float64)).shape
    torch.Size([3, 10])
    """

    stem: torch.Tensor
    blocks: list[tuple[torch.Tensor, torch.Tensor, int]]
    head: torch.Tensor
    padding: str
    train_head: bool

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The last residual stream, ``(N, c_S, H', W')``."""
        h = _conv(x, self.stem, self.padding)
        for c1, c2, stride in self.blocks:
            branch = _conv(_conv(h, c1, self.padding, stride).clamp_min(0), c2, self.padding)
            h = _shortcut(h, c1.shape[0], stride) + branch
        return h

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.features(x).mean(dim=(-2, -1)) @ self.head

    def parameters(self) -> list[torch.Tensor]:
        params = [self.stem] + [w for c1, c2, _ in self.blocks for w in (c1, c2)]
        return params + ([self.head] if self.train_head else [])


def _counts(name: str, value) -> list[int]:
    """An int (one stage) or a non-empty sequence of positive ints."""
    if isinstance(value, int) and not isinstance(value, bool):
        return [v.positive_int(name, value)]
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a positive int or a sequence of them, got "
                        f"{type(value).__name__}")
    return v.widths(name, list(value))


def _stages(channels, blocks) -> list[tuple[int, int]]:
    chans = _counts("channels", channels)
    if isinstance(blocks, int) and not isinstance(blocks, bool):
        blocks = [blocks] * len(chans)
    counts = _counts("blocks", blocks)
    if len(counts) != len(chans):
        raise ValueError(f"blocks must give one count per stage ({len(chans)}), got {blocks!r}")
    return list(zip(chans, counts, strict=True))


def conv_resnet(init: str, *, channels: int | Sequence[int], blocks: int | Sequence[int],
                gen: torch.Generator, in_channels: int = 1, n_classes: int = 10,
                kernel: int = 3, padding: str = "circular", head_std: float | None = None,
                train_head: bool = False, dtype: torch.dtype = DTYPE,
                on: torch.device | None = None) -> ConvResNet:
    """Draw an all-convolutional residual network (Table 1, scaled down).

    Args:
        init: ``'small'`` (std 1/(k^2 c)) or ``'standard'`` (std 1/(k sqrt c)) for the residual
            convolutions; the stem is always standard.
        channels: channels per stage ``[c_1, ..., c_S]`` (an int: one stage).
        blocks: residual blocks per stage (an int: the same for every stage).
        gen: random generator (:func:`eit.core.seeds.generator`).
        in_channels, n_classes, kernel: input channels, classes, odd kernel size k.
        padding: ``'circular'`` (exact fan-in law) or ``'zeros'``.
        head_std: std of the fixed random projection (default ``1/sqrt(c_S)``).
        train_head: also train the last layer (for the comparison with a fixed one).
        on: device of the weights (default :func:`eit.core.device.device`; pass
            :func:`eit.train.sgd.training_device` to train).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> len(conv_resnet('standard', channels=[2, 4], blocks=2, gen=generator(0)).blocks)
    4
    """
    if init not in INITS:
        raise ValueError(f"init must be one of {INITS}, got {init!r}")
    stages = _stages(channels, blocks)
    gen = v.generator("gen", gen, optional=False)
    in_channels = v.positive_int("in_channels", in_channels)
    n_classes = v.positive_int("n_classes", n_classes)
    kernel, padding = _kernel(kernel), _padding(padding)
    if not isinstance(train_head, bool):
        raise TypeError(f"train_head must be a bool, got {type(train_head).__name__}")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")
    if on is not None:
        if not isinstance(on, (torch.device, str)):
            raise TypeError(f"on must be a torch.device, a device name or None, got "
                            f"{type(on).__name__}")
        try:
            on = torch.device(on)
        except RuntimeError as e:
            raise ValueError(f"on must name a device, got {on!r}: {e}") from None
    c_last = stages[-1][0]
    head_std = (1.0 / math.sqrt(c_last) if head_std is None
                else v.positive_float("head_std", head_std))
    on = device() if on is None else on

    def draw(c_out: int, c_in: int, std: float) -> torch.Tensor:
        w = std * randn(c_out, c_in, kernel, kernel, gen=gen, dtype=dtype)
        return w.to(on).requires_grad_(True)

    c = stages[0][0]
    stem = draw(c, in_channels, init_std("standard", kernel, c))
    layers = []
    for s, (c_out, count) in enumerate(stages):
        std = init_std(init, kernel, c_out)
        for b in range(count):
            stride = 2 if s > 0 and b == 0 else 1
            layers.append((draw(c_out, c, std), draw(c_out, c_out, std), stride))
            c = c_out
    head = (head_std * randn(c_last, n_classes, gen=gen, dtype=dtype)).to(on)
    return ConvResNet(stem, layers, head.requires_grad_(train_head), padding, train_head)


def standardize(data: Digits) -> Digits:
    """Per-image standardization (zero mean, unit variance over each image's pixels).

    Exact at any scale of the pixels (standardization is scale-invariant); a constant image
    (zero variance) raises.

    Examples
    --------
    >>> from eit.train.sgd import Digits
    >>> x = torch.arange(8.0, dtype=torch.float64).view(2, 1, 2, 2)
    >>> y = torch.tensor([3, 7])
    >>> float(standardize(Digits(x, y, x, y)).x_train[0].mean())
    0.0
    """
    if not isinstance(data, Digits):
        raise TypeError(f"data must be a Digits split, got {type(data).__name__}")

    def one(part: str) -> torch.Tensor:
        x = rescaled(getattr(data, f"x_{part}"), 1)[0]      # bit for bit at ordinary scales
        dims = tuple(range(1, x.ndim))
        std = x.std(dim=dims, keepdim=True)
        if bool((std == 0).any()):
            raise ValueError(f"data: an image of x_{part} is constant (zero variance): it "
                             "cannot be standardized")
        return (x - x.mean(dim=dims, keepdim=True)) / std

    return Digits(one("train"), data.y_train, one("test"), data.y_test)


def one_stage_net(init: str, *, channels: int, blocks: int, kernel: int = 3,
                  padding: str = "circular") -> Serial:
    """The one-stage network of :func:`forward_sq_norms` as a layer description.

    A stem ``Conv(channels)`` with the standard init, then ``blocks`` residual blocks
    ``x + C2(ReLU(C1 x))`` with the ``init`` of the residual convolutions (stride 1).

    Examples
    --------
    >>> one_stage_net("small", channels=4, blocks=2).widths((1, 6, 6))
    (36, 144, 144, 144)
    """
    if init not in INITS:
        raise ValueError(f"init must be one of {INITS}, got {init!r}")
    channels = v.positive_int("channels", channels)
    if isinstance(blocks, bool) or not isinstance(blocks, int) or blocks < 0:
        raise ValueError(f"blocks must be a non-negative int, got {blocks!r}")
    kernel, padding = _kernel(kernel), _padding(padding)
    stem = Conv(channels, kernel, gaussian_fixed(init_std("standard", kernel, channels) ** 2),
                padding)
    law = gaussian_fixed(init_std(init, kernel, channels) ** 2)
    block = Residual(serial(Conv(channels, kernel, law, padding), ReLU(),
                            Conv(channels, kernel, law, padding)))
    return Serial((stem,) + (block,) * blocks)


def forward_sq_norms(images: torch.Tensor, init: str, *, channels: int, blocks: int,
                     n_nets: int, gen: torch.Generator, kernel: int = 3,
                     padding: str = "circular") -> torch.Tensor:
    """Squared norms of the residual stream of ``n_nets`` random one-stage nets at init.

    Every network gets its own stem and residual kernels (the laws of :func:`conv_resnet`)
    and sees all ``images``; the explicit engine on :func:`one_stage_net` runs the nets at once
    as a grouped convolution.

    Parameters
    ----------
    images : torch.Tensor
        ``(N, C_in, H, W)``, no zero image.
    init, channels, blocks, kernel, padding
        As in :func:`conv_resnet` (one stage, ``blocks`` >= 0).
    n_nets : int
        The number of networks.
    gen : torch.Generator
        The random generator.

    Returns
    -------
    torch.Tensor
        ``(blocks + 1, n_nets, N)``: row 0 is ``||stem(x)||^2``, row b the squared norm after
        block b, all divided by ``||x||^2``. With circular padding,
        ``E[row b / row 0] = block_factor(init, kernel, channels)^b`` exactly.

    References
    ----------
    Hardt & Ma (2017), section 4.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> forward_sq_norms(torch.ones(2, 1, 6, 6, dtype=torch.float64), "small", channels=3,
    ...                  blocks=2, n_nets=4, gen=generator(0)).shape
    torch.Size([3, 4, 2])
    """
    images = v.tensor("images", images, ndim=4)
    net = one_stage_net(init, channels=channels, blocks=blocks, kernel=kernel, padding=padding)
    if not bool((images.flatten(1).norm(dim=-1) > 0).all()):
        raise ValueError("images must all be non-zero")
    t = trace(net, images, n_nets=n_nets, gen=gen)
    return torch.exp(2 * t.log_h_ratio[1:])


def architecture_size(*, in_channels: int, stem_channels: int, channels: Sequence[int],
                      blocks: Sequence[int], kernel: int = 3) -> tuple[int, int]:
    """(number of convolutions, number of convolution weights) of a Table 1 style network.

    A stem ``in_channels -> stem_channels``, then per stage ``s`` ``blocks[s]`` residual blocks
    of two k x k convolutions; the first C_1 of each stage maps the previous width to
    ``channels[s]``, every other convolution is ``channels[s] -> channels[s]``. No biases; the
    fixed random last layer is not counted (it is not trained).

    Examples
    --------
    >>> architecture_size(in_channels=1, stem_channels=2, channels=[2], blocks=[1])
    (3, 90)
    """
    in_channels = v.positive_int("in_channels", in_channels)
    stem_channels = v.positive_int("stem_channels", stem_channels)
    stages = _stages(channels, blocks)
    kernel = _kernel(kernel)
    convs, weights, c = 1, kernel * kernel * in_channels * stem_channels, stem_channels
    for c_out, count in stages:
        for _ in range(count):
            convs += 2
            weights += kernel * kernel * (c * c_out + c_out * c_out)
            c = c_out
    return convs, weights


__all__ = ["INITS", "ConvResNet", "architecture_size", "block_factor", "conv_resnet",
           "forward_sq_norms", "init_std", "one_stage_net", "standardize"]
