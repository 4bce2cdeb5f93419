"""Property specs of ``eit.models`` (batch normalization chains, BN Jacobians, the isometry
gap, the convolutional ResNet, Hardt & Ma's expressivity construction; see ``harness.py``).

Tiny sizes everywhere: width d = 3, batches of n = 4 samples, depth 2, two networks.
"""

from __future__ import annotations

import math
from functools import cache

import torch
from hypothesis import strategies as st

from eit.core.device import device
from eit.core.seeds import generator
from eit.models import (
    batchnorm,
    bn_chain,
    bn_jacobian,
    bn_one_layer,
    conv_resnet,
    expressivity,
    gap_decay,
    isometry_lemmas,
    jacobian_budget,
)
from eit.sample.laws import haar_orthogonal
from eit.train.sgd import Digits
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


def _x(*shape, seed: int = 0) -> torch.Tensor:
    """A fixed Gaussian array (a private generator: the global stream is left alone)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64)


def _nonfinite(data) -> float:
    return data.draw(st.sampled_from([NAN, INF, -INF]), label="non-finite")


# --- kinds of this module's arguments ---------------------------------------------------------

#: a bool flag
BOOL = Kind("bool", lambda data, valid: {"type": [None, "yes", 1, 1.0]})
#: a callable (an activation, a residual path) that is required
CALLABLE = Kind("callable", lambda data, valid: {"type": [None, "abc", 3]})
#: a callable or None (None is valid)
OPTIONAL_CALLABLE = Kind("callable or None", lambda data, valid: {"type": ["abc", 3, 1.5]})
#: a positive int or None (None is valid: a default derived from the other arguments)
OPTIONAL_COUNT = Kind("count or None", lambda data, valid: {
    "nonfinite": [NAN], "type": ["3", 2.5, True], "sentinel": [-1, 0]})


def _optional_positive(data, valid):
    out = POSITIVE.mutate(data, valid)
    out["type"] = [t for t in out["type"] if t is not None]
    return out


#: a positive number or None (None is valid)
OPTIONAL_POSITIVE = Kind("positive or None", _optional_positive)


def _labels(data, valid):
    """An int64 tensor of class labels (one per point)."""
    i = data.draw(st.integers(0, valid.numel() - 1), label="position")
    neg, big = valid.clone(), valid.clone()
    neg[i], big[i] = -1, 10**6
    nan = valid.double()
    nan[i] = _nonfinite(data)
    return {"nonfinite": [nan], "type": ["abc", None, valid.double(), [0.5] * valid.numel()],
            "sentinel": [neg, big], "degenerate": [torch.zeros_like(valid), valid[:1].clone()],
            "shape": [valid[None].clone()]}


#: integer class labels, a tensor ``(n,)``
LABELS = Kind("labels", _labels)


def _indices(data, valid):
    """A non-empty list of distinct indices into the rows of an array."""
    return {"nonfinite": [[NAN]], "type": ["abc", None, [0.5], [True]],
            "sentinel": [[-1], [10**6]], "degenerate": [[], [valid[0], valid[0]]]}


#: indices of rows (Lemma B.1's set S)
INDICES = Kind("indices", _indices)


def _start(data, valid):
    """An int64 tensor ``(n_nets,)`` of layer indices (a hitting time)."""
    neg = valid.clone()
    neg[0] = -1
    return {"nonfinite": [valid.double().fill_(NAN)], "type": ["abc", None, valid.double()],
            "sentinel": [neg], "shape": [valid[None].clone(), valid[:1].clone()]}


#: layer indices per network
START = Kind("start", _start)


def _tensors(data, valid):
    """A non-empty list of tables (tensors)."""
    first = valid[0]
    bad = first.clone()
    bad.view(-1)[data.draw(st.integers(0, first.numel() - 1), label="position")] = \
        _nonfinite(data)
    return {"nonfinite": [[bad]], "type": ["abc", None, [None], [[1.0, 2.0]]],
            "degenerate": [[], [torch.zeros_like(first)], [first[:1].clone()]],
            "shape": [[first[None].clone()], [first.reshape(-1).clone()]]}


#: a list of gap tables ``(depth + 1, n_nets)``
TENSORS = Kind("tensors", _tensors)


def _digits(data, valid: Digits):
    """A :class:`~eit.train.sgd.Digits` split whose pixels are degenerate or extreme."""
    const = valid.x_train.clone()
    const[0] = 0.5
    return {"type": [None, "abc", 3, valid.x_train],
            "degenerate": [Digits(const, valid.y_train, valid.x_test, valid.y_test)],
            "extreme": [Digits(valid.x_train * 2.0**900, valid.y_train,
                               valid.x_test * 2.0**-900, valid.y_test)]}


#: a train/test split of images
DIGITS = Kind("digits", _digits)

#: the statistics to record in a forward pass (a collection of names)
RECORD = Kind("record", lambda data, valid: {"type": [None, 3, [3]],
                                             "sentinel": [["bogus"]]})
#: a torch floating-point dtype
DTYPE = Kind("dtype", lambda data, valid: {"type": [None, "float64", torch.int64, 3]})
#: a torch device or None
DEVICE = Kind("device", lambda data, valid: {"type": [3, "nonsense", 1.5]})
#: a mapping (arrays by name, runs by key)
MAPPING = Kind("mapping", lambda data, valid: {"type": [None, "abc", 3, [1, 2]],
                                               "sentinel": [{"x": 1}]})
#: a provenance record with ``meta``
PROVENANCE = Kind("provenance", lambda data, valid: {
    "type": [None, "abc", 3], "sentinel": [{}, {"meta": {}}, {"meta": {"dims": "ab"}}]})


def _budget(data, valid):
    """A :class:`~eit.models.jacobian_budget.Budget` with a bad field."""
    bad = valid.d6.clone()
    bad[0, 0] = _nonfinite(data)
    return {"type": [None, "abc", 3, tuple(valid)],
            "nonfinite": [valid._replace(phi0=_nonfinite(data)), valid._replace(d6=bad)],
            "sentinel": [valid._replace(phi0=-1.0)],
            "shape": [valid._replace(d3=valid.d3[:, :1].clone())]}


#: a budget record
BUDGET = Kind("budget", _budget)

# --- valid arguments --------------------------------------------------------------------------

_DEG = "phi = +inf is the isometry gap of linearly dependent samples (eq. 5 of Meterez et al.)"
_RANK1 = ("a batch of rank one X = u v^T is a fixed point of BN: BN(W X) = sign(W u) v^T / |v| "
          "does not depend on W near W, so the weight gradient is exactly 0 (log-norm -inf)")


def _batch():
    """One batch (d, n) = (3, 4)."""
    return _x(3, 4)


def _square(m: int = 2):
    return _x(m, 3, 3, seed=1)


@cache
def _near_threshold() -> torch.Tensor:
    """A BN batch (3, 3) with phi = 0.03, just above the threshold 1/(16 d) = 1/48."""
    return bn_chain.with_isometry_gap(3, [0.03])[0]


def _pass():
    net = batchnorm.bn_net(3, 2)
    p, r = batchnorm.readout_pass(net, _x(2, 3, 4), n_nets=2, gen=generator(0), tops=[1, 2])
    return {"p": p, "readout": r, "depths": [1, 2], "stat": "log_grad_w_batch"}


def _net():
    x, labels = expressivity.random_labelled(4, 5, 2, gen=generator(0))
    return expressivity.build(x, labels, 2, 8, 0.1, gen=generator(1)), x, labels


def _budget_value():
    return jacobian_budget.Budget(0.5, torch.zeros(2, dtype=torch.float64),
                                  _x(2, 2).abs(), _x(2, 2, seed=3))


def _stored():
    b = _budget_value()
    arrays = jacobian_budget.to_arrays({(3, "far"): b}, [3])
    return {"arrays": arrays, "provenance": {"meta": {"dims": [3], "depths": [1, 2]}},
            "depths": [2]}


def _digits_value():
    x = _x(3, 1, 4, 4).abs()
    y = torch.tensor([0, 1, 2])
    return Digits(x, y, _x(2, 1, 4, 4, seed=2).abs(), y[:2].clone())


_SHAPED = {"activation": torch.tanh, "weights": "orthogonal"}
_SHAPED_KINDS = {"x0": ARRAY, "n_nets": COUNT, "gen": GENERATOR, "activation": CALLABLE,
                 "gains": SEQUENCE, "weights": CHOICE}

SPECS = [
    # --- batchnorm ----------------------------------------------------------------------------
    Spec(batchnorm.bn, lambda: {"x": _batch()}, {"x": ARRAY}),
    Spec(batchnorm.bn_centered, lambda: {"x": _batch()}, {"x": ARRAY}),
    Spec(batchnorm.bn_standard, lambda: {"x": _batch()}, {"x": ARRAY}),
    Spec(batchnorm.bn_net,
         lambda: {"d": 3, "depth": 2, "weights": "gaussian", "activation": torch.tanh,
                  "centered": True},
         {"d": COUNT, "depth": COUNT, "weights": CHOICE, "activation": OPTIONAL_CALLABLE,
          "centered": BOOL}),
    Spec(batchnorm.first_layer_grad_lognorm,
         lambda: {"x0": _batch(), "depths": [1, 2], "n_nets": 2, "gen": generator(0),
                  "weights": "orthogonal", "activation": torch.tanh, "centered": False},
         {"x0": ARRAY, "depths": INTS, "n_nets": COUNT, "gen": GENERATOR, "weights": CHOICE,
          "activation": OPTIONAL_CALLABLE, "centered": BOOL}),
    Spec(batchnorm.gram_eigenvalues, lambda: {"x": _batch()}, {"x": ARRAY}),
    Spec(batchnorm.isometry, lambda: {"x": _batch()}, {"x": ARRAY}),
    Spec(batchnorm.isometry_gap, lambda: {"x": _x(3, 3)}, {"x": ARRAY},
         allow={("x", "degenerate"): _DEG}),
    Spec(batchnorm.isometry_gaps_in_depth,
         lambda: {"x0": _x(3, 3), "depth": 2, "n_nets": 2, "gen": generator(0),
                  "weights": "gaussian", "activation": None, "centered": False},
         {"x0": ARRAY, "depth": COUNT, "n_nets": COUNT, "gen": GENERATOR, "weights": CHOICE,
          "activation": OPTIONAL_CALLABLE, "centered": BOOL},
         allow={("x0", "degenerate"): _DEG + " (row 0 is phi of the input itself)"}),
    Spec(batchnorm.logit_loss_gradient,
         lambda: {"z": _x(4, 3), "y": torch.eye(3, dtype=torch.float64)[[0, 1, 2, 0]],
                  "loss": "mse"},
         {"z": ARRAY, "y": ARRAY, "loss": CHOICE}),
    Spec(batchnorm.row_norm_factor, lambda: {"x": _batch()}, {"x": ARRAY}),
    Spec(batchnorm.shaped_first_layer_grad_lognorm,
         lambda: {"x0": _batch(), "depths": [1, 2], "n_nets": 2, "gen": generator(0),
                  "gains": [1.0, 0.5], "with_output_scale": True, **_SHAPED},
         {**_SHAPED_KINDS, "depths": INTS, "with_output_scale": BOOL}),
    Spec(batchnorm.shaped_leaky_relu, lambda: {"slope": 0.5}, {"slope": UNIT}),
    Spec(batchnorm.shaped_net,
         lambda: {"d": 3, "gains": [1.0, 0.5], "activation": torch.tanh,
                  "weights": "orthogonal"},
         {"d": COUNT, "gains": SEQUENCE, "activation": CALLABLE, "weights": CHOICE}),
    Spec(batchnorm.shaped_nonlinearity,
         lambda: {"x0": _batch(), "depth": 2, "n_nets": 2, "gen": generator(0),
                  "gains": [1.0, 0.5], **_SHAPED},
         {**_SHAPED_KINDS, "depth": COUNT}),
    Spec(batchnorm.shaped_weight_grad_lognorms,
         lambda: {"x0": _batch(), "depth": 2, "n_nets": 2, "gen": generator(0),
                  "gains": [1.0, 0.5], **_SHAPED},
         {**_SHAPED_KINDS, "depth": COUNT}),
    Spec(batchnorm.spectral_inputs,
         lambda: {"n_mats": 2, "d": 3, "gen": generator(0), "spread": 1.0, "n": 4},
         {"n_mats": COUNT, "d": COUNT, "gen": GENERATOR, "spread": NONNEGATIVE,
          "n": OPTIONAL_COUNT}),
    Spec(batchnorm.unit_readout, lambda: {"n_nets": 2, "d": 3, "n": 4, "gen": generator(0)},
         {"n_nets": COUNT, "d": COUNT, "n": COUNT, "gen": GENERATOR}),
    Spec(batchnorm.weight_grad_lognorms,
         lambda: {"x0": _batch(), "depths": [2], "n_nets": 2, "gen": generator(0),
                  "weights": "orthogonal", "loss": "cross_entropy",
                  "labels": torch.tensor([0, 1, 0, 1]), "n_classes": 2},
         {"x0": ARRAY, "depths": INTS, "n_nets": COUNT, "gen": GENERATOR, "weights": CHOICE,
          "loss": CHOICE, "labels": LABELS, "n_classes": COUNT},
         allow={("x0", "degenerate"): _RANK1}),
    Spec(batchnorm.readout_pass,
         lambda: {"net": batchnorm.bn_net(3, 2), "x": _x(2, 3, 4), "n_nets": 2,
                  "gen": generator(0), "tops": [1, 2], "record": ("log_grad_w_batch",)},
         {"net": OTHER, "x": ARRAY, "n_nets": COUNT, "gen": GENERATOR, "tops": INTS,
          "record": RECORD}),
    Spec(batchnorm.first_layer_grads, _pass,
         {"p": OTHER, "readout": ARRAY, "depths": INTS, "stat": CHOICE},
         allow={("readout", "degenerate"): "a zero read-out R makes the loss <R, X_L> "
                "identically 0: the gradient is exactly 0, its log-norm -inf"}),
    # --- bn_chain -----------------------------------------------------------------------------
    Spec(bn_chain.hartley, lambda: {"d": 3}, {"d": COUNT}),
    Spec(bn_chain.isometry_gap_det, lambda: {"x": _square()}, {"x": ARRAY},
         allow={("x", "degenerate"): _DEG + " (a singular square batch)"}),
    Spec(bn_chain.bn_rows, lambda: {"h": _batch()}, {"h": ARRAY}),
    Spec(bn_chain.bn_jacobian_lognorm, lambda: {"h": _batch()}, {"h": ARRAY}),
    Spec(bn_chain.batch_of_state,
         lambda: {"h": batchnorm.bn(_x(2, 4, 3)), "log_r": _x(2, 4, seed=2)},
         {"h": ARRAY, "log_r": ARRAY},
         allow={("log_r", "nonfinite"): "log_r = -inf is the documented log-norm of a zero "
                "input, whose row is 0 in the batch; NaN and +inf raise"}),
    Spec(bn_chain.run_chain,
         lambda: {"x0": _x(3, 3), "depth": 2, "n_nets": 2, "gen": generator(0),
                  "weights": "orthogonal"},
         {"x0": ARRAY, "depth": COUNT, "n_nets": COUNT, "gen": GENERATOR, "weights": CHOICE},
         allow={("x0", "degenerate"): _DEG + " (a singular input stays singular along the "
                "chain: every gap is +inf)"}),
    Spec(bn_chain.hitting_time,
         lambda: {"gaps": torch.tensor([[2.0, 2.0], [0.5, 3.0], [0.1, 0.2]],
                                       dtype=torch.float64), "threshold": 1.0},
         {"gaps": ARRAY, "threshold": POSITIVE},
         allow={("gaps", "nonfinite"): "a gap of +inf is legitimate (a singular batch, "
                "eq. 5) and lies above every threshold; NaN and -inf raise"}),
    Spec(bn_chain.square_weights,
         lambda: {"kind": "gaussian", "n_nets": 2, "d": 3, "gen": generator(0)},
         {"kind": CHOICE, "n_nets": COUNT, "d": COUNT, "gen": GENERATOR}),
    Spec(bn_chain.tail_sums,
         lambda: {"values": _x(4, 2), "start": torch.tensor([0, 2]), "ends": [1, 3]},
         {"values": ARRAY, "start": START, "ends": INTS}),
    Spec(bn_chain.with_isometry_gap,
         lambda: {"d": 3, "targets": [0.1, 1.0], "gen": generator(0), "tol": 1e-12},
         {"d": COUNT, "targets": SEQUENCE, "gen": GENERATOR, "tol": POSITIVE}),
    Spec(bn_chain.one_step_decrease,
         lambda: {"x": _square().to(device()), "n_draws": 2, "gen": generator(0)},
         {"x": ARRAY, "n_draws": COUNT, "gen": GENERATOR}),
    Spec(bn_chain.first_layer_grad_op_lognorm,
         lambda: {"x0": _x(3, 3), "depths": [1, 2], "n_nets": 2, "gen": generator(0)},
         {"x0": ARRAY, "depths": INTS, "n_nets": COUNT, "gen": GENERATOR}),
    # --- bn_jacobian --------------------------------------------------------------------------
    Spec(bn_jacobian.bn_jacobian, lambda: {"x": _x(2, 3)}, {"x": ARRAY}),
    Spec(bn_jacobian.bn_jacobian_norm, lambda: {"x": _x(2, 3)}, {"x": ARRAY}),
    Spec(bn_jacobian.jacobian_lemma_violations,
         lambda: {"h": _square(), "every": 1, "tol": 1e-9},
         {"h": ARRAY, "every": COUNT, "tol": POSITIVE}, strict=True),
    # --- bn_one_layer -------------------------------------------------------------------------
    Spec(bn_one_layer.quasi_spectral_inputs,
         lambda: {"n_mats": 2, "d": 3, "spread": 0.5, "offset": 0.0},
         {"n_mats": COUNT, "d": COUNT, "spread": NONNEGATIVE, "offset": REAL}),
    Spec(bn_one_layer.one_layer_expectations,
         lambda: {"x": batchnorm.bn(_square()), "n_rotations": 3, "gen": generator(0)},
         {"x": ARRAY, "n_rotations": COUNT, "gen": GENERATOR}),
    # --- conv_resnet --------------------------------------------------------------------------
    Spec(conv_resnet.architecture_size,
         lambda: {"in_channels": 1, "stem_channels": 2, "channels": [2, 3], "blocks": [1, 1],
                  "kernel": 3},
         {"in_channels": COUNT, "stem_channels": COUNT, "channels": INTS, "blocks": INTS,
          "kernel": COUNT}),
    Spec(conv_resnet.block_factor, lambda: {"init": "small", "kernel": 3, "channels": 2},
         {"init": CHOICE, "kernel": COUNT, "channels": COUNT}),
    Spec(conv_resnet.init_std, lambda: {"init": "standard", "kernel": 3, "channels": 2},
         {"init": CHOICE, "kernel": COUNT, "channels": COUNT}),
    Spec(conv_resnet.conv_resnet,
         lambda: {"init": "small", "channels": [2, 3], "blocks": [1, 1], "gen": generator(0),
                  "in_channels": 1, "n_classes": 3, "kernel": 3, "padding": "zeros",
                  "head_std": 0.5, "train_head": True, "dtype": torch.float64, "on": None},
         {"init": CHOICE, "channels": INTS, "blocks": INTS, "gen": GENERATOR,
          "in_channels": COUNT, "n_classes": COUNT, "kernel": COUNT, "padding": CHOICE,
          "head_std": OPTIONAL_POSITIVE, "train_head": BOOL, "dtype": DTYPE, "on": DEVICE}),
    Spec(conv_resnet.forward_sq_norms,
         lambda: {"images": _x(2, 1, 4, 4), "init": "small", "channels": 2, "blocks": 1,
                  "n_nets": 2, "gen": generator(0), "kernel": 3, "padding": "circular"},
         {"images": ARRAY, "init": CHOICE, "channels": COUNT, "blocks": INDEX,
          "n_nets": COUNT, "gen": GENERATOR, "kernel": COUNT, "padding": CHOICE}),
    Spec(conv_resnet.one_stage_net,
         lambda: {"init": "small", "channels": 2, "blocks": 1, "kernel": 3,
                  "padding": "circular"},
         {"init": CHOICE, "channels": COUNT, "blocks": INDEX, "kernel": COUNT,
          "padding": CHOICE}),
    Spec(conv_resnet.standardize, lambda: {"data": _digits_value()}, {"data": DIGITS}),
    # --- expressivity -------------------------------------------------------------------------
    Spec(expressivity.unit_sphere, lambda: {"n": 3, "d": 4, "gen": generator(0)},
         {"n": COUNT, "d": COUNT, "gen": GENERATOR}),
    Spec(expressivity.min_sq_distance, lambda: {"x": _x(4, 3)}, {"x": ARRAY}),
    Spec(expressivity.block,
         lambda: {"h": _x(4, 3), "U": _x(2, 3, seed=1), "V": _x(3, 2, seed=2),
                  "s": _x(2, seed=3)},
         {"h": ARRAY, "U": ARRAY, "V": ARRAY, "s": ARRAY}),
    Spec(expressivity.lemma_b1,
         lambda: {"alpha": batchnorm.bn(_x(4, 3)), "S": [0, 2], "target": _x(2, 3, seed=1),
                  "rho_p": 0.1, "skip": None},
         {"alpha": ARRAY, "S": INDICES, "target": ARRAY, "rho_p": UNIT,
          "skip": OPTIONAL_CALLABLE}),
    Spec(expressivity.lemma_b1_conditions,
         lambda: {"alpha": batchnorm.bn(_x(4, 3)), "S": [0, 2], "rho_p": 0.1},
         {"alpha": ARRAY, "S": INDICES, "rho_p": UNIT}, strict=True),
    Spec(expressivity.skip_map, lambda: {"h": _x(2, 3), "r": 2}, {"h": ARRAY, "r": COUNT}),
    Spec(expressivity.build,
         lambda: {"x": expressivity.unit_sphere(4, 5, gen=generator(0)),
                  "labels": torch.tensor([0, 1, 0, 1]), "r": 2, "k": 8, "rho_p": 0.1,
                  "gen": generator(1), "project": True},
         {"x": ARRAY, "labels": LABELS, "r": COUNT, "k": COUNT, "rho_p": UNIT,
          "gen": GENERATOR, "project": BOOL}),
    Spec(expressivity.forward, lambda: dict(zip(("net", "x"), _net()[:2], strict=True)),
         {"net": OTHER, "x": ARRAY}),
    Spec(expressivity.parameter_count, lambda: {"net": _net()[0], "d": 5},
         {"net": OTHER, "d": COUNT}),
    Spec(expressivity.k_for, lambda: {"n": 10, "rho": 0.5, "c": 10.0},
         {"n": COUNT, "rho": POSITIVE, "c": POSITIVE}),
    Spec(expressivity.random_labelled, lambda: {"n": 4, "d": 3, "r": 2, "gen": generator(0)},
         {"n": COUNT, "d": COUNT, "r": COUNT, "gen": GENERATOR}),
    Spec(expressivity.label_errors,
         lambda: dict(zip(("net", "x", "labels"), _net(), strict=True)),
         {"net": OTHER, "x": ARRAY, "labels": LABELS}),
    Spec(expressivity.block_log, lambda: {"net": _net()[0], "tol": 1e-12},
         {"net": OTHER, "tol": NONNEGATIVE}, strict=True),
    Spec(expressivity.printed_last_block_composes, lambda: {"k": 5, "r": 3},
         {"k": COUNT, "r": COUNT}, strict=True),
    # --- gap_decay ----------------------------------------------------------------------------
    Spec(gap_decay.alternating_diagonal, lambda: {"d": 4, "phi": 0.01},
         {"d": COUNT, "phi": POSITIVE}),
    Spec(gap_decay.mean_ratio_after,
         lambda: {"gaps": torch.tensor([[1.0, 0.5, 0.25, 0.125, 0.0625],
                                        [2.0, 0.4, 0.2, 0.1, 0.05]], dtype=torch.float64).T,
                  "threshold": 0.3, "steps": 2},
         {"gaps": ARRAY, "threshold": POSITIVE, "steps": COUNT}),
    Spec(gap_decay.non_increasing_steps,
         lambda: {"gaps": [_x(4, 2).abs(), _x(3, 2, seed=1).abs()], "rtol": 1e-9,
                  "atol": 1e-15},
         {"gaps": TENSORS, "rtol": NONNEGATIVE, "atol": NONNEGATIVE}, strict=True),
    # --- isometry_lemmas ----------------------------------------------------------------------
    Spec(isometry_lemmas.isometry_gap_logdet, lambda: {"x": _square()}, {"x": ARRAY},
         allow={("x", "degenerate"): _DEG + " (a singular square batch)"}),
    Spec(isometry_lemmas.isometry_lemma_checks,
         lambda: {"x": _square().to(device()), "w": haar_orthogonal(2, 3, 3, gen=generator(0)),
                  "rtol": 1e-9},
         {"x": ARRAY, "w": ARRAY, "rtol": POSITIVE}),
    # --- jacobian_budget ----------------------------------------------------------------------
    Spec(jacobian_budget.measure,
         lambda: {"x0": _near_threshold().clone(), "depths": [1, 2],
                  "n_nets": 2, "gen": generator(0)},
         {"x0": ARRAY, "depths": INTS, "n_nets": COUNT, "gen": GENERATOR}),
    Spec(jacobian_budget.over_bounds,
         lambda: {"budget": _budget_value(), "d": 3, "depths": [1, 2]},
         {"budget": BUDGET, "d": COUNT, "depths": INTS}),
    Spec(jacobian_budget.to_arrays,
         lambda: {"runs": {(3, "far"): _budget_value()}, "dims": [3]},
         {"runs": MAPPING, "dims": INTS}),
    Spec(jacobian_budget.from_arrays, _stored,
         {"arrays": MAPPING, "provenance": PROVENANCE, "depths": INTS}),
    Spec(jacobian_budget.lemma_d12_gap, lambda: {"d": 3, "gen": generator(0)},
         {"d": COUNT, "gen": GENERATOR}),
]
