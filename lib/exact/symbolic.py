"""SymPy helpers shared by chapters: Gaussian expectations and Chernoff bounds.

Everything here is computed (integrals, solutions of stationarity conditions), not typed in:
a chapter shows the steps by calling these functions one at a time.
"""

from __future__ import annotations

import math
import numbers

import sympy as sp

x = sp.Symbol("x", real=True)
HALF = sp.Rational(1, 2)

_INFINITIES = (sp.oo, sp.S.NegativeInfinity)


def _expr(name: str, value, *, lo=None, strict: bool = False, infinite: bool = False,
          symbol: bool = False, basic: bool = False):
    """A SymPy expression or a real number, checked by ``name`` and returned unchanged.

    Strings are refused, never sympified (``sympify`` evaluates them); so are ``None``,
    ``bool``, complex numbers and other objects. NaN and complex infinity (``zoo``) are
    refused, and so are infinities unless ``infinite`` (the limits of an integral). ``lo``:
    a number or SymPy expression known to be below ``lo`` (``<= lo`` with ``strict``) is
    refused; an expression whose sign SymPy cannot decide is accepted. ``symbol``: only a
    ``sympy.Symbol``; ``basic``: any ``sympy.Basic`` (not only ``Expr``) is accepted.

    Shared by the SymPy helpers of :mod:`eit.exact` (the moment laws, the norm products, the
    residual factors).
    """
    if symbol:
        if not isinstance(value, sp.Symbol):
            raise TypeError(f"{name} must be a SymPy Symbol, got {type(value).__name__}")
        return value
    if isinstance(value, sp.Basic):
        if not (basic or isinstance(value, sp.Expr)):
            raise TypeError(f"{name} must be a SymPy expression, got {type(value).__name__}")
        if value.has(sp.nan, sp.zoo):
            raise ValueError(f"{name} must be finite, got {value}")
        if not infinite and value.has(*_INFINITIES):
            raise ValueError(f"{name} must be finite, got {value}")
        if lo is not None:
            below = (value - lo).is_nonpositive if strict else (value - lo).is_negative
            if below:
                raise ValueError(f"{name} must be {'>' if strict else '>='} {lo}, got {value}")
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a SymPy expression or a real number, got "
                        f"{type(value).__name__}")
    if not isinstance(value, numbers.Rational) and (
            math.isnan(value) or math.isinf(value) and not infinite):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if lo is not None and (value <= lo if strict else value < lo):
        raise ValueError(f"{name} must be {'>' if strict else '>='} {lo}, got {value!r}")
    return value


def _lam(lam):
    """The argument of a moment generating function of a squared Gaussian: below 1/2."""
    lam = _expr("lam", lam)
    if (lam - HALF).is_nonnegative if isinstance(lam, sp.Expr) else lam >= 0.5:
        raise ValueError(f"lam must be < 1/2 (E[exp(lam Z^2)] diverges beyond), got {lam}")
    return lam


def std_normal_pdf(var: sp.Symbol = x) -> sp.Expr:
    """Density of N(0, 1).

    Examples
    --------
    >>> std_normal_pdf().subs(x, 0)
    sqrt(2)/(2*sqrt(pi))
    """
    var = _expr("var", var)
    return sp.exp(-var**2 / 2) / sp.sqrt(2 * sp.pi)


def gaussian_expectation(f: sp.Expr, var: sp.Symbol = x, lower=-sp.oo) -> sp.Expr:
    """E[f(Z) 1{Z > lower}] for Z ~ N(0, 1), by integration against the density.

    Examples
    --------
    >>> gaussian_expectation(x**2)
    1
    """
    f = _expr("f", f)
    var = _expr("var", var, symbol=True)
    lower = _expr("lower", lower, infinite=True)
    return sp.simplify(sp.integrate(f * std_normal_pdf(var), (var, lower, sp.oo), conds="none"))


def relu_moment(k: int) -> sp.Expr:
    """E[ReLU(Z)^k] for Z ~ N(0, 1): the moments of the rectified Gaussian (k >= 1).

    Examples
    --------
    >>> relu_moment(2)
    1/2
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")
    return gaussian_expectation(x**k, lower=0)


def half_gaussian_square_mgf(lam: sp.Symbol) -> sp.Expr:
    """E[exp(lam Z^2) 1{Z > 0}] for lam < 1/2, by integration.

    The integral converges only for 1 - 2 lam > 0, so it is computed with a positive symbol
    s = 1 - 2 lam and then written back in terms of ``lam``.

    Examples
    --------
    >>> half_gaussian_square_mgf(sp.Integer(0))
    1/2
    """
    lam = _lam(lam)
    s = sp.Symbol("s", positive=True)
    integral = sp.integrate(sp.exp(-s * x**2 / 2) * std_normal_pdf() / sp.exp(-x**2 / 2),
                            (x, 0, sp.oo), conds="none")
    return sp.simplify(integral).subs(s, 1 - 2 * lam)


def relu_square_mgf(lam: sp.Symbol) -> sp.Expr:
    """E[exp(lam ReLU(Z)^2)], Z ~ N(0, 1): the atom at 0 (mass 1/2) plus the half-Gaussian.

    Examples
    --------
    >>> relu_square_mgf(sp.Integer(0))
    1
    """
    lam = _lam(lam)
    return sp.Rational(1, 2) + half_gaussian_square_mgf(lam)


def masked_square_mgf(lam: sp.Symbol, p: sp.Expr = HALF) -> sp.Expr:
    """E[exp(lam (zA)^2)], A ~ N(0, 1), z ~ Bernoulli(p) independent (Lemma 4's coordinate).

    Examples
    --------
    >>> masked_square_mgf(sp.Integer(0))
    1
    """
    lam = _lam(lam)
    p = _expr("p", p, lo=0)
    if (p - 1).is_positive if isinstance(p, sp.Expr) else p > 1:
        raise ValueError(f"p must be a probability in [0, 1], got {p}")
    full = 2 * half_gaussian_square_mgf(lam)  # E[exp(lam A^2)] over the whole line
    return sp.simplify((1 - p) * 1 + p * full)


def chernoff_exponent(mgf: sp.Expr, lam: sp.Symbol, threshold: sp.Expr) -> sp.Expr:
    """Per-coordinate Chernoff exponent lam*threshold - log E[exp(lam X)].

    P(sum_i X_i >= m*threshold) <= exp(-m * exponent) for every admissible lam > 0.

    Examples
    --------
    >>> lam = sp.Symbol('lam', real=True)
    >>> chernoff_exponent(sp.exp(lam), lam, 1)
    0
    """
    mgf = _expr("mgf", mgf, lo=0, strict=True)
    lam = _expr("lam", lam)
    threshold = _expr("threshold", threshold)
    return lam * threshold - sp.log(mgf)


def stationary_points(exponent: sp.Expr, lam: sp.Symbol) -> list[sp.Expr]:
    """Solutions in lam of d exponent / d lam = 0.

    Examples
    --------
    >>> lam = sp.Symbol('lam')
    >>> stationary_points(lam**2 - 2 * lam, lam)
    [1]
    """
    exponent = _expr("exponent", exponent)
    lam = _expr("lam", lam, symbol=True)
    return sp.solve(sp.diff(exponent, lam), lam)


__all__ = ["HALF", "chernoff_exponent", "closed_form_integral", "gaussian_expectation",
           "half_gaussian_square_mgf", "masked_square_mgf", "relu_moment", "relu_square_mgf",
           "stationary_points", "std_normal_pdf", "x"]


def closed_form_integral(expr: sp.Expr, *limits: tuple) -> sp.Expr:
    """A definite integral in closed form: SymPy's value, hypergeometric values expanded.

    ``sp.integrate(expr, *limits, conds="none")`` (no convergence conditions: the caller
    states where the integral converges), then ``hyperexpand`` (Gauss's theorem for the
    hypergeometric values that Beta-type integrals produce), ``gammasimp`` and ``simplify``.

    Parameters
    ----------
    expr : sympy.Expr
        The integrand.
    *limits : tuple
        ``(variable, lower, upper)`` for each integration, as for ``sp.integrate``.

    References
    ----------
    Arpit & Bengio (2019), Theorem 4 and Proposition 3: the Beta and chi-squared integrals of
    the weight-normalized layer.

    Examples
    --------
    >>> s, n = sp.symbols("s n", positive=True)
    >>> closed_form_integral((1 - s) ** (n - 1), (s, 0, 1))
    1/n
    """
    if not isinstance(expr, sp.Basic):
        raise TypeError(f"expr must be a SymPy expression, got {type(expr).__name__}")
    expr = _expr("expr", expr, basic=True)
    if not limits or not all(isinstance(lim, tuple) and len(lim) == 3 for lim in limits):
        raise ValueError(f"limits must be (variable, lower, upper) tuples, got {limits!r}")
    for i, (var, lower, upper) in enumerate(limits):
        _expr(f"limits[{i}] variable", var, symbol=True)
        _expr(f"limits[{i}] lower end", lower, infinite=True)
        _expr(f"limits[{i}] upper end", upper, infinite=True)
    value = sp.integrate(expr, *limits, conds="none")
    return sp.simplify(sp.gammasimp(sp.hyperexpand(value)))
