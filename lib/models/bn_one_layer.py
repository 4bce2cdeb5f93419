"""One layer ``X -> BN(W X)`` of Meterez et al. (2024) with ``W`` Haar-orthogonal, per batch.

Theorem 3 / B.4 and Corollary 4 / B.5 of the paper bound *conditional* expectations over the
rotation ``W`` for a fixed batch ``X``. :func:`one_layer_expectations` estimates them: each
batch is repeated over many Haar rotations and every quantity the theorems bound is averaged
over the rotations of its batch, giving one :class:`~eit.verdicts.stats.Estimate` per batch.
:func:`quasi_spectral_inputs` gives fixed batches (the same under every seed) with a
prescribed spread of spectra, so that each conditional expectation is one definite number.

The matrices are the paper's ``(d, n)`` batches (rows: features), as in
:mod:`eit.models.batchnorm`.
"""

from __future__ import annotations

import math

import torch

from ..core import validate as v
from ..core.device import device
from ..sample.laws import haar_orthogonal
from ..sample.quasi import quasi_normal, quasi_uniform
from ..verdicts import stats
from . import batchnorm as bnm

__all__ = ["quasi_spectral_inputs", "one_layer_expectations"]


def _spread(spread) -> float:
    if isinstance(spread, bool) or not isinstance(spread, (int, float)):
        raise TypeError(f"spread must be a real number, got {type(spread).__name__}")
    if not (math.isfinite(spread) and 0 <= spread <= bnm.MAX_SPREAD):
        raise ValueError(f"spread must be a finite number in [0, {bnm.MAX_SPREAD}] (X X^T "
                         f"stays in float64), got {spread!r}")
    return float(spread)


def quasi_spectral_inputs(n_mats: int, d: int, *, spread: float,
                          offset: float = 0.0) -> torch.Tensor:
    """Fixed batches ``U diag(s) V^T`` of shape ``(n_mats, d, d)``, the same under every seed.

    ``U`` and ``V`` are the Q factors of :func:`~eit.sample.quasi.quasi_normal` arrays (at
    offsets ``offset + 0.1`` and ``offset + 0.2``) and ``log s_i = spread (2 u_i - 1)`` with
    ``u`` from :func:`~eit.sample.quasi.quasi_uniform` (at ``offset``): the deterministic
    counterpart of :func:`eit.models.batchnorm.spectral_inputs`, for fixed instances of a
    check (never as Monte Carlo samples).

    Parameters
    ----------
    n_mats, d : int
        Number of batches and their size ``d x d``.
    spread : float
        ``log s`` spreads over ``[-spread, spread]`` (0: orthogonal matrices), at most
        :data:`eit.models.batchnorm.MAX_SPREAD`.
    offset : float
        Selects another fixed family.

    Returns
    -------
    torch.Tensor
        float64, shape ``(n_mats, d, d)``, on the CPU.

    References
    ----------
    Meterez et al. (2024), "Towards training without depth limits: batch normalization
    without gradient explosion", Theorem 3 (the batches X it is tested on).

    Examples
    --------
    >>> x = quasi_spectral_inputs(2, 3, spread=0.5)
    >>> x.shape, bool((x == quasi_spectral_inputs(2, 3, spread=0.5)).all())
    (torch.Size([2, 3, 3]), True)
    """
    n_mats, d = v.positive_int("n_mats", n_mats), v.positive_int("d", d)
    spread = _spread(spread)
    offset = v.finite_real("offset", offset)
    u, vt = (torch.linalg.qr(quasi_normal(n_mats, d, d, offset=offset + t))[0]
             for t in (0.1, 0.2))
    log_s = spread * (2 * torch.from_numpy(quasi_uniform(n_mats, 1, d, offset=offset)) - 1)
    return (u * torch.exp(log_s)) @ vt.mT


def one_layer_expectations(x: torch.Tensor, n_rotations: int, *,
                           gen: torch.Generator) -> list[dict]:
    """Per batch ``X``: its spectrum, and means over Haar rotations ``W`` of one layer.

    Each of the ``n_x`` batches is multiplied by ``n_rotations`` independent Haar-orthogonal
    ``W`` (drawn in one stack, batch by batch), and ``X' = W X``.

    Parameters
    ----------
    x : torch.Tensor
        Shape ``(n_x, d, d)``: the batches (usually ``BN(.)`` of something, trace ``d``),
        non-singular (the isometry of a singular batch is 0, and the ratio undefined).
    n_rotations : int
        Rotations per batch (>= 2, for a standard error).
    gen : torch.Generator
        Generator of the rotations.

    Returns
    -------
    list of dict
        One dict per batch with ``d``; the exact ``S = sum_k (lambda_k - 1)^2`` over the
        eigenvalues of ``X X^T``, ``phi`` (``phi(X)``), ``lam_min``, ``lam_max`` (floats);
        and :class:`~eit.verdicts.stats.Estimate` means over ``W`` of ``ratio``
        (``I(BN(X')) / I(X)``), ``drop`` (``phi(X) - phi(BN(X'))``), ``rot``
        (``phi(X')``, before BN) and ``sumsq`` (``(sum_j ||X'_j.||)^2``).

    References
    ----------
    Meterez et al. (2024), Theorem 3 / B.4 (eqs. 8, 24-49) and Corollary 4 / B.5 (eq. 9).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> x = bnm.bn(quasi_spectral_inputs(2, 3, spread=0.5))
    >>> rows = one_layer_expectations(x, 50, gen=generator(0))
    >>> len(rows), sorted(rows[0])[:4]
    (2, ['S', 'd', 'drop', 'lam_max'])
    """
    x = v.tensor("x", x, ndim=3)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"x must hold square batches (n_x, d, d), got {tuple(x.shape)}")
    n_rotations = v.positive_int("n_rotations", n_rotations)
    if n_rotations < 2:
        raise ValueError(f"n_rotations must be >= 2 for a standard error, got {n_rotations}")
    gen = v.generator("gen", gen, optional=False)
    n_x, n = x.shape[0], x.shape[-1]
    x = x.to(device())
    phi = bnm.isometry_gap(x)
    if not bool(torch.isfinite(phi).all()):
        raise ValueError("x must hold non-singular batches (phi = +inf: the isometry is 0 and "
                         "the gain I(BN(WX))/I(X) undefined)")
    lam = bnm.gram_eigenvalues(x)
    xr = x.repeat_interleave(n_rotations, dim=0)
    xp = haar_orthogonal(n_x * n_rotations, n, n, gen=gen) @ xr          # X' = W X
    post = bnm.bn(xp)
    per_w = {"ratio": bnm.isometry(post) / bnm.isometry(xr),
             "drop": bnm.isometry_gap(xr) - bnm.isometry_gap(post),
             "rot": bnm.isometry_gap(xp), "sumsq": xp.norm(dim=-1).sum(-1) ** 2}
    rows = [dict(d=n, S=float(((lam[i] - 1) ** 2).sum()),
                 phi=float(bnm.isometry_gap(x[i])), lam_max=float(lam[i, -1]),
                 lam_min=float(lam[i, 0]))
            for i in range(n_x)]
    for key, values in per_w.items():
        for i, row in enumerate(values.view(n_x, n_rotations)):
            rows[i][key] = stats.mean(row)
    return rows
