"""The Jacobian of BN and the lemmas that bound it (Meterez et al. 2024, Appendix D).

BN (eq. 4, :func:`eit.models.batchnorm.bn`) scales each row of a ``(d, n)`` batch to unit
norm, so its Jacobian is block diagonal with the blocks ``J_f(x) = I/||x|| - x x^T/||x||^3``
of ``f(x) = x/||x||`` (Lemma D.9, Corollary D.10), and its operator norm is exactly
``1 / min_i ||X_i.||`` for batches of ``n >= 2`` samples. :func:`bn_jacobian` computes the
full Jacobian by automatic differentiation (independently of that argument);
:func:`jacobian_lemma_violations` checks Lemmas D.4, D.7 and D.8 on a stack of BN inputs.
"""

from __future__ import annotations

import torch

from ..core import validate as v
from ..core.scaling import SAFE_EXPONENT
from . import batchnorm as bnm

__all__ = ["bn_jacobian", "bn_jacobian_norm", "jacobian_lemma_violations"]


def bn_jacobian(x: torch.Tensor) -> torch.Tensor:
    """The Jacobian of BN at one ``(d, n)`` batch, by automatic differentiation.

    Parameters
    ----------
    x : torch.Tensor
        Shape ``(d, n)``, no zero row.

    Returns
    -------
    torch.Tensor
        Shape ``(d n, d n)``: ``d BN(x)_flat / d x_flat`` (row-major flattening).

    References
    ----------
    Meterez et al. (2024), Lemma D.9 and Corollary D.10, eq. (141).

    Examples
    --------
    >>> (bn_jacobian(torch.tensor([[3.0, 4.0]], dtype=torch.float64)) * 125).round()
    tensor([[ 16., -12.],
            [-12.,   9.]], dtype=torch.float64)
    """
    x = v.tensor("x", x, ndim=2)
    d, n = x.shape
    return torch.autograd.functional.jacobian(bnm.bn, x).reshape(d * n, d * n)


def bn_jacobian_norm(x: torch.Tensor) -> float:
    """The operator (spectral) norm of :func:`bn_jacobian` at one ``(d, n)`` batch.

    References
    ----------
    Meterez et al. (2024), Lemmas D.4 and D.7 (eqs. 94-95, 130).

    Examples
    --------
    >>> bn_jacobian_norm(0.5 * torch.eye(2, dtype=torch.float64))
    2.0
    """
    return float(torch.linalg.matrix_norm(bn_jacobian(x), ord=2))


def jacobian_lemma_violations(h: torch.Tensor, *, every: int = 1,
                              tol: float = 1e-9) -> dict[str, int]:
    """Counts of BN inputs that violate Lemmas D.4, D.7, D.8 or the exact operator norm.

    For each square BN input ``H`` (trace ``d`` for the lemmas to apply) with smallest
    eigenvalue ``lambda_d`` of ``H H^T`` and gap ``phi = phi(H)``:

    * ``"d8"``: ``-log lambda_d > d phi + 1 + tol``, plus, where ``phi <= 1/(16 d)``,
      ``-log lambda_d > 2 sqrt(d phi) + tol`` (each failing bound counts once);
    * ``"d4"``: the same two bounds for ``log ||J_BN(H)|| = -log min_i ||H_i.||``;
    * on every ``every``-th input (the full Jacobian by :func:`bn_jacobian`):
      ``"exact"``: ``| ||J||_op min_i ||H_i.|| - 1 | > tol``, and ``"d7"``:
      ``||J||_op^2 > (1 + tol) / lambda_d``.

    Parameters
    ----------
    h : torch.Tensor
        Shape ``(m, d, d)``: non-singular, no zero row, entries of ordinary scale (the lemmas
        are about BN inputs, of trace ``d``).
    every : int
        Stride of the inputs whose full Jacobian is computed.
    tol : float
        Tolerance of every comparison (absolute, relative for D.7).

    Returns
    -------
    dict
        ``"d8"``, ``"d4"`` (out of ``n_all``), ``"exact"``, ``"d7"`` (out of ``n_full``), and
        the sample sizes ``"n_all" = m`` and ``"n_full"``.

    References
    ----------
    Meterez et al. (2024), Lemma D.4 (eqs. 94-95), Lemma D.7 (eq. 130), Lemma D.8
    (eqs. 133-140), Corollary D.10.

    Examples
    --------
    >>> jacobian_lemma_violations(torch.eye(3, dtype=torch.float64).expand(2, 3, 3))
    {'d8': 0, 'd4': 0, 'exact': 0, 'd7': 0, 'n_all': 2, 'n_full': 2}
    """
    h = v.tensor("h", h, ndim=3)
    if h.shape[-1] != h.shape[-2]:
        raise ValueError(f"h must hold square matrices (m, d, d), got {tuple(h.shape)}")
    every = v.positive_int("every", every)
    tol = v.positive_float("tol", tol)
    if bool((torch.frexp(h.abs().amax()).exponent.abs() > SAFE_EXPONENT).any()):
        raise ValueError(f"h must have entries of ordinary scale (within 2^+-{SAFE_EXPONENT}): "
                         "the lemmas bound BN inputs, of trace d")
    m, n = h.shape[0], h.shape[-1]
    min_row = h.norm(dim=-1).min(dim=-1).values
    if bool((min_row == 0).any()):
        raise ValueError("h has a zero row: BN and its Jacobian are undefined there")
    lam_min, phi = bnm.gram_eigenvalues(h)[:, 0], bnm.isometry_gap(h)
    if bool((lam_min <= 0).any()):
        raise ValueError("h must hold non-singular matrices (lambda_d > 0): the bounds are "
                         "vacuous (phi = +inf) and -log lambda_d undefined for singular ones")
    small = phi <= 1 / (16 * n)
    out = {}
    for lemma, value in (("d8", -lam_min.log()), ("d4", -min_row.log())):
        over = (value > n * phi + 1 + tol).sum()
        over += (value[small] > 2 * (n * phi[small]).sqrt() + tol).sum()
        out[lemma] = int(over)
    out["exact"] = out["d7"] = n_full = 0
    for i in range(0, m, every):
        op = bn_jacobian_norm(h[i])
        out["exact"] += abs(op * float(min_row[i]) - 1) > tol
        out["d7"] += op**2 > 1 / float(lam_min[i]) * (1 + tol)
        n_full += 1
    return {**out, "n_all": m, "n_full": n_full}
