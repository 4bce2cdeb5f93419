"""One ReLU unit with symbolic weights: its moments given the previous layer (SymPy).

Appendix A of Hanin & Rolnick (2018) computes the conditional moments of one unit,
``preact = b + sum_a act_a w_a``, given the previous layer's activations ``act_a`` (fixed
symbols here), with i.i.d. weights of a symmetric law (variance ``sigma^2``, kurtosis
``mu4~ = mu_4 / sigma^4``) and a symmetric bias (moments ``nu_2, nu_4``). This module builds
that unit once (:func:`symmetric_unit`), takes expectations by expanding into monomials
(:meth:`Unit.expect`), and writes a result in the invariants ``M = ||act||^2 / n`` and
``Q = ||act||_4^4`` (:meth:`Unit.in_power_sums`). A chapter shows the steps (the
symmetrization ``E[act^k] = E[preact^k] / 2``, the recursion); this module only keeps the
symbol bookkeeping out of sight.

:func:`nonnegative_coefficients` is the positivity certificate such derivations use: a rational
function of non-negative symbols whose numerator and denominator have only non-negative
coefficients is non-negative.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy as sp

from .moments import expect_independent
from .symbolic import _expr

__all__ = ["Unit", "symmetric_law", "symmetric_unit", "nonnegative_coefficients"]


def symmetric_law(variance, kurtosis=3) -> Callable[[int], sp.Expr]:
    """The moments ``k -> E[X^k]``, k = 1..4, of a symmetric law (odd moments vanish).

    Parameters
    ----------
    variance : SymPy expression or number
        ``E[X^2]``.
    kurtosis : SymPy expression or number
        ``E[X^4] / E[X^2]^2`` (3 for a Gaussian).

    Returns
    -------
    callable
        ``k -> E[X^k]`` for ``k = 1, 2, 3, 4``; other ``k`` raise ``ValueError``.

    References
    ----------
    Hanin & Rolnick (2018), appendix A (weights of variance 2/n, kurtosis mu4~).

    Examples
    --------
    >>> s = sp.Symbol("s", positive=True)
    >>> [symmetric_law(s, 3)(k) for k in (1, 2, 3, 4)]
    [0, s, 0, 3*s**2]
    """
    variance = sp.sympify(_expr("variance", variance, lo=0))
    kurtosis = sp.sympify(_expr("kurtosis", kurtosis, lo=1))
    table = {1: sp.Integer(0), 2: variance, 3: sp.Integer(0), 4: kurtosis * variance**2}

    def moment(k: int) -> sp.Expr:
        if k not in table:
            raise ValueError(f"k must be 1, 2, 3 or 4 (moments up to the fourth), got {k!r}")
        return table[k]

    return moment


@dataclass(frozen=True)
class Unit:
    """One unit ``preact = b + sum_a act_a w_a`` with symbolic, independent weights and bias.

    Attributes
    ----------
    a : tuple of sympy.Symbol
        The previous layer's activations, length ``n`` (treated as constants).
    w : tuple of sympy.Symbol
        The weights, length ``n``.
    b : sympy.Symbol
        The bias.
    moments : dict
        ``symbol -> (k -> E[X^k])`` for every weight and the bias.
    """

    a: tuple
    w: tuple
    b: sp.Symbol
    moments: dict

    @property
    def n(self) -> int:
        """The fan-in."""
        return len(self.a)

    @property
    def linear(self) -> sp.Expr:
        """``sum_a act_a w_a`` (the pre-activation without bias)."""
        return sum(ai * wi for ai, wi in zip(self.a, self.w, strict=True))

    @property
    def preact(self) -> sp.Expr:
        """``b + sum_a act_a w_a``."""
        return self.b + self.linear

    @property
    def norm2(self) -> sp.Expr:
        """``||act||^2``."""
        return sum(ai**2 for ai in self.a)

    @property
    def norm4(self) -> sp.Expr:
        """``||act||_4^4``."""
        return sum(ai**4 for ai in self.a)

    def expect(self, expr) -> sp.Expr:
        """``E[expr]`` over the weights and the bias, activations fixed (expanded)."""
        return expect_independent(expr, self.moments)

    def in_power_sums(self, expr, M: sp.Symbol, Q: sp.Symbol) -> sp.Expr:
        """Write ``expr`` as ``alpha ||act||^4 + beta ||act||_4^4 + gamma ||act||^2 + delta``
        with ``||act||^2 = n M`` and ``||act||_4^4 = Q``.

        The coefficients solve the linear equations that match every monomial in the
        activations, so the result holds for every activation vector; an expression outside
        that span raises ``ValueError``.
        """
        coef = sp.symbols("alpha beta gamma delta", cls=sp.Dummy)
        ansatz = coef[0] * self.norm2**2 + coef[1] * self.norm4 + coef[2] * self.norm2 + coef[3]
        eqs = sp.Poly(sp.expand(sp.sympify(expr) - ansatz), *self.a).coeffs()
        sol = sp.solve(eqs, coef, dict=True)
        if len(sol) != 1:
            raise ValueError("expr must be a combination of ||act||^4, ||act||_4^4, "
                             "||act||^2 and 1")
        n = self.n
        return sp.expand((coef[0] * (n * M) ** 2 + coef[1] * Q + coef[2] * n * M
                          + coef[3]).subs(sol[0]))


def symmetric_unit(n: int, *, weight_variance, kurtosis=3, nu2=0, nu4=0) -> Unit:
    """One unit of fan-in ``n`` with i.i.d. symmetric weights and a symmetric bias.

    Parameters
    ----------
    n : int
        The fan-in (the bookkeeping is the same for any ``n``; 3 shows every pattern of
        indices up to the fourth power).
    weight_variance, kurtosis : SymPy expression or number
        The weights' variance and kurtosis ``mu_4 / mu_2^2``.
    nu2, nu4 : SymPy expression or number
        The bias's second and fourth moments.

    Returns
    -------
    Unit
        Activations ``a1..an``, weights ``w1..wn``, bias ``b`` and their moments.

    References
    ----------
    Hanin & Rolnick (2018), eq. (3) and appendix A.

    Examples
    --------
    >>> s = sp.Symbol("s", positive=True)
    >>> u = symmetric_unit(2, weight_variance=s)
    >>> u.expect(u.preact**2)
    a1**2*s + a2**2*s
    >>> u.in_power_sums(u.expect(u.preact**2), sp.Symbol("M"), sp.Symbol("Q"))
    2*M*s
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    a = sp.symbols(f"a1:{n + 1}", real=True)
    w = sp.symbols(f"w1:{n + 1}", real=True)
    b = sp.Symbol("b", real=True)
    weight = symmetric_law(_expr("weight_variance", weight_variance, lo=0), kurtosis)
    nu2, nu4 = (sp.sympify(_expr(name, m, lo=0)) for name, m in (("nu2", nu2), ("nu4", nu4)))
    bias = {1: sp.Integer(0), 2: nu2, 3: sp.Integer(0), 4: nu4}
    moments = {**{wi: weight for wi in w}, b: bias.get}
    return Unit(tuple(a), tuple(w), b, moments)


def nonnegative_coefficients(expr, *syms: sp.Symbol) -> bool:
    """True if ``expr``, as one fraction in ``syms``, has a numerator and a denominator with
    only non-negative coefficients: then ``expr >= 0`` wherever every symbol is >= 0.

    A sufficient condition (False does not prove that ``expr`` takes a negative value).

    Examples
    --------
    >>> t, u = sp.symbols("t u", nonnegative=True)
    >>> nonnegative_coefficients((1 + t) / (2 + u) + t * u, t, u)
    True
    >>> nonnegative_coefficients(t - u, t, u)
    False
    """
    if not syms:
        raise ValueError("syms must name at least one symbol")
    for s in syms:
        if not isinstance(s, sp.Symbol):
            raise TypeError(f"syms must be SymPy symbols, got {s!r}")
    expr = _expr("expr", expr)
    num, den = sp.fraction(sp.together(sp.expand(sp.sympify(expr))))
    return all(c >= 0 for part in (num, den)
               for c in sp.Poly(sp.expand(part), *syms).coeffs())
