"""Explicit bounds of the BN chain analysis of Meterez et al. (2024), Appendices C and D.

The linear BN network ``X_{l+1} = BN(W_l X_l)`` (Haar-orthogonal weights, batches of n = d
samples) orthogonalizes its representations; the proofs bound every step through the isometry
gap ``phi`` and the threshold ``1/(16d)`` that separates its two regimes. This module states
the bounds as printed, with the corrections the book derives, so that chapters can compare
measurements with them:

* :func:`lemma_c2`: one layer's expected decrease of the gap below and above the threshold
  (eqs. 59-60), as printed or as Corollary B.5 actually gives it;
* :func:`near_isometry_decrease`: the exact relative decrease ``2/(d+2)`` near isometry;
* :func:`lemma_d5`, :func:`lemma_d6`, :func:`lemma_d3`: the bounds on the first-phase length,
  the second-phase sum and the sum of the BN Jacobians' log-norms (eqs. 102, 104);
* :func:`theorem1_k`, :func:`theorem1_bound`: the time scale of Theorem 1 as the proof gives
  it, and the bound ``phi0 exp(-l/k)`` (eq. 6).

All functions return Python floats from closed forms (no randomness).

References
----------
A. Meterez et al., "Towards training without depth limits: batch normalization without
gradient explosion", ICLR 2024, Lemma C.2 and Lemmas D.3, D.5, D.6.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..core import validate as v

__all__ = ["threshold", "lemma_c2", "near_isometry_decrease", "lemma_d5", "lemma_d6",
           "lemma_d3", "theorem1_k", "theorem1_bound"]


def _d(d) -> int:
    return v.positive_int("d", d)


def _phi(phi0) -> float:
    return v.positive_float("phi0", phi0)


def _bound(value, d: int, phi0: float) -> float:
    """``value()`` as a finite float, else an error naming the arguments that overflow it."""
    try:
        out = float(value())
    except OverflowError:
        out = math.inf
    if not math.isfinite(out):
        raise ValueError(f"the bound overflows a float at d = {d}, phi0 = {phi0!r} (phi0 or d "
                         "too large)")
    return out


def threshold(d: int) -> float:
    """The critical gap ``1/(16d)`` of Lemma C.2 and eq. (96).

    Examples
    --------
    >>> threshold(4)
    0.015625
    """
    return 1.0 / (16 * _d(d))


def lemma_c2(d: int, *, proven: bool = False) -> tuple[float, float]:
    """The constants of Lemma C.2: ``(c, a)`` with ``E[phi'] <= phi (1 - c)`` below the
    threshold (eq. 59) and ``E[phi'] <= phi - a`` above it (eq. 60).

    As printed ``c = 1/(2d^2)``, ``a = 1/(32d^3)``; with ``proven=True`` the constants that
    Corollary B.5 actually gives, ``c = 1/(2d(d+2))``, ``a = 1/(32 d^2 (d+2))``.

    Examples
    --------
    >>> lemma_c2(2)
    (0.125, 0.00390625)
    >>> lemma_c2(2, proven=True)
    (0.0625, 0.001953125)
    """
    d = _d(d)
    if not isinstance(proven, bool):
        raise TypeError(f"proven must be a bool, got {type(proven).__name__}")
    if proven:
        return 1.0 / (2 * d * (d + 2)), 1.0 / (32 * d**2 * (d + 2))
    return 1.0 / (2 * d**2), 1.0 / (32 * d**3)


def near_isometry_decrease(d: int) -> float:
    """The exact relative decrease of the expected gap over one layer near isometry,
    ``1 - d/(d+2) = 2/(d+2)`` (second order in the eigenvalue deviations)."""
    return 2.0 / (_d(d) + 2)


def lemma_d5(d: int, phi0: float) -> float:
    """Lemma D.5: ``E[S] <~ 512 d^4 phi0^2`` for ``phi0 > 1/(16d)`` (0 below the threshold)."""
    d, phi0 = _d(d), _phi(phi0)
    return 0.0 if phi0 <= threshold(d) else _bound(lambda: 512.0 * d**4 * phi0**2, d, phi0)


def _saturation(d: int, depth) -> float:
    depth = v.positive_int("depth", depth)
    return -math.expm1(-depth / (32 * d**4))


def lemma_d6(d: int, phi0: float, depth: int) -> float:
    """Lemma D.6: ``sum_{l=S+1}^{L} E sqrt(d phi_l) <= 32 d^4.5 phi0^0.5 (1 - e^{-L/(32d^4)})``.

    Examples
    --------
    >>> round(lemma_d6(2, 1 / 64, 1), 6)   # about L sqrt(d phi0) at small L
    0.176604
    """
    d, phi0 = _d(d), _phi(phi0)
    return 32.0 * d**4.5 * math.sqrt(phi0) * _saturation(d, depth)


def lemma_d3(d: int, phi0: float, depth: int) -> float:
    """The explicit bound of Lemma D.3 on ``E sum_{k=1}^{L} log ||J_BN(H^k)||``: eq. (102),
    ``32 d^4.5 phi0^0.5 (1 - e^{-L/(32d^4)})``, when ``phi0 <= 1/(16d)``, and eq. (104),
    ``512 d^4 phi0^2 (1 + d phi0) + 32 d^4 (1 - e^{-L/(32d^4)})``, otherwise."""
    d, phi0 = _d(d), _phi(phi0)
    if phi0 <= threshold(d):
        return lemma_d6(d, phi0, depth)
    saturation = _saturation(d, depth)
    return _bound(lambda: 512.0 * d**4 * phi0**2 * (1 + d * phi0) + 32.0 * d**4 * saturation,
                  d, phi0)


def theorem1_k(d: int, phi0: float) -> float:
    """The time scale of Theorem 1 as the proof gives it, ``k = max(2d^2, 32 d^3 phi0)``.

    Theorem 1 states ``k = C d^2 (1 + d phi0)``; Appendix C (eqs. 74-85) gives this ``k``,
    which is at most ``32 d^2 (1 + d phi0)`` (so ``C = 32``).

    Examples
    --------
    >>> theorem1_k(4, 1 / 128), theorem1_k(4, 1.0)
    (32.0, 2048.0)
    """
    d, phi0 = _d(d), _phi(phi0)
    return float(max(2 * d**2, 32 * d**3 * phi0))


def theorem1_bound(phi0: float, k: float, layers):
    """Theorem 1, eq. (6): the bound ``phi0 exp(-l / k)`` on ``E phi(X_{l+1})`` at ``layers``.

    ``layers`` (>= 0, finite) is a number, an array or a tensor: the result is a float, a
    NumPy array or a tensor of its shape.

    Examples
    --------
    >>> import torch
    >>> theorem1_bound(0.5, 2.0, torch.tensor([0.0, 2.0], dtype=torch.float64)).tolist()
    [0.5, 0.18393972058572117]
    """
    phi0, k = _phi(phi0), v.positive_float("k", k)
    if isinstance(layers, (int, float)) and not isinstance(layers, bool):
        return phi0 * math.exp(-v.nonnegative_float("layers", layers) / k)
    v.array("layers", layers)                      # real, finite, not empty
    if isinstance(layers, torch.Tensor):
        if bool((layers < 0).any()):
            raise ValueError("layers must be >= 0")
        return phi0 * (-layers / k).exp()
    arr = np.asarray(layers, dtype=float)
    if (arr < 0).any():
        raise ValueError("layers must be >= 0")
    return phi0 * np.exp(-arr / k)
