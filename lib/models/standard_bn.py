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
1-Lipschitz), with a backward pass that renormalizes the cotangent at every layer.

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
from .bn_chain import square_weights

__all__ = ["bn_standard", "feature_gap", "layer", "representation_gaps",
           "first_layer_grad_lognorms"]

Activation = Callable[[torch.Tensor], torch.Tensor]


def bn_standard(x: torch.Tensor) -> torch.Tensor:
    """Each row of each (d, n) matrix centred over the batch and scaled to unit variance."""
    h = x - x.mean(dim=-1, keepdim=True)
    norms = h.norm(dim=-1, keepdim=True)
    if (norms == 0).any():
        raise ValueError("a feature is constant over the batch: BN is undefined")
    return math.sqrt(x.shape[-1]) * h / norms


def feature_gap(x: torch.Tensor) -> torch.Tensor:
    """phi of the feature Gram matrix: log(tr(X X^T)/d) - (1/d) log det(X X^T), (..., d, n).

    Zero exactly when the d rows are orthogonal with equal norms; +inf when they are linearly
    dependent (always the case for n < d).

    Examples
    --------
    >>> import torch
    >>> float(feature_gap(torch.eye(2, 3, dtype=torch.float64)))
    0.0
    """
    if not isinstance(x, torch.Tensor) or x.ndim < 2:
        raise TypeError("x must be a torch.Tensor of matrices (..., d, n)")
    x = v.tensor("x", x, ndim=x.ndim)
    gram = x @ x.transpose(-2, -1)
    d = gram.shape[-1]
    if x.shape[-1] < d:  # rank <= n < d by construction
        return torch.full(x.shape[:-2], math.inf, dtype=x.dtype, device=x.device)
    sign, logdet = torch.linalg.slogdet(gram)
    logdet = torch.where(sign > 0, logdet, torch.full_like(logdet, -math.inf))
    return torch.log(torch.diagonal(gram, dim1=-2, dim2=-1).sum(-1) / d) - logdet / d


def layer(x: torch.Tensor, w: torch.Tensor, activation: Activation, gain: float,
          residual: bool) -> torch.Tensor:
    """One layer: ``act(gain * BN(W X))``, plus ``X`` when ``residual``."""
    out = activation(gain * bn_standard(w @ x))
    return x + out if residual else out


def _inputs(x0, n_nets: int) -> torch.Tensor:
    return v.per_network("x0", x0, n_nets).to(device=device(), dtype=DTYPE)


def _check(activation, gain, residual) -> float:
    if not callable(activation):
        raise TypeError("activation must be callable")
    if not isinstance(residual, bool):
        raise TypeError(f"residual must be a bool, got {type(residual).__name__}")
    return v.positive_float("gain", gain)


def representation_gaps(x0: torch.Tensor, depths: Sequence[int], *, n_nets: int,
                        gen: torch.Generator, activation: Activation, gain: float = 1.0,
                        weights: str = "orthogonal", residual: bool = False) -> torch.Tensor:
    """:func:`feature_gap` of ``X_L`` for each depth L in ``depths`` (one deep network per
    ``n_nets``, recorded along the way). Returns (n_nets, len(depths)).
    """
    ds = v.widths("depths", list(depths))
    n_nets = v.positive_int("n_nets", n_nets)
    gain = _check(activation, gain, residual)
    x = _inputs(x0, n_nets)
    out = torch.empty(n_nets, len(ds), dtype=DTYPE, device=x.device)
    for ell in range(1, max(ds) + 1):
        w = square_weights(weights, n_nets, x.shape[1], gen=gen)
        x = layer(x, w, activation, gain, residual)
        for col, depth in enumerate(ds):
            if depth == ell:
                out[:, col] = feature_gap(x)
    return out


def first_layer_grad_lognorms(x0: torch.Tensor, depths: Sequence[int], *, n_nets: int,
                              gen: torch.Generator, activation: Activation, gain: float = 1.0,
                              weights: str = "orthogonal", residual: bool = False
                              ) -> torch.Tensor:
    """log ||dL/dW_0||_F for the network truncated at each depth L in ``depths``.

    Loss ``L = <R, X_L>_F`` with ``R`` Gaussian, ``||R||_F = 1``, one per network; depth L
    uses the first L layers of one deep network per ``n_nets``. Returns (n_nets, len(depths)).
    """
    ds = v.widths("depths", list(depths))
    n_nets = v.positive_int("n_nets", n_nets)
    gain = _check(activation, gain, residual)
    x = _inputs(x0, n_nets)
    d, n = x.shape[1], x.shape[2]
    v.memory("n_nets x max(depths) x d x n (stored layers)", 2 * n_nets * max(ds) * d * n * 8)
    ws, xs = [], [x]
    for _ in range(max(ds)):
        ws.append(square_weights(weights, n_nets, d, gen=gen))
        xs.append(layer(xs[-1], ws[-1], activation, gain, residual))
    r = torch.randn(n_nets, d, n, generator=gen, device=gen.device, dtype=DTYPE).to(x.device)
    r = r / r.flatten(1).norm(dim=1).view(-1, 1, 1)
    out = torch.empty(n_nets, len(ds), dtype=DTYPE, device=x.device)
    for col, depth in enumerate(ds):
        g, log_scale = r, torch.zeros(n_nets, dtype=DTYPE, device=x.device)
        for ell in range(depth - 1, -1, -1):
            first = ell == 0
            with torch.enable_grad():
                xin = xs[ell].detach().requires_grad_(not first)
                w = ws[ell].detach().requires_grad_(first)
                y = layer(xin, w, activation, gain, residual)
                (g,) = torch.autograd.grad(y, w if first else xin, g)
            norm = g.flatten(1).norm(dim=1)
            log_scale = log_scale + torch.log(norm)
            g = g / norm.view(-1, 1, 1)
        out[:, col] = log_scale
    return out
