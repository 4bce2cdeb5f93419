"""Property specs of ``eit.models`` (part b: weight-normalized networks, scaled residual
networks, shaped and standard-BN MLPs, near-identity factorizations, width profiles); see
``harness.py``."""

from __future__ import annotations

import functools
import math

import numpy as np
import sympy as sp
import torch
from hypothesis import strategies as st

from eit.core.device import randn
from eit.core.seeds import generator
from eit.models import near_identity_factors as nif
from eit.models import (
    relu_stacked,
    repeated_batch,
    residual_growth,
    scaled_residual,
    shaped_mlp,
    standard_bn,
    weightnorm,
    width_profiles,
    wn_init,
    wn_one_layer,
    wn_stacked,
)
from eit.sample.laws import he
from properties.harness import (
    ARRAY,
    CHOICE,
    COUNT,
    GENERATOR,
    INTS,
    NONNEGATIVE,
    OTHER,
    POSITIVE,
    REAL,
    SEQUENCE,
    UNIT,
    Kind,
    Spec,
    _array,
)

F64 = torch.float64


# --- kinds of this file -----------------------------------------------------------------------

def optional(kind: Kind) -> Kind:
    """``kind`` for a parameter where ``None`` is valid (the default rule): no ``None`` among
    its wrong types."""
    def mutate(data, valid):
        out = kind.mutate(data, valid)
        out["type"] = [t for t in out.get("type", []) if t is not None]
        return out
    return Kind(f"optional {kind.name}", mutate)


#: A flag: only ``True`` and ``False`` (an int or a string is not a bool).
BOOL = Kind("bool", lambda data, valid: {"type": ["abc", None, 1, 2.5]})
#: A floating-point ``torch.dtype``.
DTYPE = Kind("dtype", lambda data, valid: {"type": ["float64", None, 3],
                                           "sentinel": [torch.int64]})
#: A ``torch.device`` or None.
DEVICE = Kind("device", lambda data, valid: {"type": ["abc", 3, 2.5]})


def _big(data, valid, count: bool):
    """A count or an index of an exact formula, and the same count far outside the usual range
    (the formulas are exact in the dimension: a huge one must work or be refused by name)."""
    out = {"nonfinite": [math.nan], "type": ["3", None, 2.5, True],
           "sentinel": [-1, 0] if count else [-1]}
    k = data.draw(st.integers(40, 80), label="exponent")
    out["extreme"] = [int(valid) * 2**k]
    return out


#: A dimension n of an exact formula (a positive int), with huge n as the extreme.
BIG_COUNT = Kind("big count", functools.partial(_big, count=True))
#: A dimension q >= 0 of an exact formula, with huge q as the extreme.
BIG_INDEX = Kind("big index", functools.partial(_big, count=False))


def _tensor_list(data, valid):
    """A sequence of arrays of one shape (the hidden states h^0..h^B of stacked networks)."""
    stacked = torch.stack(list(valid))
    out = {"type": ["abc", None, [["a"]], [1.0, 2.0]]}
    for label, values in _array(data, stacked).items():
        if label in ("nonfinite", "extreme", "degenerate"):    # the last: a single state too
            out[label] = [list(t.unbind(0)) for t in values]
    out["shape"] = [[h[None] for h in valid], [h.reshape(-1) for h in valid],
                    [valid[0], valid[1][..., :-1]]]
    return out


#: A sequence of tensors of one shape.
TENSORS = Kind("tensors", _tensor_list)


def _labels(data, valid):
    """Class labels: an integer tensor with entries in [0, classes)."""
    low, high = valid.clone(), valid.clone()
    low[0], high[0] = -1, 10**6
    return {"type": ["abc", None, valid.double()], "sentinel": [low, high],
            "shape": [valid[None], valid[:1]]}


LABELS = Kind("labels", _labels)


def _objects(data, valid):
    """A non-empty sequence of objects of one kind (activations, networks)."""
    return {"type": ["abc", None, 3, [None]], "degenerate": [[]]}


#: A non-empty sequence of callables or of library objects.
OBJECTS = Kind("objects", _objects)


def numeric(fn):
    """``fn`` with a SymPy number result made visible to the harness (a complex array).

    The harness finds no numeric leaves in a SymPy expression, so a ``zoo`` or ``nan``
    would pass unseen; this evaluates a number result (symbolic results pass unchanged).
    Same name, module and signature as ``fn``.
    """
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        out = fn(*args, **kwargs)
        if isinstance(out, sp.Expr) and out.is_number:
            if out.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
                return np.asarray(math.nan)
            return np.asarray(complex(sp.N(out)))
        return out
    return wrapped


#: The reason a trace may hold -inf after a degenerate input.
ZERO_INPUT = ("a zero input (or a network whose ReLUs all close on a constant input) has hidden "
              "states and gradients of norm exactly 0: the trace holds their log-norm -inf, "
              "the engine's documented value for a zero vector (never NaN)")


# --- valid inputs -----------------------------------------------------------------------------

def _quarter_turn():
    return np.array([[0.0, -1.0], [1.0, 0.0]])


def _x(*shape, seed=0):
    return randn(*shape, gen=generator(seed))


def _shaped():
    return shaped_mlp.shaped_mlp(runs=2, width=3, depth=2, n_in=4, n_classes=3,
                                 gains=shaped_mlp.power_gains(2, 1.0), activation=torch.tanh,
                                 gen=generator(0))


def _wn_trace():
    return weightnorm.wn_relu_mlp(_x(2, 4), [8, 8], n_nets=2, gen=generator(0))


def _wn_nets():
    return [wn_init.wn_mlp_model("proposed", d_in=3, widths=[4], d_out=2, gen=generator(s))
            for s in range(2)]


SPECS = [
    # --- near_identity_factors ----------------------------------------------------------------
    Spec(nif.rotation_angle, lambda: {"Q": _quarter_turn()}, {"Q": ARRAY}),
    Spec(nif.split, lambda: {"gamma": 0.5, "ell": 6, "method": "svd", "theta": math.pi,
                             "k_identity": None},
         {"gamma": NONNEGATIVE, "ell": COUNT, "method": CHOICE, "theta": NONNEGATIVE,
          "k_identity": optional(BOOL)}),
    Spec(nif.guarantee, lambda: {"gamma": 0.5, "ell": 5, "method": "polar"},
         {"gamma": NONNEGATIVE, "ell": COUNT, "method": CHOICE}),
    Spec(nif.construct, lambda: {"U": _quarter_turn(), "k": np.array([0.5, 2.0]),
                                 "V": np.eye(2), "ell": 4, "method": "svd"},
         {"U": ARRAY, "k": ARRAY, "V": ARRAY, "ell": COUNT, "method": CHOICE}),
    Spec(nif.product, lambda: {"A": 0.1 * np.arange(8.0).reshape(2, 2, 2)}, {"A": ARRAY}),
    Spec(nif.max_norm, lambda: {"A": 0.1 * np.arange(8.0).reshape(2, 2, 2)}, {"A": ARRAY}),
    Spec(nif.random_factors, lambda: {"kappa": 4.0, "n": 2, "d": 3, "gen": generator(0)},
         {"kappa": POSITIVE, "n": COUNT, "d": COUNT, "gen": GENERATOR}),
    Spec(nif.schur_blocks, lambda: {"N": np.array([[1.0, 2.0], [-2.0, 1.0]])}, {"N": ARRAY}),
    Spec(nif.guarantee_ratios, lambda: {"gammas": [0.0, 0.5], "max_depth": 5, "method": "svd"},
         {"gammas": SEQUENCE, "max_depth": COUNT, "method": CHOICE}),
    Spec(nif.norms_by_depth, lambda: {"U": _quarter_turn(), "k": np.array([0.5, 2.0]),
                                      "V": np.eye(2), "depths": [3, 4],
                                      "gamma": math.log(2.0)},
         {"U": ARRAY, "k": ARRAY, "V": ARRAY, "depths": INTS, "gamma": NONNEGATIVE}),
    Spec(nif.psd_root_factors, lambda: {"U": _quarter_turn(), "z": np.array([4.0, 1.0]),
                                        "ell": 2},
         {"U": ARRAY, "z": ARRAY, "ell": COUNT}),
    Spec(nif.normal_families, lambda: {"n": 2, "d": 3, "gen": generator(0)},
         {"n": COUNT, "d": COUNT, "gen": GENERATOR}),

    # --- relu_stacked -------------------------------------------------------------------------
    Spec(relu_stacked.mlp, lambda: {"widths": [3, 2], "init": he(), "n_nets": 2,
                                    "gen": generator(0), "n_in": 4, "n_out": 2},
         {"widths": INTS, "init": OTHER, "n_nets": COUNT, "gen": GENERATOR, "n_in": COUNT,
          "n_out": COUNT}),
    Spec(relu_stacked.residual, lambda: {"etas": [0.5, 0.25], "init": he(), "width": 3,
                                         "n_nets": 2, "gen": generator(0), "n_in": 4,
                                         "n_out": 2},
         {"etas": SEQUENCE, "init": OTHER, "width": COUNT, "n_nets": COUNT, "gen": GENERATOR,
          "n_in": COUNT, "n_out": COUNT}),

    # --- repeated_batch -----------------------------------------------------------------------
    Spec(repeated_batch.compact_batch, lambda: {"x_distinct": _x(3, 2), "copies": [1, 4]},
         {"x_distinct": ARRAY, "copies": INTS}),
    Spec(repeated_batch.expand_batch, lambda: {"x_distinct": _x(3, 2), "copies": [2, 1]},
         {"x_distinct": ARRAY, "copies": INTS}),
    Spec(repeated_batch.first_layer_grad_lognorm_repeated,
         lambda: {"x_distinct": _x(3, 2), "copies": [2, 2], "depths": [1, 2], "n_nets": 2,
                  "gen": generator(0), "weights": "orthogonal"},
         {"x_distinct": ARRAY, "copies": INTS, "depths": INTS, "n_nets": COUNT,
          "gen": GENERATOR, "weights": CHOICE}),

    # --- residual_growth ----------------------------------------------------------------------
    Spec(residual_growth.block_growth_ratio,
         lambda: {"features": [_x(2, 3, 4, seed=s) for s in range(3)], "factors": [1.5, 2.0],
                  "offset": 0.25},
         {"features": TENSORS, "factors": SEQUENCE, "offset": REAL}),

    # --- scaled_residual ----------------------------------------------------------------------
    Spec(scaled_residual.scaled_resnet, lambda: {"width": 3, "blocks": 2, "weight_norm": True,
                                                 "block_depth": 2, "gamma": 0.5},
         {"width": COUNT, "blocks": COUNT, "weight_norm": BOOL, "block_depth": COUNT,
          "gamma": optional(POSITIVE)}),
    Spec(scaled_residual.output_sq_ratios,
         lambda: {"x": _x(2, 3), "blocks": 2, "weight_norm": False, "n_nets": 2,
                  "gen": generator(0), "explicit": False},
         {"x": ARRAY, "blocks": COUNT, "weight_norm": BOOL, "n_nets": COUNT, "gen": GENERATOR,
          "explicit": BOOL}),

    # --- shaped_mlp ---------------------------------------------------------------------------
    Spec(shaped_mlp.shaped_mlp,
         lambda: {"runs": 2, "width": 3, "depth": 2, "n_in": 4, "n_classes": 3,
                  "gains": [1.0, 0.5, 0.25], "activation": torch.tanh, "gen": generator(0),
                  "normalized": True, "dtype": F64},
         {"runs": COUNT, "width": COUNT, "depth": COUNT, "n_in": COUNT, "n_classes": COUNT,
          "gains": SEQUENCE, "activation": OTHER, "gen": GENERATOR, "normalized": BOOL,
          "dtype": DTYPE}),
    Spec(shaped_mlp.per_run, lambda: {"activations": [torch.tanh, torch.sin], "runs_each": 2},
         {"activations": OBJECTS, "runs_each": COUNT}),
    Spec(shaped_mlp.power_gains, lambda: {"depth": 3, "exponent": 1.0},
         {"depth": COUNT, "exponent": NONNEGATIVE}),
    Spec(shaped_mlp.weight_gaps, lambda: {"ws": _x(2, 3, 3)}, {"ws": ARRAY},
         allow={("ws", "degenerate"): "a constant matrix is singular: its isometry gap "
                "(2/d) log|det W| is +inf, the documented value for a singular matrix"}),
    Spec(shaped_mlp.gradient_norms,
         lambda: {"model": _shaped(), "x": _x(5, 4), "y": torch.arange(5) % 3},
         {"model": OTHER, "x": ARRAY, "y": LABELS}),
    Spec(shaped_mlp.random_displacement, lambda: {"moved": _x(2, 3, 3), "gen": generator(0)},
         {"moved": ARRAY, "gen": GENERATOR}),

    # --- standard_bn --------------------------------------------------------------------------
    Spec(standard_bn.bn_standard, lambda: {"x": _x(3, 4)}, {"x": ARRAY}),
    Spec(standard_bn.feature_gap, lambda: {"x": _x(2, 4)}, {"x": ARRAY},
         allow={("x", "degenerate"): "a batch whose rows are linearly dependent (a constant "
                "batch, one row repeated) has the documented gap +inf (det X X^T = 0)"}),
    Spec(standard_bn.standard_bn_net,
         lambda: {"d": 3, "depth": 2, "activation": torch.tanh, "gain": 1.0,
                  "weights": "orthogonal", "residual": True},
         {"d": COUNT, "depth": COUNT, "activation": OTHER, "gain": POSITIVE, "weights": CHOICE,
          "residual": BOOL}),
    Spec(standard_bn.representation_gaps,
         lambda: {"x0": _x(2, 4), "depths": [1, 2], "n_nets": 2, "gen": generator(1),
                  "activation": torch.tanh, "gain": 1.0, "weights": "gaussian",
                  "residual": False},
         {"x0": ARRAY, "depths": INTS, "n_nets": COUNT, "gen": GENERATOR, "activation": OTHER,
          "gain": POSITIVE, "weights": CHOICE, "residual": BOOL}),
    Spec(standard_bn.first_layer_grad_lognorms,
         lambda: {"x0": _x(2, 4), "depths": [1, 2], "n_nets": 2, "gen": generator(1),
                  "activation": torch.tanh, "gain": 1.0, "weights": "orthogonal",
                  "residual": True},
         {"x0": ARRAY, "depths": INTS, "n_nets": COUNT, "gen": GENERATOR, "activation": OTHER,
          "gain": POSITIVE, "weights": CHOICE, "residual": BOOL}),

    # --- weightnorm ---------------------------------------------------------------------------
    Spec(numeric(weightnorm.k_constant), lambda: {"n": 5}, {"n": BIG_COUNT}),
    Spec(numeric(weightnorm.k_printed),
         lambda: {"n": 5, "source": "appendix", "convention": "ambient"},
         {"n": BIG_COUNT, "source": CHOICE, "convention": CHOICE}),
    Spec(weightnorm.layer_sq_ratio,
         lambda: {"u": _x(3), "m": 4, "n_nets": 2, "gen": generator(0), "law": "gaussian",
                  "mask": "relu", "gain": 1.5, "chunk": 8},
         {"u": ARRAY, "m": COUNT, "n_nets": COUNT, "gen": GENERATOR, "law": CHOICE,
          "mask": CHOICE, "gain": optional(POSITIVE), "chunk": COUNT}),
    Spec(weightnorm.log_grad_ratio, lambda: {"stats": _wn_trace(), "which": "w"},
         {"stats": OTHER, "which": CHOICE}),
    Spec(weightnorm.prop3_sq_norm,
         lambda: {"u": _x(3), "m": 4, "n_nets": 2, "gen": generator(0), "law": "gaussian",
                  "row_norm": 1.5, "z": "gaussian"},
         {"u": ARRAY, "m": COUNT, "n_nets": COUNT, "gen": GENERATOR, "law": CHOICE,
          "row_norm": optional(POSITIVE), "z": CHOICE}),
    Spec(numeric(weightnorm.sphere_area), lambda: {"q": 3, "convention": "ambient"},
         {"q": BIG_COUNT, "convention": CHOICE}),
    Spec(numeric(weightnorm.wallis), lambda: {"q": 3}, {"q": BIG_INDEX}),
    Spec(weightnorm.wn_network,
         lambda: {"widths": [3, 2], "gain": 1.5, "law": "orthogonal", "row_norm": 2.0},
         {"widths": INTS, "gain": optional(POSITIVE), "law": CHOICE,
          "row_norm": optional(POSITIVE)}),
    Spec(weightnorm.wn_relu_mlp,
         lambda: {"x": _x(2, 3), "widths": [4, 3], "n_nets": 2, "gen": generator(0),
                  "gain": 1.5, "law": "gaussian", "row_norm": 2.0, "delta": "random"},
         {"x": ARRAY, "widths": INTS, "n_nets": COUNT, "gen": GENERATOR, "gain": POSITIVE,
          "law": CHOICE, "row_norm": optional(POSITIVE), "delta": CHOICE},
         allow={("x", "degenerate"): ZERO_INPUT}),
    Spec(weightnorm.prop3_expectation,
         lambda: {"n": 4, "m": 6, "z": "gaussian", "row_norm": 1.5},
         {"n": COUNT, "m": COUNT, "z": CHOICE, "row_norm": optional(POSITIVE)}),
    Spec(weightnorm.traditional_sq_ratios, lambda: {"in_dim": 5, "width": 3, "depth": 2},
         {"in_dim": COUNT, "width": COUNT, "depth": COUNT}),

    # --- width_profiles -----------------------------------------------------------------------
    Spec(width_profiles.figure_3_widths, lambda: {"kind": width_profiles.FIGURE_3_TYPES[0],
                                                  "depth": 4},
         {"kind": CHOICE, "depth": COUNT}),
    Spec(width_profiles.reciprocal_sum, lambda: {"widths": [30, 10]}, {"widths": INTS}),

    # --- wn_init ------------------------------------------------------------------------------
    Spec(wn_init.wn_block,
         lambda: {"d_in": 3, "d_out": 2, "hidden": 4, "direction": "sphere", "g1": 1.5,
                  "g2": 0.5, "projection": 0.75},
         {"d_in": COUNT, "d_out": COUNT, "hidden": COUNT, "direction": CHOICE, "g1": POSITIVE,
          "g2": POSITIVE, "projection": optional(POSITIVE)}),
    Spec(wn_init.wn_mlp_model,
         lambda: {"scheme": "data_dependent", "d_in": 3, "widths": [4, 3], "d_out": 2,
                  "gen": generator(0), "data": _x(6, 3, seed=1), "on": None,
                  "direction": "sphere"},
         {"scheme": CHOICE, "d_in": COUNT, "widths": INTS, "d_out": COUNT, "gen": GENERATOR,
          "data": ARRAY, "on": DEVICE, "direction": CHOICE}),
    Spec(wn_init.wn_resnet,
         lambda: {"x": _x(2, 3), "hidden": [8, 8], "direction": "orthogonal", "n_nets": 2,
                  "gen": generator(0), "fc1_gain": 1.5, "fc2_gain": [0.5, 0.25],
                  "backward": True},
         {"x": ARRAY, "hidden": INTS, "direction": CHOICE, "n_nets": COUNT, "gen": GENERATOR,
          "fc1_gain": optional(POSITIVE), "fc2_gain": optional(SEQUENCE),
          "backward": BOOL},
         allow={("x", "degenerate"): ZERO_INPUT}),
    Spec(wn_init.wn_resnet_model,
         lambda: {"scheme": "data_dependent", "d_in": 3, "width": 4, "d_out": 2, "blocks": 2,
                  "gen": generator(0), "data": _x(6, 3, seed=1), "hanin_base": 0.9},
         {"scheme": CHOICE, "d_in": COUNT, "width": COUNT, "d_out": COUNT, "blocks": COUNT,
          "gen": GENERATOR, "data": ARRAY, "hanin_base": UNIT}),
    Spec(wn_init.wn_resnet_net,
         lambda: {"d": 3, "hidden": [4, 2], "direction": "sphere", "fc1_gain": [1.5, 1.0],
                  "fc2_gain": 0.5},
         {"d": COUNT, "hidden": INTS, "direction": CHOICE, "fc1_gain": optional(SEQUENCE),
          "fc2_gain": optional(POSITIVE)}),
    Spec(wn_init.wn_stage_net,
         lambda: {"d_in": 3, "widths": [4, 2], "blocks": [2, 1], "direction": "sphere",
                  "gammas": [0.5, 1.0]},
         {"d_in": COUNT, "widths": INTS, "blocks": INTS, "direction": CHOICE,
          "gammas": optional(SEQUENCE)}),
    Spec(wn_init.wn_stage_resnet,
         lambda: {"x": _x(2, 3), "widths": [6, 8], "blocks": [1, 1], "direction": "orthogonal",
                  "n_nets": 2, "gen": generator(0), "gammas": [0.5, 1.0], "backward": True},
         {"x": ARRAY, "widths": INTS, "blocks": INTS, "direction": CHOICE, "n_nets": COUNT,
          "gen": GENERATOR, "gammas": optional(SEQUENCE), "backward": BOOL},
         allow={("x", "degenerate"): ZERO_INPUT}),

    # --- wn_one_layer -------------------------------------------------------------------------
    Spec(wn_one_layer.backward_ratios,
         lambda: {"u": _x(2, 3), "n": 4, "direction": "sphere", "n_nets": 3,
                  "gen": generator(0), "chunk": 16},
         {"u": ARRAY, "n": COUNT, "direction": CHOICE, "n_nets": COUNT, "gen": GENERATOR,
          "chunk": COUNT}),
    Spec(wn_one_layer.conv_forward_ratios,
         lambda: {"h": _x(2, 3, 4), "c_out": 2, "k": 3, "direction": "orthogonal",
                  "n_nets": 2, "gen": generator(0), "padding": "zeros", "chunk": 64},
         {"h": ARRAY, "c_out": COUNT, "k": COUNT, "direction": CHOICE, "n_nets": COUNT,
          "gen": GENERATOR, "padding": CHOICE, "chunk": COUNT}),
    Spec(wn_one_layer.forward_ratios,
         lambda: {"u": _x(2, 3), "m": 4, "direction": "orthogonal", "n_nets": 3,
                  "gen": generator(0), "chunk": 16},
         {"u": ARRAY, "m": COUNT, "direction": CHOICE, "n_nets": COUNT, "gen": GENERATOR,
          "chunk": COUNT}),
    Spec(wn_one_layer.patch_coverage, lambda: {"h": _x(2, 3, 4), "k": 3, "padding": "zeros"},
         {"h": ARRAY, "k": COUNT, "padding": CHOICE}),

    # --- wn_stacked ---------------------------------------------------------------------------
    Spec(wn_stacked.stack, lambda: {"nets": _wn_nets(), "dtype": torch.float32},
         {"nets": OBJECTS, "dtype": optional(DTYPE)}),
]
