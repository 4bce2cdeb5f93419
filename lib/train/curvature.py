"""Curvature at initialization: the spectral norm of a loss Hessian by power iteration.

The Hessian is never formed. Each step applies it to a vector by a Hessian-vector product
(double backpropagation, Pearlmutter 1994), ``Hv = d/dtheta <grad L(theta), v>``. Power
iteration on ``H`` converges to the eigenvalue of largest *magnitude*, which is the spectral
norm ``||H||_2`` of a symmetric matrix (Arpit, Campos & Bengio 2019, Section 5.3, Table 2).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from ..core import validate as v
from ..core.device import randn
from . import _checks


@dataclass(frozen=True)
class SpectralNorm:
    """Result of :func:`hessian_spectral_norm`.

    ``value`` is |lambda| for the dominant eigenvalue ``eigenvalue`` (its sign kept);
    ``converged`` is True when, before ``max_iter``, the relative change of the Rayleigh
    quotient fell below ``rtol`` and the relative residual ``residual`` =
    ||Hv - lambda v|| / |lambda| below sqrt(rtol) (the eigenvector converges like the square
    root of the eigenvalue).
    """

    value: float
    eigenvalue: float
    iterations: int
    residual: float
    converged: bool


def hessian_vector_product(loss: torch.Tensor, params: Sequence[torch.Tensor],
                           vec: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """H vec for the Hessian of the scalar ``loss`` with respect to ``params``.

    ``loss`` must have been computed with a graph (``create_graph`` happens here); ``vec``
    holds one tensor of each parameter's shape. An inf or NaN in ``loss`` or ``vec`` is
    carried into the product.

    Raises
    ------
    TypeError
        ``params`` or ``vec`` is not a sequence of tensors.
    ValueError
        ``loss`` is not a scalar with a graph, a parameter does not require grad, or ``vec``
        does not match ``params`` in number or shapes.

    Examples
    --------
    >>> x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    >>> hessian_vector_product((x ** 3).sum(), [x], [torch.ones(2, dtype=torch.float64)])
    [tensor([ 6., 12.], dtype=torch.float64)]
    """
    params = _checks.params("params", params)
    loss = _checks.scalar_loss("loss", loss, finite=False)
    if isinstance(vec, (str, bytes, torch.Tensor)) or not hasattr(vec, "__iter__"):
        raise TypeError(f"vec must be a sequence of tensors (one per parameter), got "
                        f"{type(vec).__name__}")
    vec = list(vec)
    if len(vec) != len(params):
        raise ValueError(f"vec must have one tensor per parameter ({len(params)}), got "
                         f"{len(vec)}")
    for i, (u, p) in enumerate(zip(vec, params, strict=True)):
        if not isinstance(u, torch.Tensor) or not u.is_floating_point():
            raise TypeError(f"vec[{i}] must be a floating-point tensor, got "
                            f"{getattr(u, 'dtype', type(u).__name__)}")
        if u.shape != p.shape:
            raise ValueError(f"vec[{i}] must have the shape of params[{i}] "
                             f"{tuple(p.shape)}, got {tuple(u.shape)}")
    grads = torch.autograd.grad(loss, params, create_graph=True)
    dot = sum((g * u).sum() for g, u in zip(grads, vec, strict=True))
    return list(torch.autograd.grad(dot, params, retain_graph=True))


def _dot(a: Sequence[torch.Tensor], b: Sequence[torch.Tensor]) -> torch.Tensor:
    return sum((x * y).sum() for x, y in zip(a, b, strict=True))


def hessian_spectral_norm(loss_fn: Callable[[], torch.Tensor],
                          params: Sequence[torch.Tensor], *, gen: torch.Generator,
                          max_iter: int = 200, rtol: float = 1e-4) -> SpectralNorm:
    """||H||_2 of the Hessian of ``loss_fn()`` at ``params`` by power iteration.

    Args:
        loss_fn: computes the scalar loss from ``params`` (which require gradients).
        params: the parameters; the Hessian is over all of them, flattened together.
        gen: generator for the random start vector.
        max_iter: largest number of Hessian-vector products.
        rtol: convergence tolerance on the Rayleigh quotient and the residual.

    Raises:
        ValueError: the loss is not a finite scalar (a NaN loss never becomes a norm).
        FloatingPointError: a Hessian-vector product is not finite.
    """
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
    params = _checks.params("params", params)
    gen = v.generator("gen", gen, optional=False)
    max_iter = v.positive_int("max_iter", max_iter)
    rtol = v.positive_float("rtol", rtol)
    loss = loss_fn()
    if not isinstance(loss, torch.Tensor) or loss.ndim != 0:
        raise ValueError(f"loss_fn must return a scalar tensor, got "
                         f"{getattr(loss, 'shape', type(loss).__name__)}")
    if not bool(torch.isfinite(loss)):
        raise ValueError(f"loss_fn returned a non-finite loss ({float(loss.detach())}): its "
                         "Hessian has no spectral norm")
    grads = torch.autograd.grad(loss, params, create_graph=True)

    def hvp(vec: list[torch.Tensor]) -> list[torch.Tensor]:
        return list(torch.autograd.grad(_dot(grads, vec), params, retain_graph=True))

    vec = [randn(*p.shape, gen=gen, dtype=p.dtype).to(p.device) for p in params]
    norm = torch.sqrt(_dot(vec, vec))
    vec = [x / norm for x in vec]
    lam_old, residual = math.nan, math.inf
    for it in range(1, max_iter + 1):
        hv = hvp(vec)
        lam = float(_dot(vec, hv))
        diff = [a - lam * b for a, b in zip(hv, vec, strict=True)]
        residual = float(torch.sqrt(_dot(diff, diff)))
        hv_norm = torch.sqrt(_dot(hv, hv))
        if not math.isfinite(lam) or not torch.isfinite(hv_norm):
            raise FloatingPointError(f"loss_fn: the Hessian-vector product at iteration {it} "
                                     "is not finite (overflow, or NaN in the loss's graph)")
        scale = max(abs(lam), 1e-300)
        if (math.isfinite(lam_old) and abs(lam - lam_old) <= rtol * scale
                and residual <= math.sqrt(rtol) * scale):
            return SpectralNorm(abs(lam), lam, it, residual / scale, True)
        lam_old = lam
        if hv_norm == 0:
            return SpectralNorm(0.0, 0.0, it, 0.0, True)
        vec = [x / hv_norm for x in hv]
    return SpectralNorm(abs(lam_old), lam_old, max_iter, residual / max(abs(lam_old), 1e-300),
                        False)


__all__ = ["SpectralNorm", "hessian_spectral_norm", "hessian_vector_product"]
