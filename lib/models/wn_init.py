"""Weight-normalized ReLU networks at initialization (Arpit, Campos & Bengio 2019).

A weight-normalized layer computes ``a = g * W_hat h`` where every row of ``W_hat`` has unit
norm (eq. 2): only the *direction* of the raw weights matters. Rows i.i.d. from any isotropic
law (Gaussian, He, uniform on the sphere) therefore give the same layer, rows uniform on the
unit sphere; rows of a Haar orthogonal matrix are the paper's second choice. The proposed gain
is ``g = sqrt(gamma * fan_in / fan_out)`` with ``gamma = 2`` before a ReLU (Theorem 1) and
``gamma = 1`` otherwise; the last layer of a residual block takes ``gamma = 1/B`` (Section 4).

Every pass is batched over ``n_nets`` independent networks (no Python loop over networks) and
tracks *log-norms*: ReLU networks with zero biases, residual or not, are positively
homogeneous, so rescaling the state to unit length after every layer or block and
accumulating the log-length is exact and keeps depth from overflowing. The backward passes
re-draw each weight matrix from the generator state saved in the forward pass.

This module also holds the *trainable* weight-normalized ResNet of the curvature experiment
(Table 2): its parameters ``(v, g, b)`` and the paper's four initializations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch

from ..core import validate as v
from ..core.device import DTYPE, device, rand, randn
from ..sample.laws import Initializer, sphere_rows
from ..sample.mlp import _normalize
from .weightnorm import normalize_rows as unit_rows
from .weightnorm import proposed_gain

Direction = Literal["sphere", "orthogonal"]
DIRECTIONS = ("sphere", "orthogonal")


def haar_orthogonal(n_nets: int, fan_out: int, fan_in: int, *,
                    gen: torch.Generator) -> torch.Tensor:
    """Haar (semi-)orthogonal matrices by Cholesky QR, twice (CholeskyQR2).

    The same law, and up to rounding the same matrices, as
    :func:`eit.sample.laws.haar_orthogonal` (QR of a Gaussian matrix with R_ii > 0,
    Mezzadri 2007): with G = Q R, R is the transposed Cholesky factor of G^T G, which has a
    positive diagonal. It is several times faster for batches of large matrices on a CPU; the
    second pass restores orthogonality to rounding error. Draws too ill-conditioned for it
    (Cholesky failure or orthogonality error above 1e-10, which happens for near-square
    matrices) are redone by Householder QR. Rows are orthonormal when fan_out <= fan_in,
    columns otherwise.
    """
    n_nets = v.positive_int("n_nets", n_nets)
    fan_out, fan_in = v.positive_int("fan_out", fan_out), v.positive_int("fan_in", fan_in)
    tall = fan_out >= fan_in
    rows, cols = (fan_out, fan_in) if tall else (fan_in, fan_out)
    g = randn(n_nets, rows, cols, gen=gen)
    q, ok = g, torch.ones(n_nets, dtype=torch.bool, device=g.device)
    for _ in range(2):
        chol, info = torch.linalg.cholesky_ex(q.transpose(-2, -1) @ q)
        ok &= info == 0
        chol = torch.where(ok[:, None, None], chol, torch.eye(cols, dtype=g.dtype, device=g.device))
        q = torch.linalg.solve_triangular(chol, q.transpose(-2, -1), upper=False)
        q = q.transpose(-2, -1)
    eye = torch.eye(cols, dtype=g.dtype, device=g.device)
    ok &= ((q.transpose(-2, -1) @ q - eye).abs().amax(dim=(-2, -1)) < 1e-10)
    if not bool(ok.all()):  # ill-conditioned draws (near-square matrices): Householder QR
        bad = ~ok
        qq, rr = torch.linalg.qr(g[bad])
        q[bad] = qq * torch.sign(torch.diagonal(rr, dim1=-2, dim2=-1)).unsqueeze(-2)
    return q if tall else q.transpose(-2, -1)


def directions(n_nets: int, fan_out: int, fan_in: int, direction: Direction, *,
               gen: torch.Generator) -> torch.Tensor:
    """Unit-norm rows, shape (n_nets, fan_out, fan_in).

    ``'sphere'``: rows i.i.d. uniform on the unit sphere, the normalized rows of any isotropic
    law (He, Gaussian). ``'orthogonal'``: the rows of a Haar (semi-)orthogonal matrix,
    normalized; with fan_out <= fan_in they are orthonormal, with fan_out > fan_in (more rows
    than dimensions, no orthogonal rows exist) the matrix has orthonormal columns and its rows
    are rescaled to unit norm, as weight normalization does.
    """
    if direction == "sphere":
        return sphere_rows(n_nets, fan_out, fan_in, gen=gen)
    if direction == "orthogonal":
        q = haar_orthogonal(n_nets, fan_out, fan_in, gen=gen)
        return q if fan_out <= fan_in else unit_rows(q)
    raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")


def weight_normalized(direction: Direction, *, gain: float | None = None,
                      gamma: float = 2.0) -> Initializer:
    """An :data:`~eit.sample.laws.Initializer` for the effective weights g * W_hat.

    ``gain=None`` uses the proposed gain sqrt(gamma fan_in / fan_out); a number is a constant
    gain (``gain=1.0`` is the common practice, "He weights with g = 1"). Plug it into
    :func:`eit.sample.mlp.relu_mlp` for weight-normalized MLPs (Figure 1, top).
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    if gain is not None:
        gain = v.positive_float("gain", gain)
    gamma = v.positive_float("gamma", gamma)

    def init(n_nets: int, fan_out: int, fan_in: int, gen: torch.Generator) -> torch.Tensor:
        g = proposed_gain(fan_in, fan_out, gamma) if gain is None else gain
        return g * directions(n_nets, fan_out, fan_in, direction, gen=gen)

    init.__name__ = f"wn_{direction}_{'proposed' if gain is None else gain}"
    return init


def _vector(name: str, u) -> torch.Tensor:
    return v.tensor(name, u, ndim=1).to(device=device(), dtype=DTYPE)


def forward_layer_ratio(u: torch.Tensor, m: int, direction: Direction, *, n_nets: int,
                        gen: torch.Generator, gain: float | None = None) -> torch.Tensor:
    """||ReLU(g W_hat u)||^2 / ||u||^2 for ``n_nets`` independent layers (Theorems 1 and 5).

    ``u`` has n = fan-in entries, W_hat is (m, n); the default gain is sqrt(2n/m).
    """
    u = _vector("u", u)
    m, n_nets = v.positive_int("m", m), v.positive_int("n_nets", n_nets)
    g = proposed_gain(u.numel(), m) if gain is None else v.positive_float("gain", gain)
    w = directions(n_nets, m, u.numel(), direction, gen=gen)
    a = g * torch.matmul(w, u)
    return a.clamp_min(0).square().sum(-1) / u.square().sum()


def backward_layer_ratio(u: torch.Tensor, n: int, direction: Direction, *, n_nets: int,
                         gen: torch.Generator, gain: float = math.sqrt(2.0),
                         mask: bool = True) -> torch.Tensor:
    """||g z * (W_hat^T u)||^2 / ||u||^2 for ``n_nets`` layers (Theorems 2 and 6).

    ``u`` has m entries (the fan-out of the layer W_hat, shape (m, n)); z has i.i.d.
    Bernoulli(1/2) entries independent of W_hat. ``mask=False`` drops z (then use gain 1).
    """
    u = _vector("u", u)
    n, n_nets = v.positive_int("n", n), v.positive_int("n_nets", n_nets)
    g = v.positive_float("gain", gain)
    if not isinstance(mask, bool):
        raise TypeError(f"mask must be a bool, got {type(mask).__name__}")
    w = directions(n_nets, u.numel(), n, direction, gen=gen)
    out = g * torch.matmul(u, w)  # (n_nets, n)
    if mask:
        out = out * (rand(n_nets, n, gen=gen) < 0.5)
    return out.square().sum(-1) / u.square().sum()


# ---------------------------------------------------------------------------------------------
# Residual networks, eq. (6): h^{b+1} = h^b + F_b(h^b), F_b = FC2 o ReLU o FC1 (Appendix A.2)
# ---------------------------------------------------------------------------------------------


class _LogRatios:
    """Log-norm ratios shared by the ResNet statistics: to the input, and to the top gradient."""

    log_h: torch.Tensor
    log_grad: torch.Tensor | None
    _backward_call = "backward=True"

    @property
    def log_h_ratio(self) -> torch.Tensor:
        """log(||h^i|| / ||x||), i = 0 (the input) to the last block."""
        return self.log_h - self.log_h[0]

    @property
    def log_grad_ratio(self) -> torch.Tensor:
        """log(||dl/dh^i|| / ||dl/dh^out||), i = 0 (the input) to the last block."""
        if self.log_grad is None:
            raise ValueError(f"log_grad_ratio needs a backward pass: call {self._backward_call}")
        return self.log_grad - self.log_grad[-1]


@dataclass(frozen=True)
class ResNetStats(_LogRatios):
    """Per-block statistics of a batch of weight-normalized ResNets (natural logarithms).

    Shapes: ``(B+1, n_nets, N)`` for ``log_h`` and ``log_grad``, ``(B, n_nets, N)`` otherwise.

    * ``log_h[b]`` = log ||h^b|| (b = 0 is the input);
    * ``log_f[b]`` = log(||F_b(h^b)|| / ||h^b||), the block's gain *including* its scale;
    * ``cos_f[b]`` = cos(h^b, F_b(h^b)), the angle Theorem 3 assumes to be 90 degrees;
    * ``log_grad[b]`` = log ||dl/dh^b|| with dl/dh^B a random Gaussian error vector;
    * ``log_j[b]`` = log(||J_b^T d|| / ||d||) with d = dl/dh^{b+1}, J_b = dF_b/dh^b;
    * ``cos_j[b]`` = cos(d, J_b^T d), the angle Theorem 4 assumes to be 90 degrees.
    """

    _backward_call = "wn_resnet(backward=True)"

    log_h: torch.Tensor
    log_f: torch.Tensor
    cos_f: torch.Tensor
    log_grad: torch.Tensor | None = None
    log_j: torch.Tensor | None = None
    cos_j: torch.Tensor | None = None

    @property
    def blocks(self) -> int:
        return self.log_f.shape[0]



def _block_gains(name: str, value, blocks: int) -> list[float | None]:
    if value is None:
        return [None] * blocks
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [v.positive_float(name, value)] * blocks
    if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == blocks:
        return [v.positive_float(f"{name}[{i}]", g) for i, g in enumerate(value)]
    raise ValueError(f"{name} must be None, a positive number or {blocks} positive numbers "
                     f"(one per block), got {value!r}")


def wn_resnet(x: torch.Tensor, hidden: Sequence[int], direction: Direction, *, n_nets: int,
              gen: torch.Generator, fc1_gain=None, fc2_gain=None,
              backward: bool = False) -> ResNetStats:
    """Propagate inputs through ``n_nets`` weight-normalized ResNets (eq. 6, Appendix A.2).

    Block b maps h (width d = x.shape[-1]) to F_b(h) = g2 W2_hat ReLU(g1 W1_hat h) with
    W1_hat of shape (n_b, d), W2_hat of shape (d, n_b), n_b = ``hidden[b]``, zero biases; the
    block scale alpha is absorbed in g2 (footnote 5).

    Args:
        x: inputs ``(N, d)``, shared by all networks.
        hidden: the hidden width n_b of every block (its length is the number of blocks B).
        direction: ``'sphere'`` (normalized He/Gaussian rows) or ``'orthogonal'``.
        fc1_gain: None for the proposed sqrt(2 d / n_b), or a constant, or one per block.
        fc2_gain: None for the proposed sqrt(n_b / (B d)), or a constant, or one per block.
        backward: also backpropagate a random Gaussian error vector dl/dh^B.
    """
    x = v.tensor("x", x, ndim=2).to(device=device(), dtype=DTYPE)
    hidden = v.widths("hidden", hidden)
    n_nets = v.positive_int("n_nets", n_nets)
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    if not isinstance(backward, bool):
        raise TypeError(f"backward must be a bool, got {type(backward).__name__}")
    blocks, d = len(hidden), x.shape[-1]
    g1s = _block_gains("fc1_gain", fc1_gain, blocks)
    g2s = _block_gains("fc2_gain", fc2_gain, blocks)
    g1s = [proposed_gain(d, n) if g is None else g for g, n in zip(g1s, hidden, strict=True)]
    g2s = [proposed_gain(n, d, 1.0 / blocks) if g is None else g
           for g, n in zip(g2s, hidden, strict=True)]

    h, log_norm = _normalize(x.unsqueeze(0).expand(n_nets, -1, -1))
    log_h, log_f, cos_f, states, masks = [log_norm], [], [], [], []
    for b in range(blocks):
        states.append(gen.get_state())
        w1 = g1s[b] * directions(n_nets, hidden[b], d, direction, gen=gen)
        w2 = g2s[b] * directions(n_nets, d, hidden[b], direction, gen=gen)
        a1 = torch.matmul(h, w1.transpose(-2, -1))
        mask = a1 > 0
        f = torch.matmul(a1.clamp_min(0), w2.transpose(-2, -1))
        f_unit, log_rf = _normalize(f)
        log_f.append(log_rf)
        cos_f.append((h * f_unit).sum(-1))
        h, log_r = _normalize(h + f)
        log_norm = log_norm + log_r
        log_h.append(log_norm)
        if backward:
            masks.append(mask)
    fwd = dict(log_h=torch.stack(log_h), log_f=torch.stack(log_f), cos_f=torch.stack(cos_f))
    if not backward:
        return ResNetStats(**fwd)

    g, log_g = _normalize(randn(*h.shape, gen=gen))
    after = gen.get_state()
    log_grad, log_j, cos_j = [log_g], [], []
    for b in range(blocks - 1, -1, -1):
        gen.set_state(states[b])
        w1 = g1s[b] * directions(n_nets, hidden[b], d, direction, gen=gen)
        w2 = g2s[b] * directions(n_nets, d, hidden[b], direction, gen=gen)
        j = torch.matmul(masks[b] * torch.matmul(g, w2), w1)  # J_b^T g
        j_unit, log_rj = _normalize(j)
        log_j.append(log_rj)
        cos_j.append((g * j_unit).sum(-1))
        g, log_r = _normalize(g + j)
        log_g = log_g + log_r
        log_grad.append(log_g)
    gen.set_state(after)
    return ResNetStats(**fwd, log_grad=torch.stack(log_grad[::-1]),
                       log_j=torch.stack(log_j[::-1]), cos_j=torch.stack(cos_j[::-1]))


# ---------------------------------------------------------------------------------------------
# A trainable weight-normalized ResNet and the four initializations of Table 2
# ---------------------------------------------------------------------------------------------

Scheme = Literal["pytorch", "data_dependent", "hanin", "proposed"]
SCHEMES = ("pytorch", "data_dependent", "hanin", "proposed")


@dataclass
class WNLayer:
    """One weight-normalized affine layer: a = g * (v / ||v_i||) h + b (eq. 1), v: (out, in)."""

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
    """Input layer -> B blocks h + FC2(ReLU(FC1(h))) -> output layer, all weight-normalized."""

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
    """Salimans & Kingma (2016): set g, b so that pre-activations have mean 0, variance 1."""
    with torch.no_grad():
        t = h @ (layer.v / layer.v.norm(dim=-1, keepdim=True)).T
        mu, sd = t.mean(0), t.std(0)
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
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    d_in, width = v.positive_int("d_in", d_in), v.positive_int("width", width)
    d_out, blocks = v.positive_int("d_out", d_out), v.positive_int("blocks", blocks)
    hanin_base = v.in_interval("hanin_base", hanin_base, 0.0, 1.0, closed_hi=True)
    if scheme == "data_dependent":
        data = v.tensor("data", data, ndim=2) if data is not None else None
        if data is None or data.shape[1] != d_in:
            raise ValueError(f"data must be a (N, d_in={d_in}) batch for the data-dependent "
                             "initialization")

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
    """Weight-normalized ReLU MLP: h <- ReLU(layer(h)) on every hidden layer, then a linear head."""

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

    Random numbers are drawn from ``gen`` (:func:`eit.core.device.generator`) on its own device;
    everything else, the QR factorizations included, is computed on ``on`` (default
    :func:`eit.core.device.device`; pass :func:`eit.train.sgd.training_device` to train), so that a
    CPU generator and ``on`` = CPU give the same network on every machine. The parameters
    require gradients.
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
        tall = fan_out >= fan_in
        q, r = torch.linalg.qr(draw(fan_out, fan_in) if tall else draw(fan_in, fan_out))
        q = q * torch.sign(torch.diagonal(r)).unsqueeze(0)
        return WNLayer(q if tall else q.T, zeros + gain, zeros)

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


__all__ = ["DIRECTIONS", "MLP_SCHEMES", "SCHEMES", "WNMLP", "Direction", "MLPScheme",
           "ResNetStats", "Scheme", "WNLayer", "WNResNet",
           "backward_layer_ratio", "directions", "forward_layer_ratio", "haar_orthogonal",
           "proposed_gain",
           "unit_rows", "weight_normalized", "wn_mlp_model", "wn_resnet", "wn_resnet_model"]


# ---------------------------------------------------------------------------------------------
# Stages with shortcut connections (Section 4, "Shortcut connections"; footnote 5)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StageStats(_LogRatios):
    """Per-block log-norms of a batch of multi-stage weight-normalized ResNets.

    ``log_h[i]`` = log ||h^i|| and ``log_grad[i]`` = log ||dl/dh^i|| (shape
    ``(B_total+1, n_nets, N)``, i = 0 the input); ``boundaries[k]`` is the block index at which
    stage k ends (``boundaries[0] = 0`` is the input), ``widths[i]`` the width of h^i.
    """

    _backward_call = "wn_stage_resnet(backward=True)"

    log_h: torch.Tensor
    boundaries: tuple[int, ...]
    widths: tuple[int, ...]
    log_grad: torch.Tensor | None = None



def wn_stage_resnet(x: torch.Tensor, widths: Sequence[int], blocks: Sequence[int],
                    direction: Direction, *, n_nets: int, gen: torch.Generator,
                    gammas: Sequence[float] | None = None,
                    backward: bool = False) -> StageStats:
    """``n_nets`` weight-normalized ResNets with K stages and projection shortcuts.

    Stage k (k = 0..K-1) has residual width ``widths[k]`` and ``blocks[k]`` blocks
    F = FC2 o ReLU o FC1 (hidden width ``widths[k]``, zero biases). The first block of a stage
    whose width differs from that of its input has a *projection shortcut*:
    ``h -> P h + F(h)`` with P a weight-normalized linear layer of gain sqrt(fan_in/fan_out)
    (gamma = 1, no ReLU); other blocks have the identity shortcut ``h -> h + F(h)``. Gains as
    in Section 4: sqrt(2 fan_in/fan_out) on FC1 and sqrt(gamma_k fan_in/fan_out) on FC2, with
    gamma_k = 1/B_k (the stage-wise scaling) unless ``gammas`` gives one per stage.

    Args:
        x: inputs ``(N, d_in)``, shared by all networks.
        widths: the residual width of each stage.
        blocks: the number of blocks B_k of each stage (same length as ``widths``).
        direction: ``'sphere'`` (normalized He/Gaussian rows) or ``'orthogonal'``.
        gammas: None for 1/B_k, or one positive gamma per stage.
        backward: also backpropagate a random Gaussian error vector dl/dh^out.
    """
    x = v.tensor("x", x, ndim=2).to(device=device(), dtype=DTYPE)
    widths, blocks = v.widths("widths", widths), v.widths("blocks", blocks)
    if len(widths) != len(blocks):
        raise ValueError(f"widths and blocks must have one entry per stage, got {len(widths)} "
                         f"and {len(blocks)}")
    n_nets = v.positive_int("n_nets", n_nets)
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    if gammas is None:
        gammas = [1.0 / b for b in blocks]
    elif (isinstance(gammas, Sequence) and not isinstance(gammas, str)
          and len(gammas) == len(blocks)):
        gammas = [v.positive_float(f"gammas[{k}]", g) for k, g in enumerate(gammas)]
    else:
        raise ValueError(f"gammas must be None or {len(blocks)} positive numbers (one per "
                         f"stage), got {gammas!r}")
    if not isinstance(backward, bool):
        raise TypeError(f"backward must be a bool, got {type(backward).__name__}")

    # one spec per block: (d_in, d_out, hidden, g1, g2, projection gain or None)
    specs, d_prev = [], x.shape[-1]
    for d_k, b_k, gamma in zip(widths, blocks, gammas, strict=True):
        for i in range(b_k):
            proj = proposed_gain(d_prev, d_k, 1.0) if i == 0 and d_prev != d_k else None
            specs.append((d_prev, d_k, d_k, proposed_gain(d_prev, d_k),
                          proposed_gain(d_k, d_k, gamma), proj))
            d_prev = d_k
    boundaries = tuple(int(s) for s in torch.tensor([0, *blocks]).cumsum(0))
    block_widths = (x.shape[-1], *(s[1] for s in specs))

    def draw(spec):
        d_in, d_out, hid, g1, g2, gp = spec
        w1 = g1 * directions(n_nets, hid, d_in, direction, gen=gen)
        w2 = g2 * directions(n_nets, d_out, hid, direction, gen=gen)
        p = None if gp is None else gp * directions(n_nets, d_out, d_in, direction, gen=gen)
        return w1, w2, p

    h, log_norm = _normalize(x.unsqueeze(0).expand(n_nets, -1, -1))
    log_h, states, masks = [log_norm], [], []
    for spec in specs:
        states.append(gen.get_state())
        w1, w2, p = draw(spec)
        a1 = torch.matmul(h, w1.transpose(-2, -1))
        f = torch.matmul(a1.clamp_min(0), w2.transpose(-2, -1))
        skip = h if p is None else torch.matmul(h, p.transpose(-2, -1))
        h, log_r = _normalize(skip + f)
        log_norm = log_norm + log_r
        log_h.append(log_norm)
        if backward:
            masks.append(a1 > 0)
    if not backward:
        return StageStats(torch.stack(log_h), boundaries, block_widths)

    g, log_g = _normalize(randn(*h.shape, gen=gen))
    after = gen.get_state()
    log_grad = [log_g]
    for i in range(len(specs) - 1, -1, -1):
        gen.set_state(states[i])
        w1, w2, p = draw(specs[i])
        j = torch.matmul(masks[i] * torch.matmul(g, w2), w1)
        skip = g if p is None else torch.matmul(g, p)
        g, log_r = _normalize(skip + j)
        log_g = log_g + log_r
        log_grad.append(log_g)
    gen.set_state(after)
    return StageStats(torch.stack(log_h), boundaries, block_widths,
                      log_grad=torch.stack(log_grad[::-1]))
