"""The isometry gap and BN, batch by batch: the properties of eq. (5) and Lemmas 2, B.3, C.1.

Meterez et al. (2024) prove that the isometry gap ``phi`` (eq. 5) is non-negative, invariant
under scaling and rotations and infinite on collinear batches, that one rotation followed by
BN raises the isometry by at least the row-norm factor of Lemma 2 / B.1, that
``BN(U^T X) = V^T`` (Corollary B.3), and state Lemma C.1 on eigenvalues near 1.
:func:`isometry_lemma_checks` measures every one of these on a stack of batches, so that a
chapter can check the library's implementation against the exact proofs (consistency checks);
:func:`isometry_gap_logdet` is the gap recomputed from the determinant, without the clamp at
0 of :func:`eit.models.batchnorm.isometry_gap`.
"""

from __future__ import annotations

import torch

from ..core import validate as v
from ..core.scaling import rescaled
from . import batchnorm as bnm

__all__ = ["isometry_gap_logdet", "isometry_lemma_checks"]


def isometry_gap_logdet(x: torch.Tensor) -> torch.Tensor:
    """``phi(X) = log(Tr X^T X / n) - (2/n) log|det X|`` for square ``X``, by LU, no clamp.

    Parameters
    ----------
    x : torch.Tensor
        Shape ``(..., n, n)``.

    Returns
    -------
    torch.Tensor
        Shape ``(...)``; may fall below 0 by rounding (that is the point: it shows how far);
        +inf for a singular matrix. Scale-invariant, computed at any scale; a zero matrix
        (0/0) raises.

    References
    ----------
    Meterez et al. (2024), eq. (5).

    Examples
    --------
    >>> isometry_gap_logdet(torch.diag(torch.tensor([1.0, 2.0], dtype=torch.float64)))
    tensor(0.2231, dtype=torch.float64)
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"x must hold square matrices (..., n, n), got {tuple(x.shape)}")
    x = v.tensor("x", x, ndim=x.ndim)
    bnm._nonzero_matrices("x", x)
    x = rescaled(x, x.ndim - 2)[0]      # scale-invariant: bit for bit at ordinary scales
    n = x.shape[-1]
    return (torch.log((x * x).sum((-2, -1)) / n)
            - 2 / n * torch.linalg.slogdet(x).logabsdet)


def isometry_lemma_checks(x: torch.Tensor, w: torch.Tensor, *,
                          rtol: float = 1e-9) -> dict[str, torch.Tensor]:
    """Per batch ``X`` and rotation ``W``: every quantity eq. (5) and Lemmas 2, B.3, C.1 bound.

    Parameters
    ----------
    x : torch.Tensor
        Batches, shape ``(m, d, d)``, non-singular.
    w : torch.Tensor
        Orthogonal matrices, shape ``(m, d, d)`` (to 1e-8).
    rtol : float
        Relative margin of the two Lemma C.1 tests (against rounding).

    Returns
    -------
    dict of str -> torch.Tensor
        Each of shape ``(m,)``:

        * ``"phi_det"``: :func:`isometry_gap_logdet` of ``X``;
        * ``"invariance"``: the largest ``|phi(M) - phi(X)|`` over ``M = 7X, WX, XW``;
        * ``"collinear_inf"``: ``phi = inf`` for ``X`` with its last sample replaced by
          ``-2 x_1`` (bool);
        * ``"gain"``, ``"factor"``: ``I(BN(WX))/I(X)`` and the row-norm factor of Lemma 2,
          ``1 + var/mean^2`` of the row norms of ``WX``; ``"lemma2"``: their ratio minus 1;
        * ``"b3"``: the largest entry of ``|BN(U^T X) - V^T|`` (SVD ``X = U S V^T``);
        * ``"c1"``, ``"c1_fixed"``: Lemma C.1 fails on ``Y = BN(X)`` (bool), as printed
          (``max_k |lambda_k - 1| > c`` with ``c = 16 d phi(Y)``) and corrected
          (``> c`` with the smallest ``c`` such that ``phi <= c^2/(2d(1+c))``), each with the
          margin ``1 + rtol``.

    References
    ----------
    Meterez et al. (2024), eq. (5), Lemma 2 / B.1 (eqs. 7, 12), Corollary B.3 (eqs. 18-23),
    Lemma C.1.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.sample.laws import haar_orthogonal
    >>> gen = generator(0)
    >>> x = bnm.spectral_inputs(3, 4, gen=gen, spread=0.5)
    >>> out = isometry_lemma_checks(x, haar_orthogonal(3, 4, 4, gen=gen))
    >>> bool((out["lemma2"] > -1e-10).all()), bool(out["collinear_inf"].all())
    (True, True)
    """
    x, w = v.tensor("x", x, ndim=3), v.tensor("w", w, ndim=3)
    if x.shape[-1] != x.shape[-2] or w.shape != x.shape:
        raise ValueError(f"x and w must be stacks of square matrices of one shape, got "
                         f"{tuple(x.shape)} and {tuple(w.shape)}")
    rtol = v.positive_float("rtol", rtol)
    eye = torch.eye(x.shape[-1], dtype=w.dtype, device=w.device)
    if not bool(((w.mT @ w - eye).abs() <= 1e-8).all()):
        raise ValueError("w must hold orthogonal matrices (W^T W = I to 1e-8)")
    d = x.shape[-1]
    phi, y, xp = bnm.isometry_gap(x), bnm.bn(x), w @ x
    if not bool(torch.isfinite(phi).all()):
        raise ValueError("x must hold non-singular batches (phi = +inf: the invariances and "
                         "gains are undefined)")
    moved = torch.stack([bnm.isometry_gap(m) for m in (7 * x, xp, x @ w)])
    x_deg = torch.cat([x[..., :-1], -2 * x[..., :1]], dim=-1)
    gain = bnm.isometry(bnm.bn(xp)) / bnm.isometry(x)
    factor = bnm.row_norm_factor(xp)
    u, _, vh = torch.linalg.svd(x)
    dev = (bnm.gram_eigenvalues(y) - 1).abs().amax(-1)
    t = 2 * d * bnm.isometry_gap(y)
    return dict(
        phi_det=isometry_gap_logdet(x), invariance=(moved - phi).abs().amax(0),
        collinear_inf=torch.isinf(bnm.isometry_gap(x_deg)),
        gain=gain, factor=factor, lemma2=gain / factor - 1,
        b3=(bnm.bn(u.mT @ x) - vh).abs().amax((-2, -1)),
        c1=dev > 8 * t * (1 + rtol),
        c1_fixed=dev > (t + (t * t + 4 * t).sqrt()) / 2 * (1 + rtol))
