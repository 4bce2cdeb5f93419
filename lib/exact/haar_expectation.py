"""Exact expectations of polynomials in the entries of a Haar-orthogonal matrix (SymPy).

A proof that averages over a random rotation (Meterez et al. 2024, Appendix B) expands a
polynomial in the entries ``W_{ik}`` and replaces each monomial by its Haar integral. This
module does that expansion mechanically: every monomial is integrated by the orthogonal
Weingarten calculus (:func:`eit.exact.weingarten.haar_moment`), so no moment is typed in.
"""

from __future__ import annotations

import sympy as sp

from .weingarten import haar_moment

__all__ = ["haar_matrix_symbols", "haar_expectation"]


def _expression(name: str, value) -> sp.Expr:
    """A finite SymPy expression (or a real Python number), else an error naming it."""
    if isinstance(value, bool) or not isinstance(value, (sp.Expr, int, float)):
        raise TypeError(f"{name} must be a SymPy expression or a number, got "
                        f"{type(value).__name__}")
    value = sp.sympify(value)
    if value.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


def haar_matrix_symbols(d: int, name: str = "w") -> sp.Matrix:
    """A ``d x d`` matrix of distinct real symbols ``w_{ik}`` standing for a Haar matrix.

    Examples
    --------
    >>> haar_matrix_symbols(2)
    Matrix([
    [w_0_0, w_0_1],
    [w_1_0, w_1_1]])
    """
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ValueError(f"d must be a positive int, got {d!r}")
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be an identifier, got {name!r}")
    return sp.Matrix(d, d, lambda i, k: sp.Symbol(f"{name}_{i}_{k}", real=True))


def haar_expectation(expr, w: sp.Matrix) -> sp.Expr:
    """``E[expr]`` for ``w`` Haar-distributed on ``O(d)``, exactly.

    Parameters
    ----------
    expr : SymPy expression
        A polynomial in the entries of ``w`` (other symbols are treated as constants).
    w : sympy.Matrix
        A square matrix of distinct symbols (:func:`haar_matrix_symbols`), ``d x d``.

    Returns
    -------
    sympy.Expr
        The expectation: each monomial ``prod W_{i_s k_s}`` replaced by its Haar integral
        at the integer dimension ``d``.

    Examples
    --------
    >>> w = haar_matrix_symbols(3)
    >>> haar_expectation(w[0, 0] ** 2, w)
    1/3
    >>> haar_expectation(w[0, 0] ** 2 * w[1, 1] ** 2, w)
    2/15
    """
    if not isinstance(w, sp.MatrixBase) or w.rows != w.cols:
        raise TypeError("w must be a square sympy Matrix of symbols")
    if w.rows == 0:
        raise ValueError("w must be at least 1 x 1, got an empty matrix")
    entries = list(w)
    if len(set(entries)) != len(entries) or not all(isinstance(e, sp.Symbol) for e in entries):
        raise ValueError("w must hold distinct symbols")
    d = w.rows
    expr = _expression("expr", expr)
    try:
        poly = sp.Poly(sp.expand(expr), *entries)
    except sp.PolynomialError as e:
        raise ValueError(f"expr must be a polynomial in the entries of w: {e}") from None
    total = sp.Integer(0)
    for powers, coeff in poly.terms():
        rows, cols = [], []
        for index, power in enumerate(powers):
            i, k = divmod(index, d)
            rows += [i] * power
            cols += [k] * power
        total += coeff * (haar_moment(rows, cols, d) if rows else sp.Integer(1))
    return sp.expand(total)
