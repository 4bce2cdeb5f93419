"""The eigenvalue of largest magnitude of many Hessians at once, by Lanczos iteration.

Power iteration (:mod:`eit.train.curvature`) needs as many Hessian-vector products as the ratio
of the two largest eigenvalue magnitudes dictates; Lanczos iteration with full
reorthogonalization extracts the extreme eigenvalues from the Krylov space of the same
products and usually needs far fewer. Each step costs one Hessian-vector product.

The iteration runs on a batch of independent symmetric operators at once (the block-diagonal
Hessian of a sum of independent losses, :mod:`eit.models.wn_stacked`): vectors have shape
``(S, P)``, one row per operator, and every inner product is taken row by row. A row stops
when the residual bound of its Ritz value, ``|beta_k s_k| / |theta|``, falls below ``rtol``
(in exact arithmetic ``||H y - theta y|| = |beta_k s_k|`` for the Ritz pair ``(theta, y)``).

References
----------
Golub & Van Loan, *Matrix Computations*, section 10.1; Arpit, Campos & Bengio (2019),
Section 5.3 (Table 2: the spectral norm of the loss Hessian at initialization).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from scipy.linalg import eigh_tridiagonal

from ..core import validate as v
from ..core.device import randn
from . import _checks

__all__ = ["Extreme", "hessian_operator", "lanczos_extreme", "loss_hessian_norms"]


@dataclass(frozen=True)
class Extreme:
    """The eigenvalue of largest magnitude of each operator of a batch (arrays of shape (S,)).

    ``value`` = |eigenvalue|, the spectral norm of a symmetric operator; ``residual`` is the
    relative residual bound of the Ritz pair; ``steps`` the number of operator applications
    it used; ``converged`` whether ``residual <= rtol`` (or the Krylov space was exhausted).
    """

    value: np.ndarray
    eigenvalue: np.ndarray
    residual: np.ndarray
    steps: np.ndarray
    converged: np.ndarray


def hessian_operator(loss: torch.Tensor, params: Sequence[torch.Tensor]
                     ) -> Callable[[torch.Tensor], torch.Tensor]:
    """Hessian-vector products ``(S, P) -> (S, P)`` for stacked parameters.

    ``params`` are tensors whose leading axis is the batch ``S`` of independent networks and
    ``loss`` is the *sum* of their losses (computed from ``params``): its Hessian is block
    diagonal, and row ``s`` of the result is network ``s``'s Hessian applied to row ``s``.

    Raises
    ------
    TypeError
        ``params`` is not a sequence of tensors.
    ValueError
        A parameter without gradient or batch axis, parameters of different batches, or a
        ``loss`` that is not a finite scalar with a graph (a NaN loss has no Hessian: it would
        only surface as a non-finite product later).

    Examples
    --------
    >>> w = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
    >>> apply = hessian_operator((w ** 2).sum(), [w])
    >>> apply(torch.ones(2, 2, dtype=torch.float64)).tolist()
    [[2.0, 2.0], [2.0, 2.0]]
    """
    params = _checks.params("params", params)
    if any(p.ndim == 0 for p in params):
        raise ValueError("params must have the batch of networks as their leading axis, got "
                         "a scalar")
    s = params[0].shape[0]
    if any(p.shape[0] != s for p in params):
        raise ValueError("every parameter of params must have the batch as its leading axis")
    loss = _checks.scalar_loss("loss", loss, finite=True)
    grads = torch.autograd.grad(loss, params, create_graph=True)
    sizes = [p[0].numel() for p in params]

    def apply(vec: torch.Tensor) -> torch.Tensor:
        parts = torch.split(vec, sizes, dim=1)
        dot = sum((g * part.reshape(g.shape)).sum() for g, part in zip(grads, parts))
        hv = torch.autograd.grad(dot, params, retain_graph=True)
        return torch.cat([h.reshape(s, -1) for h in hv], dim=1)

    return apply


def lanczos_extreme(operator: Callable[[torch.Tensor], torch.Tensor], batch: int, dim: int,
                    *, gen: torch.Generator, max_steps: int = 80, rtol: float = 1e-3,
                    dtype: torch.dtype = torch.float64,
                    device: torch.device | str | None = None) -> Extreme:
    """Eigenvalue of largest magnitude of ``batch`` symmetric operators on ``R^dim``.

    Parameters
    ----------
    operator : callable
        ``(batch, dim) -> (batch, dim)``, row ``s`` the ``s``-th operator applied to row ``s``.
    batch, dim : int
        Number of operators and their dimension.
    gen : torch.Generator
        For the random start vectors.
    max_steps : int
        At most this many operator applications.
    rtol : float
        Stop a row when its relative residual bound is below ``rtol``.
    dtype : torch.dtype
        Of the Lanczos vectors.
    device : torch.device or str, optional
        Where the operator's vectors live (default: the compute device,
        :func:`eit.core.device.device`).

    Raises
    ------
    ValueError
        If an operator is not symmetric (detected from the Lanczos projection, which must
        be tridiagonal), or a bad argument.
    FloatingPointError
        If the operator returns a non-finite or wrongly shaped vector, or its products
        overflow.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> a = torch.diag(torch.tensor([1.0, -3.0, 2.0], dtype=torch.float64))
    >>> out = lanczos_extreme(lambda x: x @ a, 2, 3, gen=generator(0), device=a.device)
    >>> out.eigenvalue.round(6).tolist(), out.converged.tolist()
    ([-3.0, -3.0], [True, True])
    """
    if not callable(operator):
        raise TypeError(f"operator must be callable ((batch, dim) -> (batch, dim)), got "
                        f"{type(operator).__name__}")
    batch, dim = v.positive_int("batch", batch), v.positive_int("dim", dim)
    max_steps = v.positive_int("max_steps", max_steps)
    rtol = v.positive_float("rtol", rtol)
    device = v.torch_device("device", device)
    q = randn(batch, dim, gen=gen, dtype=dtype)
    if device is not None:
        q = q.to(device)
    q = q / q.norm(dim=1, keepdim=True)
    basis = [q]
    alphas, betas = [], []
    done = np.zeros(batch, dtype=bool)
    theta = np.zeros(batch)
    resid = np.full(batch, np.inf)
    steps = np.zeros(batch, dtype=int)
    scale_w = torch.zeros(batch, dtype=dtype, device=q.device)
    for k in range(1, min(max_steps, dim) + 1):
        active = ~done
        w = operator(basis[-1])
        if w.shape != (batch, dim) or not torch.isfinite(w).all():
            raise FloatingPointError("the operator returned a wrongly shaped or non-finite "
                                     "vector")
        stacked = torch.stack(basis)                              # (k, batch, dim)
        scale_w = torch.maximum(scale_w, w.norm(dim=1))
        if k > 1:
            _check_symmetric(torch.einsum("kbd,bd->kb", stacked, w), betas[-1], scale_w,
                             ~torch.as_tensor(active, device=w.device), dtype)
        alpha = (w * basis[-1]).sum(1)
        w = w - alpha[:, None] * basis[-1]
        if betas:
            w = w - betas[-1][:, None] * basis[-2]
        for _ in range(2):                                        # full reorthogonalization
            w = w - torch.einsum("kb,kbd->bd", torch.einsum("kbd,bd->kb", stacked, w), stacked)
        beta = w.norm(dim=1)
        if not bool(torch.isfinite(alpha).all() & torch.isfinite(beta).all()):
            raise FloatingPointError("the operator's products overflow: the Lanczos "
                                     "coefficients are not finite")
        alphas.append(alpha)
        betas.append(beta)
        a = torch.stack(alphas).T.cpu().numpy()                   # (batch, k)
        b = torch.stack(betas).T.cpu().numpy()
        for s in np.flatnonzero(~done):
            vals, vecs = eigh_tridiagonal(a[s], b[s, :-1])
            i = int(np.argmax(np.abs(vals)))
            theta[s] = vals[i]
            scale = max(abs(vals[i]), 1e-300)
            resid[s] = abs(b[s, -1] * vecs[-1, i]) / scale
            steps[s] = k
            if resid[s] <= rtol or b[s, -1] <= 1e-12 * scale:
                done[s] = True
        if done.all():
            break
        safe = torch.where(beta > 0, beta, torch.ones_like(beta))
        basis.append(w / safe[:, None])
    return Extreme(np.abs(theta), theta.copy(), resid, steps, done.copy())


def _check_symmetric(coef: torch.Tensor, beta: torch.Tensor, scale: torch.Tensor,
                     skip: torch.Tensor, dtype: torch.dtype) -> None:
    """Refuse an operator that is not symmetric on the Krylov space built so far.

    ``coef[i] = <q_i, A q_k>`` for the orthonormal Lanczos vectors ``q_0..q_k``. For a
    symmetric ``A`` the projection is tridiagonal: ``<q_(k-1), A q_k> = beta_(k-1)`` and the
    older coefficients vanish (up to rounding, relative to ``||A||``). A non-symmetric
    operator breaks this at once, and its Ritz values would mean nothing.
    """
    expected = torch.zeros_like(coef[:-1])                    # coef[-1] is alpha_k
    expected[-1] = beta
    gap = (coef[:-1] - expected).abs().amax(0)                 # (batch,)
    tol = 30 * torch.finfo(dtype).eps ** 0.5 * scale
    bad = (gap > tol) & ~skip
    if bool(bad.any()):
        s = int(torch.nonzero(bad)[0])
        raise ValueError(
            f"operator is not symmetric (row {s}: <q_i, A q_k> differs from the tridiagonal "
            f"Lanczos projection by {float(gap[s]):.3g}, against ||A|| >= {float(scale[s]):.3g}):"
            " lanczos_extreme needs symmetric operators")


def loss_hessian_norms(model, x: torch.Tensor, y: torch.Tensor, *, gen: torch.Generator,
                       max_steps: int, rtol: float) -> Extreme:
    """The spectral norm of the Hessian of each stacked network's mean cross-entropy.

    Parameters
    ----------
    model : stacked model
        ``model(x)`` gives logits ``(S, N, C)`` of ``S`` independent networks and
        ``model.parameters()`` their parameters with the network axis first
        (:mod:`eit.models.wn_stacked`).
    x : torch.Tensor
        ``(N, d)`` inputs, shared by the networks.
    y : torch.Tensor
        ``(N,)`` labels.
    gen : torch.Generator
        Draws the Lanczos start vectors.
    max_steps : int
        Hessian-vector products per network, at most.
    rtol : float
        Stop a network's iteration when its Ritz value's residual bound is below ``rtol``
        times the value.

    Returns
    -------
    Extreme
        Per network, ``||H||_2`` of its loss ``mean_i CE(f(x_i), y_i)`` with respect to all
        its parameters, and whether the iteration converged.

    Raises
    ------
    TypeError
        ``model`` is not a stacked model, ``x`` not a floating-point tensor, ``y`` not
        integer labels.
    ValueError
        ``x`` and ``y`` of different lengths, an inf or NaN in ``x``, a label outside
        ``[0, C)``, or a Hessian that overflows float64 at ``x``.

    References
    ----------
    Arpit, Campos & Bengio (2019), Section 5.3, Table 2.

    Examples
    --------
    >>> from eit.core.device import device, randn
    >>> from eit.core.seeds import generator
    >>> from eit.models.wn_init import wn_mlp_model
    >>> from eit.models.wn_stacked import stack
    >>> nets = stack([wn_mlp_model("proposed", d_in=3, widths=[4], d_out=2, gen=generator(s))
    ...               for s in range(2)])
    >>> x = randn(5, 3, gen=generator(5))
    >>> y = torch.tensor([0, 1, 0, 1, 1], device=device())
    >>> out = loss_hessian_norms(nets, x, y, gen=generator(0), max_steps=40, rtol=1e-6)
    >>> out.value.shape, bool(out.converged.all())
    ((2,), True)
    """
    if not callable(model) or not callable(getattr(model, "parameters", None)):
        raise TypeError(f"model must be a stacked model (callable, with parameters()), got "
                        f"{type(model).__name__}")
    x, y = _checks.samples(x, y)
    params = list(model.parameters())
    x, y = x.to(params[0].device), y.to(params[0].device)   # the samples meet the weights
    logits = model(x)
    _checks.classes(y, logits)
    nets = logits.shape[0]
    loss = F.cross_entropy(logits.flatten(0, 1), y.repeat(nets), reduction="sum")
    dim = sum(p[0].numel() for p in params)
    try:
        return lanczos_extreme(hessian_operator(loss / len(y), params), nets, dim, gen=gen,
                               max_steps=max_steps, rtol=rtol, device=params[0].device)
    except FloatingPointError as err:
        raise ValueError(f"the Hessian of the loss at these inputs x is not finite in "
                         f"float64 ({err}): inputs of this magnitude (largest "
                         f"{float(x.abs().max()):.3g}) or the model's weights overflow it"
                         ) from err
