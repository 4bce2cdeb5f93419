"""Deep linear residual networks (Hardt & Ma 2017, Section 2 and Appendix A).

The model is x -> (I + A_l) ... (I + A_1) x, trained on y = R x + xi with xi ~ N(0, I_d) and
E[x x^T] = Sigma. Weights are stacked as a tensor A of shape (..., l, d, d) with A[..., i-1]
the slice A_i (eq. 2.1). Everything is batched over leading dimensions and runs in the dtype
of its inputs (float64 in the book).

* :func:`end_to_end`, :func:`population_risk` (Claim 2.3, eq. 2.4), :func:`sample_loss`
  (eq. 2.2, one sample at a time, for Monte Carlo checks of Claim 2.3);
* :func:`gradient_printed` (eq. 2.5 as printed), :func:`gradient` (the true gradient, factors
  in the order the chain rule gives), :func:`gradient_autograd`;
* :func:`pl_bound_printed` (eq. 2.3), :func:`pl_bound_corrected`, :func:`pl_ratio`,
  :func:`project_ball`, :func:`minimize_pl_ratio` (adversarial search over the ball B_tau);
* :func:`gradient_descent` for the residual and for the standard parameterization;
* :func:`gamma`, :func:`theorem21_bound`, :func:`orthogonal_root`, :func:`small_norm_optimum`
  (Theorem 2.1, Appendix A.1);
* :func:`symbolic_risk`, :func:`symbolic_gradient_printed` (SymPy, Claim 2.3 / Lemma 2.4).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import scipy.linalg as sla
import sympy as sp
import torch

from ..core import validate as v
from ..core.validate import in_interval, positive_float, positive_int, tensor


# --------------------------------------------------------------------------- validation
def _weights(name: str, A) -> torch.Tensor:
    A = tensor(name, A, ndim=tuple(range(3, 8)))
    if A.shape[-1] != A.shape[-2]:
        raise ValueError(f"{name} must have square slices (..., l, d, d), got {tuple(A.shape)}")
    return A


def _square(name: str, M, d: int) -> torch.Tensor:
    M = tensor(name, M, ndim=tuple(range(2, 7)))
    if M.shape[-2:] != (d, d):
        raise ValueError(f"{name} must end in ({d}, {d}), got {tuple(M.shape)}")
    return M


def _finite(out: torch.Tensor, what: str, names: str) -> torch.Tensor:
    """``out`` itself; computed from finite arguments, a non-finite entry is an overflow."""
    if not bool(torch.isfinite(out).all()):
        raise ValueError(f"{what} overflows {out.dtype}: {names} too large in scale")
    return out


def _flag(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def _cholesky(name: str, Sigma: torch.Tensor) -> torch.Tensor:
    """The Cholesky factor of a covariance, refused by name unless positive definite."""
    chol, info = torch.linalg.cholesky_ex(Sigma)
    if bool((info != 0).any()):
        raise ValueError(f"{name} must be positive definite (x ~ N(0, {name}) is drawn through "
                         "its Cholesky factor)")
    return chol


def _fro(x: torch.Tensor) -> torch.Tensor:
    """Frobenius norms of the matrices of ``x`` (..., m, n), without overflow or underflow.

    The plain norm where it is safe (so that ordinary values are unchanged to the bit); the
    norm of the matrix divided by its largest entry, times that entry, elsewhere.
    """
    plain = torch.linalg.matrix_norm(x)
    big = x.abs().amax((-2, -1))
    scale = torch.where(big > 0, big, torch.ones_like(big))
    scaled = torch.linalg.matrix_norm(x / scale[..., None, None]) * scale
    return torch.where(torch.isfinite(plain) & (plain > 1e-150), plain, scaled)


def _eye(A: torch.Tensor) -> torch.Tensor:
    d = A.shape[-1]
    return torch.eye(d, dtype=A.dtype, device=A.device)


def _chain(A: torch.Tensor, lo: int, hi: int, *, reverse: bool = False,
           transpose: bool = False) -> torch.Tensor:
    """Product of the factors (I + A_j) (or their transposes) for lo <= j <= hi (1-based).

    The factor with the largest index is leftmost unless ``reverse``.
    """
    eye = _eye(A)
    out = eye.expand(*A.shape[:-3], *eye.shape).clone()
    idx = range(lo, hi + 1) if reverse else range(hi, lo - 1, -1)
    for j in idx:
        f = eye + A[..., j - 1, :, :]
        out = out @ (f.transpose(-1, -2) if transpose else f)
    return out


# --- unchecked kernels (arguments already validated; used inside the iterations) -----------
def _excess(A: torch.Tensor, R: torch.Tensor, Sigma: torch.Tensor) -> torch.Tensor:
    E = _chain(A, 1, A.shape[-3]) - R
    return torch.einsum("...ij,...jk,...ik->...", E, Sigma, E)


def _grad(A: torch.Tensor, R: torch.Tensor, Sigma: torch.Tensor) -> torch.Tensor:
    ell = A.shape[-3]
    E = _chain(A, 1, ell) - R
    out = [2 * _chain(A, i + 1, ell).transpose(-1, -2) @ E @ Sigma
           @ _chain(A, 1, i - 1).transpose(-1, -2) for i in range(1, ell + 1)]
    return torch.stack(out, dim=-3)


def _product_standard(W: torch.Tensor) -> torch.Tensor:
    out = W[..., 0, :, :]
    for j in range(1, W.shape[-3]):
        out = W[..., j, :, :] @ out
    return out


def _excess_standard(W: torch.Tensor, R: torch.Tensor, Sigma: torch.Tensor) -> torch.Tensor:
    E = _product_standard(W) - R
    return torch.einsum("...ij,...jk,...ik->...", E, Sigma, E)


def _losses(A: torch.Tensor, R: torch.Tensor, x: torch.Tensor, xi: torch.Tensor
            ) -> torch.Tensor:
    E = _chain(A, 1, A.shape[-3]) - R
    r = x @ E.transpose(-1, -2) - xi
    return (r * r).sum(-1)


def _project(A: torch.Tensor, tau: float) -> torch.Tensor:
    U, s, Vh = torch.linalg.svd(A)
    return U @ torch.diag_embed(s.clamp(max=tau)) @ Vh


# --------------------------------------------------------------------- risk and gradient
def end_to_end(A) -> torch.Tensor:
    """The end-to-end map (I + A_l) ... (I + A_1) of eq. (2.1).

    Raises
    ------
    ValueError
        ``A`` is not a finite (..., l, d, d) tensor, or the product overflows.

    Examples
    --------
    >>> A = torch.zeros(2, 2, 2, dtype=torch.float64)
    >>> end_to_end(A)
    tensor([[1., 0.],
            [0., 1.]], dtype=torch.float64)
    """
    A = _weights("A", A)
    return _finite(_chain(A, 1, A.shape[-3]), "the end-to-end map", "A is")


def error_matrix(A, R) -> torch.Tensor:
    """E = (I + A_l) ... (I + A_1) - R (Claim 2.3).

    Examples
    --------
    >>> A = torch.zeros(2, 2, 2, dtype=torch.float64)
    >>> R = torch.eye(2, dtype=torch.float64)
    >>> float(error_matrix(A, R).abs().max())
    0.0
    """
    A = _weights("A", A)
    R = _square("R", R, A.shape[-1])
    return _finite(_chain(A, 1, A.shape[-3]) - R, "the error matrix E", "A or R is")


def excess_risk(A, R, Sigma) -> torch.Tensor:
    """f(A) - C_opt = ||E Sigma^{1/2}||_F^2 = tr(E Sigma E^T) (Claim 2.3), computed directly.

    Examples
    --------
    >>> A = torch.zeros(2, 2, 2, dtype=torch.float64)
    >>> R = torch.eye(2, dtype=torch.float64)
    >>> float(excess_risk(A, 2 * R, R))
    2.0
    """
    A = _weights("A", A)
    d = A.shape[-1]
    R, Sigma = _square("R", R, d), _square("Sigma", Sigma, d)
    return _finite(_excess(A, R, Sigma), "the excess risk", "A, R or Sigma is")


def population_risk(A, R, Sigma) -> torch.Tensor:
    """f(A) = ||E Sigma^{1/2}||_F^2 + C = tr(E Sigma E^T) + d (Claim 2.3, eq. 2.4).

    C = E||xi||^2 = d for xi ~ N(0, I_d); this is also C_opt, since A_1 = R - I, A_j = 0
    (j > 1) makes E = 0.

    Examples
    --------
    >>> A = torch.zeros(2, 2, 2, dtype=torch.float64)
    >>> R = torch.eye(2, dtype=torch.float64)
    >>> float(population_risk(A, R, R))
    2.0
    """
    return excess_risk(A, R, Sigma) + A.shape[-1]


def sample_loss(A, R, x, xi) -> torch.Tensor:
    """f(A, (x, y)) = ||(I + A_l)...(I + A_1) x - R x - xi||^2 per sample (eq. 2.2).

    ``x`` and ``xi`` have shape (n, d); returns the n losses.

    Examples
    --------
    >>> A = torch.zeros(2, 2, 2, dtype=torch.float64)
    >>> R = torch.eye(2, dtype=torch.float64)
    >>> x, xi = torch.ones(1, 2, dtype=torch.float64), torch.zeros(1, 2, dtype=torch.float64)
    >>> sample_loss(A, R, x, xi)
    tensor([0.], dtype=torch.float64)
    """
    A = _weights("A", A)
    d = A.shape[-1]
    x, xi = tensor("x", x, ndim=2), tensor("xi", xi, ndim=2)
    if x.shape[-1] != d or xi.shape != x.shape:
        raise ValueError(f"x and xi must both have shape (n, {d}), got {tuple(x.shape)} "
                         f"and {tuple(xi.shape)}")
    R = _square("R", R, d)
    return _finite(_losses(A, R, x, xi), "the loss", "A, R, x or xi is")


def gradient_printed(A, R, Sigma) -> torch.Tensor:
    """Eq. (2.5) exactly as printed, for every i at once: shape of A.

    2 (I + A_l^T) ... (I + A_{i+1}^T) E Sigma (I + A_{i-1}^T) ... (I + A_1^T): the transposed
    factors keep the order of the forward product (largest index leftmost).

    Examples
    --------
    >>> A = torch.zeros(2, 2, 2, dtype=torch.float64)
    >>> R = torch.eye(2, dtype=torch.float64)
    >>> gradient_printed(A, 2 * R, R).shape
    torch.Size([2, 2, 2])
    """
    A = _weights("A", A)
    ell, d = A.shape[-3], A.shape[-1]
    R, Sigma = _square("R", R, d), _square("Sigma", Sigma, d)
    E = _chain(A, 1, ell) - R
    out = [2 * _chain(A, i + 1, ell, transpose=True) @ E @ Sigma
           @ _chain(A, 1, i - 1, transpose=True) for i in range(1, ell + 1)]
    return _finite(torch.stack(out, dim=-3), "eq. (2.5)", "A, R or Sigma is")


def gradient(A, R, Sigma) -> torch.Tensor:
    """The gradient of f: 2 P_{>i}^T E Sigma P_{<i}^T with P_{>i} = (I+A_l)...(I+A_{i+1}).

    P_{>i}^T = (I + A_{i+1}^T) ... (I + A_l^T): the reverse of the order printed in eq. (2.5).

    Examples
    --------
    >>> A = torch.zeros(2, 2, 2, dtype=torch.float64)
    >>> R = torch.eye(2, dtype=torch.float64)
    >>> bool(torch.allclose(gradient(A, 2 * R, R), gradient_autograd(A, 2 * R, R)))
    True
    """
    A = _weights("A", A)
    d = A.shape[-1]
    R, Sigma = _square("R", R, d), _square("Sigma", Sigma, d)
    return _finite(_grad(A, R, Sigma), "the gradient", "A, R or Sigma is")


def gradient_autograd(A, R, Sigma) -> torch.Tensor:
    """The gradient of :func:`population_risk` by reverse-mode automatic differentiation.

    One gradient per element of the batch that ``A``, ``R`` and ``Sigma`` broadcast to (the
    shape :func:`gradient` returns).

    Examples
    --------
    >>> A = torch.zeros(2, 2, 2, dtype=torch.float64)
    >>> R = torch.eye(2, dtype=torch.float64)
    >>> gradient_autograd(A, R, R).abs().max()
    tensor(0., dtype=torch.float64)
    """
    A = _weights("A", A)
    d = A.shape[-1]
    R, Sigma = _square("R", R, d), _square("Sigma", Sigma, d)
    try:
        batch = torch.broadcast_shapes(A.shape[:-3], R.shape[:-2], Sigma.shape[:-2])
    except RuntimeError:
        raise ValueError(f"A, R and Sigma must have broadcastable batch shapes, got "
                         f"{tuple(A.shape)}, {tuple(R.shape)} and {tuple(Sigma.shape)}") from None
    A = A.detach().expand(*batch, *A.shape[-3:]).clone().requires_grad_(True)
    (_excess(A, R, Sigma) + d).sum().backward()
    return _finite(A.grad.detach(), "the gradient", "A, R or Sigma is")


_FD_STEPS = (1e-10, 1e-2)      # smaller steps are lost to rounding, larger ones no derivative


def gradient_fd(A, R, Sigma, *, h: float = 1e-6) -> torch.Tensor:
    """Central finite differences of :func:`population_risk`, entry by entry (unbatched A).

    ``h`` lies in [1e-10, 1e-2]: below, the difference quotient is rounding noise; above, it
    is no derivative.

    Examples
    --------
    >>> A = torch.zeros(2, 2, 2, dtype=torch.float64)
    >>> R = torch.eye(2, dtype=torch.float64)
    >>> float(gradient_fd(A, R, R).abs().max()) < 1e-6
    True
    """
    A = _weights("A", A)
    h = positive_float("h", h)
    if not _FD_STEPS[0] <= h <= _FD_STEPS[1]:
        raise ValueError(f"h must lie in [{_FD_STEPS[0]:g}, {_FD_STEPS[1]:g}] (a difference "
                         f"step), got {h!r}")
    if A.ndim != 3:
        raise ValueError(f"A must be unbatched (l, d, d) for finite differences, got "
                         f"{tuple(A.shape)}")
    flat = A.reshape(-1)
    steps = torch.eye(flat.numel(), dtype=A.dtype, device=A.device) * h
    plus = population_risk((flat + steps).reshape(-1, *A.shape), R, Sigma)
    minus = population_risk((flat - steps).reshape(-1, *A.shape), R, Sigma)
    return _finite(((plus - minus) / (2 * h)).reshape(A.shape), "the difference quotient",
                   "A, R or Sigma is")


# ------------------------------------------------------------------ gradient lower bound
def spectral_norm(A) -> torch.Tensor:
    """||A|| = max_i ||A_i|| (largest spectral norm over the slices), per batch element.

    Examples
    --------
    >>> spectral_norm(0.5 * torch.eye(2, dtype=torch.float64).expand(3, 2, 2))
    tensor(0.5000, dtype=torch.float64)
    """
    A = _weights("A", A)
    return torch.linalg.matrix_norm(A, ord=2).amax(-1)


def project_ball(A, tau: float) -> torch.Tensor:
    """Nearest point of B_tau: clip the singular values of every slice at ``tau``.

    Examples
    --------
    >>> A = 2 * torch.eye(2, dtype=torch.float64).expand(1, 2, 2)
    >>> project_ball(A, 0.5).diagonal(dim1=-2, dim2=-1)
    tensor([[0.5000, 0.5000]], dtype=torch.float64)
    """
    A = _weights("A", A)
    tau = positive_float("tau", tau)
    return _project(A, tau)


def _sigma_min(Sigma: torch.Tensor) -> torch.Tensor:
    """sigma_min of a covariance (>= 0); an indefinite ``Sigma`` is refused by name."""
    ev = torch.linalg.eigvalsh(Sigma)
    smin, smax = ev[..., 0], ev[..., -1]
    if bool((smin < -1e-8 * smax.abs()).any()):
        raise ValueError("Sigma must be positive semi-definite (a covariance), got an "
                         "eigenvalue < 0")
    return smin.clamp(min=0)


def _tau(tau):
    """tau in [0, 1): a number, or a tensor with one value per batch element."""
    if isinstance(tau, torch.Tensor):
        if not torch.is_floating_point(tau) or not ((tau >= 0) & (tau < 1)).all():
            raise ValueError("tau must lie in [0, 1)")
        return tau
    return in_interval("tau", tau, 0.0, 1.0)


def _pl_arguments(ell, tau, Sigma) -> tuple[int, float | torch.Tensor, torch.Tensor]:
    """The validated ``ell``, ``tau`` and sigma_min(Sigma) of the constants of eq. (2.3)."""
    ell = positive_int("ell", ell)
    tau = _tau(tau)
    Sigma = tensor("Sigma", Sigma, ndim=tuple(range(2, 6)))
    if Sigma.shape[-1] != Sigma.shape[-2]:
        raise ValueError(f"Sigma must be square (..., d, d), got {tuple(Sigma.shape)}")
    return ell, tau, _sigma_min(Sigma)


def pl_bound_printed(ell: int, tau, Sigma) -> torch.Tensor:
    """The constant of eq. (2.3) as printed: 4 l (1 - tau)^(l-1) sigma_min(Sigma)^2.

    ``tau`` is a number in [0, 1) or a tensor of them (one per batch element); ``Sigma`` a
    covariance (positive semi-definite).

    Examples
    --------
    >>> R = torch.eye(2, dtype=torch.float64)
    >>> float(pl_bound_printed(2, 0.5, R))
    4.0
    """
    ell, tau, smin = _pl_arguments(ell, tau, Sigma)
    return _finite(4 * ell * (1 - tau) ** (ell - 1) * smin**2, "the constant of eq. (2.3)",
                   "Sigma is")


def pl_bound_corrected(ell: int, tau, Sigma) -> torch.Tensor:
    """The constant the proof supports: 4 l (1 - tau)^(2(l-1)) sigma_min(Sigma).

    From ||df/dA_i||_F >= 2 (1-tau)^(l-1) ||E Sigma||_F and
    ||E Sigma||_F >= sigma_min(Sigma)^{1/2} ||E Sigma^{1/2}||_F. ``tau`` and ``Sigma`` as in
    :func:`pl_bound_printed`.

    Examples
    --------
    >>> R = torch.eye(2, dtype=torch.float64)
    >>> float(pl_bound_corrected(2, 0.5, R))
    2.0
    """
    ell, tau, smin = _pl_arguments(ell, tau, Sigma)
    return _finite(4 * ell * (1 - tau) ** (2 * (ell - 1)) * smin,
                   "the corrected constant of eq. (2.3)", "Sigma is")


def _ratio(A: torch.Tensor, R: torch.Tensor, Sigma: torch.Tensor, tau, which: str
           ) -> torch.Tensor:
    """:func:`pl_ratio` on validated arguments, unchecked (the inner loop of the search)."""
    ell = A.shape[-3]
    smin = torch.linalg.eigvalsh(Sigma)[..., 0].clamp(min=0)
    const = 4 * ell * (1 - tau) ** (ell - 1) * smin**2 if which == "printed" \
        else 4 * ell * (1 - tau) ** (2 * (ell - 1)) * smin
    g = _grad(A, R, Sigma)
    return (g * g).sum((-1, -2, -3)) / (const * _excess(A, R, Sigma))


def pl_ratio(A, R, Sigma, tau, *, which: str = "printed") -> torch.Tensor:
    """||grad f(A)||_F^2 / (constant * (f(A) - C_opt)); eq. (2.3) holds iff this is >= 1.

    ``which`` is "printed" (eq. 2.3) or "corrected" (:func:`pl_bound_corrected`).

    Raises
    ------
    ValueError
        Bad arguments, or a ratio that is undefined: a zero denominator (``Sigma``
        numerically singular, ``A`` fitting ``R`` exactly, or an underflow) or an overflow.

    Examples
    --------
    >>> A = torch.zeros(2, 2, 2, dtype=torch.float64)
    >>> R = torch.eye(2, dtype=torch.float64)
    >>> float(pl_ratio(A, 2 * R, R, 0.5, which='corrected')) >= 1
    True
    """
    A = _weights("A", A)
    which = v.choice("which", which, ("printed", "corrected"))
    const = (pl_bound_printed if which == "printed" else pl_bound_corrected)(
        A.shape[-3], tau, Sigma)
    ev = torch.linalg.eigvalsh(Sigma)
    d = A.shape[-1]
    if bool((ev[..., 0] <= d * torch.finfo(ev.dtype).eps * ev[..., -1]).any()):
        raise ValueError("Sigma is numerically singular: the constant of eq. (2.3) is 0 and "
                         "the ratio undefined")
    g = gradient(A, R, Sigma)
    excess = excess_risk(A, R, Sigma)
    num = _finite((g * g).sum((-1, -2, -3)), "||grad f||^2", "A, R or Sigma is")
    den = const * excess
    if not bool((den > 0).all()):
        raise ValueError("the ratio is undefined: constant * (f(A) - C_opt) is 0 (A fits R "
                         "exactly, or A, R or Sigma is too small in scale)")
    return _finite(num / den, "the ratio", "A, R or Sigma is")


def minimize_pl_ratio(A, R, L, tau: float, *, which: str = "printed", steps: int = 300,
                      lr: float = 0.02, identity_sigma: bool = False) -> tuple[torch.Tensor, ...]:
    """Adversarial search: projected Adam on log(:func:`pl_ratio`) over (A, R, Sigma = L L^T).

    A is kept in B_tau by :func:`project_ball` after every step. All arguments are batched
    starting points; returns the final (A, R, Sigma, ratio), one per start. With
    ``identity_sigma`` the covariance is held at Sigma = I (``L`` is ignored).

    Raises
    ------
    ValueError
        Bad arguments, a start with no finite ratio, or a search that diverges (``lr`` too
        large: a non-finite ratio or weight at some step).

    Examples
    --------
    >>> A = torch.zeros(2, 2, 2, dtype=torch.float64)
    >>> R = torch.eye(2, dtype=torch.float64)
    >>> *_, ratio = minimize_pl_ratio(A, 2 * R, R, 0.5, steps=2)
    >>> bool(ratio > 0)
    True
    """
    tau = in_interval("tau", tau, 0.0, 1.0)
    A = project_ball(A, tau).clone().requires_grad_(True)
    d = A.shape[-1]
    R = _square("R", R, d).clone().requires_grad_(True)
    L = _square("L", L, d).clone().requires_grad_(True)
    steps, lr = positive_int("steps", steps), positive_float("lr", lr)
    which = v.choice("which", which, ("printed", "corrected"))
    identity_sigma = _flag("identity_sigma", identity_sigma)
    opt = torch.optim.Adam([A, R, L], lr=lr)
    eye = torch.eye(d, dtype=A.dtype, device=A.device)

    def sigma():
        if identity_sigma:
            return eye.expand_as(L)
        return L @ L.transpose(-1, -2) + 1e-3 * eye

    with torch.no_grad():
        start = sigma()
        if not bool(torch.isfinite(start).all()):
            raise ValueError("L is too large in scale: Sigma = L L^T overflows")
        try:
            pl_ratio(A, R, start, tau, which=which)
        except ValueError as e:
            raise ValueError(f"the starts A, R and L (Sigma = L L^T) give no ratio: {e}") \
                from None
    for step in range(steps):
        opt.zero_grad()
        loss = torch.log(_ratio(A, R, sigma(), tau, which)).sum()
        loss.backward()
        opt.step()
        if not bool(torch.isfinite(loss) & torch.isfinite(A).all()):
            raise ValueError(f"the search diverged at step {step} (a non-finite ratio): lr = "
                             f"{lr!r} is too large for these starts A, R and L")
        with torch.no_grad():
            A.copy_(_project(A, tau))
    with torch.no_grad():
        S = sigma()
        ratio = _ratio(A, R, S, tau, which)
        if not bool(torch.isfinite(ratio).all() & torch.isfinite(S).all()):
            raise ValueError(f"the search diverged (a non-finite ratio): lr = {lr!r} is too "
                             "large for these starts A, R and L")
        return A.detach(), R.detach(), S, ratio


# ---------------------------------------------------------------------- gradient descent
def end_to_end_standard(W) -> torch.Tensor:
    """The standard parameterization W_l ... W_1 (weights (..., l, d, d)).

    Examples
    --------
    >>> end_to_end_standard(2 * torch.eye(2, dtype=torch.float64).expand(2, 2, 2))
    tensor([[4., 0.],
            [0., 4.]], dtype=torch.float64)
    """
    W = _weights("W", W)
    return _finite(_product_standard(W), "the product W_l ... W_1", "W is")


def excess_risk_standard(W, R, Sigma) -> torch.Tensor:
    """tr((W_l...W_1 - R) Sigma (W_l...W_1 - R)^T): Claim 2.3 without the identity.

    Examples
    --------
    >>> R = torch.eye(2, dtype=torch.float64)
    >>> float(excess_risk_standard(R.expand(2, 2, 2), R, R))
    0.0
    """
    W = _weights("W", W)
    d = W.shape[-1]
    R, Sigma = _square("R", R, d), _square("Sigma", Sigma, d)
    return _finite(_excess_standard(W, R, Sigma), "the excess risk", "W, R or Sigma is")


def gradient_descent(A0, R, Sigma, *, lr: float, steps: int,
                     residual: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Full-batch gradient descent on the population risk from ``A0`` (batched).

    ``residual`` selects (I + A_l)...(I + A_1) (eq. 1.1) or W_l...W_1. Returns the excess
    risks f - C_opt, shape (steps + 1, batch...), and the final weights.

    Raises
    ------
    ValueError
        Bad arguments, a risk at ``A0`` that overflows, or a descent that diverges (``lr``
        too large for this ``A0``, ``R`` and ``Sigma``: a non-finite risk at some step).

    Examples
    --------
    >>> A = torch.zeros(2, 2, 2, dtype=torch.float64)
    >>> R = torch.eye(2, dtype=torch.float64)
    >>> hist, _ = gradient_descent(A, 1.5 * R, R, lr=0.05, steps=100)
    >>> bool(hist[-1] < 1e-6)
    True
    """
    A = _weights("A0", A0)
    d = A.shape[-1]
    R, Sigma = _square("R", R, d), _square("Sigma", Sigma, d)
    lr, steps = positive_float("lr", lr), positive_int("steps", steps)
    risk = _excess if _flag("residual", residual) else _excess_standard
    A = A.detach().clone().requires_grad_(True)
    history = []
    for _ in range(steps):
        f = risk(A, R, Sigma)
        history.append(f.detach())
        (g,) = torch.autograd.grad(f.sum(), A)
        with torch.no_grad():
            A -= lr * g
    with torch.no_grad():
        history.append(risk(A, R, Sigma))
    history = torch.stack(history)
    if not bool(torch.isfinite(history).all()):
        _finite(history[0], "the excess risk at A0", "A0, R or Sigma is")
        finite = torch.isfinite(history.reshape(history.shape[0], -1)).all(1)
        step = int(finite.logical_not().nonzero()[0])
        raise ValueError(f"gradient descent diverged (a non-finite risk at step {step}): lr = "
                         f"{lr!r} is too large for this A0, R and Sigma")
    return history, A.detach()


def projected_gradient_descent(A0, R, Sigma, tau: float, *, lr: float,
                               steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradient descent on f restricted to B_tau: a step, then :func:`project_ball`.

    Returns the final excess risks f - C_opt (batch...) and the final weights.

    Raises
    ------
    ValueError
        Bad arguments, a step that overflows (``lr`` too large for this ``A0``, ``R`` and
        ``Sigma``), or a final risk that overflows.

    Examples
    --------
    >>> A = torch.zeros(2, 2, 2, dtype=torch.float64)
    >>> R = torch.eye(2, dtype=torch.float64)
    >>> risk, _ = projected_gradient_descent(A, 1.5 * R, R, 0.5, lr=0.05, steps=50)
    >>> float(risk) < 1e-6
    True
    """
    A = _weights("A0", A0)
    tau = positive_float("tau", tau)
    d = A.shape[-1]
    R, Sigma = _square("R", R, d), _square("Sigma", Sigma, d)
    lr, steps = positive_float("lr", lr), positive_int("steps", steps)
    A = _project(A, tau)
    for step in range(steps):
        moved = A - lr * _grad(A, R, Sigma)
        if not bool(torch.isfinite(moved).all()):
            raise ValueError(f"projected gradient descent diverged at step {step} (a "
                             f"non-finite step): lr = {lr!r} is too large for this A0, R and "
                             "Sigma")
        A = _project(moved, tau)
    return _finite(_excess(A, R, Sigma), "the final excess risk", "A0, R or Sigma is"), A


# ------------------------------------------------------------------------- Theorem 2.1
def gamma(R: np.ndarray) -> float:
    """gamma = max(|log sigma_max(R)|, |log sigma_min(R)|) (Section 2, before Theorem 2.1).

    A numerically singular ``R`` (sigma_min <= d eps sigma_max) is refused: its gamma would
    be rounding noise.

    Examples
    --------
    >>> gamma(np.diag([2.0, 0.5]))
    0.6931471805599453
    """
    R = np.asarray(v.array("R", R, ndim=2), dtype=float)
    if R.shape[0] != R.shape[1]:
        raise ValueError(f"R must be a square matrix, got shape {R.shape}")
    s = np.linalg.svd(R, compute_uv=False)
    if not s[-1] > s[0] * R.shape[0] * np.finfo(float).eps:
        raise ValueError("R must be invertible (sigma_min(R) > 0, beyond rounding) for gamma "
                         f"to be finite, got singular values {s.tolist()}")
    return float(max(abs(math.log(s[0])), abs(math.log(s[-1]))))


def theorem21_bound(gam: float, ell: int) -> float:
    """The bound of Theorem 2.1: 2 (sqrt(pi) + sqrt(3 gamma))^2 / l.

    Examples
    --------
    >>> round(theorem21_bound(0.0, 2), 6)
    3.141593
    """
    gam = v.nonnegative_float("gam", gam)
    ell = positive_int("ell", ell)
    return 2 * (math.sqrt(math.pi) + math.sqrt(3 * gam)) ** 2 / ell


def _rotation_blocks(Q: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int, float]]]:
    """Real Schur form of an orthogonal Q with det +1: S and its planar rotations (a, b, theta).

    Q = S D S^T (Claim C.1) with 2x2 rotation blocks T(theta) and 1x1 blocks +-1; the -1
    blocks come in pairs (det Q = +1) and are joined into T(pi). Coordinates not listed are
    fixed (+1 blocks).
    """
    Q = np.asarray(Q, dtype=float)
    d = Q.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):      # a huge Q is simply not orthogonal
        orthogonal = Q.ndim == 2 and Q.shape[1] == d and np.allclose(Q.T @ Q, np.eye(d),
                                                                     atol=1e-10)
    if not orthogonal:
        raise ValueError("Q must be a square orthogonal matrix")
    if np.linalg.det(Q) < 0:
        raise ValueError("Q must have det +1: a reflection has no real root near I")
    D, S = sla.schur(Q, output="real")
    blocks, minus, i = [], [], 0
    while i < d:
        if i + 1 < d and abs(D[i + 1, i]) > 1e-12:          # a 2x2 rotation block
            blocks.append((i, i + 1, math.atan2(D[i + 1, i] - D[i, i + 1],
                                                D[i, i] + D[i + 1, i + 1])))
            i += 2
        else:
            if D[i, i] < 0:
                minus.append(i)
            i += 1
    blocks += [(a, b, math.pi) for a, b in zip(minus[::2], minus[1::2], strict=True)]
    return S, blocks


def _root_from_blocks(S: np.ndarray, blocks, q: int) -> np.ndarray:
    W = np.eye(S.shape[0])
    for a, b, theta in blocks:
        c, s = math.cos(theta / q), math.sin(theta / q)
        W[a, a], W[a, b], W[b, a], W[b, b] = c, -s, s, c
    return S @ W @ S.T


def orthogonal_root(Q: np.ndarray, q: int) -> np.ndarray:
    """A real q-th root S W S^T of an orthogonal Q with det Q = +1 (proof of Theorem 2.1).

    With the real Schur form Q = S diag(T(theta_i), 1, ...) S^T, W = diag(T(theta_i / q), 1,
    ...) and (S W S^T)^q = Q; ||S W S^T - I|| = max_i 2 |sin(theta_i / (2q))|.

    Examples
    --------
    >>> q = np.array([[0.0, -1.0], [1.0, 0.0]])
    >>> bool(np.allclose(np.linalg.matrix_power(orthogonal_root(q, 2), 2), q))
    True
    """
    Q = v.array("Q", Q, ndim=2)
    q = positive_int("q", q)
    S, blocks = _rotation_blocks(Q)
    return _root_from_blocks(S, blocks, q)


_IDENTITY_TOL = 1e-12          # singular values this close to 1 count as K = I (gamma = 0)


def small_norm_optimum(R: np.ndarray, ell: int, *, method: str = "svd") -> np.ndarray:
    """A global optimum A* of f with small ||A*|| (Theorem 2.1, proof in Appendix A.1).

    ``method="svd"`` follows Appendix A.1: R = U K V^T (SVD with det U = det V = +1, possible
    iff det R > 0); V^T and U are each written as q factors (I + B) with I + B the q-th
    orthogonal root, K as p factors diag(k_i^{1/p}), with 2q + p = l.
    ``method="polar"`` uses the polar decomposition R = Q P (Q = U V^T, P = V K V^T): q factors
    of Q^{1/q} and p factors of P^{1/p}, with q + p = l.
    The integers p, q >= 0 minimise the largest factor norm; p = 0 is allowed only when
    K = I (gamma = 0) and q = 0 only when the orthogonal factors are I, so that no layer is
    spent on a factor that is already the identity. Returns A* of shape (l, d, d), A*_1
    acting first.

    Examples
    --------
    >>> a = small_norm_optimum(np.diag([2.0, 0.5]), 4)
    >>> a.shape
    (4, 2, 2)
    """
    R = np.asarray(v.array("R", R, ndim=2), dtype=float)
    ell = positive_int("ell", ell)
    method = v.choice("method", method, ("svd", "polar"))
    gamma(R)
    if np.linalg.slogdet(R)[0] <= 0:
        raise ValueError("R must have det R > 0: products of (I + A_i) with ||A_i|| < 1 have "
                         "positive determinant")
    n_rot = 2 if method == "svd" else 1
    U, k, Vt = np.linalg.svd(R)
    if np.linalg.det(U) < 0:                       # flip one singular pair: det U = det V = +1
        U[:, -1] *= -1
        Vt[-1, :] *= -1
    rotations = [_rotation_blocks(Vt), _rotation_blocks(U)] if method == "svd" \
        else [_rotation_blocks(U @ Vt)]
    theta = max((abs(t) for _, blocks in rotations for *_, t in blocks), default=0.0)

    k_identity = float(np.max(np.abs(k - 1))) <= _IDENTITY_TOL     # K = I: p = 0 allowed
    q_min = 0 if theta == 0.0 else 1                             # no rotation: q = 0 allowed
    p_min = 0 if k_identity else 1
    splits = [q for q in range(q_min, ell // n_rot + 1) if ell - n_rot * q >= p_min]
    if not splits:
        raise ValueError(f"ell must be >= {n_rot * q_min + p_min} for method {method!r} and this "
                         f"R, got {ell}")

    def worst(q: int) -> float:                    # the largest factor norm for this split
        p = ell - n_rot * q
        rot = 2 * abs(math.sin(theta / (2 * q))) if q > 0 else 0.0
        return max(rot, float(np.max(np.abs(k ** (1 / p) - 1))) if p > 0 else 0.0)

    q = min(splits, key=worst)
    p = ell - n_rot * q
    roots = [_root_from_blocks(S, blocks, max(q, 1)) for S, blocks in rotations]
    k_root = [np.diag(k ** (1 / p))] * p if p > 0 else []
    if method == "svd":
        factors = [roots[0]] * q + k_root + [roots[1]] * q
    else:
        factors = [Vt.T @ M @ Vt for M in k_root] + [roots[0]] * q
    d = R.shape[0]
    return np.stack([M - np.eye(d) for M in factors])


# ----------------------------------------------------------------------------- symbolic
_NONFINITE = (sp.nan, sp.zoo, sp.oo, -sp.oo)


def _sym_matrix(name: str, M, size: int | None = None) -> sp.MatrixBase:
    """A SymPy matrix with finite entries (``size`` x ``size`` if given); else a named error.

    Never sympified: a string or a list is refused, not parsed.
    """
    if not isinstance(M, sp.MatrixBase):
        raise TypeError(f"{name} must be a SymPy matrix, got {type(M).__name__}")
    if size is not None and M.shape != (size, size):
        raise ValueError(f"{name} must be {size} x {size}, got shape {M.shape}")
    if M.has(*_NONFINITE):
        raise ValueError(f"{name} has a non-finite entry (nan, zoo or oo)")
    return M


def _sym_weights(name: str, A) -> list[sp.MatrixBase]:
    """A non-empty list of square SymPy matrices of one size (A_1, ..., A_l)."""
    if isinstance(A, (str, bytes, sp.MatrixBase)) or not isinstance(A, Sequence):
        raise TypeError(f"{name} must be a list of SymPy matrices A_1..A_l, got "
                        f"{type(A).__name__}")
    if len(A) == 0:
        raise ValueError(f"{name} must hold at least one matrix")
    first = _sym_matrix(f"{name}[0]", A[0])
    if first.rows != first.cols:
        raise ValueError(f"{name}[0] must be square, got shape {first.shape}")
    return [first] + [_sym_matrix(f"{name}[{i}]", a, first.rows)
                      for i, a in enumerate(A[1:], start=1)]


def _sym_slice(i, ell: int) -> int:
    if isinstance(i, bool) or not isinstance(i, int) or not 1 <= i <= ell:
        raise ValueError(f"i must be an int in [1, {ell}], got {i!r}")
    return i


def _sym_real(name: str, x, *, lo=None, below_one: bool = False) -> sp.Expr:
    """A real number (int, finite float or real SymPy expression), as SymPy; never a string."""
    if isinstance(x, (bool, sp.MatrixBase)) or not isinstance(x, (int, float, sp.Expr)) \
            or getattr(x, "is_Matrix", False):
        raise TypeError(f"{name} must be a real number or a SymPy expression, got "
                        f"{type(x).__name__}")
    if isinstance(x, float) and not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x!r}")
    x = sp.sympify(x)
    if x.has(*_NONFINITE):
        raise ValueError(f"{name} must be finite, got {x}")
    if x.is_real is False or (x.is_number and not x.is_real):
        raise ValueError(f"{name} must be real, got {x}")
    if x.is_number:
        if lo is not None and x < lo:
            raise ValueError(f"{name} must be >= {lo}, got {x}")
        if below_one and not 0 <= x < 1:
            raise ValueError(f"{name} must lie in [0, 1), got {x}")
    return x


def symbolic_weights(d: int, ell: int) -> tuple[list[sp.Matrix], sp.Matrix, sp.Matrix]:
    """Symbolic A_1..A_l, R and symmetric Sigma with entries a{i}_{rc}, r_{rc}, s_{rc}.

    Examples
    --------
    >>> A, R, S = symbolic_weights(1, 2)
    >>> A[0]
    Matrix([[a1_00]])
    """
    d, ell = positive_int("d", d), positive_int("ell", ell)
    A = [sp.Matrix(d, d, lambda r, c, i=i: sp.Symbol(f"a{i}_{r}{c}", real=True))
         for i in range(1, ell + 1)]
    R = sp.Matrix(d, d, lambda r, c: sp.Symbol(f"r_{r}{c}", real=True))
    S = sp.Matrix(d, d, lambda r, c: sp.Symbol(f"s_{min(r, c)}{max(r, c)}", real=True))
    return A, R, S


def symbolic_product(A: list[sp.Matrix]) -> sp.Matrix:
    """(I + A_l) ... (I + A_1) for a list of SymPy matrices.

    Examples
    --------
    >>> symbolic_product([sp.Matrix([[1]]), sp.Matrix([[2]])])
    Matrix([[6]])
    """
    A = _sym_weights("A", A)
    eye = sp.eye(A[0].shape[0])
    out = eye
    for a in A:
        out = (eye + a) * out
    return out


def symbolic_risk(A: list[sp.Matrix], R: sp.Matrix, Sigma: sp.Matrix) -> sp.Expr:
    """E||(I + A_l)...(I + A_1) x - R x - xi||^2 by moment substitution (proof of Claim 2.3).

    The loss is expanded as a polynomial in symbolic x and xi; each monomial of degree 2 is
    replaced by its moment: x_a x_b -> Sigma_ab, xi_a xi_b -> delta_ab, x_a xi_b -> 0
    (xi independent of x with mean zero).

    Examples
    --------
    >>> A, R, S = symbolic_weights(1, 1)
    >>> symbolic_risk(A, R, S)
    a1_00**2*s_00 - 2*a1_00*r_00*s_00 + 2*a1_00*s_00 + r_00**2*s_00 - 2*r_00*s_00 + s_00 + 1
    """
    A = _sym_weights("A", A)
    d = A[0].rows
    R, Sigma = _sym_matrix("R", R, d), _sym_matrix("Sigma", Sigma, d)
    x = sp.symbols(f"x0:{d}", real=True)
    xi = sp.symbols(f"xi0:{d}", real=True)
    resid = (symbolic_product(A) - R) * sp.Matrix(x) - sp.Matrix(xi)
    loss = sp.expand((resid.T * resid)[0, 0])
    poly = sp.Poly(loss, *x, *xi)
    moments = {}
    for a in range(d):
        for b in range(d):
            moments[(x[a], x[b])] = Sigma[a, b]
            moments[(xi[a], xi[b])] = sp.Integer(1 if a == b else 0)
            moments[(x[a], xi[b])] = sp.Integer(0)
            moments[(xi[b], x[a])] = sp.Integer(0)
    gens = list(x) + list(xi)
    total = sp.Integer(0)
    for powers, coeff in poly.terms():
        if sum(powers) != 2:
            raise ValueError("the loss must be a quadratic form in (x, xi)")
        vars_ = [g for g, k in zip(gens, powers, strict=True) for _ in range(k)]
        total += coeff * moments[(vars_[0], vars_[1])]
    return sp.expand(total)


def symbolic_gradient_printed(A: list[sp.Matrix], R: sp.Matrix, Sigma: sp.Matrix,
                              i: int) -> sp.Matrix:
    """Eq. (2.5) as printed for slice i (1-based), with SymPy matrices.

    Examples
    --------
    >>> A, R, S = symbolic_weights(1, 1)
    >>> symbolic_gradient_printed(A, R, S, 1).shape
    (1, 1)
    """
    A = _sym_weights("A", A)
    ell, d = len(A), A[0].rows
    R, Sigma = _sym_matrix("R", R, d), _sym_matrix("Sigma", Sigma, d)
    i = _sym_slice(i, ell)
    eye = sp.eye(d)
    E = symbolic_product(A) - R
    left = eye
    for j in range(ell, i, -1):                    # (I + A_l^T) ... (I + A_{i+1}^T)
        left = left * (eye + A[j - 1].T)
    right = eye
    for j in range(i - 1, 0, -1):                  # (I + A_{i-1}^T) ... (I + A_1^T)
        right = right * (eye + A[j - 1].T)
    return 2 * left * E * Sigma * right


def symbolic_gradient(A: list[sp.Matrix], R: sp.Matrix, Sigma: sp.Matrix, i: int) -> sp.Matrix:
    """The chain-rule gradient 2 P_{>i}^T E Sigma P_{<i}^T for slice i (1-based), SymPy.

    Examples
    --------
    >>> A, R, S = symbolic_weights(1, 1)
    >>> symbolic_gradient(A, R, S, 1).shape
    (1, 1)
    """
    A = _sym_weights("A", A)
    ell, d = len(A), A[0].rows
    R, Sigma = _sym_matrix("R", R, d), _sym_matrix("Sigma", Sigma, d)
    i = _sym_slice(i, ell)
    E = symbolic_product(A) - R
    eye = sp.eye(d)
    above = symbolic_product(A[i:]) if i < ell else eye
    below = symbolic_product(A[:i - 1]) if i > 1 else eye
    return 2 * above.T * E * Sigma * below.T


# ------------------------------------------------------------------- test instances
def random_instance(d: int, ell: int, scale: float, *, gen: torch.Generator,
                    batch: tuple[int, ...] = ()) -> tuple[torch.Tensor, ...]:
    """Random weights, target and input covariance for the checks of Section 2.

    Entries of every A_i are N(0, scale^2 / d), of R N(0, 1 / d), and
    Sigma = L L^T / d + 0.1 I with a Gaussian L; drawn in that order (A, R, L) from ``gen``.

    Returns
    -------
    A : (*batch, l, d, d); R : (*batch, d, d); Sigma : (*batch, d, d), float64.

    References
    ----------
    Hardt & Ma (2017), Section 2: the model of eq. (2.1) and the risk of Claim 2.3.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> A, R, Sigma = random_instance(3, 2, 0.5, gen=generator(0), batch=(4,))
    >>> tuple(A.shape), tuple(Sigma.shape)
    ((4, 2, 3, 3), (4, 3, 3))
    """
    from ..core.device import randn

    d, ell = positive_int("d", d), positive_int("ell", ell)
    scale = positive_float("scale", scale)
    if isinstance(batch, (str, bytes)) or not isinstance(batch, (tuple, list)):
        raise TypeError(f"batch must be a tuple of positive ints, got {type(batch).__name__}")
    batch = tuple(positive_int(f"batch[{i}]", b) for i, b in enumerate(batch))
    A = scale / d**0.5 * randn(*batch, ell, d, d, gen=gen)
    R = randn(*batch, d, d, gen=gen) / d**0.5
    L = randn(*batch, d, d, gen=gen)
    eye = torch.eye(d, dtype=torch.float64)
    return A, R, L @ L.mT / d + 0.1 * eye.to(L.device)


def quasi_instance(d: int, ell: int, scale: float) -> tuple[torch.Tensor, ...]:
    """A fixed instance shaped like :func:`random_instance`, the same under every seed.

    Built from :func:`eit.sample.quasi.quasi_normal` (offsets 0, 0.25 and 0.5 for A, R and
    L), so a formula evaluated on it is an exact theory value for a Monte Carlo check.

    Returns
    -------
    A : (l, d, d); R : (d, d); Sigma : (d, d), float64 on the CPU.

    References
    ----------
    Hardt & Ma (2017), Lemma 2.4: the gradient it is used to check.

    Examples
    --------
    >>> A, R, Sigma = quasi_instance(2, 3, 0.3)
    >>> bool(torch.equal(A, quasi_instance(2, 3, 0.3)[0])), tuple(A.shape)
    (True, (3, 2, 2))
    """
    from ..sample.quasi import quasi_normal

    d, ell = positive_int("d", d), positive_int("ell", ell)
    scale = positive_float("scale", scale)
    A = scale / d**0.5 * quasi_normal(ell, d, d)
    R = quasi_normal(d, d, offset=0.25) / d**0.5
    L = quasi_normal(d, d, offset=0.5)
    return A, R, L @ L.T / d + 0.1 * torch.eye(d, dtype=torch.float64)


def sampled_loss(A, R, Sigma, n: int, *, gen: torch.Generator) -> torch.Tensor:
    """The loss of eq. (2.2) on n fresh samples x ~ N(0, Sigma), xi ~ N(0, I).

    x is drawn first (as a standard normal times the Cholesky factor of Sigma), then xi.
    Returns the n per-sample losses, shape (n,); their mean estimates f(A) (Claim 2.3).

    References
    ----------
    Hardt & Ma (2017), eq. (2.2) and Claim 2.3.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> A, R, Sigma = random_instance(2, 2, 0.3, gen=generator(0))
    >>> sampled_loss(A, R, Sigma, 5, gen=generator(1)).shape
    torch.Size([5])
    """
    from ..core.device import randn

    A = _weights("A", A)
    d, n = A.shape[-1], positive_int("n", n)
    R = _square("R", R, d)
    chol = _cholesky("Sigma", _square("Sigma", Sigma, d))
    x = randn(n, d, gen=gen) @ chol.mT
    xi = randn(n, d, gen=gen)
    return _finite(_losses(A, R, x, xi), "the loss", "A, R or Sigma is")


def relative_error(a, b) -> torch.Tensor:
    """Relative Frobenius error ||a - b||_F / ||b||_F of matrices, slice by slice.

    ``a`` and ``b`` have the same shape (..., m, n); returns shape (...). Every matrix of
    ``b`` is non-zero. The norms are computed without overflow or underflow.

    Examples
    --------
    >>> b = torch.ones(2, 2, 2, dtype=torch.float64)
    >>> relative_error(2 * b, b)
    tensor([1., 1.], dtype=torch.float64)
    """
    a, b = tensor("a", a, ndim=tuple(range(2, 8))), tensor("b", b, ndim=tuple(range(2, 8)))
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape, got {tuple(a.shape)} and "
                         f"{tuple(b.shape)}")
    norm_b = _fro(b)
    if not bool((norm_b > 0).all()):
        raise ValueError("b must have no zero matrix: the relative error ||a - b|| / ||b|| is "
                         "undefined there")
    return _finite(_fro(a - b) / norm_b, "the relative error", "a or b is")


def group_gradients(A, R, Sigma, *, groups: int, size: int,
                    gen: torch.Generator) -> torch.Tensor:
    """Autograd of the mean loss (eq. 2.2) over each of ``groups`` groups of fresh samples.

    Group by group, x (``size`` rows, drawn as in :func:`sampled_loss`) then xi are drawn
    from ``gen``. No gradient formula enters: the mean over the groups estimates the gradient
    of the population risk, whatever the order of its factors.

    Returns
    -------
    (groups, l, d, d) tensor on the CPU.

    References
    ----------
    Hardt & Ma (2017), Lemma 2.4, eq. (2.5).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> A, R, Sigma = quasi_instance(2, 2, 0.3)
    >>> group_gradients(A, R, Sigma, groups=3, size=10, gen=generator(0)).shape
    torch.Size([3, 2, 2, 2])
    """
    from ..core.device import randn

    A0 = _weights("A", A)
    d = A0.shape[-1]
    R = _square("R", R, d)
    groups, size = positive_int("groups", groups), positive_int("size", size)
    gen = v.generator("gen", gen, optional=False)
    chol = _cholesky("Sigma", _square("Sigma", Sigma, d))
    out = []
    for _ in range(groups):
        x = randn(size, d, gen=gen) @ chol.mT.to(gen.device)
        A_ = A0.clone().to(x.device).requires_grad_(True)
        _losses(A_, R.to(x.device), x, randn(size, d, gen=gen)).mean().backward()
        out.append(A_.grad.cpu())
    return _finite(torch.stack(out), "the gradients", "A, R or Sigma is")


def printed_gradient_error(A, R, Sigma) -> torch.Tensor:
    """Relative Frobenius error of eq. (2.5) as printed against autograd, worst slice.

    Returns one value per batch element (on the CPU).

    References
    ----------
    Hardt & Ma (2017), Lemma 2.4, eq. (2.5).

    Examples
    --------
    >>> A, R, Sigma = quasi_instance(2, 2, 0.3)        # one factor per side: no error
    >>> float(printed_gradient_error(A, R, Sigma)) < 1e-12
    True
    """
    true = gradient_autograd(A, R, Sigma)
    printed = gradient_printed(A, R, Sigma)
    if not bool((_fro(true) > 0).all()):
        raise ValueError("the gradient has a zero slice at this A, R and Sigma (A fits R, or "
                         "Sigma = 0): its relative error is undefined")
    return relative_error(printed, true).amax(-1).cpu()


def monomials_left(M: sp.Matrix) -> int:
    """Monomials left in a matrix of polynomials after expansion (0: the zero matrix).

    Examples
    --------
    >>> a, b = sp.symbols("a b")
    >>> monomials_left(sp.Matrix([[(a + b) ** 2 - a**2, 0]]))
    2
    """
    if not isinstance(M, sp.MatrixBase):
        raise TypeError(f"M must be a SymPy matrix, got {type(M).__name__}")
    _sym_matrix("M", M)
    return sum(len(sp.Add.make_args(e)) for e in map(sp.expand, M) if e != 0)


# ---------------------------------------------------------- searches for eq. (2.3), Claim C.2
def random_ball_instances(d: int, ell: int, n: int, *, gen: torch.Generator,
                          tau_max: float = 0.95) -> tuple[torch.Tensor, ...]:
    """n random points of the ball B_tau with targets and covariances (search for eq. 2.3).

    tau ~ U(0, tau_max); each slice A_i is a Gaussian matrix rescaled to spectral norm
    tau u_i, u_i ~ U(0, 1); R and L Gaussian; Sigma = e^g L L^T / d + 1e-3 I, g ~ N(0, 1).
    Drawn in the order tau, G, u, R, L, g.

    Returns
    -------
    A : (n, l, d, d); R, Sigma : (n, d, d); tau : (n,).

    References
    ----------
    Hardt & Ma (2017), Theorem 2.2 and eq. (2.3).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> A, R, Sigma, tau = random_ball_instances(2, 3, 4, gen=generator(0))
    >>> bool((spectral_norm(A) <= tau + 1e-12).all())
    True
    """
    from ..core.device import rand, randn

    d, ell, n = positive_int("d", d), positive_int("ell", ell), positive_int("n", n)
    tau_max = in_interval("tau_max", tau_max, 0.0, 1.0)
    tau = tau_max * rand(n, gen=gen)
    G = randn(n, ell, d, d, gen=gen)
    u = rand(n, ell, 1, 1, gen=gen) * tau[:, None, None, None]
    A = G / torch.linalg.matrix_norm(G, ord=2)[..., None, None] * u
    R, L = randn(n, d, d, gen=gen), randn(n, d, d, gen=gen)
    scale = torch.exp(randn(n, gen=gen))[:, None, None]
    eye = torch.eye(d, dtype=L.dtype, device=L.device)
    return A, R, scale * L @ L.mT / d + 1e-3 * eye, tau


def claim_c2_ratio(M, X, N) -> torch.Tensor:
    """||M X N||_F / (sigma_min(M) sigma_min(N) ||X||_F), batched over leading dimensions.

    Claim C.2 in the two-sided form the proof of eq. (2.3) uses says this is >= 1. ``M`` and
    ``N`` are square and nonsingular, ``X`` is non-zero.

    References
    ----------
    Hardt & Ma (2017), Claim C.2.

    Examples
    --------
    >>> M = torch.diag(torch.tensor([2.0, 3.0], dtype=torch.float64))
    >>> round(float(claim_c2_ratio(M, torch.eye(2, dtype=torch.float64), M)), 4)
    1.741
    """
    M, X, N = (tensor(k, x, ndim=tuple(range(2, 6))) for k, x in (("M", M), ("X", X),
                                                                   ("N", N)))
    smins = []
    for name, F in (("M", M), ("N", N)):
        if F.shape[-1] != F.shape[-2]:
            raise ValueError(f"{name} must be square (..., d, d), got {tuple(F.shape)}")
        s = torch.linalg.svdvals(F)
        if not bool((s[..., -1] > s[..., 0] * F.shape[-1] * torch.finfo(s.dtype).eps).all()):
            raise ValueError(f"{name} must be nonsingular (sigma_min > 0 beyond rounding)")
        smins.append(s[..., -1])
    if X.shape[-2:] != (M.shape[-1], N.shape[-2]):
        raise ValueError(f"X must end in ({M.shape[-1]}, {N.shape[-2]}) to sit between M and N, "
                         f"got {tuple(X.shape)}")
    norm_x = _fro(X)
    if not bool((norm_x > 0).all()):
        raise ValueError("X must be non-zero: the ratio is 0 / 0 at X = 0")
    return _finite(_fro(M @ X @ N) / (smins[0] * smins[1] * norm_x), "the ratio",
                   "M, X or N is")


def claim_c2_trials(d: int, n: int, *, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    """Random triples for Claim C.2, and the rank-one X that should attain equality.

    M, X, N: Gaussian d x d matrices with columns scaled by exp(N(0, 1)) (spread condition
    numbers), drawn in that order. Returns the ratios of :func:`claim_c2_ratio` at the random
    X and at X = v w^T (v the right singular vector of M for sigma_min(M), w the left one of N
    for sigma_min(N)), each of shape (n,).

    References
    ----------
    Hardt & Ma (2017), Claim C.2.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> ratio, tight = claim_c2_trials(3, 5, gen=generator(0))
    >>> bool((ratio >= 1 - 1e-12).all()), float((tight - 1).abs().max()) < 1e-10
    (True, True)
    """
    from ..core.device import randn

    d, n = positive_int("d", d), positive_int("n", n)
    M, X, N = (randn(n, d, d, gen=gen) * torch.exp(randn(n, 1, d, gen=gen))
               for _ in range(3))
    v_min = torch.linalg.svd(M).Vh[:, -1, :]           # right singular vector of M
    w_min = torch.linalg.svd(N).U[:, :, -1]            # left singular vector of N
    tight = claim_c2_ratio(M, v_min[:, :, None] * w_min[:, None, :], N)
    return claim_c2_ratio(M, X, N), tight


def scalar_pl_sides(a_vals, r_val, s_val, tau_val) -> tuple[sp.Expr, sp.Expr]:
    """Both sides of eq. (2.3) for d = 1 in exact arithmetic (SymPy).

    ``a_vals`` are the scalar weights a_1..a_l, ``r_val`` the target, ``s_val`` = Sigma and
    ``tau_val`` the radius. Returns (||grad f||^2, 4 l (1 - tau)^(l-1) s^2 (f - C_opt)). The
    values are ints, finite floats or real SymPy expressions (s >= 0 and tau in [0, 1) where
    they are numbers); strings are refused, never parsed.

    References
    ----------
    Hardt & Ma (2017), eq. (2.3).

    Examples
    --------
    >>> scalar_pl_sides([0], 0, 2, sp.Rational(1, 2))
    (16, 32)
    """
    if isinstance(a_vals, (str, bytes, sp.MatrixBase)) or not isinstance(a_vals, Sequence):
        raise TypeError(f"a_vals must be a sequence of numbers, got {type(a_vals).__name__}")
    if len(a_vals) == 0:
        raise ValueError("a_vals must hold at least one weight")
    a_vals = [_sym_real(f"a_vals[{i}]", a) for i, a in enumerate(a_vals)]
    r_val = _sym_real("r_val", r_val)
    s_val = _sym_real("s_val", s_val, lo=0)
    tau_val = _sym_real("tau_val", tau_val, below_one=True)
    syms = sp.symbols(f"a1:{len(a_vals) + 1}")
    f_ex = s_val * (sp.prod([1 + x for x in syms]) - r_val) ** 2
    sub = dict(zip(syms, a_vals))
    lhs = sum(sp.diff(f_ex, x).subs(sub) ** 2 for x in syms)
    ell_v = len(a_vals)
    return lhs, 4 * ell_v * (1 - tau_val) ** (ell_v - 1) * s_val**2 * f_ex.subs(sub)


def adversarial_minima(d: int, ell: int, tau: float, *, starts: int, steps: int,
                       gen: torch.Generator) -> tuple[bool, torch.Tensor, torch.Tensor]:
    """The three adversarial searches of :func:`minimize_pl_ratio` at one (d, l, tau).

    In order: eq. (2.3) as printed with Sigma free, as printed with Sigma = I, and the
    corrected constant with Sigma free; each from ``starts`` starts A ~ N(0, (tau/2)^2), R
    and L Gaussian (drawn in that order, search by search). Returns whether the first found
    a violation (a ratio below 1) and the smallest ratios of the other two.

    References
    ----------
    Hardt & Ma (2017), Theorem 2.2, eq. (2.3).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> found, printed_id, corrected = adversarial_minima(1, 1, 0.5, starts=2, steps=2,
    ...                                                   gen=generator(0))
    >>> isinstance(found, bool), bool(corrected > 0)
    (True, True)
    """
    from ..core.device import randn

    d, ell, starts = positive_int("d", d), positive_int("ell", ell), positive_int("starts",
                                                                                   starts)
    tau = in_interval("tau", tau, 0.0, 1.0)
    if tau == 0:
        raise ValueError("tau must lie in (0, 1) (the radius of the ball B_tau), got 0")
    steps = positive_int("steps", steps)
    out = []
    for which, ident in (("printed", False), ("printed", True), ("corrected", False)):
        A0 = 0.5 * tau * randn(starts, ell, d, d, gen=gen)
        R0, L0 = randn(starts, d, d, gen=gen), randn(starts, d, d, gen=gen)
        *_, rat = minimize_pl_ratio(A0, R0, L0, tau, which=which, steps=steps,
                                    identity_sigma=ident)
        out.append(rat.min())
    return bool(out[0] < 1), out[1], out[2]


def pl_ratio_search(dims, depths, n: int, *,
                    gen: torch.Generator) -> dict[str, torch.Tensor]:
    """:func:`pl_ratio` at n random points of B_tau per (d, l), printed and corrected.

    For every d of ``dims`` and, inside, every l of ``depths``, draws n instances by
    :func:`random_ball_instances` and evaluates both ratios on them (eq. 2.3 holds at an
    instance iff its ratio is >= 1).

    Returns
    -------
    {"printed": (cells * n,), "corrected": (cells * n,)}, in the order of the grid.

    References
    ----------
    Hardt & Ma (2017), Theorem 2.2 and eq. (2.3).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> r = pl_ratio_search([1, 2], [2], 3, gen=generator(0))
    >>> tuple(r["printed"].shape), bool((r["corrected"] >= 1 - 1e-9).all())
    ((6,), True)
    """
    n = positive_int("n", n)
    for name, seq in (("dims", dims), ("depths", depths)):
        if isinstance(seq, Sequence) and not isinstance(seq, (str, bytes)) and len(seq) == 0:
            raise ValueError(f"dims and depths must not be empty, got {name} = {seq!r}")
    dims, depths = v.widths("dims", dims), v.widths("depths", depths)
    ratios: dict[str, list[torch.Tensor]] = {"printed": [], "corrected": []}
    for d in dims:
        for ell in depths:
            A, R, Sigma, taus = random_ball_instances(d, ell, n, gen=gen)
            for which in ratios:
                ratios[which].append(pl_ratio(A, R, Sigma, taus, which=which))
    if not ratios["printed"]:
        raise ValueError("dims and depths must not be empty")
    return {k: torch.cat(v) for k, v in ratios.items()}


__all__ = [
    "end_to_end", "error_matrix", "population_risk", "sample_loss", "gradient_printed",
    "gradient", "gradient_autograd", "gradient_fd", "spectral_norm", "project_ball",
    "pl_bound_printed", "pl_bound_corrected", "pl_ratio", "minimize_pl_ratio",
    "projected_gradient_descent", "end_to_end_standard", "excess_risk_standard", "excess_risk",
    "gradient_descent", "gamma",
    "theorem21_bound", "orthogonal_root", "small_norm_optimum", "symbolic_weights",
    "symbolic_product", "symbolic_risk", "symbolic_gradient_printed", "symbolic_gradient",
    "random_instance", "quasi_instance", "sampled_loss", "relative_error",
    "group_gradients", "printed_gradient_error", "monomials_left", "random_ball_instances",
    "claim_c2_ratio", "claim_c2_trials", "scalar_pl_sides", "adversarial_minima",
    "pl_ratio_search",
]
