"""MLPs with standard batch normalization, plain and residual, at initialization.

Appendix H (Figure H5) and Appendix J (Figure J1) of Meterez et al. (2024) leave the theory's
simplified BN (eq. 4) and use PyTorch's modules: every feature (row of ``X in R^{d x n}``) is
centred over the batch and scaled to unit variance (:func:`bn_standard`, no affine parameters,
no epsilon). Two networks:

* plain: ``X_{l+1} = act(gain * BN(W_l X_l))`` (eq. 11 with a constant gain);
* residual: ``X_{l+1} = X_l + act(gain * BN(W_l X_l))``.

With weights Haar-orthogonal or Gaussian (variance 1/d). For many networks at once
(``n_nets``) this module measures the isometry gap of the representations and the log-norm of
the first layer's gradient for the linear read-out loss ``L = <R, X_L>_F`` (``||R||_F = 1``,
1-Lipschitz), as tables ``(len(depths), n_nets)`` (depth first, then the networks, the axis
order of the engines' traces). The networks are layer descriptions (:func:`standard_bn_net`, on
:func:`eit.models.batchnorm.shaped_net`, the residual one with ``Residual(branch, 1.0)``) run
by the explicit engine (:mod:`eit.sample.engine`): the gap is an observer of its states, the
gradient its log-space backward pass.

Mean reduction makes the n samples of a batch sum to zero, so with n <= d the sample Gram
matrix ``X^T X`` is singular; this module measures the gap of the *feature* Gram matrix
``X X^T`` (:func:`feature_gap`), well defined for n >= d + 1.

References
----------
A. Meterez et al., "Towards training without depth limits: batch normalization without
gradient explosion", ICLR 2024, Appendices H and J.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from ..core import validate as v
from ..core.device import DTYPE, device
from ..core.scaling import SAFE_EXPONENT, rescaled
from ..sample.engine import trace
from ..sample.layers import Residual, Serial
from .batchnorm import first_layer_grads, readout_pass, shaped_net
from .bn_chain import batch_of_state

__all__ = ["bn_standard", "feature_gap", "standard_bn_net", "representation_gaps",
           "first_layer_grad_lognorms"]

Activation = Callable[[torch.Tensor], torch.Tensor]


def bn_standard(x: torch.Tensor) -> torch.Tensor:
    """Each row of each (d, n) matrix centred over the batch and scaled to unit variance.

    Rows of any finite scale (BN is scale invariant; an exact power-of-two rescaling keeps
    their norms in range); an inf or NaN gives NaN in its row.

    Raises
    ------
    TypeError
        ``x`` is not a floating-point tensor.
    ValueError
        A row is constant over the batch (zero variance), where BN is undefined.

    Examples
    --------
    >>> bn_standard(torch.tensor([[1.0, 3.0]], dtype=torch.float64))
    tensor([[-1.,  1.]], dtype=torch.float64)
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.ndim < 1:
        raise TypeError("x must be a floating-point torch.Tensor (..., d, n)")
    x, _ = rescaled(x, x.ndim - 1)
    h = x - x.mean(dim=-1, keepdim=True)
    norms = h.norm(dim=-1, keepdim=True)
    if (norms == 0).any():
        raise ValueError("x: a feature is constant over the batch: BN is undefined")
    return math.sqrt(x.shape[-1]) * h / norms


def feature_gap(x: torch.Tensor) -> torch.Tensor:
    """phi of the feature Gram matrix: log(tr(X X^T)/d) - (1/d) log det(X X^T), (..., d, n).

    Zero exactly when the d rows are orthogonal with equal norms; +inf when they are linearly
    dependent (always the case for n < d, and for a zero batch). Batches of any finite scale
    (the gap is scale invariant; an exact power-of-two rescaling keeps them in range).

    Examples
    --------
    >>> import torch
    >>> float(feature_gap(torch.eye(2, 3, dtype=torch.float64)))
    0.0
    """
    if not isinstance(x, torch.Tensor) or x.ndim < 2:
        raise TypeError("x must be a torch.Tensor of matrices (..., d, n)")
    x = v.tensor("x", x, ndim=x.ndim)
    x, _ = rescaled(x, x.ndim - 2)
    gram = x @ x.transpose(-2, -1)
    d = gram.shape[-1]
    if x.shape[-1] < d:  # rank <= n < d by construction
        return torch.full(x.shape[:-2], math.inf, dtype=x.dtype, device=x.device)
    sign, logdet = torch.linalg.slogdet(gram)
    logdet = torch.where(sign > 0, logdet, torch.full_like(logdet, -math.inf))
    trace = torch.diagonal(gram, dim1=-2, dim2=-1).sum(-1)
    gap = torch.log(trace / d) - logdet / d
    return torch.where(trace > 0, gap, torch.full_like(gap, math.inf))   # zero rows: dependent


def standard_bn_net(d: int, depth: int, *, activation: Activation, gain: float = 1.0,
                    weights: str = "orthogonal", residual: bool = False) -> Serial:
    """``X_{l+1} = act(gain * BN(W_l X_l))``, plus ``X_l`` when ``residual``, as a description.

    The shaped network of :func:`eit.models.batchnorm.shaped_net` with a constant gain
    (``Dense -> BatchNorm(centered, standard) -> Scale -> Activation``, one element per
    layer); with ``residual`` every element is the branch of a ``Residual(branch, 1.0)``.

    Parameters
    ----------
    d : int
        The width (the number of features).
    depth : int
        The number of layers.
    activation : callable
        The elementwise activation.
    gain : float
        The gain before the activation, in [2^-400, 2^400] (where the squared norms of the
        activation's input stay float64 numbers).
    weights : str
        ``'orthogonal'`` (Haar) or ``'gaussian'`` (N(0, 1/d) entries).
    residual : bool
        Identity shortcuts around every layer.

    Returns
    -------
    Serial
        ``depth`` elements.

    References
    ----------
    Meterez et al. (2024), eq. (11), Appendices H and J.

    Examples
    --------
    >>> net = standard_bn_net(4, 3, activation=torch.tanh, residual=True)
    >>> net.depth, type(net.layers[0]).__name__
    (3, 'Residual')
    """
    depth = v.positive_int("depth", depth)
    gain = _check(activation, gain, residual)
    plain = shaped_net(d, [gain] * depth, activation, weights=weights)
    if not residual:
        return plain
    return Serial(tuple(Residual(element, 1.0) for element in plain.layers))


def _feature_gap_of_state(h: torch.Tensor, log_r: torch.Tensor) -> torch.Tensor:
    """The engine observer of :func:`feature_gap` (the state is X^T)."""
    return feature_gap(batch_of_state(h, log_r).transpose(-2, -1))


def _inputs(x0, n_nets: int) -> torch.Tensor:
    x = v.per_network("x0", x0, n_nets)
    if bool((x == x[..., :1]).all(-1).all(-1).any()):
        raise ValueError("x0 must not have all its samples equal for some network: every "
                         "feature of W_0 X_0 is then constant over the batch, where BN is "
                         "undefined")
    return x.to(device=device(), dtype=DTYPE)


def _check(activation, gain, residual) -> float:
    if not callable(activation):
        raise TypeError("activation must be callable")
    if not isinstance(residual, bool):
        raise TypeError(f"residual must be a bool, got {type(residual).__name__}")
    gain = v.positive_float("gain", gain)
    if not 2.0**-SAFE_EXPONENT <= gain <= 2.0**SAFE_EXPONENT:
        raise ValueError(f"gain must lie in [2^-{SAFE_EXPONENT}, 2^{SAFE_EXPONENT}], got "
                         f"{gain!r}: beyond, the activation's input gain * BN(W X) leaves the "
                         "range where its squared norms are float64 numbers")
    return gain


def representation_gaps(x0: torch.Tensor, depths: Sequence[int], *, n_nets: int,
                        gen: torch.Generator, activation: Activation, gain: float = 1.0,
                        weights: str = "orthogonal", residual: bool = False) -> torch.Tensor:
    """:func:`feature_gap` of ``X_L`` for each depth L in ``depths``.

    One deep network per ``n_nets`` (:func:`standard_bn_net`), run by the explicit engine with
    the gap as an observer of every state; depth L is the state after L layers.

    Parameters
    ----------
    x0 : torch.Tensor
        One input batch (d, n) or one per network (n_nets, d, n); n >= d + 1 for a finite
        gap.
    depths : sequence of int
        The depths L (positive).
    n_nets : int
        The number of networks.
    gen : torch.Generator
        The random generator.
    activation, gain, weights, residual
        The network (:func:`standard_bn_net`).

    Returns
    -------
    torch.Tensor
        ``(len(depths), n_nets)``: row j is depth ``depths[j]``.

    References
    ----------
    Meterez et al. (2024), eq. (5) and Figure H5.

    Examples
    --------
    >>> from eit.core.device import randn
    >>> from eit.core.seeds import generator
    >>> x0 = randn(3, 4, gen=generator(0))
    >>> representation_gaps(x0, [1, 5], n_nets=3, gen=generator(1),
    ...                     activation=torch.tanh).shape
    torch.Size([2, 3])
    """
    ds = v.widths("depths", depths)
    n_nets = v.positive_int("n_nets", n_nets)
    x = _inputs(x0, n_nets)
    net = standard_bn_net(x.shape[1], max(ds), activation=activation, gain=gain,
                          weights=weights, residual=residual)
    t = trace(net, x.transpose(-2, -1), n_nets=n_nets, gen=gen,
              observe={"gap": _feature_gap_of_state})
    return t.observed["gap"][ds]


def first_layer_grad_lognorms(x0: torch.Tensor, depths: Sequence[int], *, n_nets: int,
                              gen: torch.Generator, activation: Activation, gain: float = 1.0,
                              weights: str = "orthogonal", residual: bool = False
                              ) -> torch.Tensor:
    """log ||dL/dW_0||_F for the network truncated at each depth L in ``depths``.

    Loss ``L = <R, X_L>_F`` with ``R`` Gaussian, ``||R||_F = 1``, one per network, drawn after
    the weights; depth L uses the first L layers of one deep network per ``n_nets``
    (:func:`standard_bn_net`). One forward pass of the explicit engine, one log-space backward
    pass per depth, recording the first dense layer's ``log_grad_w_batch``.

    Parameters
    ----------
    x0 : torch.Tensor
        One input batch (d, n) or one per network (n_nets, d, n).
    depths : sequence of int
        The depths L (positive).
    n_nets : int
        The number of networks.
    gen : torch.Generator
        The random generator.
    activation, gain, weights, residual
        The network (:func:`standard_bn_net`).

    Returns
    -------
    torch.Tensor
        ``(len(depths), n_nets)``: row j is depth ``depths[j]``.

    Raises
    ------
    ValueError
        A batch with all samples equal, or of rank below 2 after centring (then the gradient
        is exactly 0), or a bad argument.

    References
    ----------
    Meterez et al. (2024), Figures H5 and J1.

    Examples
    --------
    >>> from eit.core.device import randn
    >>> from eit.core.seeds import generator
    >>> x0 = randn(3, 4, gen=generator(0))
    >>> first_layer_grad_lognorms(x0, [1, 3], n_nets=3, gen=generator(1),
    ...                           activation=torch.tanh, residual=True).shape
    torch.Size([2, 3])
    """
    ds = v.widths("depths", depths)
    n_nets = v.positive_int("n_nets", n_nets)
    x = _inputs(x0, n_nets)
    batches = x[:1] if x0.ndim == 2 else x           # a shared batch is checked once
    if bool((torch.linalg.matrix_rank(batches - batches.mean(-1, keepdim=True)) < 2).any()):
        # centred X_0 = a b^T: every row of BN(W_0 X_0) is +-b^T/|b| whatever W_0
        raise ValueError("x0 must have rank >= 2 after centring (every network): on a batch of "
                         "rank <= 1 the first layer's gradient is exactly 0")
    net = standard_bn_net(x.shape[1], max(ds), activation=activation, gain=gain,
                          weights=weights, residual=residual)
    return first_layer_grads(*readout_pass(net, x, n_nets=n_nets, gen=gen, tops=ds), ds)
