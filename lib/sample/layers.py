"""Layer descriptions: one small vocabulary for every network of the book.

A network is written once, as a composition of small immutable descriptions, in the manner of
neural-tangents' ``stax``::

    net = serial(serial(Dense(100, he()), ReLU()), serial(Dense(100, he()), ReLU()))
    net = mlp([100, 100], he())                       # the same, shorter

and the same object drives the batched explicit sampler (:func:`eit.sample.engine.trace`) and,
where a closed-form law exists, the exact engines (:func:`eit.exact.engine.trace`). Both
return an :class:`eit.sample.traces.Trace` with one row per element of the *top-level*
:class:`Serial` (row 0 is the input), so a "layer" of a trace is whatever the description
groups as one element: a dense layer and its activation, a residual block, a stage.

Kinds (grouped as in ``stax``):

* linear: :class:`Dense` (any weight law of :mod:`eit.sample.laws`, optional Gaussian biases),
  :class:`WeightNorm` (``k W_hat``, with the gradient of the un-normalized weights),
  :class:`Conv` (k x k kernels, stride, zero or circular padding), :class:`Scale`;
* normalization: :class:`BatchNorm` (the features of each network normalized over its
  inputs, Meterez et al. 2024, eq. 4; optionally centred and rescaled);
* elementwise: :class:`ReLU`, :class:`LeakyReLU`, :class:`Activation` (any function: tanh,
  sin, shaped activations);
* combinators: :class:`Residual` (``shortcut(h) + scale * branch(h)``) and :class:`Serial`.

Widths: a description knows the widths it produces; the input width comes from the data.
Everywhere in the engines ``widths = [n_1, ..., n_L]`` are the widths of the layers and the
input width n_0 is ``x.shape[-1]``; a :class:`~eit.sample.traces.Trace` lists the width of each
of its rows, ``(n_0, n_1, ..., n_L)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from ..core import validate as v
from .laws import BiasLaw, Initializer, Law, RowLaw, he, proposed_gain

Shape = tuple[int, ...]

_PADDINGS = ("zeros", "circular")


class Layer:
    """Base class of the layer descriptions (immutable; compare by identity).

    ``homogeneous``: positively homogeneous of degree 1 per input (``f(c h) = c f(h)`` for
    c > 0), so that the engines can carry every input's scale in log space. ``mixes_inputs``:
    the layer couples the inputs of a network (batch normalization).

    Examples
    --------
    >>> ReLU().homogeneous, BatchNorm().homogeneous
    (True, False)
    """

    homogeneous: bool = True
    mixes_inputs: bool = False
    #: Feature dimensions the layer expects (1 for vectors, 3 for images); None: any.
    in_ndim: int | None = None

    def out_shape(self, shape: Shape, stream: Shape | None = None) -> Shape:
        """The feature shape of the output for an input of feature shape ``shape``.

        ``stream`` is the feature shape at the input of the enclosing residual block (what a
        ``Dense(None)`` in its branch maps back to), or None outside blocks.
        """
        return shape

    def leaves(self) -> list[Layer]:
        """The non-combinator layers, in the order the forward pass meets them."""
        return [self]


def _positive_int(name: str, value) -> int:
    return v.positive_int(name, value)


def _feature_vector(layer: Layer, shape: Shape) -> int:
    if len(shape) != 1:
        raise ValueError(f"{type(layer).__name__} acts on vectors, got feature shape {shape}")
    return shape[0]


@dataclass(frozen=True, eq=False)
class Dense(Layer):
    """``a = W h (+ b)``: a fully connected layer of ``width`` units.

    Parameters
    ----------
    width : int or None
        The output width n_l; None: the width of the enclosing residual block's stream (the
        last layer of a branch maps back to it), or the input width outside a block.
    law : Initializer
        The weight law, called as ``law(n_nets, width, fan_in, gen)`` (default He, fan-in);
        a :class:`eit.sample.laws.Law` also tells the exact engines what it is.
    bias : BiasLaw or None
        Gaussian biases (:func:`eit.sample.laws.gaussian_bias`), or None for zero biases.

    Examples
    --------
    >>> Dense(10).out_shape((4,))
    (10,)
    """

    width: int | None = None
    law: Initializer = field(default_factory=he)
    bias: BiasLaw | None = None
    in_ndim = 1

    def __post_init__(self):
        if self.width is not None:
            _positive_int("width", self.width)
        if not callable(self.law):
            raise TypeError(f"law must be callable (an Initializer), got "
                            f"{type(self.law).__name__}")
        if self.bias is not None and not isinstance(self.bias, BiasLaw):
            raise TypeError("bias must be None or a BiasLaw (eit.sample.laws.gaussian_bias), "
                            f"got {type(self.bias).__name__}")

    @property
    def homogeneous(self) -> bool:  # type: ignore[override]
        return self.bias is None

    def out_shape(self, shape: Shape, stream: Shape | None = None) -> Shape:
        n = _feature_vector(self, shape)
        if self.width is not None:
            return (self.width,)
        return (n,) if stream is None else (_feature_vector(self, stream),)


@dataclass(frozen=True, eq=False)
class WeightNorm(Layer):
    """``a = k W_hat h``: a weight-normalized layer (Arpit & Bengio 2019, eqs. 18-19).

    ``W_hat`` has the normalized rows of ``rows`` (:data:`eit.sample.laws.LAWS`); the gain
    is ``gain`` (a number, or a rule ``gain(fan_in, fan_out)``), by default the proposed
    ``sqrt(gamma fan_in / fan_out)``. ``row_norm`` is the norm c of the un-normalized rows W_i
    (Proposition 3), or None to keep the law's own norms; it enters only the gradient with
    respect to the un-normalized weights (eqs. 27-28), which the backward pass records as
    ``log_grad_v``.

    Examples
    --------
    >>> round(WeightNorm(8).gain_of(32) ** 2, 12)
    8.0
    """

    width: int
    rows: RowLaw = "gaussian"
    gain: float | Callable[[int, int], float] | None = None
    gamma: float = 2.0
    row_norm: float | None = 1.0
    in_ndim = 1

    def __post_init__(self):
        from .laws import LAWS

        _positive_int("width", self.width)
        if self.rows not in LAWS:
            raise ValueError(f"rows must be one of {LAWS}, got {self.rows!r}")
        if self.gain is not None and not callable(self.gain):
            v.positive_float("gain", self.gain)
        v.positive_float("gamma", self.gamma)
        if self.row_norm is not None:
            v.positive_float("row_norm", self.row_norm)

    def gain_of(self, fan_in: int) -> float:
        """The gain k of this layer for a given fan-in."""
        if self.gain is None:
            return proposed_gain(fan_in, self.width, self.gamma)
        k = self.gain(fan_in, self.width) if callable(self.gain) else self.gain
        return v.positive_float("gain", float(k))

    def out_shape(self, shape: Shape, stream: Shape | None = None) -> Shape:
        _feature_vector(self, shape)
        return (self.width,)


@dataclass(frozen=True, eq=False)
class Conv(Layer):
    """A k x k convolution to ``channels`` channels, no bias.

    The kernels are drawn by ``law(n_nets, channels, C_in k^2, gen)`` (fan-in C_in k^2, the
    remark of Hanin & Rolnick 2018, section 3.5) and reshaped to ``(channels, C_in, k, k)``.
    ``padding``: ``'zeros'`` (PyTorch/Keras "same") or ``'circular'`` (every output pixel sees
    a full window). Input and output feature shapes are ``(C, H, W)``.

    Examples
    --------
    >>> Conv(4, stride=2).out_shape((3, 8, 8))
    (4, 4, 4)
    """

    channels: int
    kernel: int = 3
    law: Initializer = field(default_factory=he)
    padding: str = "zeros"
    stride: int = 1
    in_ndim = 3

    def __post_init__(self):
        _positive_int("channels", self.channels)
        _positive_int("kernel", self.kernel)
        if self.kernel % 2 == 0:
            raise ValueError(f"kernel must be odd (centred windows), got {self.kernel}")
        if self.padding not in _PADDINGS:
            raise ValueError(f"padding must be one of {_PADDINGS}, got {self.padding!r}")
        _positive_int("stride", self.stride)
        if not callable(self.law):
            raise TypeError(f"law must be callable (an Initializer), got "
                            f"{type(self.law).__name__}")

    def out_shape(self, shape: Shape, stream: Shape | None = None) -> Shape:
        if len(shape) != 3:
            raise ValueError(f"Conv acts on images (C, H, W), got feature shape {shape}")
        _, h, w = shape
        return (self.channels, -(-h // self.stride), -(-w // self.stride))


@dataclass(frozen=True, eq=False)
class Scale(Layer):
    """``h -> gain * h`` (a fixed positive gain, e.g. the alpha_l of shaped networks).

    Examples
    --------
    >>> Scale(0.5).gain
    0.5
    """

    gain: float

    def __post_init__(self):
        v.positive_float("gain", self.gain)


@dataclass(frozen=True, eq=False)
class BatchNorm(Layer):
    """Batch normalization of each network's features over its N inputs, no affine part.

    With the state of a network written as ``X`` (features x inputs, the paper's d x n), the
    layer is ``BN(X) = diag(X X^T)^{-1/2} X`` (Meterez et al. 2024, eq. 4): every feature has
    unit norm over the batch. ``centered=True`` subtracts each feature's batch mean first;
    ``standard=True`` multiplies by sqrt(N) (unit variance per feature, the standard BN).
    Invariant to the scale of its input, so the engines apply it to any per-network rescaling.
    The layer records ``isometry_gap``, phi of its output (eq. 5), per network.

    Examples
    --------
    >>> BatchNorm(centered=True).mixes_inputs
    True
    """

    centered: bool = False
    standard: bool = False
    homogeneous = False
    mixes_inputs = True

    def __post_init__(self):
        for name in ("centered", "standard"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")


@dataclass(frozen=True, eq=False)
class ReLU(Layer):
    """``h -> max(h, 0)``.

    Examples
    --------
    >>> ReLU().homogeneous
    True
    """


@dataclass(frozen=True, eq=False)
class LeakyReLU(Layer):
    """``h -> h`` for h >= 0, ``slope * h`` otherwise (slope 1 is the identity).

    Examples
    --------
    >>> LeakyReLU(0.2).slope
    0.2
    """

    slope: float

    def __post_init__(self):
        v.in_interval("slope", self.slope, 0.0, 1.0, closed_hi=True)


@dataclass(frozen=True, eq=False)
class Activation(Layer):
    """An elementwise function ``fn`` (tanh, sin, ...), not positively homogeneous.

    ``derivative`` (optional) gives fn' for the backward pass; without it the engine
    differentiates ``fn`` by autograd.

    Examples
    --------
    >>> tanh().name
    'tanh'
    """

    fn: Callable[[torch.Tensor], torch.Tensor]
    name: str = "activation"
    derivative: Callable[[torch.Tensor], torch.Tensor] | None = None
    homogeneous = False

    def __post_init__(self):
        if not callable(self.fn):
            raise TypeError(f"fn must be callable, got {type(self.fn).__name__}")
        if self.derivative is not None and not callable(self.derivative):
            raise TypeError("derivative must be None or callable")


def tanh() -> Activation:
    """The tanh activation.

    Examples
    --------
    >>> float(tanh().fn(torch.zeros(1)))
    0.0
    """
    return Activation(torch.tanh, "tanh", lambda h: 1 - torch.tanh(h).square())


def sin() -> Activation:
    """The sine activation.

    Examples
    --------
    >>> sin().name
    'sin'
    """
    return Activation(torch.sin, "sin", torch.cos)


@dataclass(frozen=True, eq=False)
class Residual(Layer):
    """``h -> shortcut(h) + scale * branch(h)`` (identity shortcut when ``shortcut`` is None).

    The residual module of Hanin & Rolnick (2018), eq. (1), with ``scale`` = eta_l; the blocks
    of Arpit, Campos & Bengio (2019), eq. (6), with a projection ``shortcut`` between stages.
    The layer records ``log_branch`` = log(||scale branch(h)|| / ||h||) and ``cos_branch`` =
    cos(shortcut(h), branch(h)) in the forward pass, ``log_branch_grad`` =
    log(||J^T g|| / ||g||) and ``cos_branch_grad`` = cos(J_s^T g, J^T g) in the backward pass
    (J the scaled branch's Jacobian, J_s the shortcut's, g the gradient at the block's output).

    Examples
    --------
    >>> Residual(serial(Dense(4), ReLU()), 0.5).out_shape((4,))
    (4,)
    """

    branch: Layer
    scale: float = 1.0
    shortcut: Layer | None = None

    def __post_init__(self):
        if not isinstance(self.branch, Layer):
            raise TypeError(f"branch must be a Layer, got {type(self.branch).__name__}")
        if isinstance(self.scale, bool) or not isinstance(self.scale, (int, float)) or \
                not math.isfinite(self.scale) or self.scale < 0:
            raise ValueError(f"scale must be a finite number >= 0, got {self.scale!r}")
        if self.shortcut is not None and not isinstance(self.shortcut, Layer):
            raise TypeError(f"shortcut must be None or a Layer, got "
                            f"{type(self.shortcut).__name__}")

    @property
    def homogeneous(self) -> bool:  # type: ignore[override]
        parts = [self.branch] + ([self.shortcut] if self.shortcut is not None else [])
        return all(leaf.homogeneous for p in parts for leaf in p.leaves())

    @property
    def in_ndim(self) -> int | None:  # type: ignore[override]
        return _first_ndim([self.branch])

    def out_shape(self, shape: Shape, stream: Shape | None = None) -> Shape:
        out = self.branch.out_shape(shape, shape)
        skip = shape if self.shortcut is None else self.shortcut.out_shape(shape, shape)
        if out != skip:
            raise ValueError(f"the branch maps {shape} to {out} but the shortcut to {skip}: "
                             "give a shortcut that matches the branch")
        return out

    def leaves(self) -> list[Layer]:
        return [self]


def _first_ndim(layers: Sequence[Layer]) -> int | None:
    for layer in layers:
        nd = layer.in_ndim
        if nd is not None:
            return nd
    return None


@dataclass(frozen=True, eq=False)
class Serial(Layer):
    """The composition ``layers[-1] o ... o layers[0]``.

    At the top level of a description its elements are the rows of a trace.

    Examples
    --------
    >>> net = mlp([5, 7], he())
    >>> net.depth, net.widths(3)
    (2, (3, 5, 7))
    """

    layers: tuple[Layer, ...]

    def __post_init__(self):
        if not isinstance(self.layers, tuple) or not self.layers:
            raise ValueError("layers must be a non-empty tuple of Layers")
        for i, layer in enumerate(self.layers):
            if not isinstance(layer, Layer):
                raise TypeError(f"layers[{i}] must be a Layer, got {type(layer).__name__}")

    @property
    def homogeneous(self) -> bool:  # type: ignore[override]
        return all(leaf.homogeneous for leaf in self.leaves())

    @property
    def in_ndim(self) -> int | None:  # type: ignore[override]
        return _first_ndim(self.layers)

    @property
    def depth(self) -> int:
        """The number of elements (rows of a trace, less the input row)."""
        return len(self.layers)

    def out_shape(self, shape: Shape, stream: Shape | None = None) -> Shape:
        for layer in self.layers:
            shape = layer.out_shape(shape, stream)
        return shape

    def shapes(self, shape: Shape) -> list[Shape]:
        """The feature shape of every row: the input, then the output of every element."""
        out = [tuple(shape)]
        for layer in self.layers:
            out.append(layer.out_shape(out[-1]))
        return out

    def widths(self, n0: int | Shape) -> tuple[int, ...]:
        """``(n_0, n_1, ..., n_L)``: the number of features of every row."""
        shape = (n0,) if isinstance(n0, int) else tuple(n0)
        return tuple(math.prod(s) for s in self.shapes(shape))

    def leaves(self) -> list[Layer]:
        return [leaf for layer in self.layers for leaf in layer.leaves()]


def serial(*layers: Layer) -> Serial:
    """:class:`Serial` of the given layers.

    Examples
    --------
    >>> serial(Dense(3), ReLU()).depth
    2
    """
    return Serial(tuple(layers))


def as_serial(net: Layer) -> Serial:
    """``net`` itself if it is a :class:`Serial`, else a one-element one.

    Examples
    --------
    >>> as_serial(ReLU()).depth
    1
    """
    if not isinstance(net, Layer):
        raise TypeError(f"net must be a Layer description, got {type(net).__name__}")
    return net if isinstance(net, Serial) else Serial((net,))


def mlp(widths: Sequence[int], law: Initializer | None = None, *, activation: Layer | None = None,
        bias: BiasLaw | None = None) -> Serial:
    """A fully connected network, one element ``serial(Dense(n_l, law), activation)`` per layer.

    Parameters
    ----------
    widths : sequence of int
        ``[n_1, ..., n_L]`` (the input width comes from the data).
    law : Initializer
        The weight law of every layer (default He, fan-in).
    activation : Layer
        Default :class:`ReLU`.
    bias : BiasLaw or None
        Gaussian biases of every layer.

    Returns
    -------
    Serial
        L elements.

    References
    ----------
    Arpit & Bengio (2019), eq. (1); Hanin & Rolnick (2018), eq. (3).

    Examples
    --------
    >>> mlp([4, 4, 2]).widths(3)
    (3, 4, 4, 2)
    """
    widths = v.widths("widths", widths)
    law = he() if law is None else law
    if activation is not None and not isinstance(activation, Layer):
        raise TypeError(f"activation must be None or a Layer (eit.sample.layers), got "
                        f"{type(activation).__name__}")
    act = ReLU() if activation is None else activation
    return Serial(tuple(serial(Dense(w, law, bias), act) for w in widths))


def relu_block(law: Initializer | None = None) -> Serial:
    """``h -> ReLU(W h)`` with W square: the single-layer residual module (default He).

    Examples
    --------
    >>> relu_block().out_shape((5,))
    (5,)
    """
    return serial(Dense(None, he() if law is None else law), ReLU())


__all__ = ["Activation", "BatchNorm", "Conv", "Dense", "Law", "Layer", "LeakyReLU", "ReLU",
           "Residual", "Scale", "Serial", "Shape", "WeightNorm", "as_serial", "mlp",
           "relu_block", "serial", "sin", "tanh"]
