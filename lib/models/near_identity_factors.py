"""Writing a target R as l factors near the identity (Hardt & Ma 2017, Theorem 2.1, App. A.1).

A global optimum of the linear residual network's risk is any A with
(I + A_l) ... (I + A_1) = R; Theorem 2.1 bounds the smallest max_i ||A_i|| by
2 (sqrt(pi) + sqrt(3 gamma))^2 / l, gamma = max |log sigma(R)|. Its proof (Appendix A.1) writes
R = U K V^T (an SVD with det U = det V = +1, possible iff det R > 0), takes q-th roots of the
rotations V^T and U and a p-th root of K, with 2q + p = l layers. The *polar* variant writes
R = Q P (Q = U V^T orthogonal, P = V K V^T positive definite) and needs one rotation,
q + p = l.

Two things are computed here, both free of the arbitrary choices an SVD leaves open:

* :func:`guarantee`: the largest factor norm the proof's argument guarantees for *every*
  target with a given gamma and *every* choice of SVD, with integers p, q: a rotation by an
  angle up to pi costs ||I - T(theta/q)|| = 2 sin(theta / 2q) <= 2 sin(pi / 2q), and a root
  of K costs max_i |k_i^{1/p} - 1| <= e^{gamma/p} - 1. The split (q, p) is the proof's (it
  depends on gamma and l only) with the rounding that minimizes the guarantee.
* :func:`construct`: the factors themselves, from a *given* SVD (U, k, V). When singular
  values coincide the SVD is not unique (for an orthogonal R any V works, with U = R V), and
  the rotation angles of V^T and U, hence the factors' norms, depend on that choice: the
  caller passes the factors it drew (from a seeded generator) instead of asking LAPACK for
  an arbitrary basis. The polar construction is unique (Q and P are).

References
----------
Hardt, M. and Ma, T. (2017). Identity matters in deep learning. ICLR. Theorem 2.1 and
Appendix A.1.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla
import torch

from ..core import validate as v
from ..core.validate import positive_float, positive_int
from ..sample.laws import haar_orthogonal
from .linear_resnet import orthogonal_root, theorem21_bound

__all__ = ["METHODS", "rotation_angle", "split", "guarantee", "construct", "product",
           "max_norm", "random_factors", "schur_blocks", "theorem21_bound", "guarantee_ratios",
           "norms_by_depth", "psd_root_factors", "normal_families"]

#: Constructions: the SVD one of Appendix A.1 (two rotations) and the polar one (one).
METHODS = {"svd": 2, "polar": 1}


def _method(method: str) -> int:
    if method not in METHODS:
        raise ValueError(f"method must be one of {sorted(METHODS)}, got {method!r}")
    return METHODS[method]


def _gamma(gamma) -> float:
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float, np.floating)):
        raise TypeError(f"gamma must be a real number, got {type(gamma).__name__}")
    if not (math.isfinite(gamma) and gamma >= 0):
        raise ValueError(f"gamma must be finite and >= 0, got {gamma!r}")
    return float(gamma)


def _matrices(name: str, value, ndim: int, *, finite: bool = True) -> np.ndarray:
    """A real array of ``ndim`` dimensions as float64 NumPy (a tensor is copied to the host)."""
    value = v.array(name, value, ndim=ndim, finite=finite)
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    return np.asarray(value, dtype=float)


def _is_orthogonal(Q: np.ndarray) -> bool:
    with np.errstate(over="ignore", invalid="ignore"):     # a huge Q is simply not orthogonal
        return bool(np.allclose(Q.T @ Q, np.eye(Q.shape[0]), atol=1e-10))


def _orthogonal(name: str, Q) -> np.ndarray:
    Q = _matrices(name, Q, 2)
    d = Q.shape[0]
    if Q.shape[1] != d or not _is_orthogonal(Q):
        raise ValueError(f"{name} must be a square orthogonal matrix")
    if np.linalg.det(Q) < 0:
        raise ValueError(f"{name} must have det +1 (a reflection has no real root near I)")
    return Q


def rotation_angle(Q) -> float:
    """The largest rotation angle of an orthogonal Q with det +1, in [0, pi].

    The angles are the arguments of Q's eigenvalues e^{+-i theta}: a property of Q, not of a
    basis. The identity has angle exactly 0.

    Examples
    --------
    >>> round(rotation_angle(np.array([[0.0, -1.0], [1.0, 0.0]])), 12)   # a quarter turn
    1.570796326795
    >>> rotation_angle(np.eye(3))
    0.0
    """
    Q = _orthogonal("Q", Q)
    if np.array_equal(Q, np.eye(Q.shape[0])):
        return 0.0
    return float(np.max(np.abs(np.angle(np.linalg.eigvals(Q)))))


def split(gamma: float, ell: int, *, method: str = "svd", theta: float = math.pi,
          k_identity: bool | None = None) -> tuple[int, int, float]:
    """The integers (q, p) with rotations * q + p = l that minimize the largest factor norm.

    Parameters
    ----------
    gamma : float
        max |log k_i| of the singular values k (the root of K costs e^{gamma/p} - 1).
    ell : int
        The number of layers.
    method : {"svd", "polar"}
        Two rotation roots (q factors each) or one.
    theta : float
        The largest rotation angle to root (pi: the worst case over all targets and SVDs).
    k_identity : bool, optional
        Whether K = I exactly (then p = 0 is allowed). Default: ``gamma == 0``.

    Returns
    -------
    (q, p, norm)
        The split and the norm it guarantees, max(2 sin(theta / 2q), e^{gamma/p} - 1).

    Examples
    --------
    >>> q, p, norm = split(0.0, 6)            # K = I: two rotations of 3 layers each
    >>> (q, p), round(norm, 6)
    ((3, 0), 1.0)
    """
    return _split(_gamma(gamma), ell, method, theta, k_identity, "gamma")


def _split(gamma: float, ell: int, method: str, theta: float, k_identity: bool | None,
           source: str) -> tuple[int, int, float]:
    """:func:`split`; ``source`` names the argument that set gamma (for an overflow)."""
    ell, rotations = positive_int("ell", ell), _method(method)
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not (
            math.isfinite(theta) and 0 <= theta <= math.pi):
        raise ValueError(f"theta must lie in [0, pi], got {theta!r}")
    if k_identity is not None and not isinstance(k_identity, (bool, np.bool_)):
        raise TypeError(f"k_identity must be a bool or None, got {type(k_identity).__name__}")
    k_identity = gamma == 0 if k_identity is None else bool(k_identity)
    q = np.arange(0 if theta == 0 else 1, ell // rotations + 1)
    p = ell - rotations * q
    if not k_identity:
        q, p = q[p > 0], p[p > 0]
    if q.size == 0:
        raise ValueError(f"ell = {ell} layers cannot hold the {method} construction")
    with np.errstate(divide="ignore", over="ignore"):
        rot = np.where(q > 0, 2 * np.sin(theta / (2 * np.maximum(q, 1))), 0.0)
        root = np.where(p > 0, np.expm1(gamma / np.maximum(p, 1)), 0.0)
    norm = np.maximum(rot, root)
    i = int(np.argmin(norm))                      # the first (fewest rotations) on a tie
    if not math.isfinite(norm[i]):
        raise ValueError(f"{source}: gamma = {gamma!r} is too large for {ell} layers: the root "
                         "of K costs e^(gamma/p) - 1, beyond float64")
    return int(q[i]), int(p[i]), float(norm[i])


def guarantee(gamma: float, ell: int, *, method: str = "svd") -> float:
    """The largest factor norm the proof guarantees for every R with this gamma, det R > 0.

    Worst case over targets (a singular value e^{+-gamma}) and over the choice of SVD (a
    rotation angle pi), with the integer split of :func:`split`.

    Examples
    --------
    >>> round(guarantee(0.0, 5), 4), round(theorem21_bound(0.0, 5), 4)  # q = 2: 2 sin(pi/4)
    (1.4142, 1.2566)
    """
    return split(gamma, ell, method=method)[2]


def _factors(U, k, V) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    U, V = _orthogonal("U", U), _orthogonal("V", V)
    k = _matrices("k", k, 1, finite=False)
    if k.shape != (U.shape[0],) or V.shape != U.shape:
        raise ValueError(f"U, k, V must have shapes (d, d), (d,), (d, d), got {U.shape}, "
                         f"{k.shape}, {V.shape}")
    if not (np.isfinite(k).all() and (k > 0).all()):
        raise ValueError("k: the singular values k must be finite and > 0")
    return U, k, V


def construct(U, k, V, ell: int, *, method: str = "svd") -> np.ndarray:
    """Factors A* with (I + A*_l) ... (I + A*_1) = U diag(k) V^T, built as the proof does.

    The split (q, p) is the proof's: it depends on gamma = max |log k_i| and l only (the worst
    case over rotation angles, :func:`split`); p = 0 when K = I exactly. ``method="svd"``
    stacks q factors of (V^T)^{1/q}, p of K^{1/p} and q of U^{1/q} (Appendix A.1, with
    B_j = S W S^T - I); ``"polar"`` stacks p factors of P^{1/p} = V K^{1/p} V^T and q of
    (U V^T)^{1/q}.

    Parameters
    ----------
    U, V : array (d, d)
        Orthogonal, det +1 (the caller chooses the SVD; see the module docstring).
    k : array (d,)
        Positive singular values.
    ell : int
        Layers.

    Returns
    -------
    numpy.ndarray (l, d, d)
        A*_1 (acting first) to A*_l.

    Examples
    --------
    >>> R = np.array([[0.0, -1.0], [1.0, 0.0]])           # a quarter turn, k = (1, 1)
    >>> A = construct(R, np.ones(2), np.eye(2), 4)
    >>> bool(np.allclose(product(A), R))
    True
    """
    U, k, V = _factors(U, k, V)
    ell = positive_int("ell", ell)
    gamma = float(np.max(np.abs(np.log(k))))
    q, p, _ = _split(gamma, ell, method, math.pi, bool(np.all(k == 1.0)), "k")
    d = U.shape[0]
    k_root = np.diag(k ** (1 / p)) if p > 0 else np.eye(d)
    if method == "svd":
        factors = ([orthogonal_root(V.T, q)] * q + [k_root] * p
                   + [orthogonal_root(U, q)] * q)
    else:
        factors = [V @ k_root @ V.T] * p + [orthogonal_root(U @ V.T, q)] * q
    factors += [np.eye(d)] * (ell - len(factors))        # a layer left over stays at A = 0
    return np.stack([M - np.eye(d) for M in factors])


def product(A) -> np.ndarray:
    """The end-to-end map (I + A_l) ... (I + A_1) of stacked factors A (l, d, d)."""
    A = _matrices("A", A, 3, finite=False)        # an inf or NaN is carried to the product
    if A.shape[1] != A.shape[2]:
        raise ValueError(f"A must have shape (l, d, d), got {A.shape}")
    out = np.eye(A.shape[-1])
    with np.errstate(over="ignore", invalid="ignore"):
        for a in A:
            out = (np.eye(A.shape[-1]) + a) @ out
    if not np.isfinite(out).all() and np.isfinite(A).all():
        raise ValueError("A: the product (I + A_l) ... (I + A_1) overflows float64")
    return out


def max_norm(A) -> float:
    """max_i ||A_i|| (spectral norm) of stacked factors A (l, d, d)."""
    A = _matrices("A", A, 3)
    return float(max(np.linalg.norm(a, 2) for a in A))


def random_factors(kappa: float, n: int, d: int, *,
                   gen: torch.Generator) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """n random SVD factors (U, k, V): U, V Haar on SO(d), k geometric in [kappa^-1/2, kappa^1/2].

    The target U diag(k) V^T has condition number kappa and gamma = log sqrt(kappa) (the
    scaling Section 2 recommends). For kappa = 1 the pair (U, V) is a uniformly random choice
    among all SVDs of the orthogonal target U V^T.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> U, k, V = random_factors(4.0, 1, 3, gen=generator(0))[0]
    >>> [round(float(x), 3) for x in k], round(float(np.linalg.det(U)), 6)
    ([0.5, 1.0, 2.0], 1.0)
    """
    kappa, n, d = positive_float("kappa", kappa), positive_int("n", n), positive_int("d", d)
    if kappa < 1:
        raise ValueError(f"kappa must be >= 1, got {kappa}")
    U, V = (haar_orthogonal(n, d, d, gen=gen).cpu().numpy() for _ in range(2))
    for Q in (U, V):                                  # det +1: flip one column
        Q[np.linalg.det(Q) < 0, :, 0] *= -1
    k = np.geomspace(kappa**-0.5, kappa**0.5, d)
    return [(U[j], k, V[j]) for j in range(n)]


def schur_blocks(N) -> tuple[float, float, bool]:
    """The real Schur form N = S D S^T of a normal matrix, checked (Claim C.1).

    Returns the largest entry of D outside its 1x1 and 2x2 diagonal blocks, the largest
    entry of |S D S^T - N|, and whether the 1x1 blocks have a negative product: then, once
    they are paired into 2x2 blocks (even d), one of them is a reflection, not a rotation.
    LAPACK's standardized form has exact zeros below the diagonal outside 2x2 blocks.

    Examples
    --------
    >>> off, err, reflection = schur_blocks(np.diag([1.0, -1.0]))
    >>> off, err, reflection
    (0.0, 0.0, True)
    """
    N = _matrices("N", N, 2)
    if N.shape[0] != N.shape[1]:
        raise ValueError(f"N must be a square matrix, got shape {N.shape}")
    D, S = sla.schur(N, output="real")
    mask = np.ones_like(D, dtype=bool)
    i, ones = 0, []
    while i < len(D):
        size = 2 if i + 1 < len(D) and D[i + 1, i] != 0 else 1
        mask[i:i + size, i:i + size] = False
        ones += [D[i, i]] if size == 1 else []
        i += size
    off = float(np.abs(D[mask]).max(initial=0.0))
    # the sign of the product from the signs (the product itself may over- or underflow)
    return off, float(np.abs(S @ D @ S.T - N).max()), bool(np.prod(np.sign(ones)) < 0)


def guarantee_ratios(gammas, max_depth: int, *, method: str = "svd") -> np.ndarray:
    """:func:`guarantee` over the bound of Theorem 2.1 on a grid of (gamma, l).

    For every gamma of ``gammas`` and every depth max(3, ceil(3 gamma)) <= l <= max_depth (the
    theorem's range l >= 3 gamma).

    Returns
    -------
    numpy.ndarray (pairs, 3)
        Rows (gamma, l, guarantee / bound); a ratio above 1 is a pair where the proof's
        argument, with integer p, q, does not reach the stated bound.

    References
    ----------
    Hardt & Ma (2017), Theorem 2.1 and Appendix A.1 (footnote 4 on rounding p, q).

    Examples
    --------
    >>> grid = guarantee_ratios([0.0], 6)
    >>> grid[:, 1].tolist(), grid[:, 2].round(4).tolist()
    ([3.0, 4.0, 5.0, 6.0], [0.9549, 0.9003, 1.1254, 0.9549])
    """
    max_depth = positive_int("max_depth", max_depth)
    _method(method)
    if isinstance(gammas, np.ndarray) and gammas.ndim == 1:
        gammas = gammas.tolist()
    gammas = v.scales("gammas", gammas)
    rows = []
    for gam in gammas:
        for ell in range(max(3, int(np.ceil(3 * gam))), max_depth + 1):
            bnd = theorem21_bound(float(gam), ell)
            rows.append((gam, ell, guarantee(gam, ell, method=method) / bnd))
    return np.array(rows, dtype=float).reshape(-1, 3)


def norms_by_depth(U, k, V, depths, gamma: float) -> np.ndarray:
    """Both constructions of U diag(k) V^T at each depth, their norms and their accuracy.

    ``gamma`` is the target's max |log k_i| as the caller states it (it sets the bound).

    Returns
    -------
    numpy.ndarray (len(depths), 6)
        Rows (l, bound of Theorem 2.1, max_i ||A*_i|| of the SVD construction, of the polar
        construction, :func:`guarantee` of the SVD construction, the larger of the two
        largest entries of |product - R|).

    References
    ----------
    Hardt & Ma (2017), Theorem 2.1 and Appendix A.1.

    Examples
    --------
    >>> R = np.array([[0.0, -1.0], [1.0, 0.0]])
    >>> rows = norms_by_depth(R, np.ones(2), np.eye(2), [4, 8], 0.0)
    >>> rows.shape, bool(rows[:, 5].max() < 1e-12)
    ((2, 6), True)
    """
    U, k, V = _factors(U, k, V)
    gamma = _gamma(gamma)
    depths = v.widths("depths", depths)
    R = U @ np.diag(k) @ V.T
    rows = []
    for ell in depths:
        A_svd = construct(U, k, V, ell)
        A_pol = construct(U, k, V, ell, method="polar")
        err = max(np.abs(product(A) - R).max() for A in (A_svd, A_pol))
        rows.append((ell, theorem21_bound(gamma, ell), max_norm(A_svd), max_norm(A_pol),
                     guarantee(gamma, ell), err))
    return np.array(rows, dtype=float).reshape(-1, 6)


def psd_root_factors(U, z, ell: int) -> np.ndarray:
    """The equal factors A*_i = U diag(z^(1/l)) U^T - I of a positive definite U diag(z) U^T.

    Returns
    -------
    numpy.ndarray (l, d, d)

    References
    ----------
    Hardt & Ma (2017), Appendix A.1, the PSD case.

    Examples
    --------
    >>> A = psd_root_factors(np.eye(2), np.array([4.0, 1.0]), 2)
    >>> bool(np.allclose(product(A), np.diag([4.0, 1.0])))
    True
    """
    U = _matrices("U", U, 2)
    d = U.shape[0]
    if U.shape[1] != d or not _is_orthogonal(U):
        raise ValueError("U must be a square orthogonal matrix")
    z = _matrices("z", z, 1, finite=False)
    if z.shape != (U.shape[0],) or not (np.isfinite(z).all() and (z > 0).all()):
        raise ValueError(f"z must hold {U.shape[0]} finite positive eigenvalues, got {z!r}")
    ell = positive_int("ell", ell)
    return np.stack([U @ np.diag(z ** (1 / ell)) @ U.T - np.eye(len(z))] * ell)


def normal_families(n: int, d: int, *, gen: torch.Generator) -> dict[str, list[np.ndarray]]:
    """n random real normal matrices in each of three families (tests of Claim C.1).

    Haar orthogonal Q; a Q + b Q^T + c I with Gaussian (a, b, c) and the same Q; symmetric
    G + G^T with Gaussian G. Drawn in the order Q, (a, b, c), G.

    References
    ----------
    Hardt & Ma (2017), Claim C.1.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> fams = normal_families(2, 3, gen=generator(0))
    >>> sorted(fams), all(np.allclose(N @ N.T, N.T @ N) for f in fams.values() for N in f)
    (['aQ + bQ^T + cI', 'orthogonal', 'symmetric'], True)
    """
    from ..core.device import randn

    n, d = positive_int("n", n), positive_int("d", d)
    Qs = haar_orthogonal(n, d, d, gen=gen).cpu().numpy()
    coef = randn(n, 3, gen=gen).cpu().numpy()
    G = randn(n, d, d, gen=gen).cpu().numpy()
    return {"orthogonal": list(Qs),
            "aQ + bQ^T + cI": [a * Q + b * Q.T + c * np.eye(d) for (a, b, c), Q in zip(coef, Qs)],
            "symmetric": [g + g.T for g in G]}

