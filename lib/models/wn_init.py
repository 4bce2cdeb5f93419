"""Weight-normalized ReLU networks at initialization (Arpit, Campos & Bengio 2019).

A weight-normalized layer computes ``a = g * W_hat h`` where every row of ``W_hat`` has unit
norm (eq. 2): only the *direction* of the raw weights matters. Rows i.i.d. from any isotropic
law (Gaussian, He, uniform on the sphere) therefore give the same layer, rows uniform on the
unit sphere; rows of a Haar orthogonal matrix are the paper's second choice. The proposed gain
is ``g = sqrt(gamma * fan_in / fan_out)`` with ``gamma = 2`` before a ReLU (Theorem 1) and
``gamma = 1`` otherwise; the last layer of a residual block takes ``gamma = 1/B`` (Section 4).

The laws (:func:`directions`, :func:`weight_normalized`, :func:`proposed_gain`, the Haar
sampler) live in :mod:`eit.sample.laws`; the networks are layer descriptions
(:func:`wn_resnet_net`, :func:`wn_stage_net`) run by the explicit engine
(:func:`eit.sample.engine.trace`), which returns one :class:`~eit.sample.traces.Trace`.

This module also holds the *trainable* weight-normalized networks of the curvature and
robustness experiments (Tables 2-3, Figure 2): their parameters ``(v, g, b)`` and the paper's
initializations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch

from ..core import validate as v
from ..core.device import DTYPE, device, rand, randn
from ..core.scaling import SAFE_EXPONENT
from ..sample.engine import trace
from ..sample.laws import (
    DIRECTIONS,
    Direction,
    directions,
    haar_orthogonal,
    proposed_gain,
    weight_normalized,
)
from ..sample.laws import normalize_rows as unit_rows
from ..sample.layers import Dense, ReLU, Residual, Serial, serial
from ..sample.traces import Trace


def _direction(direction) -> Direction:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    return direction


# ---------------------------------------------------------------------------------------------
# Residual networks, eq. (6): h^{b+1} = h^b + F_b(h^b), F_b = FC2 o ReLU o FC1 (Appendix A.2)
# ---------------------------------------------------------------------------------------------


def _random_backward(backward) -> str | None:
    """The engine's ``backward`` for a bool: a random Gaussian error vector, or no pass."""
    if not isinstance(backward, bool):
        raise TypeError(f"backward must be a bool, got {type(backward).__name__}")
    return "random" if backward else None


def _trace(net: Serial, x: torch.Tensor, n_nets: int, gen: torch.Generator, backward,
           gains: str) -> Trace:
    """The engine's trace; an overflow inside the blocks is the gains' (named in ``gains``).

    A residual block adds its branch to the stream in linear space, so the stream's scale
    grows by about g1 g2 per block: gains far from 1 leave float64 after a few blocks.
    """
    try:
        return trace(net, x, n_nets=n_nets, gen=gen, backward=_random_backward(backward))
    except FloatingPointError as e:
        raise ValueError(f"{gains}: the blocks' gains carry the residual stream beyond float64 "
                         f"({e})") from None


def _block_gains(name: str, value, blocks: int) -> list[float | None]:
    return [None] * blocks if value is None else v.per_layer(name, value, blocks)


def wn_block(d_in: int, d_out: int, hidden: int, direction: Direction, *, g1: float,
             g2: float, projection: float | None = None) -> Residual:
    """One block ``h -> P h + FC2(ReLU(FC1 h))`` of weight-normalized layers, zero biases.

    FC1 = g1 W1_hat (hidden x d_in), FC2 = g2 W2_hat (d_out x hidden), rows of ``direction``;
    P is the identity (``projection=None``, needs d_in = d_out) or a weight-normalized linear
    layer of gain ``projection`` (a projection shortcut).

    Examples
    --------
    >>> wn_block(4, 4, 8, "sphere", g1=1.0, g2=0.5).out_shape((4,))
    (4,)
    """
    d_in, d_out = v.positive_int("d_in", d_in), v.positive_int("d_out", d_out)
    hidden = v.positive_int("hidden", hidden)
    direction = _direction(direction)
    g1, g2 = v.positive_float("g1", g1), v.positive_float("g2", g2)
    if projection is None:
        if d_in != d_out:
            raise ValueError(f"projection must be a gain when d_in != d_out ({d_in} != {d_out}): "
                             "the identity shortcut needs d_in = d_out")
    else:
        projection = v.positive_float("projection", projection)
    branch = serial(Dense(hidden, weight_normalized(direction, gain=g1)), ReLU(),
                    Dense(d_out, weight_normalized(direction, gain=g2)))
    shortcut = None if projection is None else Dense(
        d_out, weight_normalized(direction, gain=projection))
    return Residual(branch, 1.0, shortcut)


def wn_resnet_net(d: int, hidden: Sequence[int], direction: Direction, *, fc1_gain=None,
                  fc2_gain=None) -> Serial:
    """The weight-normalized ResNet of eq. (6) as a layer description, one block per entry.

    Block b maps h (width d) to h + g2 W2_hat ReLU(g1 W1_hat h), W1_hat (n_b, d), W2_hat
    (d, n_b), n_b = ``hidden[b]``; gains as in :func:`wn_resnet`, with g1 g2 in
    [2^-400, 2^400] in every block (the branch's scale relative to the stream).

    Examples
    --------
    >>> wn_resnet_net(4, [8, 8], "orthogonal").depth
    2
    """
    d = v.positive_int("d", d)
    hidden = v.widths("hidden", hidden)
    blocks = len(hidden)
    g1s = _block_gains("fc1_gain", fc1_gain, blocks)
    g2s = _block_gains("fc2_gain", fc2_gain, blocks)
    g1s = [proposed_gain(d, n) if g is None else g for g, n in zip(g1s, hidden, strict=True)]
    g2s = [proposed_gain(n, d, 1.0 / blocks) if g is None else g
           for g, n in zip(g2s, hidden, strict=True)]
    for b, (g1, g2) in enumerate(zip(g1s, g2s, strict=True)):
        if not 2.0**-SAFE_EXPONENT <= g1 * g2 <= 2.0**SAFE_EXPONENT:
            raise ValueError(f"fc1_gain and fc2_gain: block {b} has g1 g2 = {g1 * g2!r}, outside "
                             f"[2^-{SAFE_EXPONENT}, 2^{SAFE_EXPONENT}], where the branch's "
                             "squared norm relative to the stream stays a float64 number")
    return Serial(tuple(wn_block(d, d, n, direction, g1=a, g2=b)
                        for n, a, b in zip(hidden, g1s, g2s, strict=True)))


def wn_resnet(x: torch.Tensor, hidden: Sequence[int], direction: Direction, *, n_nets: int,
              gen: torch.Generator, fc1_gain=None, fc2_gain=None,
              backward: bool = False) -> Trace:
    """Propagate inputs through ``n_nets`` weight-normalized ResNets (eq. 6, Appendix A.2).

    Block b maps h (width d = x.shape[-1]) to F_b(h) = g2 W2_hat ReLU(g1 W1_hat h) with
    W1_hat of shape (n_b, d), W2_hat of shape (d, n_b), n_b = ``hidden[b]``, zero biases; the
    block scale alpha is absorbed in g2 (footnote 5).

    Parameters
    ----------
    x : torch.Tensor
        Inputs ``(N, d)``, shared by all networks.
    hidden : sequence of int
        The hidden width n_b of every block (its length is the number of blocks B).
    direction : str
        ``'sphere'`` (normalized He/Gaussian rows) or ``'orthogonal'``.
    n_nets : int
        The number of networks.
    gen : torch.Generator
        The random generator.
    fc1_gain, fc2_gain
        None for the proposed sqrt(2 d / n_b) and sqrt(n_b / (B d)), or a constant, or one
        per block.
    backward : bool
        Also backpropagate a random Gaussian error vector dl/dh^B.

    Returns
    -------
    Trace
        ``log_h`` (B+1, n_nets, N); per block ``log_f`` = log(||F_b(h^b)|| / ||h^b||) and
        ``cos_f`` = cos(h^b, F_b(h^b)) (the angle Theorem 3 assumes to be 90 degrees), and with
        ``backward``: ``log_grad`` = log ||dl/dh^b`` (B+1 rows), ``log_j`` =
        log(||J_b^T d|| / ||d||), ``cos_j`` = cos(d, J_b^T d), d = dl/dh^{b+1}.

    References
    ----------
    Arpit, Campos & Bengio (2019), eq. (6), Theorems 3-4, Appendix A.2.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> r = wn_resnet(torch.ones(2, 4, dtype=torch.float64), [8] * 3, "orthogonal", n_nets=2,
    ...               gen=generator(0), backward=True)
    >>> tuple(r.log_grad_ratio.shape), tuple(r.cos_j.shape)
    ((4, 2, 2), (3, 2, 2))
    """
    x = v.tensor("x", x, ndim=2)
    net = wn_resnet_net(x.shape[-1], hidden, direction, fc1_gain=fc1_gain, fc2_gain=fc2_gain)
    t = _trace(net, x, n_nets, gen, backward, "fc1_gain and fc2_gain")
    names = {"log_f": "log_branch", "cos_f": "cos_branch"}
    if backward:
        names.update(log_j="log_branch_grad", cos_j="cos_branch_grad")
    return t.renamed(**names)


# ---------------------------------------------------------------------------------------------
# A trainable weight-normalized ResNet and the four initializations of Table 2
# ---------------------------------------------------------------------------------------------

Scheme = Literal["pytorch", "data_dependent", "hanin", "proposed"]
SCHEMES = ("pytorch", "data_dependent", "hanin", "proposed")


@dataclass
class WNLayer:
    """One weight-normalized affine layer: a = g * (v / ||v_i||) h + b (eq. 1), v: (out, in).

    Examples
    --------
    >>> one, zero = torch.ones(2, dtype=torch.float64), torch.zeros(2, dtype=torch.float64)
    >>> layer = WNLayer(torch.eye(2, dtype=torch.float64), one, zero)
    >>> layer(torch.ones(1, 2, dtype=torch.float64))
    tensor([[1., 1.]], dtype=torch.float64)
    """

    v: torch.Tensor
    g: torch.Tensor
    b: torch.Tensor

    def __call__(self, h: torch.Tensor) -> torch.Tensor:
        w = self.g.unsqueeze(-1) * self.v / self.v.norm(dim=-1, keepdim=True)
        return h @ w.T + self.b

    def parameters(self) -> list[torch.Tensor]:
        return [self.v, self.g, self.b]


@dataclass
class WNResNet:
    """Input layer -> B blocks h + FC2(ReLU(FC1(h))) -> output layer, all weight-normalized.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> net = wn_resnet_model('proposed', d_in=3, width=4, d_out=2, blocks=2, gen=generator(0))
    >>> net(torch.ones(5, 3, dtype=torch.float64)).shape
    torch.Size([5, 2])
    """

    stem: WNLayer
    blocks: list[tuple[WNLayer, WNLayer]]
    head: WNLayer

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x)
        for fc1, fc2 in self.blocks:
            h = h + fc2(torch.relu(fc1(h)))
        return self.head(h)

    def parameters(self) -> list[torch.Tensor]:
        layers = [self.stem, *(layer for block in self.blocks for layer in block), self.head]
        return [p for layer in layers for p in layer.parameters()]


def _pytorch_v(fan_out: int, fan_in: int, gen: torch.Generator) -> torch.Tensor:
    """nn.Linear's default weights: kaiming_uniform(a=sqrt(5)), i.e. U(-1/sqrt(fan_in), ...)."""
    bound = 1.0 / math.sqrt(fan_in)
    return bound * (2.0 * rand(fan_out, fan_in, gen=gen) - 1.0)


def _data_dependent(layer: WNLayer, h: torch.Tensor) -> None:
    """Salimans & Kingma (2016): set g, b so that pre-activations have mean 0, variance 1.

    Raises a ValueError naming ``data`` where a pre-activation has zero or non-finite spread
    over the batch (then no g standardizes it).
    """
    with torch.no_grad():
        t = h @ (layer.v / layer.v.norm(dim=-1, keepdim=True)).T
        mu, sd = t.mean(0), t.std(0)
        if not bool((torch.isfinite(sd) & (sd > 0)).all()):
            raise ValueError("data: a pre-activation is constant over the batch (or its spread "
                             "is beyond float64), so the data-dependent gain 1/std is undefined")
        layer.g.copy_(1.0 / sd)
        layer.b.copy_(-mu / sd)


def wn_resnet_model(scheme: Scheme, *, d_in: int, width: int, d_out: int, blocks: int,
                    gen: torch.Generator, data: torch.Tensor | None = None,
                    hanin_base: float = 0.9) -> WNResNet:
    """A weight-normalized ResNet (square blocks of width ``width``) initialized by ``scheme``.

    * ``'pytorch'``: ``torch.nn.utils.weight_norm`` on default ``nn.Linear`` layers: v is
      U(-1/sqrt(fan_in), 1/sqrt(fan_in)), g_i = ||v_i|| (so W = v), biases U(same bound).
    * ``'data_dependent'``: Salimans & Kingma: v ~ N(0, 0.05^2), then g and b set layer by
      layer from ``data`` so that every pre-activation has mean 0 and variance 1.
    * ``'hanin'``: the paper's stage-wise Hanin scheme: as proposed, except g = hanin_base^b
      on the last layer of block b = 1..B.
    * ``'proposed'``: orthogonal v, g = sqrt(gamma fan_in / fan_out) with gamma = 2 before a
      ReLU, 1 for the stem and the head, 1/B for the last layer of each block; zero biases.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> len(wn_resnet_model('hanin', d_in=3, width=4, d_out=2, blocks=3, gen=generator(0)).blocks)
    3
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    d_in, width = v.positive_int("d_in", d_in), v.positive_int("width", width)
    d_out, blocks = v.positive_int("d_out", d_out), v.positive_int("blocks", blocks)
    hanin_base = v.in_interval("hanin_base", hanin_base, 0.0, 1.0, closed_hi=True)
    if scheme == "data_dependent":
        data = v.tensor("data", data, ndim=2) if data is not None else None
        if data is None or data.shape[1] != d_in or data.shape[0] < 2:
            raise ValueError(f"data must be a (N >= 2, d_in={d_in}) batch for the "
                             "data-dependent initialization")

    def layer(fan_out: int, fan_in: int, gamma: float, gain: float | None = None) -> WNLayer:
        zeros = torch.zeros(fan_out, dtype=DTYPE, device=device())
        if scheme == "pytorch":
            w = _pytorch_v(fan_out, fan_in, gen)
            bias = (2.0 * rand(fan_out, gen=gen) - 1.0) / math.sqrt(fan_in)
            return WNLayer(w, w.norm(dim=-1), bias)
        if scheme == "data_dependent":
            return WNLayer(0.05 * randn(fan_out, fan_in, gen=gen), zeros + 1.0, zeros)
        w = haar_orthogonal(1, fan_out, fan_in, gen=gen)[0]
        g = proposed_gain(fan_in, fan_out, gamma) if gain is None else gain
        return WNLayer(w, zeros + g, zeros)

    stem = layer(width, d_in, 1.0)
    body = []
    for b in range(1, blocks + 1):
        last = hanin_base**b if scheme == "hanin" else None
        body.append((layer(width, width, 2.0), layer(width, width, 1.0 / blocks, last)))
    net = WNResNet(stem, body, layer(d_out, width, 1.0))
    if scheme == "data_dependent":
        h = data.to(device=device(), dtype=DTYPE)
        _data_dependent(net.stem, h)
        h = net.stem(h)
        for fc1, fc2 in net.blocks:
            _data_dependent(fc1, h)
            r = torch.relu(fc1(h))
            _data_dependent(fc2, r)
            h = h + fc2(r)
        _data_dependent(net.head, h)
    for p in net.parameters():
        p.requires_grad_(True)
    return net


# ---------------------------------------------------------------------------------------------
# A trainable weight-normalized MLP (Figure 2): proposed versus data-dependent initialization
# ---------------------------------------------------------------------------------------------

MLPScheme = Literal["pytorch", "data_dependent", "proposed", "traditional"]
MLP_SCHEMES = ("pytorch", "data_dependent", "proposed", "traditional")


@dataclass
class WNMLP:
    """Weight-normalized ReLU MLP: h <- ReLU(layer(h)) on every hidden layer, then a linear head.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> wn_mlp_model('traditional', d_in=3, widths=[4, 4], d_out=2, gen=generator(0)).depth
    2
    """

    hidden: list[WNLayer]
    head: WNLayer

    @property
    def depth(self) -> int:
        """The number of hidden layers (the paper's "depth" in Figure 2 and Table 3)."""
        return len(self.hidden)

    @staticmethod
    def _affine(layer: WNLayer, h: torch.Tensor) -> torch.Tensor:
        # The map of WNLayer.__call__ (equal up to rounding) in two fused kernels, torch's own
        # weight-norm op and one addmm: training runs are dominated by per-op overhead.
        w = torch._weight_norm(layer.v, layer.g.unsqueeze(-1), 0)
        return torch.nn.functional.linear(h, w, layer.b)

    def features(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The hidden representations h^1, ..., h^L (after the ReLU) of the inputs ``x``."""
        out, h = [], x
        for layer in self.hidden:
            h = torch.relu(self._affine(layer, h))
            out.append(h)
        return out

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        h = x
        for layer in self.hidden:
            h = torch.relu(self._affine(layer, h))
        return self._affine(self.head, h)

    def parameters(self) -> list[torch.Tensor]:
        return [p for layer in (*self.hidden, self.head) for p in layer.parameters()]


def wn_mlp_model(scheme: MLPScheme, *, d_in: int, widths: Sequence[int], d_out: int,
                 gen: torch.Generator, data: torch.Tensor | None = None,
                 on: torch.device | None = None, direction: Direction = "orthogonal") -> WNMLP:
    """A weight-normalized ReLU MLP ``d_in -> widths[0] -> ... -> widths[-1] -> d_out``.

    * ``'proposed'``: v with rows of the given ``direction`` (``'orthogonal'``: a Haar matrix,
      QR of a Gaussian one with R_ii > 0, as Arpit, Campos & Bengio 2019 propose;
      ``'sphere'``: i.i.d. Gaussian rows, as in Corollary 2 of Arpit & Bengio 2019),
      g = sqrt(2 fan_in / fan_out) on every hidden layer (followed by a ReLU, Theorems 1 and 5),
      g = sqrt(fan_in / fan_out) on the linear output layer (gamma = 1), zero biases.
    * ``'traditional'``: weight normalization with k = 1 (Salimans & Kingma 2016 without the
      data-dependent step, Arpit & Bengio 2019 section 5): v with rows of the given
      ``direction``, g = 1, zero biases.
    * ``'data_dependent'``: Salimans & Kingma (2016): v ~ N(0, 0.05^2), then g and b set
      layer by layer from the batch ``data`` so that every pre-activation, the logits
      included, has mean 0 and variance 1 on it.
    * ``'pytorch'``: ``torch.nn.utils.weight_norm`` on default ``nn.Linear`` layers (v and b
      uniform in +-1/sqrt(fan_in), g_i = ||v_i||).

    Random numbers are drawn from ``gen`` (:func:`eit.core.seeds.generator`) on its own device;
    the orthogonal factors come from :func:`eit.sample.laws.haar_orthogonal` on the compute
    device; the parameters live on ``on`` (default :func:`eit.core.device.device`; pass
    :func:`eit.train.sgd.training_device` to train) and require gradients.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> net = wn_mlp_model("proposed", d_in=4, widths=[8], d_out=2, gen=generator(0))
    >>> net.depth
    1
    """
    if scheme not in MLP_SCHEMES:
        raise ValueError(f"scheme must be one of {MLP_SCHEMES}, got {scheme!r}")
    d_in, d_out = v.positive_int("d_in", d_in), v.positive_int("d_out", d_out)
    widths = v.widths("widths", widths)
    if not isinstance(gen, torch.Generator):
        raise TypeError(f"gen must be a torch.Generator, got {type(gen).__name__}")
    if on is not None and not isinstance(on, torch.device):
        raise TypeError(f"on must be a torch.device or None, got {type(on).__name__}")
    on = device() if on is None else on
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    if scheme == "data_dependent":
        data = v.tensor("data", data, ndim=2) if data is not None else None
        if data is None or data.shape[1] != d_in or data.shape[0] < 2:
            raise ValueError(f"data must be a (N >= 2, d_in={d_in}) batch for the "
                             "data-dependent initialization")

    def draw(*shape: int, uniform: bool = False) -> torch.Tensor:
        sample = torch.rand if uniform else torch.randn
        return sample(*shape, generator=gen, device=gen.device, dtype=DTYPE).to(on)

    def layer(fan_out: int, fan_in: int, gamma: float) -> WNLayer:
        zeros = torch.zeros(fan_out, dtype=DTYPE, device=on)
        if scheme == "pytorch":
            bound = 1.0 / math.sqrt(fan_in)
            w = bound * (2.0 * draw(fan_out, fan_in, uniform=True) - 1.0)
            bias = bound * (2.0 * draw(fan_out, uniform=True) - 1.0)
            return WNLayer(w, w.norm(dim=-1), bias)
        if scheme == "data_dependent":
            return WNLayer(0.05 * draw(fan_out, fan_in), zeros + 1.0, zeros)
        gain = 1.0 if scheme == "traditional" else proposed_gain(fan_in, fan_out, gamma)
        if direction == "sphere":
            return WNLayer(unit_rows(draw(fan_out, fan_in)), zeros + gain, zeros)
        q = haar_orthogonal(1, fan_out, fan_in, gen=gen)[0].to(on)
        return WNLayer(q, zeros + gain, zeros)

    sizes = [d_in, *widths]
    net = WNMLP([layer(n_out, n_in, 2.0) for n_in, n_out in zip(sizes, sizes[1:])],
                layer(d_out, sizes[-1], 1.0))
    if scheme == "data_dependent":
        h = data.to(device=on, dtype=DTYPE)
        for lay in net.hidden:
            _data_dependent(lay, h)
            h = torch.relu(lay(h))
        _data_dependent(net.head, h)
    for p in net.parameters():
        p.requires_grad_(True)
    return net


__all__ = ["DIRECTIONS", "MLP_SCHEMES", "SCHEMES", "WNMLP", "Direction", "MLPScheme", "Scheme",
           "WNLayer", "WNResNet", "directions", "haar_orthogonal", "proposed_gain", "unit_rows",
           "weight_normalized", "wn_block", "wn_mlp_model", "wn_resnet", "wn_resnet_model",
           "wn_resnet_net", "wn_stage_net", "wn_stage_resnet"]


# ---------------------------------------------------------------------------------------------
# Stages with shortcut connections (Section 4, "Shortcut connections"; footnote 5)
# ---------------------------------------------------------------------------------------------


def wn_stage_net(d_in: int, widths: Sequence[int], blocks: Sequence[int],
                 direction: Direction, *, gammas: Sequence[float] | None = None) -> Serial:
    """The multi-stage weight-normalized ResNet of :func:`wn_stage_resnet` as a description.

    Examples
    --------
    >>> net = wn_stage_net(3, [4, 6], [2, 1], "sphere")
    >>> net.widths(3)
    (3, 4, 4, 6)
    """
    widths, blocks = v.widths("widths", widths), v.widths("blocks", blocks)
    if len(widths) != len(blocks):
        raise ValueError(f"widths and blocks must have one entry per stage, got {len(widths)} "
                         f"and {len(blocks)}")
    if gammas is None:
        gammas = [1.0 / b for b in blocks]
    elif (isinstance(gammas, Sequence) and not isinstance(gammas, str)
          and len(gammas) == len(blocks)):
        gammas = [v.positive_float(f"gammas[{k}]", g) for k, g in enumerate(gammas)]
    else:
        raise ValueError(f"gammas must be None or {len(blocks)} positive numbers (one per "
                         f"stage), got {gammas!r}")
    out, d_prev = [], v.positive_int("d_in", d_in)
    for d_k, b_k, gamma in zip(widths, blocks, gammas, strict=True):
        for i in range(b_k):
            proj = proposed_gain(d_prev, d_k, 1.0) if i == 0 and d_prev != d_k else None
            out.append(wn_block(d_prev, d_k, d_k, direction, g1=proposed_gain(d_prev, d_k),
                                g2=proposed_gain(d_k, d_k, gamma), projection=proj))
            d_prev = d_k
    return Serial(tuple(out))


def wn_stage_resnet(x: torch.Tensor, widths: Sequence[int], blocks: Sequence[int],
                    direction: Direction, *, n_nets: int, gen: torch.Generator,
                    gammas: Sequence[float] | None = None,
                    backward: bool = False) -> Trace:
    """``n_nets`` weight-normalized ResNets with K stages and projection shortcuts.

    Stage k (k = 0..K-1) has residual width ``widths[k]`` and ``blocks[k]`` blocks
    F = FC2 o ReLU o FC1 (hidden width ``widths[k]``, zero biases). The first block of a stage
    whose width differs from that of its input has a *projection shortcut*:
    ``h -> P h + F(h)`` with P a weight-normalized linear layer of gain sqrt(fan_in/fan_out)
    (gamma = 1, no ReLU); other blocks have the identity shortcut ``h -> h + F(h)``. Gains as
    in Section 4: sqrt(2 fan_in/fan_out) on FC1 and sqrt(gamma_k fan_in/fan_out) on FC2, with
    gamma_k = 1/B_k (the stage-wise scaling) unless ``gammas`` gives one per stage.

    Parameters
    ----------
    x : torch.Tensor
        Inputs ``(N, d_in)``, shared by all networks.
    widths : sequence of int
        The residual width of each stage.
    blocks : sequence of int
        The number of blocks B_k of each stage (same length as ``widths``).
    direction : str
        ``'sphere'`` (normalized He/Gaussian rows) or ``'orthogonal'``.
    n_nets : int
        The number of networks.
    gen : torch.Generator
        The random generator.
    gammas : sequence of float or None
        None for 1/B_k, or one positive gamma per stage.
    backward : bool
        Also backpropagate a random Gaussian error vector dl/dh^out.

    Returns
    -------
    Trace
        ``log_h`` and (with ``backward``) ``log_grad``, shape ``(B_total+1, n_nets, N)``;
        ``widths[i]`` is the width of h^i and ``meta['boundaries'][k]`` the block index at
        which stage k ends (``boundaries[0] = 0`` is the input).

    References
    ----------
    Arpit, Campos & Bengio (2019), Section 4 and footnote 5.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> r = wn_stage_resnet(torch.ones(2, 3, dtype=torch.float64), [4, 6], [2, 1], "sphere",
    ...                     n_nets=2, gen=generator(0))
    >>> r.boundaries, r.widths
    ((0, 2, 3), (3, 4, 4, 6))
    """
    x = v.tensor("x", x, ndim=2)
    net = wn_stage_net(x.shape[-1], widths, blocks, _direction(direction), gammas=gammas)
    t = _trace(net, x, n_nets, gen, backward, "gammas")
    counts = v.widths("blocks", blocks)
    boundaries = tuple(int(b) for b in torch.tensor([0, *counts]).cumsum(0))
    return t.with_meta(boundaries=boundaries)
