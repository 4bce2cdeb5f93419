"""Property specs of ``eit.exact.weingarten`` and ``eit.models.linear_resnet`` (see
``harness.py``).

The Weingarten functions take pair partitions, index labels and a dimension that is an int
or a SymPy expression; the symbolic functions of ``linear_resnet`` take SymPy matrices and
numbers. Their results are exact (ints, tuples, SymPy objects) and have no floating-point
leaves, so the harness can check only that bad input is refused: the custom kinds below put
every value that is not of the parameter's kind (a non-partition, an odd-length pair,
negative points, a string that must never be sympified, ``sympy.nan``) under ``type`` or
``nonfinite``, where a returned result fails.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
import torch
from hypothesis import strategies as st

from eit.core.device import device
from eit.core.seeds import generator
from eit.exact import weingarten as wg
from eit.models import linear_resnet as lr
from properties.harness import (
    ARRAY,
    CHOICE,
    COUNT,
    GENERATOR,
    INTS,
    NONNEGATIVE,
    POSITIVE,
    UNIT,
    Kind,
    Spec,
)

F64 = torch.float64
HALF = sp.Rational(1, 2)
SYMBOLIC_NONFINITE = (sp.nan, sp.zoo, sp.oo, -sp.oo)


# --- custom kinds -----------------------------------------------------------------------------

def _pairing(data, valid):
    """A pair partition of {0, ..., 2k-1}: anything else is not one (an error is required)."""
    pairs = [list(p) for p in valid]
    i = data.draw(st.integers(0, len(pairs) - 1), label="pair")
    nan = [list(p) for p in pairs]
    nan[i][1] = data.draw(st.sampled_from([math.nan, math.inf]), label="non-finite")
    negative = [tuple(p) for p in pairs]
    negative[i] = (-1, negative[i][1])
    return {"nonfinite": [tuple(map(tuple, nan))],
            "type": ["abc", None, 3, {"a": 1},
                     tuple((str(a), b) for a, b in pairs),              # strings as points
                     tuple((float(a), float(b)) for a, b in pairs),     # floats as points
                     ((0, 1, 2),), ((0, 1), (2,)),                      # odd-length pairs
                     tuple(negative),                                   # a negative point
                     tuple((a, a) for a, _ in pairs),                   # not a partition
                     ()]}                                                # empty


def _dimension(data, valid):
    """The dimension d of O(d): a positive int or a SymPy expression."""
    k = data.draw(st.integers(800, 1000), label="exponent")
    return {"nonfinite": [math.nan, data.draw(st.sampled_from(SYMBOLIC_NONFINITE)),
                          sp.zoo * sp.Symbol("d")],
            "type": ["3", None, 2.5, True, 1 + 2j, {"a": 1}, sp.I, sp.Matrix([[3]])],
            "sentinel": [-1, 0, sp.Integer(-1), sp.Rational(5, 2)],
            "extreme": [2**k]}


def _monomials(data, valid):
    """A non-empty list of (indices_i, indices_j): equal-length int sequences in [0, d)."""
    nan = [([0, data.draw(st.sampled_from([math.nan, math.inf]))], [0, 0])]
    return {"nonfinite": [nan],
            "type": [None, "abc", 3, [([0, 0],)], [(["0", "0"], [0, 0])],
                     [([0.5, 0], [0, 0])], [((True, 0), (0, 0))]],
            "sentinel": [[([-1, 0], [0, 0])], [([0, 99], [0, 0])]],
            "degenerate": [[], [([], [])], [([0, 0], [0])]]}


def _sym_matrix(data, valid):
    """A SymPy matrix of finite entries (strings are never sympified)."""
    r = data.draw(st.integers(0, valid.rows - 1), label="row")
    c = data.draw(st.integers(0, valid.cols - 1), label="column")
    bad = valid.copy()
    bad[r, c] = data.draw(st.sampled_from(SYMBOLIC_NONFINITE), label="non-finite")
    return {"nonfinite": [bad],
            "type": [None, "abc", 3, sp.Symbol("x"), valid.tolist()],
            "shape": [sp.zeros(valid.rows + 1, valid.cols + 1), sp.ones(1, valid.cols + 1)]}


def _sym_square(data, valid):
    """A square SymPy matrix matching the weights: a wrong shape is refused."""
    out = _sym_matrix(data, valid)
    out["type"] += out.pop("shape")
    return out


def _sym_matrices(data, valid):
    """A non-empty list of square SymPy matrices of one size."""
    i = data.draw(st.integers(0, len(valid) - 1), label="position")
    bad = list(valid)
    bad[i] = _sym_matrix(data, valid[i])["nonfinite"][0]
    n = valid[0].rows
    return {"nonfinite": [bad],
            "type": [None, "abc", 3, ["a"], [sp.Symbol("x")], valid[0],
                     [sp.ones(n, n + 1)], [sp.eye(n), sp.eye(n + 1)], []]}


def _sym_real(data, valid):
    """A real number: an int, a finite float or a real SymPy expression."""
    return {"nonfinite": [data.draw(st.sampled_from(SYMBOLIC_NONFINITE + (math.nan, math.inf)),
                                    label="non-finite")],
            "type": ["1.0", None, 1 + 2j, {"a": 1}, sp.I, sp.Matrix([[1]]), [1]]}


def _sym_nonnegative(data, valid):
    out = _sym_real(data, valid)
    out["type"] += [-1, sp.Rational(-1, 3)]       # a negative variance is not a variance
    return out


def _sym_unit(data, valid):
    out = _sym_real(data, valid)
    out["type"] += [-1, sp.Rational(3, 2), 1]     # tau outside [0, 1)
    return out


def _sym_reals(data, valid):
    """A non-empty sequence of real numbers (exact or float)."""
    i = data.draw(st.integers(0, len(valid) - 1), label="position")
    bad = list(valid)
    bad[i] = data.draw(st.sampled_from(SYMBOLIC_NONFINITE + (math.nan,)), label="non-finite")
    return {"nonfinite": [bad],
            "type": ["abc", None, 3, ["0"] * len(valid), [1 + 2j] * len(valid), [sp.I], []]}


def _flag(data, valid):
    """A bool flag: no string, None or number stands in for it."""
    return {"type": ["yes", None, 2, 1.5]}


PAIRING = Kind("pairing", _pairing)
DIMENSION = Kind("dimension", _dimension)
MONOMIALS = Kind("monomials", _monomials)
SYM_MATRIX = Kind("sym_matrix", _sym_matrix)
SYM_SQUARE = Kind("sym_square", _sym_square)
SYM_MATRICES = Kind("sym_matrices", _sym_matrices)
SYM_REAL = Kind("sym_real", _sym_real)
SYM_NONNEGATIVE = Kind("sym_nonnegative", _sym_nonnegative)
SYM_UNIT = Kind("sym_unit", _sym_unit)
SYM_REALS = Kind("sym_reals", _sym_reals)
FLAG = Kind("flag", _flag)


# --- valid calls ------------------------------------------------------------------------------

P0, P1 = ((0, 1), (2, 3)), ((0, 2), (1, 3))


def _instance(d=2, ell=2, seed=0):
    """A tiny float64 instance (A, R, Sigma) of Section 2 with a positive definite Sigma."""
    g = torch.Generator().manual_seed(seed)
    A = 0.2 * torch.randn(ell, d, d, generator=g, dtype=F64)
    R = torch.randn(d, d, generator=g, dtype=F64)
    L = torch.randn(d, d, generator=g, dtype=F64)
    return A, R, L @ L.T + 0.5 * torch.eye(d, dtype=F64)


def _ars():
    A, R, S = _instance()
    return {"A": A, "R": R, "Sigma": S}


ARS = {"A": ARRAY, "R": ARRAY, "Sigma": ARRAY}


def _symbolic():
    A, R, S = lr.symbolic_weights(2, 2)
    return {"A": A, "R": R, "Sigma": S}


SYM_ARS = {"A": SYM_MATRICES, "R": SYM_SQUARE, "Sigma": SYM_SQUARE}


def _rotation(theta=1.0):
    c, s = math.cos(theta), math.sin(theta)
    return np.array([[c, -s], [s, c]])


WEINGARTEN = [
    Spec(wg.pair_partitions, lambda: {"k": 2}, {"k": COUNT}),
    Spec(wg.loop_lengths, lambda: {"p": P0, "q": P1}, {"p": PAIRING, "q": PAIRING}),
    Spec(wg.loops, lambda: {"p": P0, "q": P1}, {"p": PAIRING, "q": PAIRING}),
    Spec(wg.coset_type, lambda: {"p": P0, "q": P1}, {"p": PAIRING, "q": PAIRING}),
    Spec(wg.gram_matrix, lambda: {"k": 2, "d": 3}, {"k": COUNT, "d": DIMENSION}),
    Spec(wg.weingarten_coset, lambda: {"mu": (1, 1), "d": 3}, {"mu": INTS, "d": DIMENSION}),
    Spec(wg.weingarten_o, lambda: {"sigma": P0, "tau": P1, "d": 3},
         {"sigma": PAIRING, "tau": PAIRING, "d": DIMENSION}),
    Spec(wg.weingarten_matrix, lambda: {"k": 2, "d": 3}, {"k": COUNT, "d": DIMENSION}),
    Spec(wg.delta, lambda: {"p": P0, "indices": [5, 5, 7, 7]},
         {"p": PAIRING, "indices": INTS}),
    Spec(wg.haar_moment, lambda: {"indices_i": (0, 0, 1, 1), "indices_j": (0, 0, 1, 1), "d": 3},
         {"indices_i": INTS, "indices_j": INTS, "d": DIMENSION}),
    Spec(wg.monomial_samples,
         lambda: {"w": torch.randn(3, 2, 2, generator=torch.Generator().manual_seed(0),
                                   dtype=F64),
                  "indices_i": (0, 1), "indices_j": (1, 1)},
         {"w": ARRAY, "indices_i": INTS, "indices_j": INTS}),
    Spec(wg.haar_monomial_samples,
         lambda: {"monomials": [((0, 0), (0, 0)), ((0, 1), (0, 1))], "d": 2, "n_samples": 5,
                  "gen": generator(0), "chunk": 3},
         {"monomials": MONOMIALS, "d": COUNT, "n_samples": COUNT, "gen": GENERATOR,
          "chunk": COUNT}),
    Spec(wg.coset_types, lambda: {"k": 3}, {"k": COUNT}),
    Spec(wg.contributing_pairs, lambda: {"indices_i": (0, 0, 1, 1), "indices_j": (0, 0, 0, 0)},
         {"indices_i": INTS, "indices_j": INTS}),
]

LINEAR_RESNET = [
    Spec(lr.end_to_end, lambda: {"A": _instance()[0]}, {"A": ARRAY}),
    Spec(lr.error_matrix, lambda: {"A": _instance()[0], "R": _instance()[1]},
         {"A": ARRAY, "R": ARRAY}),
    Spec(lr.population_risk, _ars, ARS),
    Spec(lr.sample_loss,
         lambda: {"A": _instance()[0], "R": _instance()[1],
                  "x": torch.randn(4, 2, generator=torch.Generator().manual_seed(1),
                                   dtype=F64),
                  "xi": torch.randn(4, 2, generator=torch.Generator().manual_seed(2),
                                    dtype=F64)},
         {"A": ARRAY, "R": ARRAY, "x": ARRAY, "xi": ARRAY}),
    Spec(lr.gradient_printed, _ars, ARS),
    Spec(lr.gradient, _ars, ARS),
    Spec(lr.gradient_autograd, _ars, ARS),
    Spec(lr.gradient_fd, lambda: {**_ars(), "h": 1e-6}, {**ARS, "h": POSITIVE}),
    Spec(lr.spectral_norm, lambda: {"A": _instance()[0]}, {"A": ARRAY}),
    Spec(lr.project_ball, lambda: {"A": _instance()[0], "tau": 0.1},
         {"A": ARRAY, "tau": POSITIVE}),
    Spec(lr.pl_bound_printed, lambda: {"ell": 2, "tau": 0.5, "Sigma": _instance()[2]},
         {"ell": COUNT, "tau": UNIT, "Sigma": ARRAY}),
    Spec(lr.pl_bound_corrected, lambda: {"ell": 2, "tau": 0.5, "Sigma": _instance()[2]},
         {"ell": COUNT, "tau": UNIT, "Sigma": ARRAY}),
    Spec(lr.pl_ratio, lambda: {**_ars(), "tau": 0.5, "which": "corrected"},
         {**ARS, "tau": UNIT, "which": CHOICE}),
    Spec(lr.minimize_pl_ratio,
         lambda: {"A": _instance()[0], "R": _instance()[1], "L": _instance(seed=1)[1],
                  "tau": 0.5, "which": "printed", "steps": 2, "lr": 0.02,
                  "identity_sigma": False},
         {"A": ARRAY, "R": ARRAY, "L": ARRAY, "tau": UNIT, "which": CHOICE, "steps": COUNT,
          "lr": POSITIVE, "identity_sigma": FLAG}),
    Spec(lr.projected_gradient_descent,
         lambda: {"A0": _instance()[0], "R": _instance()[1], "Sigma": _instance()[2],
                  "tau": 0.5, "lr": 0.02, "steps": 3},
         {"A0": ARRAY, "R": ARRAY, "Sigma": ARRAY, "tau": POSITIVE, "lr": POSITIVE,
          "steps": COUNT}),
    Spec(lr.end_to_end_standard, lambda: {"W": _instance()[0]}, {"W": ARRAY}),
    Spec(lr.excess_risk_standard,
         lambda: {"W": _instance()[0], "R": _instance()[1], "Sigma": _instance()[2]},
         {"W": ARRAY, "R": ARRAY, "Sigma": ARRAY}),
    Spec(lr.excess_risk, _ars, ARS),
    Spec(lr.gradient_descent,
         lambda: {"A0": _instance()[0], "R": _instance()[1], "Sigma": _instance()[2],
                  "lr": 0.02, "steps": 3, "residual": True},
         {"A0": ARRAY, "R": ARRAY, "Sigma": ARRAY, "lr": POSITIVE, "steps": COUNT,
          "residual": FLAG}),
    Spec(lr.gamma, lambda: {"R": np.array([[2.0, 0.3], [-0.2, 0.5]])}, {"R": ARRAY}),
    Spec(lr.theorem21_bound, lambda: {"gam": 0.5, "ell": 3},
         {"gam": NONNEGATIVE, "ell": COUNT}),
    Spec(lr.orthogonal_root, lambda: {"Q": _rotation(), "q": 2}, {"Q": ARRAY, "q": COUNT}),
    Spec(lr.small_norm_optimum,
         lambda: {"R": _rotation() @ np.diag([2.0, 0.5]), "ell": 4, "method": "svd"},
         {"R": ARRAY, "ell": COUNT, "method": CHOICE}),
    Spec(lr.symbolic_weights, lambda: {"d": 2, "ell": 2}, {"d": COUNT, "ell": COUNT}),
    Spec(lr.symbolic_product, lambda: {"A": _symbolic()["A"]}, {"A": SYM_MATRICES}),
    Spec(lr.symbolic_risk, _symbolic, SYM_ARS),
    Spec(lr.symbolic_gradient_printed, lambda: {**_symbolic(), "i": 1},
         {**SYM_ARS, "i": COUNT}),
    Spec(lr.symbolic_gradient, lambda: {**_symbolic(), "i": 2}, {**SYM_ARS, "i": COUNT}),
    Spec(lr.random_instance,
         lambda: {"d": 2, "ell": 2, "scale": 0.3, "gen": generator(0), "batch": (2,)},
         {"d": COUNT, "ell": COUNT, "scale": POSITIVE, "gen": GENERATOR, "batch": INTS}),
    Spec(lr.quasi_instance, lambda: {"d": 2, "ell": 2, "scale": 0.3},
         {"d": COUNT, "ell": COUNT, "scale": POSITIVE}),
    Spec(lr.sampled_loss,       # data on the device where the generator draws
         lambda: {**{k: t.to(device()) for k, t in _ars().items()}, "n": 5, "gen": generator(1)},
         {**ARS, "n": COUNT, "gen": GENERATOR}),
    Spec(lr.relative_error,
         lambda: {"a": _instance()[0], "b": _instance(seed=1)[0]}, {"a": ARRAY, "b": ARRAY}),
    Spec(lr.group_gradients,
         lambda: {**_ars(), "groups": 2, "size": 4, "gen": generator(0)},
         {**ARS, "groups": COUNT, "size": COUNT, "gen": GENERATOR}),
    Spec(lr.printed_gradient_error, _ars, ARS),
    Spec(lr.monomials_left,
         lambda: {"M": sp.Matrix([[(sp.Symbol("a") + 1) ** 2 - 1, 0]])}, {"M": SYM_MATRIX}),
    Spec(lr.random_ball_instances,
         lambda: {"d": 2, "ell": 2, "n": 3, "gen": generator(0), "tau_max": 0.9},
         {"d": COUNT, "ell": COUNT, "n": COUNT, "gen": GENERATOR, "tau_max": UNIT}),
    Spec(lr.claim_c2_ratio,
         lambda: {"M": _instance()[1], "X": _instance(seed=1)[1], "N": _instance(seed=2)[1]},
         {"M": ARRAY, "X": ARRAY, "N": ARRAY}),
    Spec(lr.claim_c2_trials, lambda: {"d": 2, "n": 3, "gen": generator(0)},
         {"d": COUNT, "n": COUNT, "gen": GENERATOR}),
    Spec(lr.scalar_pl_sides,
         lambda: {"a_vals": [-HALF, -HALF], "r_val": 0, "s_val": 1, "tau_val": HALF},
         {"a_vals": SYM_REALS, "r_val": SYM_REAL, "s_val": SYM_NONNEGATIVE,
          "tau_val": SYM_UNIT}),
    Spec(lr.adversarial_minima,
         lambda: {"d": 2, "ell": 2, "tau": 0.3, "starts": 2, "steps": 2, "gen": generator(0)},
         {"d": COUNT, "ell": COUNT, "tau": UNIT, "starts": COUNT, "steps": COUNT,
          "gen": GENERATOR}, strict=True),
    Spec(lr.pl_ratio_search, lambda: {"dims": [1, 2], "depths": [2], "n": 3,
                                      "gen": generator(0)},
         {"dims": INTS, "depths": INTS, "n": COUNT, "gen": GENERATOR}),
]

SPECS = WEINGARTEN + LINEAR_RESNET
