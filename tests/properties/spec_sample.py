"""Property specs of ``eit.sample`` (see ``harness.py``).

Functions with a variadic ``*shape`` or ``*layers`` are called through :func:`_star`, which
passes a list or tuple as the positional arguments and anything else as the one positional
argument (so that a string or ``None`` reaches the library's own checks); it keeps the
function's name and signature (``functools.wraps``).
"""

from __future__ import annotations

import functools
import math

import torch
from hypothesis import strategies as st

from eit.core.seeds import generator
from eit.sample import (
    autograd,
    convnets,
    engine,
    heads,
    laws,
    layers,
    log_lengths,
    logits,
    mlps,
    monomials,
    pairs,
    quasi,
    resnets,
    subspace,
)
from properties.harness import (
    ARRAY,
    CHOICE,
    COUNT,
    FREE,
    GENERATOR,
    INTS,
    OTHER,
    POSITIVE,
    REAL,
    SEQUENCE,
    UNIT,
    WRONG_TYPES,
    Kind,
    Spec,
    _nonfinite,
)

F64 = torch.float64


def _t(*rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=F64)


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=F64)


def _star(fn):
    """``fn(*value, **kw)`` for a list or tuple ``value``, else ``fn(value, **kw)``."""
    @functools.wraps(fn)
    def call(_star_value, **kw):
        if isinstance(_star_value, (list, tuple)):
            return fn(*_star_value, **kw)
        return fn(_star_value, **kw)
    return call


def _varargs(fn, name: str):
    """A spec function for ``fn(*name, ...)``: ``kwargs[name]`` becomes the positionals."""
    star = _star(fn)

    @functools.wraps(fn)
    def call(**kw):
        return star(kw.pop(name), **kw)
    return call


# --- kinds of this subpackage ----------------------------------------------------------------

def _without_none(kind: Kind) -> Kind:
    """``kind`` for an optional parameter: ``None`` is a valid value there, not a wrong type."""
    def mutate(data, valid):
        out = kind.mutate(data, valid)
        out["type"] = [t for t in out.get("type", []) if t is not None]
        return out
    return Kind(f"optional {kind.name}", mutate)


OPT_POSITIVE = _without_none(POSITIVE)
OPT_CHOICE = _without_none(CHOICE)
OPT_OTHER = _without_none(OTHER)
#: An optional callable (an observer, a loss head): anything not callable is a wrong type.
OPT_CALLABLE = Kind("optional callable", lambda data, valid: {"type": ["abc", 3, 2.5]})
#: A bool flag.
BOOL = Kind("bool", lambda data, valid: {"type": ["yes", None, 2.5, {"a": 1}]})
#: A floating-point torch.dtype.
DTYPE = Kind("dtype", lambda data, valid: {"type": [None, "float64", 3, torch.int64]})
#: The cotangent of a backward pass: None, 'random', 'random_preactivation', a loss head or a
#: tensor (None is forward only, a valid value).
COTANGENT = Kind("cotangent", lambda data, valid: {"type": [3, {"a": 1}, 2.5],
                                                   "sentinel": ["bogus"]})
#: A mapping of names to observers.
OBSERVERS = Kind("observers", lambda data, valid: {"type": ["abc", 3, {"a": 1}, {"a": None}]})
#: A collection of names of optional statistics.
RECORD = Kind("record", lambda data, valid: {"type": [None, 3, "isometry_gap", [3]],
                                             "sentinel": [["bogus"]]})
#: Rows from which a backward pass may start (positive ints; None is the default output).
TOPS = _without_none(INTS)
#: A cosine: a number in [-1, 1].
COSINE = Kind("cosine", lambda data, valid: {
    "nonfinite": [_nonfinite(data)], "type": list(WRONG_TYPES), "sentinel": [1.5, -1.5, 2]})


def _labels(data, valid):
    """Class labels: a sequence of ints >= 0 (below the number of classes)."""
    valid = list(valid)
    i = data.draw(st.integers(0, len(valid) - 1), label="position")

    def at(x):
        out = list(valid)
        out[i] = x
        return out
    return {"nonfinite": [at(_nonfinite(data))], "type": ["abc", None, at(2.5), at("1"),
                                                         at(None)],
            "sentinel": [at(-1), at(10**6)], "degenerate": [[]]}


LABELS = Kind("labels", _labels)


def _label_tensor(data, valid):
    """Class labels as a torch.long tensor."""
    bad = valid.clone()
    bad[0] = -1
    big = valid.clone()
    big[-1] = 10**6
    return {"type": ["abc", None, valid.to(F64), valid.tolist()],
            "sentinel": [bad, big], "degenerate": [valid[:0]],
            "shape": [valid[None].clone()]}


LABEL_TENSOR = Kind("label tensor", _label_tensor)


def _tensors(data, valid):
    """A sequence of floating-point matrices (the weights of a network)."""
    valid = [w.clone() for w in valid]
    i = data.draw(st.integers(0, len(valid) - 1), label="matrix")

    def at(w):
        out = [x.clone() for x in valid]
        out[i] = w
        return out
    bad = valid[i].clone().reshape(-1)
    bad[data.draw(st.integers(0, bad.numel() - 1), label="position")] = _nonfinite(data)
    k = data.draw(st.integers(800, 1000), label="exponent")
    sign = data.draw(st.sampled_from([1, -1]), label="direction")
    return {"nonfinite": [at(bad.reshape(valid[i].shape))],
            "type": ["abc", None, 3, at("abc"), at(valid[i].long())],
            "extreme": [at(torch.ldexp(valid[i], torch.tensor(sign * k)))],
            "degenerate": [at(torch.zeros_like(valid[i])), valid[:1]],
            "shape": [at(valid[i][None].clone()), at(valid[i].reshape(-1).clone())]}


TENSORS = Kind("tensors", _tensors)


def _monomials(data, valid):
    """A sequence of (row labels, column labels) pairs of ints in [0, d)."""
    return {"nonfinite": [[((_nonfinite(data),), (0,))]],
            "type": ["abc", None, [(("a",), ("b",))], [((0.5,), (0,))], [3]],
            "sentinel": [[((-1,), (0,))], [((0,), (10**6,))]],
            "degenerate": [[], [((), ())], [((0, 1), (0,))]]}


MONOMIALS = Kind("monomials", _monomials)


def _layer_list(data, valid):
    """The layers of :func:`eit.sample.layers.serial`."""
    return {"type": ["abc", None, [None], [3, layers.ReLU()]], "degenerate": [[]]}


LAYER_LIST = Kind("layers", _layer_list)


def _buffer(data, valid):
    """An output buffer: a contiguous CPU tensor of ``numel`` numbers."""
    return {"type": ["abc", 3, valid.long()],
            "shape": [torch.empty(valid.numel() + 1, dtype=valid.dtype),
                      torch.empty(2 * valid.numel(), dtype=valid.dtype)[::2]]}


BUFFER = Kind("buffer", _buffer)


def _blocks(data, valid):
    """A block (a layer description) or one per module."""
    return {"type": [None, "abc", 3, [None] * 2, [3, 3]], "degenerate": [[]]}


BLOCKS = Kind("blocks", _blocks)


# --- shared valid arguments -------------------------------------------------------------------

def _gen() -> torch.Generator:
    return generator(0)


def _cpu_gen() -> torch.Generator:
    return torch.Generator().manual_seed(0)


SHAPE3 = {"n_nets": COUNT, "fan_out": COUNT, "fan_in": COUNT, "gen": GENERATOR}

_DEAD_X = ("a zero input has log-norm -inf, the exact log of its zero length (the engine's "
           "documented convention: a zero vector stays -inf through every layer, never NaN)")


def _net():
    return layers.mlp([16, 16])


SPECS = [
    # ------------------------------------------------------------------ autograd
    Spec(autograd.relu_mlp_grad_norms,
         lambda: {"weights": [_randn(4, 3, seed=1), _randn(3, 4, seed=2)],
                  "x": _randn(2, 3, seed=3), "labels": [0, 2]},
         {"weights": TENSORS, "x": ARRAY, "labels": LABELS}),
    # ------------------------------------------------------------------ convnets
    Spec(convnets.conv_net, lambda: {"channels": [2, 3], "init": laws.he(), "kernel": 3,
                                     "padding": "zeros"},
         {"channels": INTS, "init": OTHER, "kernel": COUNT, "padding": CHOICE}),
    Spec(convnets.conv_relu_lengths,
         lambda: {"image": _randn(1, 4, 4, seed=4), "channels": [3, 3], "init": laws.he(),
                  "n_nets": 2, "gen": _gen(), "kernel": 3, "padding": "circular"},
         {"image": ARRAY, "channels": INTS, "init": OTHER, "n_nets": COUNT,
          "gen": GENERATOR, "kernel": COUNT, "padding": CHOICE}),
    Spec(convnets.mean_profile,
         lambda: {"image": _randn(2, 4, 4, seed=5), "channels": [3, 2], "kappa": 1.5,
                  "kernel": 3, "padding": "zeros"},
         {"image": ARRAY, "channels": INTS, "kappa": POSITIVE, "kernel": COUNT,
          "padding": CHOICE}),
    # ------------------------------------------------------------------ engine
    Spec(engine.forward,
         lambda: {"net": _net(), "x": _randn(3, 4, seed=6), "n_nets": 2, "gen": _gen(),
                  "backward": True, "observe": {"mean": lambda h, log_r: log_r},
                  "record": ("nonlinearity",), "tops": [1, 2]},
         {"net": OTHER, "x": ARRAY, "n_nets": COUNT, "gen": GENERATOR, "backward": BOOL,
          "observe": OBSERVERS, "record": RECORD, "tops": TOPS},
         defaults={"_rule": "a private hook of the exact engines (eit.exact.engine), not a "
                            "public argument"},
         allow={("x", "degenerate"): _DEAD_X}),
    Spec(engine.trace,
         lambda: {"net": _net(), "x": _randn(3, 4, seed=7), "n_nets": 2, "gen": _gen(),
                  "backward": "random", "observe": {"mean": lambda h, log_r: log_r},
                  "record": ["log_grad_w_batch"]},
         {"net": OTHER, "x": ARRAY, "n_nets": COUNT, "gen": GENERATOR, "backward": COTANGENT,
          "observe": OBSERVERS, "record": RECORD},
         allow={("x", "degenerate"): _DEAD_X}),
    Spec(engine.gram_root, lambda: {"m": (lambda a: a @ a.transpose(-2, -1))(_randn(2, 3, 4))},
         {"m": ARRAY}),
    Spec(engine.isometry_gap, lambda: {"y": _randn(2, 3, 5, seed=8)}, {"y": ARRAY},
         allow={("y", "degenerate"): "linearly dependent inputs (a constant or zero batch) "
                                     "have det G = 0, where phi = +inf exactly (eq. 5; the "
                                     "documented value)"}),
    # ------------------------------------------------------------------ heads
    Spec(heads.random_labels, lambda: {"n_samples": 5, "n_classes": 3, "gen": _gen()},
         {"n_samples": COUNT, "n_classes": COUNT, "gen": GENERATOR}),
    Spec(heads.softmax_cross_entropy,
         lambda: {"n_nets": 2, "width": 4, "labels": torch.tensor([0, 2, 1]), "n_classes": 3,
                  "gen": _gen(), "variance": 0.5},
         {"n_nets": COUNT, "width": COUNT, "labels": LABEL_TENSOR, "n_classes": COUNT,
          "gen": GENERATOR, "variance": OPT_POSITIVE}),
    # ------------------------------------------------------------------ laws
    Spec(laws.chunks,
         lambda: {"kind": "normal", "numel": 7, "gen": _cpu_gen(), "dtype": F64,
                  "out": torch.empty(7, dtype=F64)},
         {"kind": CHOICE, "numel": COUNT, "gen": GENERATOR, "dtype": DTYPE, "out": BUFFER}),
    *[Spec(fn, lambda: {"n_nets": 2, "fan_out": 3, "fan_in": 4, "variance": 0.5,
                        "gen": _gen(), "dtype": F64},
           {**SHAPE3, "variance": POSITIVE, "dtype": DTYPE})
      for fn in (laws.centered_exponential, laws.gaussian, laws.uniform)],
    Spec(laws.truncated_normal,
         lambda: {"n_nets": 2, "fan_out": 3, "fan_in": 4, "std": 0.5, "gen": _gen(),
                  "bound": 2.0, "dtype": F64},
         {**SHAPE3, "std": POSITIVE, "bound": POSITIVE, "dtype": DTYPE}),
    Spec(laws.check_initializer,
         lambda: {"name": "init", "init": laws.he(), "n_nets": 2, "fan_out": 3, "fan_in": 4,
                  "gen": _gen()},
         {"name": FREE, "init": OTHER, **SHAPE3}),
    Spec(laws.directions,
         lambda: {"n_nets": 2, "fan_out": 3, "fan_in": 4, "direction": "orthogonal",
                  "gen": _gen()},
         {**SHAPE3, "direction": CHOICE}),
    Spec(laws.gaussian_bias, lambda: {"variance": 0.5}, {"variance": POSITIVE}),
    Spec(laws.gaussian_fixed, lambda: {"variance": 0.5}, {"variance": POSITIVE}),
    Spec(laws.gaussian_variance, lambda: {"rule": lambda fan_in, fan_out: 1.0 / fan_in},
         {"rule": OTHER}),
    Spec(laws.glorot, lambda: {"distribution": "uniform"}, {"distribution": CHOICE}),
    Spec(laws.haar_orthogonal,
         lambda: {"n_nets": 2, "fan_out": 3, "fan_in": 4, "gen": _gen(), "gain": 1.5,
                  "dtype": F64},
         {**SHAPE3, "gain": POSITIVE, "dtype": DTYPE}),
    *[Spec(fn, lambda: {"mode": "fan_out", "distribution": "truncated_normal"},
           {"mode": CHOICE, "distribution": CHOICE}) for fn in (laws.he, laws.lecun)],
    Spec(laws.named,
         lambda: {"scheme": "he", "mode": "fan_out", "distribution": "uniform", "gain": 1.5},
         {"scheme": CHOICE, "mode": OPT_CHOICE, "distribution": CHOICE, "gain": POSITIVE}),
    Spec(laws.normalize_rows, lambda: {"w": _randn(2, 3, 4, seed=9)}, {"w": ARRAY}),
    Spec(laws.orthogonal, lambda: {"gain": 1.5}, {"gain": POSITIVE}),
    Spec(laws.proposed_gain, lambda: {"fan_in": 4, "fan_out": 3, "gamma": 2.0},
         {"fan_in": COUNT, "fan_out": COUNT, "gamma": POSITIVE}),
    Spec(laws.rows,
         lambda: {"n_nets": 2, "fan_out": 3, "fan_in": 4, "gen": _gen(), "law": "student_t",
                  "df": 3, "dtype": F64},
         {**SHAPE3, "law": CHOICE, "df": COUNT, "dtype": DTYPE}),
    Spec(laws.scheme_variance,
         lambda: {"scheme": "lecun", "fan_in": 4, "fan_out": 3, "mode": "fan_avg"},
         {"scheme": CHOICE, "fan_in": COUNT, "fan_out": COUNT, "mode": OPT_CHOICE}),
    Spec(laws.sphere_rows,
         lambda: {"n_nets": 2, "fan_out": 3, "fan_in": 4, "gen": _gen(), "radius": 2.0,
                  "dtype": F64},
         {**SHAPE3, "radius": POSITIVE, "dtype": DTYPE}),
    *[Spec(_varargs(fn, "shape"), lambda: {"shape": [2, 3], "gen": _gen(), "dtype": F64},
           {"shape": INTS, "gen": GENERATOR, "dtype": DTYPE})
      for fn in (laws.standard_normal, laws.standard_uniform)],
    Spec(laws.truncated_normal_kurtosis, lambda: {"bound": 2.0}, {"bound": POSITIVE}),
    Spec(laws.truncated_normal_variance, lambda: {"std": 0.5, "bound": 2.0},
         {"std": POSITIVE, "bound": POSITIVE}),
    Spec(laws.weight_normalized, lambda: {"rows": "sphere", "gain": 1.5, "gamma": 2.0},
         {"rows": CHOICE, "gain": OPT_POSITIVE, "gamma": POSITIVE}),
    # ------------------------------------------------------------------ layers
    Spec(layers.as_serial, lambda: {"net": layers.ReLU()}, {"net": OTHER}),
    Spec(layers.mlp,
         lambda: {"widths": [3, 4], "law": laws.lecun(), "activation": layers.tanh(),
                  "bias": laws.gaussian_bias(0.1)},
         {"widths": INTS, "law": OPT_OTHER, "activation": OPT_OTHER, "bias": OPT_OTHER}),
    Spec(layers.relu_block, lambda: {"law": laws.he()}, {"law": OPT_OTHER}),
    Spec(_varargs(layers.serial, "layers"),
         lambda: {"layers": [layers.Dense(3), layers.ReLU()]}, {"layers": LAYER_LIST}),
    Spec(layers.sin, dict, {}),
    Spec(layers.tanh, dict, {}),
    # ------------------------------------------------------------------ log_lengths
    Spec(log_lengths.log_length_per_net, lambda: {"log_ratio": _randn(3, 2, seed=10)},
         {"log_ratio": ARRAY},
         allow={("log_ratio", "nonfinite"): "-inf is a dead input (the log of a zero "
                                            "length), documented and left out of its "
                                            "network's mean; NaN and +inf raise"}),
    Spec(log_lengths.equal_width_log_ratios,
         lambda: {"init": laws.he(), "depth": 4, "n_inputs": 2, "n_nets": 2, "gen": _gen()},
         {"init": OTHER, "depth": COUNT, "n_inputs": COUNT, "n_nets": COUNT,
          "gen": GENERATOR}),
    Spec(log_lengths.equal_width_log_lengths,
         lambda: {"init": laws.he(), "depth": 4, "n_nets": 2, "gen": _gen(),
                  "chain_variance": 0.5},
         {"init": OTHER, "depth": COUNT, "n_nets": COUNT, "gen": GENERATOR,
          "chain_variance": OPT_POSITIVE}),
    Spec(log_lengths.layer_factor_deviation,
         lambda: {"log_ratio": 0.1 * _randn(4, 2, 3, seed=11), "kappa": 1.5},
         {"log_ratio": ARRAY, "kappa": POSITIVE},
         allow={("log_ratio", "nonfinite"): "-inf in the last row is a death at the last "
                                            "layer (documented: its term is -1, a finite "
                                            "answer); NaN, +inf and a finite value after "
                                            "-inf raise"}),
    # ------------------------------------------------------------------ logits
    Spec(logits.random_logits, lambda: {"n": 3, "n_classes": 4, "gen": _gen()},
         {"n": COUNT, "n_classes": COUNT, "gen": GENERATOR}),
    # ------------------------------------------------------------------ mlps
    Spec(mlps.one_layer,
         lambda: {"u": _randn(2, 3, seed=12), "m": 4, "n_nets": 3, "gen": _gen(),
                  "variance": 0.5, "mask": "bernoulli", "p": 0.5, "chunk": 8},
         {"u": ARRAY, "m": COUNT, "n_nets": COUNT, "gen": GENERATOR,
          "variance": OPT_POSITIVE, "mask": CHOICE, "p": UNIT, "chunk": COUNT}),
    Spec(mlps.relu_mlp,
         lambda: {"x": _randn(2, 4, seed=13), "widths": [6, 6], "init": laws.he(),
                  "n_nets": 2, "gen": _gen(), "delta": "random"},
         {"x": ARRAY, "widths": INTS, "init": OTHER, "n_nets": COUNT, "gen": GENERATOR,
          "delta": COTANGENT},
         allow={("x", "degenerate"): _DEAD_X}),
    # ------------------------------------------------------------------ monomials
    Spec(monomials.pooled_monomial_samples,
         lambda: {"monomials": [((0, 1), (0, 1)), ((0,), (2,))], "d": 3, "n_samples": 4,
                  "gen": _gen(), "chunk": 3},
         {"monomials": MONOMIALS, "d": COUNT, "n_samples": COUNT, "gen": GENERATOR,
          "chunk": COUNT}),
    # ------------------------------------------------------------------ pairs
    Spec(pairs.projection_gaps,
         lambda: {"m": 5, "cos": 0.5, "samples": 3, "variance": 0.2, "gen": _gen(),
                  "masked": True},
         {"m": COUNT, "cos": COSINE, "samples": COUNT, "variance": POSITIVE,
          "gen": GENERATOR, "masked": BOOL}),
    Spec(pairs.angle_inputs, lambda: {"thetas": [0.1, 1.0, math.pi], "dim": 3},
         {"thetas": SEQUENCE, "dim": COUNT}),
    Spec(pairs.sq_distances_to_first,
         lambda: {"h_unit": torch.nn.functional.normalize(_randn(2, 3, 4, seed=14), dim=-1),
                  "log_norm": _randn(2, 3, seed=15)},
         {"h_unit": ARRAY, "log_norm": ARRAY}),
    # ------------------------------------------------------------------ quasi
    Spec(_varargs(quasi.quasi_uniform, "shape"), lambda: {"shape": [2, 3], "offset": 0.25},
         {"shape": INTS, "offset": REAL}),
    Spec(_varargs(quasi.quasi_normal, "shape"),
         lambda: {"shape": [2, 3], "offset": 0.25, "dtype": F64},
         {"shape": INTS, "offset": REAL, "dtype": DTYPE}),
    # ------------------------------------------------------------------ resnets
    Spec(resnets.linear_readout_moments,
         lambda: {"etas": [0.5, 1.0], "width": 4, "hidden": 3, "m0": 2.0},
         {"etas": SEQUENCE, "width": COUNT, "hidden": COUNT, "m0": POSITIVE}),
    Spec(resnets.linear_readout_relative_variance,
         lambda: {"etas": [0.5, 1.0], "width": 4, "hidden": 3},
         {"etas": SEQUENCE, "width": COUNT, "hidden": COUNT}),
    Spec(resnets.ramp_input, lambda: {"n": 4}, {"n": COUNT}),
    Spec(resnets.relu_layer, lambda: {"init": laws.he()}, {"init": OTHER}),
    Spec(resnets.relu_then_linear,
         lambda: {"hidden": 3, "init_in": laws.he(), "init_out": laws.lecun()},
         {"hidden": COUNT, "init_in": OTHER, "init_out": OTHER}),
    Spec(resnets.residual_log_lengths,
         lambda: {"x": _randn(2, 4, seed=16), "blocks": resnets.relu_layer(laws.he()),
                  "etas": [0.5, 0.5], "n_nets": 2, "gen": _gen(),
                  "observe": lambda h: h.sum(-1)},
         {"x": ARRAY, "blocks": BLOCKS, "etas": SEQUENCE, "n_nets": COUNT, "gen": GENERATOR,
          "observe": OPT_CALLABLE}),
    Spec(resnets.residual_net,
         lambda: {"blocks": [resnets.relu_layer(laws.he()), layers.relu_block()],
                  "etas": [0.5, 0.25]},
         {"blocks": BLOCKS, "etas": SEQUENCE}),
    # ------------------------------------------------------------------ subspace
    Spec(subspace.masked_extremes,
         lambda: {"a": _randn(2, 5, 3, seed=17), "z": _t([1, 0, 1, 1, 0], [0, 1, 1, 0, 1])},
         {"a": ARRAY, "z": ARRAY}),
    Spec(subspace.relu_exact, lambda: {"a": _randn(2, 5, 2, seed=18)}, {"a": ARRAY}),
    Spec(subspace.relu_search,
         lambda: {"a": _randn(2, 5, 3, seed=19), "gen": _gen(), "restarts": 2, "steps": 3,
                  "lr": 0.2},
         {"a": ARRAY, "gen": GENERATOR, "restarts": COUNT, "steps": COUNT,
          "lr": POSITIVE}),
]
