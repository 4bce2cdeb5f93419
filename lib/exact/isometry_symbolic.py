"""The isometry gap and BN in SymPy: exact means of eigenvalues and the row normalization.

Meterez et al. (2024) write the isometry gap (eq. 5) of a batch through the eigenvalues
``lambda_k`` of its Gram matrix as the log ratio of their arithmetic to their geometric mean,
``phi = log AM(lambda) - log GM(lambda)``, and BN (eq. 4) divides every row by its norm. These
helpers build those expressions for symbolic eigenvalues and matrices, so that a chapter can
derive the properties of ``phi`` and the inequalities of Lemma B.1 exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy as sp

__all__ = ["arithmetic_mean", "geometric_mean", "isometry_gap_of", "bn_matrix"]


def _values(name: str, xs, *, positive: bool = False) -> list:
    """A non-empty sequence of finite SymPy expressions (or real numbers); ``positive``:
    none of them known to be <= 0."""
    if isinstance(xs, (str, bytes)) or not isinstance(xs, Sequence) or len(xs) == 0:
        raise ValueError(f"{name} must be a non-empty sequence of expressions, got {xs!r}")
    out = []
    for i, x in enumerate(xs):
        if isinstance(x, bool) or not isinstance(x, (sp.Expr, int, float)):
            raise TypeError(f"{name}[{i}] must be a SymPy expression or a number, got "
                            f"{type(x).__name__}")
        x = sp.sympify(x)
        if x.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
            raise ValueError(f"{name}[{i}] must be finite, got {x}")
        if positive and x.is_extended_nonpositive:
            raise ValueError(f"{name}[{i}] must be > 0, got {x}")
        out.append(x)
    return out


def arithmetic_mean(xs: Sequence) -> sp.Expr:
    """``(x_1 + ... + x_n) / n``.

    References
    ----------
    Meterez et al. (2024), eq. (5) and Lemma B.1, eq. (12).

    Examples
    --------
    >>> a, b = sp.symbols("a b", positive=True)
    >>> arithmetic_mean([a, b])
    a/2 + b/2
    """
    xs = _values("xs", xs)
    return sum(xs) / len(xs)


def geometric_mean(xs: Sequence) -> sp.Expr:
    """``(x_1 ... x_n)^(1/n)`` (no entry known to be <= 0).

    References
    ----------
    Meterez et al. (2024), eq. (5) (``det(X^T X)^(1/d)``) and Lemma B.1.

    Examples
    --------
    >>> a, b = sp.symbols("a b", positive=True)
    >>> geometric_mean([a, b])
    sqrt(a)*sqrt(b)
    """
    xs = _values("xs", xs, positive=True)
    return sp.prod(xs) ** sp.Rational(1, len(xs))


def isometry_gap_of(eigenvalues: Sequence) -> sp.Expr:
    """``phi = log AM(lambda) - (1/n) sum_k log lambda_k`` for the Gram eigenvalues ``lambda``.

    References
    ----------
    Meterez et al. (2024), eq. (5).

    Examples
    --------
    >>> isometry_gap_of([1, 1])
    0
    >>> isometry_gap_of([sp.Rational(1, 2), sp.Rational(3, 2)])
    -log(3/2)/2 + log(2)/2
    """
    eigs = _values("eigenvalues", eigenvalues, positive=True)
    return sp.log(arithmetic_mean(eigs)) - sum(sp.log(e) for e in eigs) / len(eigs)


def bn_matrix(m: sp.Matrix) -> tuple[sp.Matrix, list[sp.Expr]]:
    """BN of eq. (4) for a symbolic matrix: every row divided by its Euclidean norm.

    Returns
    -------
    (sympy.Matrix, list)
        ``diag(1/r_j) M`` and the row norms ``r_j = sqrt(sum_k M_jk^2)``.

    References
    ----------
    Meterez et al. (2024), eq. (4), Lemma B.1 and Corollary B.3.

    Examples
    --------
    >>> bn_matrix(sp.Matrix([[3, 4]]))
    (Matrix([[3/5, 4/5]]), [5])
    """
    if not isinstance(m, sp.MatrixBase):
        raise TypeError(f"m must be a sympy Matrix, got {type(m).__name__}")
    if m.rows == 0 or m.cols == 0:
        raise ValueError(f"m must have at least one row and one column, got shape {m.shape}")
    if any(x.has(sp.nan, sp.zoo, sp.oo, -sp.oo) for x in m):
        raise ValueError("m must have finite entries (no nan, zoo or oo)")
    norms = [sp.sqrt(sum(m[j, k] ** 2 for k in range(m.cols))) for j in range(m.rows)]
    for j, r in enumerate(norms):
        if r.is_zero:
            raise ValueError(f"m has a zero row ({j}): BN divides by its norm")
    return sp.diag(*[1 / r for r in norms]) * m, norms
