"""Batch normalization without mean reduction, the isometry gap, and batched BN MLPs.

Meterez et al. (2024) study ``X_{l+1} = BN(W_l X_l)`` (eq. 3) on a batch ``X in R^{d x n}``
(rows: features, columns: the n samples) with the BN of eq. (4),
``BN(X) = diag(X X^T)^{-1/2} X``: every *row* (feature) is scaled to unit norm over the batch.
The isometry gap (eq. 5) is computed from the Gram matrix of the samples ``X^T X`` (n x n):

    phi(X) = log( tr(X^T X) / n ) - (1/n) log det(X^T X)  >= 0,

(the paper takes n = d), the log of the ratio of the arithmetic to the geometric mean of the
eigenvalues; it is +inf when the samples are linearly dependent.

The networks are layer descriptions (:func:`bn_net`, :func:`shaped_net`: ``Dense -> [act] ->
BatchNorm`` elements of :mod:`eit.sample.layers`) run by the explicit engine
(:mod:`eit.sample.engine`), whose state of a network is ``X^T`` (samples x features). The
functions here keep the paper's matrices ``(d, n)`` (a batch per network ``(n_nets, d, n)``)
at their inputs and return per-network tables in the axis order of the engine's traces
(:class:`~eit.sample.traces.Trace`): the depth-like axes first, then the networks, e.g.
``(depth + 1, n_nets)`` or ``(len(depths), n_nets)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Literal

import torch

from ..core import validate as v
from ..core.device import DTYPE, device
from ..core.scaling import SAFE_EXPONENT, rescaled
from ..sample.engine import Pass, forward, trace
from ..sample.engine import isometry_gap as engine_isometry_gap
from ..sample.laws import (
    gaussian_fixed,
    haar_orthogonal,
    orthogonal,
    standard_normal,
    standard_uniform,
)
from ..sample.layers import Activation as ActivationLayer
from ..sample.layers import BatchNorm, Dense, Layer, Scale, Serial, as_serial, serial

Weights = Literal["orthogonal", "gaussian"]
Activation = Callable[[torch.Tensor], torch.Tensor]


def _matrices(name: str, x) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim < 2:
        raise ValueError(f"{name} must have at least 2 dimensions (..., d, n), got shape "
                         f"{tuple(x.shape)}")
    return v.tensor(name, x, ndim=x.ndim)


def _ints(name: str, value) -> list[int]:
    """A non-empty sequence of positive ints (depths, tops), given as any iterable."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a non-empty sequence of positive ints, got "
                        f"{type(value).__name__}")
    return v.widths(name, list(value))


def _ldexp(x: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """``x * 2^e`` exactly (in two factors, each within float64's range); ``e`` broadcasts."""
    half = e.div(2, rounding_mode="floor")
    return torch.ldexp(torch.ldexp(x, half.to(x.dtype)), (e - half).to(x.dtype))


def _nonzero_matrices(name: str, x: torch.Tensor) -> None:
    """Refuse a zero matrix ``(d, n)`` in a batch (a scale-invariant quantity is 0/0 there)."""
    if bool((x.flatten(-2) == 0).all(dim=-1).any()):
        raise ValueError(f"{name} holds a zero matrix, where this quantity is undefined (0/0)")


def bn(x: torch.Tensor) -> torch.Tensor:
    """BN of eq. (4): each row of each (d, n) matrix divided by its Euclidean norm.

    Examples
    --------
    >>> bn(torch.tensor([[3.0, 4.0]], dtype=torch.float64))
    tensor([[0.6000, 0.8000]], dtype=torch.float64)
    """
    x = _matrices("x", x)
    x = rescaled(x, x.ndim - 1)[0]      # rows of any scale (bit for bit at ordinary scales)
    norms = x.norm(dim=-1, keepdim=True)
    if (norms == 0).any():
        raise ValueError("x has a zero row: BN(x) is undefined")
    return x / norms


def bn_centered(x: torch.Tensor) -> torch.Tensor:
    """Standard BN without affine parameters: each row centred over the batch, then scaled to
    unit norm (the variant of the paper's Figure H6).

    Examples
    --------
    >>> bn_centered(torch.tensor([[1.0, 3.0]], dtype=torch.float64))
    tensor([[-0.7071,  0.7071]], dtype=torch.float64)
    """
    x = _matrices("x", x)
    return bn(x - x.mean(dim=-1, keepdim=True))


def gram_eigenvalues(x: torch.Tensor) -> torch.Tensor:
    """Eigenvalues of X X^T (ascending), shape (..., d): the lambda_k of Theorem 3.

    Examples
    --------
    >>> gram_eigenvalues(2 * torch.eye(2, dtype=torch.float64))
    tensor([4., 4.], dtype=torch.float64)
    """
    x = _matrices("x", x)
    y, e = rescaled(x, x.ndim - 2)      # one power of two per matrix: exact
    lam = _ldexp(torch.linalg.eigvalsh(y @ y.transpose(-2, -1)), 2 * e.unsqueeze(-1))
    if not bool(torch.isfinite(lam).all()):
        raise ValueError("x is too large: the eigenvalues of X X^T exceed float64")
    return lam


def isometry_gap(x: torch.Tensor) -> torch.Tensor:
    """phi(X) of eq. (5) for each (d, n) matrix; +inf where the n columns are linearly
    dependent (numerical rank of X below n, with torch's default tolerance).

    phi is invariant under scaling, and is computed at any scale; it is undefined (0/0) for a
    zero matrix, which raises.

    Examples
    --------
    >>> isometry_gap(torch.diag(torch.tensor([1.0, 2.0], dtype=torch.float64)))
    tensor(0.2231, dtype=torch.float64)
    """
    x = _matrices("x", x)
    _nonzero_matrices("x", x)
    x = rescaled(x, x.ndim - 2)[0]      # scale-invariant: bit for bit at ordinary scales
    flat = x.reshape(-1, *x.shape[-2:]).transpose(-2, -1)     # (batch, n samples, d)
    return engine_isometry_gap(flat).reshape(x.shape[:-2])


def isometry(x: torch.Tensor) -> torch.Tensor:
    """I(X) = exp(-phi(X)) in [0, 1]: the ratio of geometric to arithmetic mean eigenvalue.

    Examples
    --------
    >>> isometry(torch.eye(3, dtype=torch.float64))
    tensor(1., dtype=torch.float64)
    """
    return torch.exp(-isometry_gap(x))


def row_norm_factor(x: torch.Tensor) -> torch.Tensor:
    """1 + variance/mean^2 of the row norms ||X_j.|| (Lemma B.1, eq. 12; population variance),
    which equals d sum_j ||X_j.||^2 / (sum_j ||X_j.||)^2.

    Examples
    --------
    >>> row_norm_factor(torch.eye(2, dtype=torch.float64))
    tensor(1., dtype=torch.float64)
    """
    x = _matrices("x", x)
    _nonzero_matrices("x", x)
    x = rescaled(x, x.ndim - 2)[0]      # scale-invariant: bit for bit at ordinary scales
    r = x.norm(dim=-1)
    return (r.square().mean(dim=-1)) / r.mean(dim=-1).square()


def _law(weights: str, d: int):
    if v.choice("weights", weights, ("orthogonal", "gaussian")) == "orthogonal":
        return orthogonal()
    return gaussian_fixed(1.0 / d)


def _activation(activation) -> ActivationLayer | None:
    if activation is None:
        return None
    if not callable(activation):
        raise TypeError(f"activation must be callable, got {type(activation).__name__}")
    return ActivationLayer(activation, getattr(activation, "__name__", "activation"))


def bn_net(d: int, depth: int, *, weights: Weights = "orthogonal",
           activation: Activation | None = None, centered: bool = False) -> Serial:
    """``X_{l+1} = BN(act(W_l X_l))`` (eq. 3) as a layer description, ``depth`` elements.

    Examples
    --------
    >>> bn_net(4, 3).depth
    3
    """
    d, depth = v.positive_int("d", d), v.positive_int("depth", depth)
    if not isinstance(centered, bool):
        raise TypeError(f"centered must be a bool, got {type(centered).__name__}")
    act = _activation(activation)
    parts = [Dense(d, _law(weights, d))] + ([act] if act is not None else [])
    element = serial(*parts, BatchNorm(centered=centered))
    return Serial((element,) * depth)


def shaped_net(d: int, gains: Sequence[float], activation: Activation, *,
               weights: Weights = "orthogonal") -> Serial:
    """The shaped network of eq. (11), ``X_{l+1} = act(alpha_l BN_std(W_l X_l))``, one element
    per gain (standard BN: centred, unit variance per feature).

    Examples
    --------
    >>> shaped_net(4, [1.0, 0.5], torch.tanh).depth
    2
    """
    d = v.positive_int("d", d)
    gains = v.real_sequence("gains", gains, positive=True)
    act = _activation(activation)
    if act is None:
        raise TypeError("activation must be callable, got None")
    return Serial(tuple(serial(Dense(d, _law(weights, d)), BatchNorm(centered=True, standard=True),
                               Scale(g), act) for g in gains))


def _bn_batch(name: str, x: torch.Tensor, *, centered: bool = False,
              activation=None) -> torch.Tensor:
    """Refuse batches ``(n_nets, d, n)`` where the BN networks are undefined.

    BN of eq. (4) is undefined on a zero batch, and the centred BN on a batch whose samples
    are all equal (a zero row after centring). With an ``activation`` before the first BN the
    scale of the batch matters: entries beyond 2^+-SAFE_EXPONENT (where squared norms leave
    float64) are refused too.
    """
    flat = (x - x.mean(dim=-1, keepdim=True) if centered else x).flatten(1)
    if bool((flat == 0).all(dim=1).any()):
        what = "all its samples equal (zero after centring)" if centered else "zero"
        raise ValueError(f"{name} must not be {what} for some network: BN is undefined there")
    if activation is not None:
        top = torch.frexp(x.flatten(1).abs().amax(dim=1)).exponent
        if bool((top.abs() > SAFE_EXPONENT).any()):
            raise ValueError(f"{name} must have entries of ordinary scale (below "
                             f"2^{SAFE_EXPONENT} and above 2^-{SAFE_EXPONENT}) before an "
                             "activation")
    return x


def _inputs(x0, n_nets: int, *, centered: bool = False, activation=None) -> torch.Tensor:
    """The batch ``(n_nets, d, n)`` of the paper, validated (:func:`_bn_batch`), on the
    compute device."""
    x = _bn_batch("x0", v.per_network("x0", x0, n_nets), centered=centered,
                  activation=activation)
    return x.to(device=device(), dtype=DTYPE)


def unit_readout(n_nets: int, d: int, n: int, gen: torch.Generator) -> torch.Tensor:
    """The read-out R of the linear loss ``L = <R, X_L>_F``: Gaussian, ``||R||_F = 1`` per
    network, in the engine's layout ``(n_nets, n, d)`` (a cotangent for ``Pass.backward``).

    References
    ----------
    Meterez et al. (2024), Theorem 5 (a 1-Lipschitz loss of the last layer).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> r = unit_readout(2, 3, 4, generator(0))
    >>> tuple(r.shape), [round(float(x), 12) for x in r.flatten(1).norm(dim=1)]
    ((2, 4, 3), [1.0, 1.0])
    """
    n_nets, d, n = v.positive_int("n_nets", n_nets), v.positive_int("d", d), v.positive_int("n", n)
    gen = v.generator("gen", gen, optional=False)
    r = standard_normal(n_nets, d, n, gen=gen)
    r = r / r.flatten(1).norm(dim=1).view(-1, 1, 1)
    return r.transpose(-2, -1)


def isometry_gaps_in_depth(x0: torch.Tensor, depth: int, *, n_nets: int, gen: torch.Generator,
                           weights: Weights = "orthogonal", activation: Activation | None = None,
                           centered: bool = False) -> torch.Tensor:
    """phi(X_l) for l = 0..depth along X_{l+1} = BN(act(W_l X_l)) (eq. 3), ``n_nets`` networks.

    The explicit engine on :func:`bn_net`, recording the batch norm layers' ``isometry_gap``.

    Parameters
    ----------
    x0 : torch.Tensor
        One input batch ``(d, n)`` or one per network ``(n_nets, d, n)``.
    depth : int
        The number of layers.
    n_nets : int
        The number of networks.
    gen : torch.Generator
        The random generator.
    weights : str
        ``'orthogonal'`` (Haar) or ``'gaussian'`` (N(0, 1/d)).
    activation : callable or None
        An elementwise activation before BN.
    centered : bool
        BN also subtracts each feature's batch mean.

    Returns
    -------
    torch.Tensor
        ``(depth + 1, n_nets)``: row l is ``phi(X_l)`` of every network.

    References
    ----------
    Meterez et al. (2024), eqs. (3)-(5) and Theorem 3.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> gaps = isometry_gaps_in_depth(torch.randn(4, 4, dtype=torch.float64), 5, n_nets=2,
    ...                               gen=generator(0))
    >>> tuple(gaps.shape), bool((gaps[1:] <= gaps[:-1] + 1e-12).all())
    ((6, 2), True)
    """
    depth = v.positive_int("depth", depth)
    n_nets = v.positive_int("n_nets", n_nets)
    net = bn_net(v.per_network("x0", x0, n_nets).shape[1], depth, weights=weights,
                 activation=activation, centered=centered)
    x = _inputs(x0, n_nets, centered=centered, activation=activation)
    t = trace(net, x.transpose(-2, -1), n_nets=n_nets, gen=gen, record={"isometry_gap"})
    return torch.cat([isometry_gap(x).unsqueeze(0), t.stats["isometry_gap"]])


def _backward_at(p: Pass, cotangent, depth: int, stat: str = "log_grad_w_batch"):
    return p.backward(cotangent, top=depth).stats[stat]


def readout_pass(net: Serial, x: torch.Tensor, *, n_nets: int, gen: torch.Generator,
                 tops: Sequence[int], record: Collection[str] = ("log_grad_w_batch",)
                 ) -> tuple[Pass, torch.Tensor]:
    """One forward pass of ``net`` kept for backward passes, and the read-out of the loss.

    The explicit engine runs ``net`` on the batches ``x`` (the paper's ``(n_nets, d, n)``, as
    validated by the public functions of this module),
    keeping the states at the rows ``tops`` and recording ``record``; the read-out ``R`` of
    the linear loss ``L = <R, X_L>_F`` (:func:`unit_readout`) is drawn after the weights.

    Returns
    -------
    tuple
        The :class:`~eit.sample.engine.Pass` and ``R`` in the engine's layout ``(n_nets, n, d)``.

    References
    ----------
    Meterez et al. (2024), Theorem 5 (a 1-Lipschitz loss of the last layer).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> p, r = readout_pass(bn_net(3, 2), torch.randn(2, 3, 4, dtype=torch.float64),
    ...                     n_nets=2, gen=generator(0), tops=[1, 2])
    >>> tuple(p.backward(r, top=1).stats["log_grad_w_batch"].shape)
    (1, 2)
    """
    if not isinstance(net, Layer):
        raise TypeError(f"net must be a layer description (Serial), got {type(net).__name__}")
    n_nets = v.positive_int("n_nets", n_nets)
    x = v.per_network("x", x, n_nets)
    bns = [layer for layer in net.leaves() if isinstance(layer, BatchNorm)]
    if bns:
        _bn_batch("x", x, centered=any(layer.centered for layer in bns))
    tops, depth = _ints("tops", tops), as_serial(net).depth
    if max(tops) > depth:
        raise ValueError(f"tops must be <= the depth of net ({depth}), got {tops}")
    if isinstance(record, (str, bytes)) or not isinstance(record, Collection) or not all(
            isinstance(name, str) for name in record):
        raise TypeError(f"record must be a collection of statistic names, got {record!r}")
    p = forward(net, x.transpose(-2, -1), n_nets=n_nets, gen=gen, backward=True, tops=tops,
                record=record)
    return p, unit_readout(n_nets, x.shape[1], x.shape[2], gen)


def first_layer_grads(p: Pass, readout: torch.Tensor, depths: Sequence[int],
                      stat: str = "log_grad_w_batch") -> torch.Tensor:
    """The first dense layer's backward statistic ``stat`` at each truncation depth.

    One backward pass of ``p`` (:func:`readout_pass`) per depth L in ``depths``, from the
    output of the first L elements. Returns ``(len(depths), n_nets)``: row j is depth
    ``depths[j]``.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> p, r = readout_pass(bn_net(3, 2), torch.randn(2, 3, 4, dtype=torch.float64),
    ...                     n_nets=2, gen=generator(0), tops=[1, 2])
    >>> first_layer_grads(p, r, [1, 2]).shape
    torch.Size([2, 2])
    """
    if not isinstance(p, Pass):
        raise TypeError(f"p must be a Pass (readout_pass), got {type(p).__name__}")
    readout = v.tensor("readout", readout, ndim=3)
    top = torch.frexp(readout.abs().amax()).exponent
    if abs(int(top)) > SAFE_EXPONENT:
        raise ValueError(f"readout must have entries of ordinary scale (below 2^{SAFE_EXPONENT}"
                         f" and above 2^-{SAFE_EXPONENT}; unit_readout has ||R||_F = 1)")
    depths = _ints("depths", depths)
    if max(depths) > p.trace.depth:
        raise ValueError(f"depths must be <= the depth of the pass ({p.trace.depth}), got "
                         f"{depths}")
    if not isinstance(stat, str):
        raise TypeError(f"stat must be the name of a statistic, got {type(stat).__name__}")
    log_h = p.trace.log_h
    for depth in depths:
        want = (log_h.shape[1], log_h.shape[2], p.trace.widths[depth])
        if tuple(readout.shape) != want:
            raise ValueError(f"readout must have the shape (n_nets, n, d) = {want} of the "
                             f"output at depth {depth}, got {tuple(readout.shape)}")
    rows = []
    for depth in depths:
        try:
            t = p.backward(readout, top=depth)
        except ValueError as e:             # a depth whose state the pass did not keep
            raise ValueError(f"depths: {e}") from None
        if stat not in t.stats:
            raise ValueError(f"stat must be a statistic of the backward pass "
                             f"({sorted(t.stats)}), got {stat!r}")
        rows.append(t.stats[stat][0])
    return torch.stack(rows)


def first_layer_grad_lognorm(x0: torch.Tensor, depths: Sequence[int], *, n_nets: int,
                             gen: torch.Generator, weights: Weights = "orthogonal",
                             activation: Activation | None = None,
                             centered: bool = False) -> torch.Tensor:
    """log ||dL/dW_0||_F for the networks truncated at each depth L in ``depths``.

    The network is X_{l+1} = BN(act(W_l X_l)) (:func:`bn_net`); the loss is the linear readout
    L = <R, X_L>_F with R Gaussian normalized to ||R||_F = 1 (1-Lipschitz), drawn per network.
    One forward pass of the deepest network, one backward pass per depth (the engine's
    log-space backward: no overflow at any depth); depth L uses the first L layers.

    Returns
    -------
    torch.Tensor
        ``(len(depths), n_nets)``: row j is depth ``depths[j]``.

    References
    ----------
    Meterez et al. (2024), Theorem 5 and Figure 2.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> first_layer_grad_lognorm(torch.randn(4, 4, dtype=torch.float64), [1, 3], n_nets=5,
    ...                          gen=generator(0)).shape
    torch.Size([2, 5])
    """
    ds = _ints("depths", depths)
    n_nets = v.positive_int("n_nets", n_nets)
    net = bn_net(v.per_network("x0", x0, n_nets).shape[1], max(ds), weights=weights,
                 activation=activation, centered=centered)
    x = _inputs(x0, n_nets, centered=centered, activation=activation)
    return first_layer_grads(*readout_pass(net, x, n_nets=n_nets, gen=gen, tops=ds), ds)


Loss = Literal["linear", "cross_entropy", "mse"]
_LOSSES = ("linear", "cross_entropy", "mse")


def logit_loss_gradient(z: torch.Tensor, y: torch.Tensor, loss: str) -> torch.Tensor:
    """Gradient with respect to the logits ``z`` (..., C) of the per-sample loss of Lemma D.2,
    with targets ``y`` (..., C) (one-hot labels or probability vectors), p = softmax(z):

    * ``"cross_entropy"``: L = -sum_i y_i log p_i, gradient p sum_i y_i - y (= p - y);
    * ``"mse"``: L = (1/C) sum_i (y_i - p_i)^2 (the paper's MSE on the softmax output),
      gradient (2/C) (diag p - p p^T)(p - y).

    Examples
    --------
    >>> y = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    >>> logit_loss_gradient(torch.zeros(1, 2, dtype=torch.float64), y, 'cross_entropy')
    tensor([[-0.5000,  0.5000]], dtype=torch.float64)
    """
    if not isinstance(z, torch.Tensor) or z.ndim < 1:
        raise TypeError(f"z must be a torch.Tensor of logits (..., C), got {z!r:.60}")
    z = v.tensor("z", z, ndim=z.ndim)
    if z.shape[-1] < 2:
        raise ValueError(f"z must have at least 2 classes in its last dimension, got shape "
                         f"{tuple(z.shape)}")
    if not isinstance(y, torch.Tensor):
        raise TypeError(f"y must be a torch.Tensor, got {type(y).__name__}")
    if y.shape != z.shape:
        raise ValueError(f"y must have the shape of z {tuple(z.shape)}, got {tuple(y.shape)}")
    y = v.tensor("y", y, ndim=y.ndim)
    loss = v.choice("loss", loss, ("cross_entropy", "mse"))
    p = torch.softmax(z, dim=-1)
    if loss == "cross_entropy":
        return p * y.sum(dim=-1, keepdim=True) - y
    u = p - y
    return 2.0 / z.shape[-1] * (p * u - p * (p * u).sum(dim=-1, keepdim=True))


def _labels(labels, n_classes, n: int, d: int) -> torch.Tensor:
    if isinstance(n_classes, bool) or not isinstance(n_classes, int) or not 2 <= n_classes <= d:
        raise ValueError(f"n_classes must be an int in [2, d] = [2, {d}] (d the width of x0: "
                         f"the head has orthonormal rows), got {n_classes!r}")
    if not isinstance(labels, torch.Tensor):
        raise TypeError(f"labels must be a torch.Tensor, got {type(labels).__name__}")
    if labels.shape != (n,) or labels.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"labels must be an integer tensor of shape (n,) = ({n},), got "
                         f"{labels.dtype} of shape {tuple(labels.shape)}")
    if (labels < 0).any() or (labels >= n_classes).any():
        raise ValueError(f"labels must lie in [0, n_classes) = [0, {n_classes})")
    onehot = torch.zeros(n_classes, n, dtype=DTYPE, device=device())
    onehot[labels.to(onehot.device), torch.arange(n, device=onehot.device)] = 1.0
    return onehot


def weight_grad_lognorms(x0: torch.Tensor, depths: Sequence[int], *, n_nets: int,
                         gen: torch.Generator, weights: Weights = "orthogonal",
                         loss: Loss = "linear", labels: torch.Tensor | None = None,
                         n_classes: int | None = None) -> torch.Tensor:
    """log ||dL/dW_l||_F for every layer l < L of the BN network X_{l+1} = BN(W_l X_l) (eq. 3,
    linear activations) truncated at each depth L in ``depths`` (the first L layers of one deep
    network per ``n_nets``, as in :func:`first_layer_grad_lognorm`).

    Losses: ``"linear"``, L = <R, X_L>_F with ||R||_F = 1 (the same draws as
    :func:`first_layer_grad_lognorm`, whose result is ``out[:, 0]``); ``"cross_entropy"`` and
    ``"mse"`` (see :func:`logit_loss_gradient`), averaged over the n samples, on the logits
    Z = W_out X_L with a Haar head W_out (n_classes x d, orthonormal rows; the paper's H^L) and
    integer ``labels`` (n,).

    Returns
    -------
    torch.Tensor
        ``(len(depths), max(depths), n_nets)``: ``out[j, l]`` is layer l of the network
        truncated at depth ``depths[j]``; entries with l >= L are NaN (no such layer).

    References
    ----------
    Meterez et al. (2024), Theorem 5 and Lemma D.2.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> weight_grad_lognorms(torch.randn(4, 4, dtype=torch.float64), [2, 3], n_nets=5,
    ...                      gen=generator(0)).shape
    torch.Size([2, 3, 5])
    """
    ds = _ints("depths", depths)
    n_nets = v.positive_int("n_nets", n_nets)
    loss = v.choice("loss", loss, _LOSSES)
    x = _inputs(x0, n_nets)
    d, n = x.shape[1], x.shape[2]
    if loss == "linear":
        if labels is not None or n_classes is not None:
            raise ValueError("labels and n_classes are only used with loss 'cross_entropy' or "
                             "'mse'")
    else:
        onehot = _labels(labels, n_classes, n, d)
    top = max(ds)
    p = forward(bn_net(d, top, weights=weights), x.transpose(-2, -1), n_nets=n_nets, gen=gen,
                backward=True, tops=ds, record={"log_grad_w_batch"})
    if loss == "linear":
        cotangent = unit_readout(n_nets, d, n, gen)
    else:
        head = haar_orthogonal(n_nets, n_classes, d, gen=gen)           # (n_nets, C, d)
        target = onehot.T.expand(n_nets, n, -1)

        def cotangent(h: torch.Tensor) -> torch.Tensor:                 # dL/dX_L^T
            z = h @ head.transpose(-2, -1)                              # (n_nets, n, C)
            return logit_loss_gradient(z, target, loss) @ head / n

    out = torch.full((len(ds), top, n_nets), math.nan, dtype=DTYPE, device=x.device)
    for row, depth in enumerate(ds):
        out[row, :depth] = _backward_at(p, cotangent, depth)
    return out


#: the largest spread of :func:`spectral_inputs`: the singular values e^{+-300} keep the
#: Gram matrix X X^T (entries up to e^{600}, down to e^{-600}) normal float64 numbers
MAX_SPREAD = 300.0


def spectral_inputs(n_mats: int, d: int, *, gen: torch.Generator, spread: float,
                    n: int | None = None) -> torch.Tensor:
    """Random batches X = U diag(s) V^T of shape (n_mats, d, n) with prescribed spread of
    spectra: U, V Haar-orthogonal and log s_i i.i.d. uniform on [-spread, spread] (spread 0
    gives orthogonal matrices; large spread nearly degenerate ones), ``spread`` at most
    :data:`MAX_SPREAD`.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> spectral_inputs(2, 3, gen=generator(0), spread=1.0).shape
    torch.Size([2, 3, 3])
    """
    n_mats, d = v.positive_int("n_mats", n_mats), v.positive_int("d", d)
    n = d if n is None else v.positive_int("n", n)
    gen = v.generator("gen", gen, optional=False)
    if isinstance(spread, bool) or not isinstance(spread, (int, float)) or not (
            math.isfinite(spread) and 0 <= spread <= MAX_SPREAD):
        raise ValueError(f"spread must be a finite number in [0, {MAX_SPREAD}] (X X^T stays "
                         f"in float64), got {spread!r}")
    r = min(d, n)
    u = haar_orthogonal(n_mats, d, r, gen=gen)
    vt = haar_orthogonal(n_mats, r, n, gen=gen)
    s = torch.exp(spread * (2.0 * standard_uniform(n_mats, r, gen=gen) - 1.0))
    return (u * s.unsqueeze(-2)) @ vt


def bn_standard(x: torch.Tensor) -> torch.Tensor:
    """Standard BN without affine parameters (and without epsilon): each row centred over the
    batch and scaled to unit (population) variance, so that entries are O(1).

    Examples
    --------
    >>> bn_standard(torch.tensor([[1.0, 3.0]], dtype=torch.float64))
    tensor([[-1.,  1.]], dtype=torch.float64)
    """
    x = _matrices("x", x)
    return math.sqrt(x.shape[-1]) * bn_centered(x)


def _gains(name: str, gains, depth: int) -> list[float]:
    return v.per_layer(name, gains, depth, allow_longer=True)


def _shaped_pass(x0, depth: int, n_nets: int, gen: torch.Generator, weights: str,
                 activation, gains: list[float], tops) -> tuple[Pass, torch.Tensor]:
    net = shaped_net(v.per_network("x0", x0, n_nets).shape[1], gains, activation,
                     weights=weights)
    x = _inputs(x0, n_nets, centered=True)
    return readout_pass(net, x, n_nets=n_nets, gen=gen, tops=tops)


def shaped_weight_grad_lognorms(x0: torch.Tensor, depth: int, *, n_nets: int,
                                gen: torch.Generator, activation: Activation, gains,
                                weights: Weights = "orthogonal") -> torch.Tensor:
    """log ||dL/dW_l||_F for every layer l = 0..depth-1 of the shaped network of eq. (11),
    X_{l+1} = act(alpha_l BN(W_l X_l)) with standard BN (:func:`bn_standard`), loss
    L = <R, X_L>_F with ||R||_F = 1; one backward pass in log space. ``gains`` is one gain or
    a sequence alpha_0, alpha_1, ...

    Returns
    -------
    torch.Tensor
        ``(depth, n_nets)``: row l is layer l.

    References
    ----------
    Meterez et al. (2024), eq. (11) and Figure 5.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> shaped_weight_grad_lognorms(torch.randn(4, 5, dtype=torch.float64), 3, n_nets=2,
    ...                             gen=generator(0), activation=torch.tanh, gains=0.5).shape
    torch.Size([3, 2])
    """
    depth = v.positive_int("depth", depth)
    n_nets = v.positive_int("n_nets", n_nets)
    if not callable(activation):
        raise TypeError(f"activation must be callable, got {type(activation).__name__}")
    gs = _gains("gains", gains, depth)
    p, r = _shaped_pass(x0, depth, n_nets, gen, weights, activation, gs, [depth])
    return _backward_at(p, r, depth)


def shaped_first_layer_grad_lognorm(x0: torch.Tensor, depths: Sequence[int], *, n_nets: int,
                                    gen: torch.Generator, activation: Activation, gains,
                                    weights: Weights = "orthogonal",
                                    with_output_scale: bool = False):
    """log ||dL/dW_0||_F of the shaped network of eq. (11) truncated at each depth L in
    ``depths`` (the first L layers of one deep network; loss as in
    :func:`shaped_weight_grad_lognorms`).

    With ``with_output_scale=True`` returns a pair ``(first, scale)``: ``scale[j]`` is
    log ||dL/dZ||_F at depth L = depths[j], where Z = BN(W_{L-1} X_{L-1}) is the last layer's
    (unit-scale) BN output, so that X_L = act(alpha_{L-1} Z). Since BN is invariant to the scale
    of its input, every inner gain cancels in dL/dW_0 and ``first - scale`` is free of the
    output's scale; for the identity activation ``scale`` is log alpha_{L-1} exactly. The random
    draws are the same with or without it.

    Returns
    -------
    torch.Tensor or (torch.Tensor, torch.Tensor)
        ``first``, and with ``with_output_scale`` also ``scale``, each ``(len(depths), n_nets)``:
        row j is depth ``depths[j]``.

    References
    ----------
    Meterez et al. (2024), eq. (11), Figure 5.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> first, scale = shaped_first_layer_grad_lognorm(
    ...     torch.randn(4, 5, dtype=torch.float64), [1, 2], n_nets=3, gen=generator(0),
    ...     activation=lambda h: h, gains=0.5, with_output_scale=True)
    >>> tuple(first.shape), bool(torch.allclose(scale, torch.full((2, 3), math.log(0.5),
    ...                                                           dtype=torch.float64)))
    ((2, 3), True)
    """
    ds = _ints("depths", depths)
    n_nets = v.positive_int("n_nets", n_nets)
    if not callable(activation):
        raise TypeError(f"activation must be callable, got {type(activation).__name__}")
    if not isinstance(with_output_scale, bool):
        raise TypeError(f"with_output_scale must be a bool, got {type(with_output_scale).__name__}")
    top = max(ds)
    gs = _gains("gains", gains, top)
    p, r = _shaped_pass(x0, top, n_nets, gen, weights, activation, gs, ds)
    first, scale = [], []
    for depth in ds:
        t = p.backward(r, top=depth)
        first.append(t.stats["log_grad_w_batch"][0])
        pre = t.stats["log_grad_preact"][depth - 1]                     # log ||dL/du_i||
        scale.append(0.5 * torch.logsumexp(2 * pre, dim=-1) + math.log(gs[depth - 1]))
    first = torch.stack(first)
    return (first, torch.stack(scale)) if with_output_scale else first


def shaped_nonlinearity(x0: torch.Tensor, depth: int, *, n_nets: int, gen: torch.Generator,
                        activation: Activation, gains,
                        weights: Weights = "orthogonal") -> torch.Tensor:
    """How far each layer of the shaped network of eq. (11) is from its linearization.

    For layer l with pre-activation ``u = alpha_l BN(W_l X_l)`` (standard BN) returns
    ``||act(u) - u||_F / ||u||_F``, the relative deviation of the layer's output from the linear
    map ``u -> u`` (the linearization at 0 of tanh and sin); 0 means the layer is linear.
    The engine's ``nonlinearity`` statistic of the activation layers.

    Returns
    -------
    torch.Tensor
        ``(depth, n_nets)``: row l is layer l.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> shaped_nonlinearity(torch.randn(4, 5, dtype=torch.float64), 2, n_nets=3,
    ...                     gen=generator(0), activation=lambda h: h, gains=1.0).abs().max()
    tensor(0., dtype=torch.float64)
    """
    depth = v.positive_int("depth", depth)
    n_nets = v.positive_int("n_nets", n_nets)
    if not callable(activation):
        raise TypeError(f"activation must be callable, got {type(activation).__name__}")
    gs = _gains("gains", gains, depth)
    net = shaped_net(v.per_network("x0", x0, n_nets).shape[1], gs, activation, weights=weights)
    x = _inputs(x0, n_nets, centered=True)
    t = trace(net, x.transpose(-2, -1), n_nets=n_nets, gen=gen, record={"nonlinearity"})
    return t.stats["nonlinearity"]


def shaped_leaky_relu(slope: float) -> Activation:
    """LeakyReLU with negative slope ``slope`` (activation shaping: slope -> 1 is linear).

    Examples
    --------
    >>> shaped_leaky_relu(0.5)(torch.tensor([-2.0, 2.0]))
    tensor([-1.,  2.])
    """
    slope = v.in_interval("slope", slope, 0.0, 1.0, closed_hi=True)

    def act(h: torch.Tensor) -> torch.Tensor:
        return torch.where(h >= 0, h, slope * h)

    return act


__all__ = ["bn", "bn_centered", "bn_net", "bn_standard", "first_layer_grad_lognorm",
           "gram_eigenvalues", "isometry", "isometry_gap", "isometry_gaps_in_depth",
           "logit_loss_gradient", "row_norm_factor", "shaped_first_layer_grad_lognorm",
           "shaped_leaky_relu", "shaped_net", "shaped_nonlinearity",
           "shaped_weight_grad_lognorms", "spectral_inputs", "unit_readout", "weight_grad_lognorms",
           "readout_pass", "first_layer_grads"]
