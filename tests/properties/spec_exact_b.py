"""Property specs of ``eit.exact`` (part b: the moment laws, the length laws, the one-layer and
subspace laws, the residual laws and the SymPy helpers; see ``harness.py``).

Many of these functions take SymPy expressions and return SymPy expressions, which the
harness's ``leaves`` does not look into (nor into mpmath numbers): for them a non-finite
input (``nan``, ``zoo``, ``oo``) must raise, and the custom kinds below feed them SymPy's
non-finite values and strings (which must be refused, never sympified: ``sympify`` evaluates
its argument). Tiny sizes everywhere: widths of 3 to 8, two or three layers.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import sympy as sp
import torch

from eit.core.seeds import generator
from eit.exact import (
    law_moments,
    layer_products,
    length_laws,
    log_length,
    moments,
    norm_product,
    one_layer,
    ratio_profiles,
    relu_residual,
    residual_limit,
    subspace,
    symbolic,
    unit_moments,
)
from eit.sample.laws import gaussian_bias, he
from eit.sample.layers import mlp
from properties.harness import (
    ARRAY,
    CHOICE,
    COUNT,
    GENERATOR,
    INDEX,
    INTS,
    NONNEGATIVE,
    OTHER,
    POSITIVE,
    REAL,
    SEQUENCE,
    UNIT,
    Kind,
    Spec,
)

NAN, INF = math.nan, math.inf
X = symbolic.x
LAM = sp.Symbol("lam", real=True)
S_ = sp.Symbol("s", positive=True)
T_, U_ = sp.symbols("t u", nonnegative=True)
Z_ = sp.Symbol("z")


def _x(*shape, seed: int = 0) -> torch.Tensor:
    """A fixed Gaussian array (a private generator: the global stream is left alone)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64)


# --- kinds of this module's arguments ---------------------------------------------------------

#: non-finite values, SymPy's and Python's
SYMPY_NONFINITE = [sp.nan, sp.zoo, sp.oo, NAN, -INF]
#: wrong types for a SymPy argument: a string (harmless, but it must be refused, not
#: sympified), None, a Python complex, a dict
SYMPY_WRONG = ["x**2", None, 1 + 2j, {"a": 1}]


def _sympy_kind(name: str, sentinel: list | None = None) -> Kind:
    def mutate(data, valid):
        out = {"nonfinite": list(SYMPY_NONFINITE), "type": list(SYMPY_WRONG)}
        if sentinel:
            out["sentinel"] = list(sentinel)
        return out
    return Kind(name, mutate)


#: a SymPy expression or a real number
EXPR = _sympy_kind("sympy expression")
#: a positive SymPy expression or number (a standard deviation, a width, a variance)
POS_EXPR = _sympy_kind("positive sympy expression", [-1, 0, sp.Integer(-2)])
#: a non-negative SymPy expression or number (a moment, a density)
NONNEG_EXPR = _sympy_kind("non-negative sympy expression", [-1, sp.Rational(-1, 2)])
#: a kurtosis mu_4 / mu_2^2 (>= 1)
KURTOSIS = _sympy_kind("kurtosis", [0, -1, sp.Rational(1, 2)])
#: a probability, SymPy or number
PROB_EXPR = _sympy_kind("sympy probability", [-1, Fraction(3, 2), sp.Rational(3, 2)])
#: the argument of E[exp(lam Z^2)] (< 1/2)
MGF_ARG = _sympy_kind("mgf argument", [sp.Rational(1, 2), 1])
#: a SymPy symbol (an integration or differentiation variable)
SYMBOL = Kind("sympy symbol", lambda data, valid: {
    "nonfinite": [sp.nan, sp.zoo, NAN], "type": ["x", None, 2, 1 + 2j, X + 1]})
#: an end of an integral (infinite ends are valid)
LIMIT = Kind("integration end", lambda data, valid: {
    "nonfinite": [sp.nan, sp.zoo, NAN], "type": ["0", None, 1 + 2j, {"a": 1}]})
#: the (variable, lower, upper) tuples of an integral (the *limits of closed_form_integral)
LIMITS = Kind("integration limits", lambda data, valid: {
    "nonfinite": [((S_, 0, sp.nan),), ((S_, sp.zoo, 1),), ((S_, 0, NAN),)],
    "type": [(("s", 0, 1),), None, "abc", ((S_, 0),), ((S_, "0", 1),)],
    "degenerate": [()]})
#: the symbols of a positivity certificate (the *syms of nonnegative_coefficients)
SYMS = Kind("symbols", lambda data, valid: {
    "nonfinite": [(sp.nan,)], "type": [("t",), (None,), (1,), "tu"], "degenerate": [()]})
#: the support (lo, hi) of a density
SUPPORT = Kind("support", lambda data, valid: {
    "nonfinite": [(sp.nan, 1), (-1, sp.zoo), (NAN, 1)],
    "type": ["(-1, 1)", None, 3, ("a", 1), (-1, 1, 2)],
    "sentinel": [(1, -1), (sp.oo, -sp.oo)], "degenerate": [(1, 1), (sp.oo, sp.oo)]})
#: an exact rational (int, Fraction, SymPy Rational): floats are not exact
EXACT = Kind("exact rational", lambda data, valid: {
    "nonfinite": [NAN, INF, sp.nan, sp.zoo, sp.oo],
    "type": ["1", None, 1 + 2j, {"a": 1}, 0.5]})
#: a non-negative exact rational (M_0)
EXACT_NONNEG = Kind("non-negative exact rational", lambda data, valid: {
    **EXACT.mutate(data, valid), "sentinel": [-1, Fraction(-1, 3)]})
#: a fan (width): a positive int or a SymPy expression
FAN = Kind("fan", lambda data, valid: {
    "nonfinite": [NAN, sp.nan, sp.oo], "type": ["3", None, 2.5, True, 1 + 2j],
    "sentinel": [-1, 0]})
#: a bool flag
FLAG = Kind("bool", lambda data, valid: {"type": [None, "yes", 1, 1.0]})
#: the power of a moment: 1 or 2
POWER = Kind("power", lambda data, valid: {
    "nonfinite": [NAN], "type": ["1", None, 1.5, True], "sentinel": [0, 3, -1]})
#: a bias law or None (None is valid)
OPTIONAL_BIAS = Kind("bias law or None", lambda data, valid: {"type": ["abc", 3, 0.5]})
#: a dict {symbol: k -> E[X^k]}
MOMENT_FUNCTIONS = Kind("moment functions", lambda data, valid: {
    "type": [None, "abc", 3, {"z": lambda k: 1}, {Z_: 3}], "degenerate": [{}]})


def _without_none(kind: Kind, name: str) -> Kind:
    """``kind`` for an argument where None is valid (a default)."""
    def mutate(data, valid):
        out = kind.mutate(data, valid)
        out["type"] = [t for t in out["type"] if t is not None]
        return out
    return Kind(name, mutate)


#: depths to keep (None is valid: all of them)
KEEP = _without_none(INTS, "depths or None")
#: a positive number or None (None is valid)
OPTIONAL_POSITIVE = _without_none(POSITIVE, "positive or None")
#: a non-negative SymPy expression or None (None is valid: a default variance)
OPTIONAL_NONNEG_EXPR = _without_none(NONNEG_EXPR, "non-negative sympy expression or None")


# --- functions with *args: the harness calls fn(**kwargs), so these name them -----------------

@functools.wraps(symbolic.closed_form_integral)
def _closed_form_integral(expr, limits):
    """``closed_form_integral(expr, *limits)`` (a non-tuple ``limits`` is passed as one)."""
    if isinstance(limits, tuple):
        return symbolic.closed_form_integral(expr, *limits)
    return symbolic.closed_form_integral(expr, limits)


@functools.wraps(unit_moments.nonnegative_coefficients)
def _nonnegative_coefficients(expr, syms):
    """``nonnegative_coefficients(expr, *syms)``."""
    if isinstance(syms, tuple):
        return unit_moments.nonnegative_coefficients(expr, *syms)
    return unit_moments.nonnegative_coefficients(expr, syms)


def _gauss(k: int):
    return {1: 0, 2: 1, 3: 0, 4: 3}[k]


def _moments():
    return moments.moment_recursion([3, 4, 5], 1, 1)


_MOMENT_ARGS = {"widths": INTS, "m0": NONNEGATIVE, "q0": NONNEGATIVE, "kappa": NONNEGATIVE,
                "mu4_tilde": POSITIVE, "nu2": NONNEGATIVE, "nu4": NONNEGATIVE}


def _moment_call():
    return {"widths": [3, 4, 5], "m0": 1.0, "q0": 1.0, "kappa": 1.0, "mu4_tilde": 3.0,
            "nu2": 0.1, "nu4": 0.03}


SPECS = [
    # --- symbolic ---------------------------------------------------------------------------
    Spec(symbolic.std_normal_pdf, lambda: {"var": X}, {"var": EXPR}),
    Spec(symbolic.gaussian_expectation, lambda: {"f": X**2, "var": X, "lower": 0},
         {"f": EXPR, "var": SYMBOL, "lower": LIMIT}),
    Spec(symbolic.relu_moment, lambda: {"k": 1}, {"k": COUNT}),
    Spec(symbolic.half_gaussian_square_mgf, lambda: {"lam": sp.Integer(0)}, {"lam": MGF_ARG}),
    Spec(symbolic.relu_square_mgf, lambda: {"lam": sp.Integer(0)}, {"lam": MGF_ARG}),
    Spec(symbolic.masked_square_mgf, lambda: {"lam": sp.Integer(0), "p": sp.Rational(1, 3)},
         {"lam": MGF_ARG, "p": PROB_EXPR}),
    Spec(symbolic.chernoff_exponent,
         lambda: {"mgf": sp.exp(LAM), "lam": LAM, "threshold": sp.Rational(1, 2)},
         {"mgf": POS_EXPR, "lam": EXPR, "threshold": EXPR}),
    Spec(symbolic.stationary_points, lambda: {"exponent": LAM**2 - 2 * LAM, "lam": LAM},
         {"exponent": EXPR, "lam": SYMBOL}),
    Spec(_closed_form_integral, lambda: {"expr": (1 - S_) ** 2, "limits": ((S_, 0, 1),)},
         {"expr": EXPR, "limits": LIMITS}),
    # --- law_moments ------------------------------------------------------------------------
    Spec(law_moments.mass, lambda: {"density": sp.Integer(1), "support": (-1, 1)},
         {"density": NONNEG_EXPR, "support": SUPPORT}),
    Spec(law_moments.moment, lambda: {"density": sp.Integer(1), "k": 2, "support": (-1, 1)},
         {"density": NONNEG_EXPR, "k": INDEX, "support": SUPPORT}),
    Spec(law_moments.variance, lambda: {"density": sp.Integer(1), "support": (-1, 1)},
         {"density": NONNEG_EXPR, "support": SUPPORT}),
    Spec(law_moments.kurtosis, lambda: {"density": sp.Integer(1), "support": (-1, 1)},
         {"density": NONNEG_EXPR, "support": SUPPORT}),
    Spec(law_moments.normal_density, lambda: {"std": 2}, {"std": POS_EXPR}),
    Spec(law_moments.truncated_normal, lambda: {"std": 1, "k": 2},
         {"std": POS_EXPR, "k": POS_EXPR}),
    Spec(law_moments.normal, lambda: {"variance": sp.Rational(2, 3)}, {"variance": POS_EXPR}),
    Spec(law_moments.uniform, lambda: {"variance": sp.Rational(2, 3)}, {"variance": POS_EXPR}),
    # --- layer_products ---------------------------------------------------------------------
    Spec(layer_products.cumulative_law, lambda: {"factors": [0.5, 2.0, 1.5], "backward": False},
         {"factors": SEQUENCE, "backward": FLAG}),
    # --- length_laws ------------------------------------------------------------------------
    Spec(length_laws.gaussian_second_moments, lambda: {"widths": [3, 4]}, {"widths": INTS}),
    Spec(length_laws.martingale_empirical_variance, lambda: {"second": [1.0, 1.5, 2.25]},
         {"second": SEQUENCE}),
    Spec(length_laws.to_mpf, lambda: {"q": Fraction(1, 3), "dps": 20},
         {"q": EXACT, "dps": COUNT}),
    Spec(length_laws.exponential_in_reciprocals,
         lambda: {"widths": [2, 3], "rate": 1, "factor": Fraction(1, 2), "dps": 20},
         {"widths": INTS, "rate": EXACT, "factor": EXACT, "dps": COUNT}),
    Spec(length_laws.gaussian_second_moment_bounds,
         lambda: {"widths": [3, 4], "m0": 1, "lower_rate": Fraction(1, 2), "upper_rate": 5,
                  "dps": 20},
         {"widths": INTS, "m0": EXACT_NONNEG, "lower_rate": EXACT, "upper_rate": EXACT,
          "dps": COUNT}),
    Spec(length_laws.increment_second_moment,
         lambda: {"moments": _moments(), "j": 0, "k": 2, "kappa": 1.0, "nu2": 0.5},
         {"moments": OTHER, "j": INDEX, "k": INDEX, "kappa": NONNEGATIVE,
          "nu2": NONNEGATIVE}),
    # --- log_length -------------------------------------------------------------------------
    Spec(log_length.log_step, lambda: {"n": 4, "kappa": 1.0}, {"n": COUNT, "kappa": POSITIVE}),
    Spec(log_length.log_length_moments, lambda: {"widths": [3, 4], "kappa": 1.0},
         {"widths": INTS, "kappa": POSITIVE}),
    Spec(log_length.alive_probability, lambda: {"widths": [3, 4]}, {"widths": INTS}),
    # --- moments ----------------------------------------------------------------------------
    Spec(moments.cross_moment,
         lambda: {"moments": _moments(), "j": 0, "k": 2, "kappa": 1.0, "nu2": 0.5},
         {"moments": OTHER, "j": INDEX, "k": INDEX, "kappa": NONNEGATIVE,
          "nu2": NONNEGATIVE}),
    Spec(moments.empirical_variance, lambda: {"m": _x(3, 4).abs()}, {"m": ARRAY}),
    Spec(moments.expect_independent, lambda: {"expr": Z_**2 + 3, "moments": {Z_: _gauss}},
         {"expr": EXPR, "moments": MOMENT_FUNCTIONS}),
    Spec(moments.expected_empirical_variance, _moment_call, dict(_MOMENT_ARGS)),
    Spec(moments.moment_recursion, _moment_call, dict(_MOMENT_ARGS)),
    Spec(moments.gaussian_bias_length_chain,
         lambda: {"widths": [3, 4], "n_nets": 3, "gen": generator(0), "nu2": 0.1,
                  "kappa": 1.0, "m0": 1.0, "keep": [0, 2]},
         {"widths": INTS, "n_nets": COUNT, "gen": GENERATOR, "nu2": NONNEGATIVE,
          "kappa": POSITIVE, "m0": POSITIVE, "keep": KEEP}),
    Spec(moments.moments_of, lambda: {"net": mlp([4, 4]), "n0": 3, "m0": 1.0, "q0": 1.0},
         {"net": OTHER, "n0": COUNT, "m0": NONNEGATIVE, "q0": NONNEGATIVE}),
    Spec(moments.named_initializers, lambda: {}, {}),
    Spec(moments.relu_mlp_lengths,
         lambda: {"x": _x(2, 3), "widths": [4, 4], "init": he(), "n_nets": 2,
                  "gen": generator(0), "bias": gaussian_bias(0.1)},
         {"x": ARRAY, "widths": INTS, "init": OTHER, "n_nets": COUNT, "gen": GENERATOR,
          "bias": OPTIONAL_BIAS}),
    Spec(moments.relu_residual_chain,
         lambda: {"x": _x(4).abs() + 0.1, "etas": [0.5, 0.5], "n_nets": 2,
                  "gen": generator(0)},
         {"x": ARRAY, "etas": SEQUENCE, "n_nets": COUNT, "gen": GENERATOR}),
    # --- norm_product -----------------------------------------------------------------------
    Spec(norm_product.binomial_moments, lambda: {"n": 5}, {"n": NONNEG_EXPR}),
    Spec(norm_product.chi2_moments, lambda: {"k": 3}, {"k": NONNEG_EXPR}),
    Spec(norm_product.layer_ratio_moments, lambda: {"n": 5, "variance": sp.Rational(2, 5)},
         {"n": POS_EXPR, "variance": OPTIONAL_NONNEG_EXPR}),
    Spec(norm_product.gradient_ratio,
         lambda: {"var": [sp.Rational(2, 5)] * 3, "fans": [5] * 4, "layer": 2,
                  "exact": True},
         {"var": SEQUENCE, "fans": INTS, "layer": COUNT, "exact": FLAG}),
    Spec(norm_product.variances,
         lambda: {"scheme": "Glorot", "fan_0": 5, "width": 4, "depth": 2},
         {"scheme": CHOICE, "fan_0": FAN, "width": FAN, "depth": COUNT}),
    Spec(norm_product.normal_failure, lambda: {"width": 100.0, "depth": 3, "eps": 0.2},
         {"width": POSITIVE, "depth": COUNT, "eps": UNIT}),
    Spec(norm_product.width_at_failure,
         lambda: {"depth": 3, "eps": 0.2, "target": 0.05, "inputs": 2},
         {"depth": COUNT, "eps": UNIT, "target": UNIT, "inputs": COUNT}),
    # --- one_layer --------------------------------------------------------------------------
    Spec(one_layer.relu_layer_distortion_quantile, lambda: {"m": 8, "q": 0.5},
         {"m": COUNT, "q": UNIT}),
    Spec(one_layer.relu_layer_mean_distortion, lambda: {"m": 8}, {"m": COUNT}),
    Spec(one_layer.relu_layer_sq_ratio_cdf, lambda: {"m": 8, "t": 1.0},
         {"m": COUNT, "t": REAL}),
    Spec(one_layer.relu_layer_tail, lambda: {"m": 8, "eps": 0.3},
         {"m": COUNT, "eps": NONNEGATIVE}),
    Spec(one_layer.gaussian_layer_tail, lambda: {"m": 8, "eps": 0.3},
         {"m": COUNT, "eps": NONNEGATIVE}),
    # --- ratio_profiles ---------------------------------------------------------------------
    Spec(ratio_profiles.ratio_profiles,
         lambda: {"scheme": "He", "n0": 3, "widths": [4, 5], "depth": 2, "draws": 3,
                  "gen": generator(0)},
         {"scheme": CHOICE, "n0": COUNT, "widths": INTS, "depth": COUNT, "draws": COUNT,
          "gen": GENERATOR}),
    # --- relu_residual ----------------------------------------------------------------------
    Spec(relu_residual.mean_factor, lambda: {"eta": 0.5, "s": 1.0, "n": 5},
         {"eta": NONNEGATIVE, "s": REAL, "n": COUNT}),
    Spec(relu_residual.second_factor, lambda: {"eta": 0.5, "s": 1.0, "n": 5},
         {"eta": NONNEGATIVE, "s": REAL, "n": COUNT}),
    Spec(relu_residual.bands, lambda: {"etas": [0.5, 1.0], "n": 5, "m0": 1.0},
         {"etas": SEQUENCE, "n": COUNT, "m0": POSITIVE}),
    Spec(relu_residual.empirical_variance_bounds, lambda: {"etas": [0.5, 1.0], "n": 5,
                                                          "m0": 1.0},
         {"etas": SEQUENCE, "n": COUNT, "m0": POSITIVE}),
    Spec(relu_residual.relative_variance_bound, lambda: {"etas": [0.5, 1.0], "n": 5},
         {"etas": SEQUENCE, "n": COUNT}),
    Spec(relu_residual.chain_moment,
         lambda: {"log_len": 0.1 * _x(3, 4), "unit_sum": _x(3, 4, seed=1).abs() + 1,
                  "etas": [1.0, 0.5], "L": 2, "n": 5, "power": 1},
         {"log_len": ARRAY, "unit_sum": ARRAY, "etas": SEQUENCE, "L": COUNT, "n": COUNT,
          "power": POWER}),
    # --- residual_limit ---------------------------------------------------------------------
    Spec(residual_limit.infinite_width_ratio,
         lambda: {"blocks": 3, "cos_x1": 0.5, "gamma": 0.3},
         {"blocks": COUNT, "cos_x1": UNIT, "gamma": OPTIONAL_POSITIVE}),
    Spec(residual_limit.limit_ratio, lambda: {"cos_x1": 0.5}, {"cos_x1": UNIT}),
    Spec(residual_limit.eq228_bounds, lambda: {"blocks": 3}, {"blocks": COUNT}),
    Spec(residual_limit.eq228_margin, lambda: {"blocks": [1, 2], "cos_x1": [0.0, 0.5]},
         {"blocks": INTS, "cos_x1": SEQUENCE}),
    # --- subspace ---------------------------------------------------------------------------
    Spec(subspace.grid_size, lambda: {"eps": 0.3, "d": 4, "printed": False},
         {"eps": UNIT, "d": COUNT, "printed": FLAG}),
    Spec(subspace.width, lambda: {"eps": 0.3, "d": 2, "delta": 0.05, "printed": False},
         {"eps": UNIT, "d": COUNT, "delta": UNIT, "printed": FLAG}),
    Spec(subspace.width_ceil, lambda: {"eps": 0.3, "d": 2, "delta": 0.05, "printed": True},
         {"eps": UNIT, "d": COUNT, "delta": UNIT, "printed": FLAG}),
    Spec(subspace.eps_at, lambda: {"m": 1e5, "d": 1, "delta": 0.05},
         {"m": POSITIVE, "d": COUNT, "delta": UNIT},
         allow={("m", "extreme"): "a width 2^-k (k >= 800) is below the bound of eq. (16) for "
                                  "every eps < 1: eps_at documents inf for it (no eps "
                                  "suffices); 2^+k raises, naming m"}),
    Spec(subspace.relu_line_tail, lambda: {"m": 8, "eps": 0.2},
         {"m": COUNT, "eps": NONNEGATIVE}),
    Spec(subspace.masked_line_tail, lambda: {"m": 8, "eps": 0.2},
         {"m": COUNT, "eps": NONNEGATIVE}),
    # --- unit_moments -----------------------------------------------------------------------
    Spec(unit_moments.symmetric_law, lambda: {"variance": sp.Rational(1, 2), "kurtosis": 3},
         {"variance": NONNEG_EXPR, "kurtosis": KURTOSIS}),
    Spec(unit_moments.symmetric_unit,
         lambda: {"n": 2, "weight_variance": sp.Rational(1, 2), "kurtosis": 3, "nu2": 0,
                  "nu4": 0},
         {"n": COUNT, "weight_variance": NONNEG_EXPR, "kurtosis": KURTOSIS,
          "nu2": NONNEG_EXPR, "nu4": NONNEG_EXPR}),
    Spec(_nonnegative_coefficients, lambda: {"expr": T_ * U_ + (1 + T_) / (2 + U_),
                                             "syms": (T_, U_)},
         {"expr": EXPR, "syms": SYMS}, strict=True),
]
