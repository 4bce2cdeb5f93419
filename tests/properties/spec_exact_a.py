"""Property specs of ``eit.exact`` (part a: arccos, bn_budget, chains, chernoff, conv_lengths,
engine, haar_expectation, isometry_symbolic; see ``harness.py``).

SymPy arguments get their own kinds here: an expression whose bad values are ``sympy.nan``,
``sympy.zoo`` and ``sympy.oo``, a string (which ``sympify`` would silently parse into a
symbol) and ``None``; sequences of expressions; matrices.
"""

from __future__ import annotations

import math

import sympy as sp
import torch
from hypothesis import strategies as st

from eit.core.seeds import generator
from eit.exact import (
    arccos,
    bn_budget,
    chains,
    chernoff,
    conv_lengths,
    engine,
    haar_expectation,
    isometry_symbolic,
)
from eit.sample.laws import he
from eit.sample.layers import mlp
from properties.harness import (
    ARRAY,
    CHOICE,
    COUNT,
    FREE,
    GENERATOR,
    INTS,
    OTHER,
    POSITIVE,
    SEQUENCE,
    UNIT,
    Kind,
    Spec,
)

F64 = torch.float64
SYMPY_NONFINITE = (sp.nan, sp.zoo, sp.oo, -sp.oo)


# --- custom kinds ----------------------------------------------------------------------------

def _expr(data, valid):
    """A SymPy expression (or a number): non-finite SymPy values, strings, None."""
    bad = data.draw(st.sampled_from(SYMPY_NONFINITE), label="sympy non-finite")
    return {"nonfinite": [bad, sp.sympify(valid) + bad, math.nan],
            "type": ["abc", None, {"a": 1}, [valid]]}


def _exprs(data, valid):
    """A non-empty sequence of SymPy expressions."""
    valid = list(valid)
    i = data.draw(st.integers(0, len(valid) - 1), label="position")
    bad = data.draw(st.sampled_from(SYMPY_NONFINITE), label="sympy non-finite")
    nan = list(valid)
    nan[i] = bad
    typed = list(valid)
    typed[i] = "abc"
    none = list(valid)
    none[i] = None
    return {"nonfinite": [nan], "type": [None, "abc", 3, typed, none], "degenerate": [[]]}


def _matrix(data, valid):
    """A SymPy matrix: other types, a non-finite entry, a zero matrix, an empty one."""
    bad = data.draw(st.sampled_from(SYMPY_NONFINITE), label="sympy non-finite")
    nan = sp.Matrix(valid)
    nan[0, 0] = bad
    return {"nonfinite": [nan], "type": [None, "abc", 3, valid.tolist()],
            "degenerate": [sp.zeros(*valid.shape), sp.zeros(0, 0)]}


def _optional_choice(data, valid):
    """One of a fixed set of strings, or None (a legitimate value: not a wrong type)."""
    return {"type": [3, 2.5], "sentinel": ["bogus"]}


def _boolean(data, valid):
    return {"type": [None, "abc", 1, 1.5]}


def _identifier(data, valid):
    return {"type": [None, 3], "sentinel": ["1x", "", "a b"]}


def _backward(data, valid):
    """``backward`` of a trace: a name, a loss gradient callable, a tensor or None."""
    return {"type": [3, 2.5, {"a": 1}], "sentinel": ["bogus"]}


def _observe(data, valid):
    """A mapping of names to observers (callables)."""
    return {"type": ["abc", 3, {"m": 3}]}


def _record(data, valid):
    """A collection of optional statistic names."""
    return {"type": [None, 3, [3]], "sentinel": [["bogus"]]}


def _inits(data, valid):
    """``{name: (Initializer, kappa)}``: a bad kappa, a bad initializer, no entries."""
    (name, (init, kappa)), = valid.items()
    return {"nonfinite": [{name: (init, data.draw(st.sampled_from([math.nan, math.inf])))}],
            "type": [None, "abc", {name: "abc"}, {name: (None, kappa)}, {name: (init, "1")}],
            "sentinel": [{name: (init, -1.0)}, {name: (init, 0.0)}],
            "degenerate": [{}]}


EXPR = Kind("sympy expression", _expr)
EXPRS = Kind("sympy expressions", _exprs)
MATRIX = Kind("sympy matrix", _matrix)
OPTIONAL_CHOICE = Kind("optional choice", _optional_choice)
BOOL = Kind("bool", _boolean)
IDENTIFIER = Kind("identifier", _identifier)
BACKWARD = Kind("backward", _backward)
OBSERVE = Kind("observe", _observe)
RECORD = Kind("record", _record)
INITS = Kind("inits", _inits)


# --- valid calls -----------------------------------------------------------------------------

def _sq_window():
    """``(sq, window)`` of three networks of two layers, channels [1, 2, 2] (float64)."""
    sq = torch.tensor([[4.0, 4.0, 4.0], [3.0, 5.0, 2.0], [2.0, 7.0, 1.0]], dtype=F64)
    win = torch.tensor([[2.0, 2.0, 2.0], [1.5, 2.5, 1.0], [1.0, 3.0, 0.5]], dtype=F64)
    return sq, win


def _image():
    return (torch.arange(1.0, 26.0, dtype=F64) / 25).reshape(1, 5, 5)


def _haar():
    w = haar_expectation.haar_matrix_symbols(2)
    return {"expr": w[0, 0] ** 2 + w[0, 1], "w": w}


def _symbols():
    a, b = sp.symbols("a b", positive=True)
    return [a, b, sp.Rational(1, 2)]


def _trace():
    x = torch.tensor([[1.0, 0.5, -0.25], [0.2, -1.0, 0.7]], dtype=F64)
    return {"net": mlp([8, 8]), "x": x, "n_nets": 3, "gen": generator(0),
            "backward": "random", "method": "conditional",
            "observe": {"top": lambda h, log_r: log_r}, "record": ("log_grad_w_batch",)}


SPECS = [
    # arccos
    Spec(arccos.relu_kernel, lambda: {"theta": 1.0}, {"theta": POSITIVE}),
    Spec(arccos.distance_ratio, lambda: {"theta": 1.0, "depth": 3},
         {"theta": POSITIVE, "depth": COUNT}),
    # bn_budget
    Spec(bn_budget.threshold, lambda: {"d": 4}, {"d": COUNT}),
    Spec(bn_budget.lemma_c2, lambda: {"d": 4, "proven": True}, {"d": COUNT, "proven": BOOL}),
    Spec(bn_budget.near_isometry_decrease, lambda: {"d": 4}, {"d": COUNT}),
    Spec(bn_budget.lemma_d5, lambda: {"d": 4, "phi0": 0.5}, {"d": COUNT, "phi0": POSITIVE}),
    Spec(bn_budget.lemma_d6, lambda: {"d": 4, "phi0": 0.01, "depth": 10},
         {"d": COUNT, "phi0": POSITIVE, "depth": COUNT}),
    Spec(bn_budget.lemma_d3, lambda: {"d": 4, "phi0": 0.5, "depth": 10},
         {"d": COUNT, "phi0": POSITIVE, "depth": COUNT}),
    Spec(bn_budget.theorem1_k, lambda: {"d": 4, "phi0": 0.5}, {"d": COUNT, "phi0": POSITIVE}),
    Spec(bn_budget.theorem1_bound,
         lambda: {"phi0": 0.5, "k": 2.0, "layers": torch.tensor([0.0, 1.0, 4.0], dtype=F64)},
         {"phi0": POSITIVE, "k": POSITIVE, "layers": ARRAY}),
    # chains
    Spec(chains.gaussian_relu_mlp, lambda: {"widths": [4, 5], "variances": [0.5, 0.4]},
         {"widths": INTS, "variances": SEQUENCE}, finite_result=False),
    Spec(chains.gram_chain,
         lambda: {"x": torch.tensor([[1.0, 0.5, 0.0], [0.0, 1.0, -1.0]], dtype=F64),
                  "widths": [6, 6], "variances": [0.5, 1 / 3], "n_nets": 3,
                  "gen": generator(0)},
         {"x": ARRAY, "widths": INTS, "variances": SEQUENCE, "n_nets": COUNT,
          "gen": GENERATOR},
         allow={("x", "degenerate"): "a zero input has log-norm -inf at every layer (the "
                "exact answer: the ReLU net maps 0 to 0)"}),
    Spec(chains.norm_chain,
         lambda: {"n0": 3, "widths": [6, 6], "variances": [2 / 3, 1 / 3], "n_nets": 3,
                  "gen": generator(0), "delta": "random"},
         {"n0": COUNT, "widths": INTS, "variances": SEQUENCE, "n_nets": COUNT,
          "gen": GENERATOR, "delta": OPTIONAL_CHOICE}),
    # chernoff
    Spec(chernoff.exponent, lambda: {"eps": 0.3}, {"eps": POSITIVE}),
    Spec(chernoff.failure_bound, lambda: {"m": 100, "eps": 0.3, "events": 2.0},
         {"m": POSITIVE, "eps": POSITIVE, "events": POSITIVE}),
    Spec(chernoff.eps_at, lambda: {"m": 500, "delta": 0.05, "events": 2.0},
         {"m": POSITIVE, "delta": UNIT, "events": POSITIVE}),
    Spec(chernoff.width_for, lambda: {"eps": 0.15, "delta": 0.05, "events": 8.0},
         {"eps": POSITIVE, "delta": UNIT, "events": POSITIVE}),
    Spec(chernoff.optimal_exponents, lambda: {"eps": 0.3}, {"eps": POSITIVE}),
    Spec(chernoff.optimal_bound, lambda: {"m": 100, "eps": 0.3},
         {"m": POSITIVE, "eps": POSITIVE}),
    Spec(chernoff.exact_eps_at, lambda: {"m": 50, "delta": 0.05},
         {"m": COUNT, "delta": UNIT}),
    # conv_lengths
    Spec(conv_lengths.normalized_mean,
         lambda: {"image": _image(), "channels": [2, 3], "kappa": 1.0, "kernel": 3,
                  "padding": "zeros"},
         {"image": ARRAY, "channels": INTS, "kappa": POSITIVE, "kernel": COUNT,
          "padding": CHOICE}),
    Spec(conv_lengths.one_layer_factors,
         lambda: dict(zip(("sq", "window"), _sq_window()), channels=[1, 2, 2], kappa=1.0),
         {"sq": ARRAY, "window": ARRAY, "channels": INTS, "kappa": POSITIVE}),
    Spec(conv_lengths.length_ratio,
         lambda: {"sq": _sq_window()[0], "channels": [1, 2, 2]},
         {"sq": ARRAY, "channels": INTS}),
    Spec(conv_lengths.one_layer_second_moment,
         lambda: dict(zip(("sq", "window"), _sq_window()), channels=[1, 2, 2]),
         {"sq": ARRAY, "window": ARRAY, "channels": INTS}),
    Spec(conv_lengths.depth_sweep,
         lambda: {"image": _image()[:, :3, :3], "inits": {"He": (he(), 1.0)},
                  "depths": [1, 2], "channels": lambda d: [4] * d, "n_nets": 3,
                  "gen": generator(0)},
         {"image": ARRAY, "inits": INITS, "depths": INTS, "channels": FREE,
          "n_nets": COUNT, "gen": GENERATOR}),
    # engine
    Spec(engine.chi2, lambda: {"dof": torch.tensor([1.0, 3.0, 10.0], dtype=F64),
                               "gen": generator(0)},
         {"dof": ARRAY, "gen": GENERATOR}),
    Spec(engine.log_chi2, lambda: {"dof": torch.tensor([1.0, 3.0, 10.0], dtype=F64),
                                   "gen": generator(0)},
         {"dof": ARRAY, "gen": GENERATOR},
         allow={("dof", "degenerate"): "zero degrees of freedom: chi^2_0 = 0 exactly, whose "
                "log is -inf (documented)"}),
    Spec(engine.trace, _trace,
         {"net": OTHER, "x": ARRAY, "n_nets": COUNT, "gen": GENERATOR, "backward": BACKWARD,
          "method": CHOICE, "observe": OBSERVE, "record": RECORD},
         allow={("x", "degenerate"): "a zero input has log-norm -inf at every layer (the "
                "exact answer: the ReLU net maps 0 to 0)"}),
    # haar_expectation
    Spec(haar_expectation.haar_matrix_symbols, lambda: {"d": 2, "name": "w"},
         {"d": COUNT, "name": IDENTIFIER}, finite_result=False),
    Spec(haar_expectation.haar_expectation, _haar, {"expr": EXPR, "w": MATRIX},
         finite_result=False),
    # isometry_symbolic
    Spec(isometry_symbolic.arithmetic_mean, lambda: {"xs": _symbols()}, {"xs": EXPRS},
         finite_result=False),
    Spec(isometry_symbolic.geometric_mean, lambda: {"xs": _symbols()}, {"xs": EXPRS},
         finite_result=False),
    Spec(isometry_symbolic.isometry_gap_of, lambda: {"eigenvalues": _symbols()},
         {"eigenvalues": EXPRS}, finite_result=False),
    Spec(isometry_symbolic.bn_matrix, lambda: {"m": sp.Matrix([[3, 4], [sp.Symbol("a"), 1]])},
         {"m": MATRIX}, finite_result=False),
]
