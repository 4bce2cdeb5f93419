"""Batch normalization without mean reduction, the isometry gap, and batched BN MLPs.

Meterez et al. (2024) study ``X_{l+1} = BN(W_l X_l)`` (eq. 3) on a batch ``X in R^{d x n}``
(rows: features, columns: the n samples) with the BN of eq. (4),
``BN(X) = diag(X X^T)^{-1/2} X``: every *row* (feature) is scaled to unit norm over the batch.
The isometry gap (eq. 5) is computed from the Gram matrix of the samples ``X^T X`` (n x n):

    phi(X) = log( tr(X^T X) / n ) - (1/n) log det(X^T X)  >= 0,

(the paper takes n = d), the log of the ratio of the arithmetic to the geometric mean of the
eigenvalues; it is +inf when the samples are linearly dependent. All functions act on batches
of such matrices (leading dimensions are kept) and never loop over networks in Python.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

import torch

from ..core import validate as v
from ..core.device import DTYPE, device, rand, randn
from ..sample.laws import gaussian, haar_orthogonal

Weights = Literal["orthogonal", "gaussian"]
Activation = Callable[[torch.Tensor], torch.Tensor]


def _matrices(name: str, x) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim < 2:
        raise ValueError(f"{name} must have at least 2 dimensions (..., d, n), got shape "
                         f"{tuple(x.shape)}")
    return v.tensor(name, x, ndim=x.ndim)


def bn(x: torch.Tensor) -> torch.Tensor:
    """BN of eq. (4): each row of each (d, n) matrix divided by its Euclidean norm."""
    x = _matrices("x", x)
    norms = x.norm(dim=-1, keepdim=True)
    if (norms == 0).any():
        raise ValueError("x has a zero row: BN(x) is undefined")
    return x / norms


def bn_centered(x: torch.Tensor) -> torch.Tensor:
    """Standard BN without affine parameters: each row centred over the batch, then scaled to
    unit norm (the variant of the paper's Figure H6)."""
    x = _matrices("x", x)
    return bn(x - x.mean(dim=-1, keepdim=True))


def gram_eigenvalues(x: torch.Tensor) -> torch.Tensor:
    """Eigenvalues of X X^T (ascending), shape (..., d): the lambda_k of Theorem 3."""
    x = _matrices("x", x)
    return torch.linalg.eigvalsh(x @ x.transpose(-2, -1))


def isometry_gap(x: torch.Tensor) -> torch.Tensor:
    """phi(X) of eq. (5) for each (d, n) matrix; +inf where the n columns are linearly
    dependent (numerical rank of X below n, with torch's default tolerance)."""
    x = _matrices("x", x)
    n = x.shape[-1]
    lam = torch.linalg.eigvalsh(x.transpose(-2, -1) @ x)
    degenerate = torch.linalg.matrix_rank(x) < n
    safe = lam.clamp_min(torch.finfo(lam.dtype).tiny)
    gap = torch.log(safe.mean(dim=-1)) - torch.log(safe).mean(dim=-1)
    gap = gap.clamp_min(0.0)  # AM >= GM; removes rounding below zero
    return torch.where(degenerate, torch.full_like(gap, math.inf), gap)


def isometry(x: torch.Tensor) -> torch.Tensor:
    """I(X) = exp(-phi(X)) in [0, 1]: the ratio of geometric to arithmetic mean eigenvalue."""
    return torch.exp(-isometry_gap(x))


def row_norm_factor(x: torch.Tensor) -> torch.Tensor:
    """1 + variance/mean^2 of the row norms ||X_j.|| (Lemma B.1, eq. 12; population variance),
    which equals d sum_j ||X_j.||^2 / (sum_j ||X_j.||)^2."""
    x = _matrices("x", x)
    r = x.norm(dim=-1)
    return (r.square().mean(dim=-1)) / r.mean(dim=-1).square()


def _weights(kind: str, n_nets: int, d: int, gen: torch.Generator) -> torch.Tensor:
    if kind == "orthogonal":
        return haar_orthogonal(n_nets, d, d, gen=gen)
    if kind == "gaussian":
        return gaussian(n_nets, d, d, 1.0 / d, gen=gen)
    raise ValueError(f"weights must be 'orthogonal' or 'gaussian', got {kind!r}")


def _weight_stream(kind: str, n_nets: int, d: int, depth: int, gen: torch.Generator,
                   chunk: int = 64):
    """Yield ``depth`` weight stacks (n_nets, d, d), drawn ``chunk`` layers per call."""
    done = 0
    while done < depth:
        m = min(chunk, depth - done)
        block = _weights(kind, n_nets * m, d, gen).view(m, n_nets, d, d)
        yield from (w.contiguous() for w in block.unbind(0))
        done += m


def _inputs(x0, n_nets: int) -> torch.Tensor:
    x0 = _matrices("x0", x0)
    if x0.ndim == 2:
        x0 = x0.expand(n_nets, *x0.shape)
    if x0.ndim != 3 or x0.shape[0] != n_nets:
        raise ValueError(f"x0 must have shape (d, n) or (n_nets, d, n) = ({n_nets}, d, n), got "
                         f"{tuple(x0.shape)}")
    return x0.to(device=device(), dtype=DTYPE)


def _layer(x: torch.Tensor, w: torch.Tensor, activation: Activation | None,
           centered: bool) -> torch.Tensor:
    h = w @ x
    if activation is not None:
        h = activation(h)
    if centered:
        h = h - h.mean(dim=-1, keepdim=True)
    return h / h.norm(dim=-1, keepdim=True)  # inputs validated by the callers


def _linear_layer_vjp(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor, g: torch.Tensor,
                      centered: bool, wrt_weights: bool) -> torch.Tensor:
    """Vector-Jacobian product of y = BN(W x) (rows normalized; optionally centred first):
    returns dL/dW if ``wrt_weights`` else dL/dx, given g = dL/dy."""
    h = w @ x
    if centered:
        h = h - h.mean(dim=-1, keepdim=True)
    r = h.norm(dim=-1, keepdim=True)
    gh = (g - y * (g * y).sum(dim=-1, keepdim=True)) / r
    if centered:
        gh = gh - gh.mean(dim=-1, keepdim=True)
    return gh @ x.transpose(-2, -1) if wrt_weights else w.transpose(-2, -1) @ gh


def isometry_gaps_in_depth(x0: torch.Tensor, depth: int, *, n_nets: int, gen: torch.Generator,
                           weights: Weights = "orthogonal", activation: Activation | None = None,
                           centered: bool = False) -> torch.Tensor:
    """phi(X_l) for l = 0..depth along X_{l+1} = BN(act(W_l X_l)) (eq. 3), for ``n_nets``
    independent networks at once. ``x0`` is one input (d, n) or one per network.

    Returns a tensor (n_nets, depth + 1). With ``centered=True`` BN also subtracts the mean.
    """
    depth = v.positive_int("depth", depth)
    n_nets = v.positive_int("n_nets", n_nets)
    x = _inputs(x0, n_nets)
    d = x.shape[1]
    gaps = [isometry_gap(x)]
    for w in _weight_stream(weights, n_nets, d, depth, gen):
        x = _layer(x, w, activation, centered)
        gaps.append(isometry_gap(x))
    return torch.stack(gaps, dim=1)


def _readout(n_nets: int, d: int, n: int, gen: torch.Generator) -> torch.Tensor:
    r = randn(n_nets, d, n, gen=gen)
    return r / r.flatten(1).norm(dim=1).view(-1, 1, 1)


def _autograd_vjp(layer: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                  x: torch.Tensor, w: torch.Tensor, g: torch.Tensor,
                  first: bool) -> torch.Tensor:
    """g^T dY/dW for the first layer, else g^T dY/dX, where Y = layer(X, W)."""
    with torch.enable_grad():
        x = x.detach().requires_grad_(not first)
        w = w.detach().requires_grad_(first)
        (out,) = torch.autograd.grad(layer(x, w), w if first else x, g)
    return out


def _first_layer_lognorms(r: torch.Tensor, depths: Sequence[int],
                          vjp: Callable[[int, torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """log ||dL/dW_0|| when the readout gradient ``r`` enters at each depth in ``depths``.

    ``vjp(l, g)`` maps the gradient at the output of layer l to its input (to W_0 for l = 0).
    The gradient is renormalized at every layer and its log-norm accumulated, so nothing
    overflows at any depth. Returns (n_nets, len(depths)).
    """
    out = torch.empty(r.shape[0], len(depths), dtype=DTYPE, device=r.device)
    for col, depth in enumerate(depths):
        g, logscale = r, torch.zeros(r.shape[0], dtype=DTYPE, device=r.device)
        for ell in range(depth - 1, -1, -1):
            g = vjp(ell, g)
            norm = g.flatten(1).norm(dim=1)
            logscale = logscale + torch.log(norm)
            g = g / norm.view(-1, 1, 1)
        out[:, col] = logscale
    return out


def first_layer_grad_lognorm(x0: torch.Tensor, depths: Sequence[int], *, n_nets: int,
                             gen: torch.Generator, weights: Weights = "orthogonal",
                             activation: Activation | None = None,
                             centered: bool = False) -> torch.Tensor:
    """log ||dL/dW_0||_F for the networks truncated at each depth L in ``depths``.

    The network is X_{l+1} = BN(act(W_l X_l)); the loss is the linear readout
    L = <R, X_L>_F with R Gaussian normalized to ||R||_F = 1 (1-Lipschitz), drawn per network.
    The backward pass renormalizes the upstream gradient at every layer and accumulates its
    log-norm, so no overflow occurs at any depth. Depth L uses the first L layers of one deep
    network per ``n_nets``. Returns a tensor (n_nets, len(depths)).
    """
    ds = v.widths("depths", list(depths))
    n_nets = v.positive_int("n_nets", n_nets)
    x = _inputs(x0, n_nets)
    d, n = x.shape[1], x.shape[2]
    top = max(ds)
    ws, xs = [], [x]
    for w in _weight_stream(weights, n_nets, d, top, gen):
        ws.append(w)
        xs.append(_layer(xs[-1], w, activation, centered))
    r = _readout(n_nets, d, n, gen)

    def vjp(ell: int, g: torch.Tensor) -> torch.Tensor:
        if activation is None:
            return _linear_layer_vjp(xs[ell], ws[ell], xs[ell + 1], g, centered, ell == 0)
        return _autograd_vjp(lambda x_, w_: _layer(x_, w_, activation, centered),
                             xs[ell], ws[ell], g, ell == 0)

    return _first_layer_lognorms(r, ds, vjp)


Loss = Literal["linear", "cross_entropy", "mse"]
_LOSSES = ("linear", "cross_entropy", "mse")


def logit_loss_gradient(z: torch.Tensor, y: torch.Tensor, loss: str) -> torch.Tensor:
    """Gradient with respect to the logits ``z`` (..., C) of the per-sample loss of Lemma D.2,
    with targets ``y`` (..., C) (one-hot labels or probability vectors), p = softmax(z):

    * ``"cross_entropy"``: L = -sum_i y_i log p_i, gradient p sum_i y_i - y (= p - y);
    * ``"mse"``: L = (1/C) sum_i (y_i - p_i)^2 (the paper's MSE on the softmax output),
      gradient (2/C) (diag p - p p^T)(p - y).
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
    if loss not in ("cross_entropy", "mse"):
        raise ValueError(f"loss must be 'cross_entropy' or 'mse', got {loss!r}")
    p = torch.softmax(z, dim=-1)
    if loss == "cross_entropy":
        return p * y.sum(dim=-1, keepdim=True) - y
    u = p - y
    return 2.0 / z.shape[-1] * (p * u - p * (p * u).sum(dim=-1, keepdim=True))


def _labels(labels, n_classes, n: int, d: int) -> torch.Tensor:
    if isinstance(n_classes, bool) or not isinstance(n_classes, int) or not 2 <= n_classes <= d:
        raise ValueError(f"n_classes must be an int in [2, d] = [2, {d}] (the head has "
                         f"orthonormal rows), got {n_classes!r}")
    if not isinstance(labels, torch.Tensor):
        raise TypeError(f"labels must be a torch.Tensor, got {type(labels).__name__}")
    if labels.shape != (n,) or labels.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"labels must be an integer tensor of shape (n,) = ({n},), got "
                         f"{labels.dtype} of shape {tuple(labels.shape)}")
    if (labels < 0).any() or (labels >= n_classes).any():
        raise ValueError(f"labels must lie in [0, n_classes) = [0, {n_classes})")
    onehot = torch.zeros(n_classes, n, dtype=DTYPE)
    onehot[labels.cpu(), torch.arange(n)] = 1.0
    return onehot.to(device())


def weight_grad_lognorms(x0: torch.Tensor, depths: Sequence[int], *, n_nets: int,
                         gen: torch.Generator, weights: Weights = "orthogonal",
                         loss: Loss = "linear", labels: torch.Tensor | None = None,
                         n_classes: int | None = None) -> torch.Tensor:
    """log ||dL/dW_l||_F for every layer l < L of the BN network X_{l+1} = BN(W_l X_l) (eq. 3,
    linear activations) truncated at each depth L in ``depths`` (the first L layers of one deep
    network per ``n_nets``, as in :func:`first_layer_grad_lognorm`).

    Losses: ``"linear"``, L = <R, X_L>_F with ||R||_F = 1 (the same draws as
    :func:`first_layer_grad_lognorm`, whose result is ``out[:, :, 0]``); ``"cross_entropy"`` and
    ``"mse"`` (see :func:`logit_loss_gradient`), averaged over the n samples, on the logits
    Z = W_out X_L with a Haar head W_out (n_classes x d, orthonormal rows; the paper's H^L) and
    integer ``labels`` (n,). Returns (n_nets, len(depths), max(depths)); entries with l >= L
    are NaN. The backward pass renormalizes in log space, so nothing overflows at any depth.
    """
    ds = v.widths("depths", list(depths))
    n_nets = v.positive_int("n_nets", n_nets)
    if loss not in _LOSSES:
        raise ValueError(f"loss must be one of {_LOSSES}, got {loss!r}")
    x = _inputs(x0, n_nets)
    d, n = x.shape[1], x.shape[2]
    if loss == "linear":
        if labels is not None or n_classes is not None:
            raise ValueError("labels and n_classes are only used with loss 'cross_entropy' or "
                             "'mse'")
    else:
        onehot = _labels(labels, n_classes, n, d)
    top = max(ds)
    ws, xs = [], [x]
    for w in _weight_stream(weights, n_nets, d, top, gen):
        ws.append(w)
        xs.append(_layer(xs[-1], w, None, False))
    head = (_readout(n_nets, d, n, gen) if loss == "linear"
            else haar_orthogonal(n_nets, n_classes, d, gen=gen))
    out = torch.full((n_nets, len(ds), top), math.nan, dtype=DTYPE, device=x.device)
    for col, depth in enumerate(ds):
        if loss == "linear":
            g = head
        else:
            z = head @ xs[depth]                                        # (n_nets, C, n)
            gz = logit_loss_gradient(z.transpose(-2, -1), onehot.T.expand(n_nets, n, -1), loss)
            g = head.transpose(-2, -1) @ gz.transpose(-2, -1) / n       # dL/dX_L
        norm = g.flatten(1).norm(dim=1)
        logscale, g = torch.log(norm), g / norm.view(-1, 1, 1)
        for ell in range(depth - 1, -1, -1):
            h = ws[ell] @ xs[ell]
            gh = (g - xs[ell + 1] * (g * xs[ell + 1]).sum(dim=-1, keepdim=True)) \
                / h.norm(dim=-1, keepdim=True)
            out[:, col, ell] = logscale + torch.log((gh @ xs[ell].transpose(-2, -1)).flatten(1)
                                                    .norm(dim=1))
            if ell:
                g = ws[ell].transpose(-2, -1) @ gh
                norm = g.flatten(1).norm(dim=1)
                logscale, g = logscale + torch.log(norm), g / norm.view(-1, 1, 1)
    return out


def spectral_inputs(n_mats: int, d: int, *, gen: torch.Generator, spread: float,
                    n: int | None = None) -> torch.Tensor:
    """Random batches X = U diag(s) V^T of shape (n_mats, d, n) with prescribed spread of
    spectra: U, V Haar-orthogonal and log s_i i.i.d. uniform on [-spread, spread] (spread 0
    gives orthogonal matrices; large spread nearly degenerate ones)."""
    n_mats, d = v.positive_int("n_mats", n_mats), v.positive_int("d", d)
    n = d if n is None else v.positive_int("n", n)
    if isinstance(spread, bool) or not isinstance(spread, (int, float)) or not (
            math.isfinite(spread) and spread >= 0):
        raise ValueError(f"spread must be a finite number >= 0, got {spread!r}")
    r = min(d, n)
    u = haar_orthogonal(n_mats, d, r, gen=gen)
    vt = haar_orthogonal(n_mats, r, n, gen=gen)
    s = torch.exp(spread * (2.0 * rand(n_mats, r, gen=gen) - 1.0))
    return (u * s.unsqueeze(-2)) @ vt


def bn_standard(x: torch.Tensor) -> torch.Tensor:
    """Standard BN without affine parameters (and without epsilon): each row centred over the
    batch and scaled to unit (population) variance, so that entries are O(1)."""
    x = _matrices("x", x)
    return math.sqrt(x.shape[-1]) * bn_centered(x)


def _gains(name: str, gains, depth: int) -> list[float]:
    if isinstance(gains, (int, float)) and not isinstance(gains, bool):
        gains = [gains] * depth
    gains = list(gains)
    if len(gains) < depth:
        raise ValueError(f"{name} must have at least {depth} entries, got {len(gains)}")
    return [v.positive_float(f"{name}[{i}]", g) for i, g in enumerate(gains[:depth])]


def _shaped_layer(x: torch.Tensor, w: torch.Tensor, activation: Activation,
                  gain: float) -> torch.Tensor:
    h = w @ x
    h = h - h.mean(dim=-1, keepdim=True)
    h = h / h.norm(dim=-1, keepdim=True) * math.sqrt(h.shape[-1])
    return activation(gain * h)


def _shaped_forward(x0, depth: int, n_nets: int, gen: torch.Generator, weights: str,
                    activation: Activation, gains: list[float]):
    x = _inputs(x0, n_nets)
    d = x.shape[1]
    ws, xs = [], [x]
    for ell, w in enumerate(_weight_stream(weights, n_nets, d, depth, gen)):
        ws.append(w)
        xs.append(_shaped_layer(xs[-1], w, activation, gains[ell]))
    return ws, xs


def shaped_weight_grad_lognorms(x0: torch.Tensor, depth: int, *, n_nets: int,
                                gen: torch.Generator, activation: Activation, gains,
                                weights: Weights = "orthogonal") -> torch.Tensor:
    """log ||dL/dW_l||_F for every layer l = 0..depth-1 of the shaped network of eq. (11),
    X_{l+1} = act(alpha_l BN(W_l X_l)) with standard BN (:func:`bn_standard`), loss
    L = <R, X_L>_F with ||R||_F = 1; one backward pass in log space. ``gains`` is one gain or
    a sequence alpha_0, alpha_1, ... Returns (n_nets, depth)."""
    depth = v.positive_int("depth", depth)
    n_nets = v.positive_int("n_nets", n_nets)
    if not callable(activation):
        raise TypeError("activation must be callable")
    gs = _gains("gains", gains, depth)
    ws, xs = _shaped_forward(x0, depth, n_nets, gen, weights, activation, gs)
    g = _readout(n_nets, xs[0].shape[1], xs[0].shape[2], gen)
    logscale = torch.zeros(n_nets, dtype=DTYPE, device=g.device)
    out = torch.empty(n_nets, depth, dtype=DTYPE, device=g.device)
    for ell in range(depth - 1, -1, -1):
        with torch.enable_grad():
            xin = xs[ell].detach().requires_grad_(True)
            w = ws[ell].detach().requires_grad_(True)
            y = _shaped_layer(xin, w, activation, gs[ell])
            gx, gw = torch.autograd.grad(y, (xin, w), g)
        out[:, ell] = logscale + torch.log(gw.flatten(1).norm(dim=1))
        norm = gx.flatten(1).norm(dim=1)
        logscale = logscale + torch.log(norm)
        g = gx / norm.view(-1, 1, 1)
    return out


def shaped_first_layer_grad_lognorm(x0: torch.Tensor, depths: Sequence[int], *, n_nets: int,
                                    gen: torch.Generator, activation: Activation, gains,
                                    weights: Weights = "orthogonal",
                                    with_output_scale: bool = False):
    """log ||dL/dW_0||_F of the shaped network of eq. (11) truncated at each depth L in
    ``depths`` (the first L layers of one deep network; loss as in
    :func:`shaped_weight_grad_lognorms`). Returns (n_nets, len(depths)).

    With ``with_output_scale=True`` returns a pair ``(first, scale)``: ``scale[:, j]`` is
    log ||dL/dZ||_F at depth L = depths[j], where Z = BN(W_{L-1} X_{L-1}) is the last layer's
    (unit-scale) BN output, so that X_L = act(alpha_{L-1} Z). Since BN is invariant to the scale
    of its input, every inner gain cancels in dL/dW_0 and ``first - scale`` is free of the
    output's scale; for the identity activation ``scale`` is log alpha_{L-1} exactly. The random
    draws are the same with or without it."""
    ds = v.widths("depths", list(depths))
    n_nets = v.positive_int("n_nets", n_nets)
    if not callable(activation):
        raise TypeError("activation must be callable")
    if not isinstance(with_output_scale, bool):
        raise TypeError(f"with_output_scale must be a bool, got {type(with_output_scale).__name__}")
    top = max(ds)
    gs = _gains("gains", gains, top)
    ws, xs = _shaped_forward(x0, top, n_nets, gen, weights, activation, gs)
    r = _readout(n_nets, xs[0].shape[1], xs[0].shape[2], gen)

    def vjp(ell: int, g: torch.Tensor) -> torch.Tensor:
        return _autograd_vjp(lambda x_, w_: _shaped_layer(x_, w_, activation, gs[ell]),
                             xs[ell], ws[ell], g, ell == 0)

    first = _first_layer_lognorms(r, ds, vjp)
    if not with_output_scale:
        return first
    scale = torch.empty_like(first)
    for col, depth in enumerate(ds):
        z = _shaped_layer(xs[depth - 1], ws[depth - 1], lambda h: h, 1.0)
        with torch.enable_grad():
            z = z.detach().requires_grad_(True)
            (gz,) = torch.autograd.grad(activation(gs[depth - 1] * z), z, r)
        scale[:, col] = torch.log(gz.flatten(1).norm(dim=1))
    return first, scale


def shaped_nonlinearity(x0: torch.Tensor, depth: int, *, n_nets: int, gen: torch.Generator,
                        activation: Activation, gains,
                        weights: Weights = "orthogonal") -> torch.Tensor:
    """How far each layer of the shaped network of eq. (11) is from its linearization.

    For layer l with pre-activation ``u = alpha_l BN(W_l X_l)`` (standard BN) returns
    ``||act(u) - u||_F / ||u||_F``, the relative deviation of the layer's output from the linear
    map ``u -> u`` (the linearization at 0 of tanh and sin); 0 means the layer is linear.
    Returns (n_nets, depth)."""
    depth = v.positive_int("depth", depth)
    n_nets = v.positive_int("n_nets", n_nets)
    if not callable(activation):
        raise TypeError("activation must be callable")
    gs = _gains("gains", gains, depth)
    x = _inputs(x0, n_nets)
    out = torch.empty(n_nets, depth, dtype=DTYPE, device=x.device)
    for ell, w in enumerate(_weight_stream(weights, n_nets, x.shape[1], depth, gen)):
        h = w @ x
        h = h - h.mean(dim=-1, keepdim=True)
        u = gs[ell] * (h / h.norm(dim=-1, keepdim=True) * math.sqrt(h.shape[-1]))
        y = activation(u)
        out[:, ell] = (y - u).flatten(1).norm(dim=1) / u.flatten(1).norm(dim=1)
        x = y
    return out


def shaped_leaky_relu(slope: float) -> Activation:
    """LeakyReLU with negative slope ``slope`` (activation shaping: slope -> 1 is linear)."""
    slope = v.in_interval("slope", slope, 0.0, 1.0, closed_hi=True)

    def act(h: torch.Tensor) -> torch.Tensor:
        return torch.where(h >= 0, h, slope * h)

    return act


__all__ = ["bn", "bn_centered", "gram_eigenvalues", "isometry_gap", "isometry",
           "row_norm_factor", "spectral_inputs", "isometry_gaps_in_depth",
           "first_layer_grad_lognorm", "weight_grad_lognorms", "logit_loss_gradient",
           "bn_standard", "shaped_weight_grad_lognorms",
           "shaped_first_layer_grad_lognorm", "shaped_nonlinearity", "shaped_leaky_relu"]
