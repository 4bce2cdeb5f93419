"""Property specs of ``eit.train`` (see ``harness.py``).

Every training call gets a tiny problem: a few samples of 4 features (:func:`_data`), nets of
a few units, one epoch. Parameters that the loss closures and Hessian operators differentiate
are made once (:func:`_weights`), so that a loss drawn by the harness for a mutation belongs to
the graph of the parameters of the call it is put into.
"""

from __future__ import annotations

import copy
import functools
import math

import numpy as np
import torch
from hypothesis import strategies as st

from eit.core.seeds import generator
from eit.models.relu_stacked import mlp
from eit.models.wn_init import wn_mlp_model
from eit.models.wn_stacked import stack
from eit.sample.laws import he
from eit.train import (
    batch_rank,
    batched,
    curvature,
    gradient_growth,
    images,
    lanczos,
    runs,
    sgd,
    start_of_training,
    sweep,
)
from properties.harness import (
    ARRAY,
    CHOICE,
    COUNT,
    GENERATOR,
    INDEX,
    INTS,
    OTHER,
    POSITIVE,
    REAL,
    SEQUENCE,
    UNIT,
    Kind,
    Spec,
)

F64 = torch.float64


def _nonfinite(data):
    return data.draw(st.sampled_from([math.nan, math.inf, -math.inf]), label="non-finite")


# --- kinds of this package -------------------------------------------------------------------

#: a bool option
BOOL = Kind("bool", lambda data, valid: {"type": ["1.0", None, 1 + 2j, {"a": 1}, 1]})
#: an optional positive int (``None``: not used)
OPT_COUNT = Kind("optional count", lambda data, valid: {
    "nonfinite": [math.nan], "type": ["3", 2.5, True], "sentinel": [-1, 0]})
#: an optional number in [0, 1] (``None``: not used)
OPT_UNIT = Kind("optional unit", lambda data, valid: {
    "nonfinite": [_nonfinite(data)], "type": ["1.0", 1 + 2j, {"a": 1}],
    "sentinel": [-1, -0.25, 1.5]})
#: an optional callback (``None``: no callback)
OPT_CALLABLE = Kind("optional callable", lambda data, valid: {"type": ["abc", 3]})
#: a floating-point torch dtype
DTYPE = Kind("dtype", lambda data, valid: {"type": ["float64", None, 3, torch.int64]})
#: a device or its name, optional
DEVICE = Kind("device", lambda data, valid: {
    "type": [3, 1 + 2j, {"a": 1}], "sentinel": ["bogus", "cuda:99"]})


def _labels(data, valid):
    """Integer class labels (the -1 sentinel, a label past the classes, wrong dtypes)."""
    past = valid.clone()
    past.view(-1)[0] = 99
    neg = valid.clone()
    neg.view(-1)[-1] = -1
    return {"type": ["abc", None, valid.tolist(), valid.double()],
            "sentinel": [neg, past],
            "degenerate": [torch.zeros_like(valid), valid.reshape(-1)[:1].clone()],
            "shape": [valid[None].clone(), valid.reshape(-1)[:0].clone()]}


#: integer class labels, one per sample
LABELS = Kind("labels", _labels)


def _tensors(data, valid):
    """A list of tensors: its first entry mutated as an ARRAY, and wrong containers."""
    first, rest = valid[0], list(valid[1:])
    out = {label: [[bad, *rest] for bad in values]
           for label, values in ARRAY.mutate(data, first).items()}
    out["type"] += [None, "abc", 3]
    out["degenerate"].append([])
    return out


#: a list of tensors, one per parameter (the vector of a Hessian-vector product)
TENSORS = Kind("tensors", _tensors)
#: the parameters to differentiate: tensors that require gradients
PARAMS = Kind("params", lambda data, valid: {
    "type": [None, "abc", 3, [3.0], [torch.ones(3, dtype=F64)]], "degenerate": [[]]})


def _loss(data, valid):
    """A scalar loss with a graph: NaN or inf carried through the graph, or no scalar."""
    return {"nonfinite": [valid * _nonfinite(data)], "type": [None, "abc", 3.0],
            "shape": [valid.reshape(1).expand(2)]}


LOSS = Kind("loss", _loss)


def _epochs_per_point(data, valid):
    """Per point, the epochs of its runs (int or None)."""
    first = list(valid[0])
    return {"nonfinite": [[[_nonfinite(data), *first[1:]], *valid[1:]]],
            "type": ["abc", None, [[str(e) for e in first], *valid[1:]], [3, 4, 5],
                     [[2.5, *first[1:]], *valid[1:]]],
            "sentinel": [[[-1, *first[1:]], *valid[1:]], [[0, *first[1:]], *valid[1:]],
                         [[10**6, *first[1:]], *valid[1:]]],
            "degenerate": [[], [[] for _ in valid]]}


RUNS = Kind("runs", _epochs_per_point)


def _bools(data, valid):
    """A (seeds, rates) bool array."""
    a = np.asarray(valid)
    return {"type": ["abc", None, a.astype(float)],
            "degenerate": [np.zeros_like(a), np.ones_like(a), a[:1].copy()],
            "shape": [a[None].copy(), a.reshape(-1).copy()]}


BOOLS = Kind("bools", _bools)
#: hashable labels, one per run
RUN_LABELS = Kind("run labels", lambda data, valid: {
    "type": [None, 3, [[1], [2], [1]]], "sentinel": [list(valid)[:-1]], "degenerate": [[]]})


# --- tiny problems ---------------------------------------------------------------------------

def _data(n_train: int = 24, n_test: int = 12, d: int = 4) -> sgd.Digits:
    """A tiny train/test split with the shape of the digits: ``d`` features, 10 classes."""
    g = torch.Generator().manual_seed(0)
    x = torch.rand(n_train + n_test, d, dtype=F64, generator=g)
    y = torch.arange(n_train + n_test) % 10
    dev = sgd.training_device()
    return sgd.Digits(x[:n_train].to(dev), y[:n_train].to(dev), x[n_train:].to(dev),
                      y[n_train:].to(dev))


def _relu_stack(n_nets: int = 2):
    return mlp([6], he(), n_nets=n_nets, gen=generator(0), n_in=4)


@functools.cache
def _wn_built(widths: tuple[int, ...], d_out: int):
    return wn_mlp_model("proposed", d_in=4, widths=list(widths), d_out=d_out,
                        gen=generator(0))


def _wn(widths=(6, 6, 6), d_out=3):
    """A fresh copy of a small weight-normalized MLP (built once: the build is the slow part)."""
    return copy.deepcopy(_wn_built(tuple(widths), d_out))


def _x(*shape):
    return torch.rand(*shape, dtype=F64, generator=torch.Generator().manual_seed(1))


@functools.cache
def _weights() -> tuple[torch.Tensor, torch.Tensor]:
    """Parameters shared by the curvature specs: ``w`` (3,) and a stack ``ws`` (2, 3)."""
    w = torch.tensor([0.5, -1.0, 2.0], dtype=F64, requires_grad=True)
    ws = torch.tensor([[0.5, -1.0, 2.0], [1.0, 0.3, -0.7]], dtype=F64, requires_grad=True)
    return w, ws


def _w_loss() -> torch.Tensor:
    w = _weights()[0]
    return (w ** 4).sum() + w[0] * w[1]


def _ws_loss() -> torch.Tensor:
    ws = _weights()[1]
    return (ws ** 4).sum() + (ws[:, 0] * ws[:, 1]).sum()


def _diagonal(x: torch.Tensor) -> torch.Tensor:
    """A symmetric operator on R^3 (diag(1, -3, 2)), built on the device of its input."""
    return x * torch.tensor([1.0, -3.0, 2.0], dtype=x.dtype, device=x.device)


def _linear():
    torch.manual_seed(0)
    return torch.nn.Linear(4, 10).double()


def _sgd_args():
    model = _linear()
    return {"model": model, "params": list(model.parameters()), "data": _data(), "lr": 0.1,
            "epochs": 1, "batch_size": 8, "gen": generator(0), "momentum": 0.5,
            "warmup_steps": 2, "weight_decay": 0.01, "halve_every": 1, "max_loss": 100.0}


def _train_args():
    return {"model": _relu_stack(), "data": _data(), "lr": 0.1, "epochs": 1, "batch_size": 8,
            "gens": generator(0), "momentum": 0.5, "weight_decay": 0.01, "warmup_steps": 2,
            "halve_every": 1, "max_loss": 100.0, "on_divergence": "freeze", "drop_last": False,
            "target": 0.5, "record": lambda model, epoch: epoch}


def _result(n: int = 3) -> batched.Result:
    return batched.Result(np.ones((n, 2)), np.zeros(n, bool), -np.ones(n, int), np.ones(n),
                          np.arange(float(n)))


def _wn_build(gen):
    return wn_mlp_model("proposed", d_in=4, widths=[4], d_out=10, gen=gen)


DIVERGED = ("a run that diverges has NaN losses from the epoch of its divergence on: "
            "Result.losses documents NaN as 'not run', and diverged/diverged_at_step record "
            "it (the rate 2^+-1000 or the max_loss 2^-1000 makes every run diverge at once)")

SPECS = [
    # --- batch_rank --------------------------------------------------------------------------
    Spec(batch_rank.random_batch_ranks,
         lambda: {"data": _x(6, 3), "batch_size": 3, "n_batches": 2, "gen": generator(0)},
         {"data": ARRAY, "batch_size": COUNT, "n_batches": COUNT, "gen": GENERATOR}),
    Spec(batch_rank.random_batches,
         lambda: {"data": _x(6, 3), "batch_size": 3, "n_batches": 2, "gen": generator(0)},
         {"data": ARRAY, "batch_size": COUNT, "n_batches": COUNT, "gen": GENERATOR}),
    Spec(batch_rank.gram_ranks, lambda: {"batches": _x(2, 3, 4)}, {"batches": ARRAY}),
    Spec(batch_rank.batch_ranks, lambda: {"batches": _x(2, 3, 4)}, {"batches": ARRAY},
         allow={("batches", "degenerate"): "a zero batch has rank 0 and no singular value "
                "near the threshold: its margin is documented as infinite"}),
    # --- batched -----------------------------------------------------------------------------
    Spec(batched.accuracies,
         lambda: {"model": _relu_stack(), "x": _x(12, 4), "y": torch.arange(12) % 10},
         {"model": OTHER, "x": ARRAY, "y": LABELS}),
    Spec(batched.run_losses,
         lambda: {"model": _relu_stack(), "x": _x(2, 6, 4),
                  "y": (torch.arange(12) % 10).reshape(2, 6)},
         {"model": OTHER, "x": ARRAY, "y": LABELS}),
    Spec(batched.train, _train_args,
         {"model": OTHER, "data": OTHER, "lr": POSITIVE, "epochs": COUNT, "batch_size": COUNT,
          "gens": GENERATOR, "momentum": UNIT, "weight_decay": UNIT, "warmup_steps": INDEX,
          "halve_every": OPT_COUNT, "max_loss": POSITIVE, "on_divergence": CHOICE,
          "drop_last": BOOL, "target": OPT_UNIT, "record": OPT_CALLABLE},
         allow={("lr", "extreme"): DIVERGED, ("max_loss", "extreme"): DIVERGED,
                ("max_loss", "nonfinite"): "max_loss = inf is documented: only a non-finite "
                                           "loss is then a divergence (NaN and -inf are "
                                           "refused)"}),
    # --- curvature ---------------------------------------------------------------------------
    Spec(curvature.hessian_spectral_norm,
         lambda: {"loss_fn": _w_loss, "params": [_weights()[0]], "gen": generator(0),
                  "max_iter": 20, "rtol": 1e-4},
         {"loss_fn": OTHER, "params": PARAMS, "gen": GENERATOR, "max_iter": COUNT,
          "rtol": POSITIVE}),
    Spec(curvature.hessian_vector_product,
         lambda: {"loss": _w_loss(), "params": [_weights()[0]], "vec": [_x(3)]},
         {"loss": LOSS, "params": PARAMS, "vec": TENSORS}),
    # --- gradient_growth ---------------------------------------------------------------------
    Spec(gradient_growth.hidden_gradient_growth,
         lambda: {"net": _wn(), "x": _x(16, 4), "y": torch.arange(16) % 3},
         {"net": OTHER, "x": ARRAY, "y": LABELS}),
    # --- images ------------------------------------------------------------------------------
    Spec(images.sample_image, lambda: {"size": 4, "name": "china.jpg"},
         {"size": COUNT, "name": CHOICE}),
    Spec(images.digits_batch, lambda: {"n": 5, "pixels": 4}, {"n": COUNT, "pixels": COUNT}),
    Spec(images.mnist_batch, lambda: {"n": 5, "pixels": 4}, {"n": COUNT, "pixels": COUNT}),
    # --- lanczos -----------------------------------------------------------------------------
    Spec(lanczos.hessian_operator, lambda: {"loss": _ws_loss(), "params": [_weights()[1]]},
         {"loss": LOSS, "params": PARAMS}, finite_result=False),
    Spec(lanczos.lanczos_extreme,
         lambda: {"operator": _diagonal, "batch": 2, "dim": 3, "gen": generator(0),
                  "max_steps": 10, "rtol": 1e-3, "dtype": F64, "device": None},
         {"operator": OTHER, "batch": COUNT, "dim": COUNT, "gen": GENERATOR,
          "max_steps": COUNT, "rtol": POSITIVE, "dtype": DTYPE, "device": DEVICE}),
    Spec(lanczos.loss_hessian_norms,
         lambda: {"model": stack([_wn(widths=(4,), d_out=2) for _ in range(2)]),
                  "x": _x(5, 4), "y": torch.tensor([0, 1, 0, 1, 1]), "gen": generator(0),
                  "max_steps": 4, "rtol": 1e-3},
         {"model": OTHER, "x": ARRAY, "y": LABELS, "gen": GENERATOR, "max_steps": COUNT,
          "rtol": POSITIVE}),
    # --- runs --------------------------------------------------------------------------------
    Spec(runs.first_epoch_below,
         lambda: {"losses": np.array([[2.3, 2.0, 1.0], [2.3, 2.3, 2.3]]), "level": 2.2},
         {"losses": ARRAY, "level": REAL},
         allow={("losses", "nonfinite"): "NaN marks the epochs after a divergence (and those "
                                         "not run) in Result.losses, +inf a diverged loss: "
                                         "neither is below the level, so the run is censored "
                                         "at epochs + 1 (-inf, no loss, is refused)"}),
    Spec(runs.split_runs, lambda: {"result": _result(), "labels": ["a", "b", "a"]},
         {"result": OTHER, "labels": RUN_LABELS}),
    # --- sgd ---------------------------------------------------------------------------------
    Spec(sgd.accuracy, lambda: {"model": _linear(), "x": _x(12, 4), "y": torch.arange(12) % 10},
         {"model": OTHER, "x": ARRAY, "y": LABELS}),
    Spec(sgd.digits, lambda: {"seed": 0, "test_fraction": 0.25, "images": False},
         {"seed": INDEX, "test_fraction": UNIT, "images": BOOL}),
    Spec(sgd.mnist, lambda: {"seed": 0, "test_fraction": 0.25, "images": False,
                             "n_images": 40},
         {"seed": INDEX, "test_fraction": UNIT, "images": BOOL, "n_images": OPT_COUNT}),
    Spec(sgd.mnist_provenance, lambda: {}, {}),
    Spec(sgd.sgd, _sgd_args,
         {"model": OTHER, "params": PARAMS, "data": OTHER, "lr": POSITIVE, "epochs": COUNT,
          "batch_size": COUNT, "gen": GENERATOR, "momentum": UNIT, "warmup_steps": INDEX,
          "weight_decay": UNIT, "halve_every": OPT_COUNT, "max_loss": POSITIVE}),
    Spec(sgd.training_device, lambda: {}, {}),
    # --- start_of_training -------------------------------------------------------------------
    Spec(start_of_training.censored_epochs,
         lambda: {"reached": [3, None, 5], "max_epochs": 10},
         {"reached": INTS, "max_epochs": COUNT}),
    Spec(start_of_training.epoch_summary,
         lambda: {"reached": [3, None, 5, 4], "max_epochs": 10},
         {"reached": INTS, "max_epochs": COUNT}, strict=True),
    Spec(start_of_training.pooled_kendall,
         lambda: {"predictor": [0.0, 1.0, 2.0], "runs": [[1, 2], [3, 4], [5, None]],
                  "max_epochs": 10},
         {"predictor": SEQUENCE, "runs": RUNS, "max_epochs": COUNT}, strict=True),
    Spec(start_of_training.mean_epochs,
         lambda: {"reached": [3, None, 5, 4], "max_epochs": 10},
         {"reached": INTS, "max_epochs": COUNT}, strict=True),
    Spec(start_of_training.rank_association,
         lambda: {"predictor": [0.0, 1.0, 2.0], "runs": [[1, 2], [3, 4], [5, None]],
                  "max_epochs": 10, "alpha": 0.01},
         {"predictor": SEQUENCE, "runs": RUNS, "max_epochs": COUNT, "alpha": UNIT},
         strict=True),
    # --- sweep -------------------------------------------------------------------------------
    Spec(sweep.log_largest_rate,
         lambda: {"survived": np.array([[True, True, False], [False, False, False]]),
                  "lrs": [1e-3, 1e-2, 1e-1]},
         {"survived": BOOLS, "lrs": SEQUENCE}),
    Spec(sweep.lr_sweep,
         lambda: {"build": _wn_build, "data": _data(), "lrs": [0.01, 0.1], "seeds": [0, 1],
                  "stack": stack, "epochs": 1, "batch_size": 8, "dtype": F64},
         {"build": OTHER, "data": OTHER, "lrs": SEQUENCE, "seeds": INTS, "stack": OTHER,
          "epochs": COUNT, "batch_size": COUNT, "dtype": DTYPE}),
]
