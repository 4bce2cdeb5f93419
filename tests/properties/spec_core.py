"""Property specs of ``eit.core`` (see ``harness.py``).

The validators of :mod:`eit.core.validate` name the argument they are given (``name``): each
spec passes a distinctive name (``the_arg``) and says so in ``names``.

The store (:mod:`eit.core.store`) writes only into a throw-away book root: its writing and
reading functions are called inside :func:`_in_book`, which points ``EIT_BOOK_ROOT`` (and
``EIT_SCALE``) at a temporary book for the duration of the call and restores them after it, so
that nothing is ever written into the checkout's ``data/`` and no other test sees the change.
"""

from __future__ import annotations

import functools
import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import strategies as st

from eit.core import (
    benchmarks,
    device,
    dispatch_counts,
    guard,
    paths,
    provenance,
    scaling,
    seeds,
    store,
    validate,
)
from properties.harness import (
    ARRAY,
    CHOICE,
    COUNT,
    FREE,
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


def _nonfinite(data):
    return data.draw(st.sampled_from([math.nan, math.inf, -math.inf]), label="non-finite")


# --- kinds of this package -------------------------------------------------------------------

#: a bool option: a truthy or falsy object of another type is refused, not read as a bool
BOOL = Kind("bool", lambda data, valid: {"type": ["1.0", None, 1 + 2j, {"a": 1}, 1]})
#: an optional int >= 0 (``None`` is a valid value: not a wrong type here)
OPT_INDEX = Kind("optional index", lambda data, valid: {
    "nonfinite": [math.nan], "type": ["3", 2.5, True], "sentinel": [-1]})
#: an optional positive int (``None``: not given)
OPT_COUNT = Kind("optional count", lambda data, valid: {
    "nonfinite": [math.nan], "type": ["3", 2.5, True], "sentinel": [-1, 0]})
#: an optional real bound (``None``: no bound)
OPT_REAL = Kind("optional real", lambda data, valid: {
    "nonfinite": [_nonfinite(data)], "type": ["1.0", 1 + 2j, {"a": 1}]})
#: a device or its name, optional
DEVICE = Kind("device", lambda data, valid: {
    "type": [3, 1 + 2j, {"a": 1}], "sentinel": ["bogus", "cuda:99"]})
#: a floating-point torch dtype
DTYPE = Kind("dtype", lambda data, valid: {"type": ["float64", None, 3, torch.int64]})
#: the options of a choice: a non-empty collection of strings
OPTIONS = Kind("options", lambda data, valid: {
    "type": [None, 3, "fan_in", ["fan_in", 3]], "degenerate": [[]]})
#: a file or folder path (``None``: the book's default)
PATH = Kind("path", lambda data, valid: {"type": [3, 1 + 2j, {"a": 1}]})
#: a non-empty text (a command, a chapter's path)
TEXT = Kind("text", lambda data, valid: {"type": [None, 3, 1 + 2j], "sentinel": ["", "  "]})
#: an optional text
OPT_TEXT = Kind("optional text", lambda data, valid: {"type": [3, 1 + 2j, {"a": 1}]})
#: an optional choice among strings (``None``: no expectation)
OPT_CHOICE = Kind("optional choice", lambda data, valid: {"type": [3, 1 + 2j],
                                                          "sentinel": ["bogus"]})
#: the name of a stored result: a lowercase relative path
RESULT_NAME = Kind("result name", lambda data, valid: {
    "type": [None, 3, 1 + 2j], "sentinel": ["../escape", "Upper/Case", "", "a//b", "/abs"]})
#: JSON facts stored with a result
META = Kind("meta", lambda data, valid: {
    "nonfinite": [{"w": _nonfinite(data)}], "type": ["abc", 3, [1], {1: "a"}]})
#: integer class labels
LABELS = Kind("labels", lambda data, valid: {
    "type": ["abc", None, [0, 1], valid.double()],
    "sentinel": [torch.cat([valid[:-1], torch.tensor([-1])]),
                 torch.cat([valid[:-1], torch.tensor([99])])],
    "degenerate": [torch.zeros_like(valid), valid[:0]],
    "shape": [valid[None].clone()]})
#: a shape (a tuple of sizes), optional
SHAPE = Kind("shape", lambda data, valid: {"type": ["abc", 3, (2.5,)], "sentinel": [(-1,)]})


def _named_arrays(data, valid):
    """A dict of named arrays: its first array mutated as an ARRAY, and wrong containers."""
    key, first = next(iter(valid.items()))
    out = {label: [{**valid, key: bad} for bad in values]
           for label, values in ARRAY.mutate(data, first).items()}
    out["type"] += [None, "abc", 3, [1.0], {1: first}]
    out.setdefault("degenerate", []).append({})
    return out


NAMED_ARRAYS = Kind("named arrays", _named_arrays)


# --- a throw-away book for the store ---------------------------------------------------------

@functools.cache
def _book() -> Path:
    """A book root (``_toc.yml``, ``chapters/``, ``data/``) removed when the process ends."""
    holder = tempfile.TemporaryDirectory(prefix="eit-spec-book-")
    _book.holder = holder                       # kept alive until the interpreter exits
    root = Path(holder.name)
    (root / "chapters").mkdir()
    (root / "_toc.yml").write_text("root: intro\n")
    (root / "data").mkdir()
    return root


_ENV = ("EIT_BOOK_ROOT", "EIT_SCALE")


def _in_book(fn, scale: str = "paper"):
    """``fn`` called with the temporary book as ``EIT_BOOK_ROOT`` (and ``EIT_SCALE=scale``),
    the environment restored after the call: the store writes nowhere else."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        saved = {k: os.environ.get(k) for k in _ENV}
        os.environ.update(EIT_BOOK_ROOT=str(_book()), EIT_SCALE=scale)
        try:
            return fn(*args, **kwargs)
        finally:
            for k, value in saved.items():
                if value is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = value
    return call


@functools.cache
def _stored() -> str:
    """A result saved once in the temporary book (seed 1, command 'cmd', paper scale)."""
    _in_book(store.save_result)("part/stored", {"x": np.arange(3.0)}, seed=1, command="cmd")
    return "part/stored"


def _bench_rows(workload="w", seconds=(1.0, 2.0, 3.0)):
    return [dict(workload=workload, size="s", method="vmap", nets=2, seconds=list(seconds),
                 median=float(np.median(seconds)), samples=100, normals=1000,
                 other_random=0)]


@functools.cache
def _bench_file(kind: str) -> str:
    path = _book() / f"bench-{kind}.json"
    protocol = {"threads": 1, "repeats": 3}
    if kind == "cuda":
        protocol["total_wall_s"] = 1.0
    path.write_text(json.dumps({"provenance": {"device": "cpu"}, "protocol": protocol,
                                "rows": _bench_rows()}))
    return str(path)


def _op_count_file() -> str:
    path = _book() / "op_counts.json"
    path.write_text(json.dumps({"rows": [
        {"engine": "e", "cpu_launches": 14.0, "device_launches": 4.0, "vmap_launches": 5.0,
         "device_syncs": 0.0}]}))
    return str(path)


def _guard_call(ready: bool, what: str):
    """Skip the valid call of an irreversible guard function unless it is a no-op already."""
    if not ready:
        pytest.skip(f"guard.{what}() changes the process for good (it is idempotent once "
                    "done): called only where the guard is already on (EIT_GUARD=1); "
                    "tests/test_device_guard.py runs it in fresh processes")
    return {}


def _registered() -> bool:
    return torch._C._get_privateuse1_backend_name() == guard.NAME


def _x(*shape):
    return torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0))


#: the ``name`` of a validator is FREE: it is the label its messages carry, any text; a
#: distinctive one makes the check that the message names the argument a real check
NAME = "the_arg"
VALUE = {"value": NAME}

SPECS = [
    # --- validate ----------------------------------------------------------------------------
    Spec(validate.positive_int, lambda: {"name": NAME, "value": 3},
         {"name": FREE, "value": COUNT}, names=VALUE),
    Spec(validate.positive_float, lambda: {"name": NAME, "value": 0.5},
         {"name": FREE, "value": POSITIVE}, names=VALUE),
    Spec(validate.in_interval,
         lambda: {"name": NAME, "value": 0.5, "lo": 0.0, "hi": 1.0, "closed_hi": False},
         {"name": FREE, "value": UNIT, "lo": REAL, "hi": REAL, "closed_hi": BOOL},
         allow={("lo", "nonfinite"): "lo = -inf is a half-line (-inf, hi): the value is "
                                     "checked against it and returned as it is",
                ("hi", "nonfinite"): "hi = inf is a half-line [lo, inf), how eit.exact asks "
                                     "for eps >= 0: the value is returned as it is"},
         names=VALUE),
    Spec(validate.widths, lambda: {"name": NAME, "value": [3, 4, 5]},
         {"name": FREE, "value": INTS}, names=VALUE),
    Spec(validate.tensor, lambda: {"name": NAME, "value": _x(3, 4), "ndim": 2},
         {"name": FREE, "value": ARRAY, "ndim": INDEX}, names=VALUE),
    Spec(validate.available_memory, lambda: {"where": "cpu"}, {"where": DEVICE}),
    Spec(validate.memory,
         lambda: {"name": "the_sizes", "n_bytes": 8000.0, "where": "cpu", "fraction": 0.5},
         {"name": FREE, "n_bytes": NONNEGATIVE, "where": DEVICE, "fraction": UNIT},
         names={"n_bytes": "the_sizes"}),
    Spec(validate.scales, lambda: {"name": NAME, "value": [0.5, 0.0, 2.0], "allow_empty": False},
         {"name": FREE, "value": SEQUENCE, "allow_empty": BOOL}, names=VALUE),
    Spec(validate.finite_real, lambda: {"name": NAME, "value": 2.0},
         {"name": FREE, "value": REAL}, names=VALUE),
    Spec(validate.per_layer,
         lambda: {"name": NAME, "value": [0.5, 1.0, 2.0], "length": 3, "allow_longer": False},
         {"name": FREE, "value": SEQUENCE, "length": COUNT, "allow_longer": BOOL},
         names=VALUE),
    Spec(validate.per_network,
         lambda: {"name": NAME, "value": _x(2, 3), "n_nets": 4, "square": False},
         {"name": FREE, "value": ARRAY, "n_nets": COUNT, "square": BOOL}, names=VALUE),
    Spec(validate.nonzero_vector, lambda: {"name": NAME, "value": _x(4)},
         {"name": FREE, "value": ARRAY}, names=VALUE),
    Spec(validate.nonnegative_int, lambda: {"name": NAME, "value": 2},
         {"name": FREE, "value": INDEX}, names=VALUE),
    Spec(validate.nonnegative_float, lambda: {"name": NAME, "value": 0.5},
         {"name": FREE, "value": NONNEGATIVE}, names=VALUE),
    Spec(validate.probability, lambda: {"name": NAME, "value": 0.25, "open_ends": False},
         {"name": FREE, "value": UNIT, "open_ends": BOOL}, names=VALUE),
    Spec(validate.choice,
         lambda: {"name": NAME, "value": "fan_in", "options": ("fan_in", "fan_out")},
         {"name": FREE, "value": CHOICE, "options": OPTIONS}, names=VALUE),
    Spec(validate.generator,
         lambda: {"name": NAME, "value": seeds.generator(0), "optional": True},
         {"name": FREE, "value": GENERATOR, "optional": BOOL}, names=VALUE),
    Spec(validate.array,
         lambda: {"name": NAME, "value": _x(3, 4).numpy(), "ndim": 2, "finite": True,
                  "min_size": 1},
         {"name": FREE, "value": ARRAY, "ndim": OPT_INDEX, "finite": BOOL, "min_size": INDEX},
         names=VALUE),
    Spec(validate.real_sequence,
         lambda: {"name": NAME, "value": [0.5, -0.2, 1.0], "min_len": 1, "lo": -1.0,
                  "positive": False},
         {"name": FREE, "value": SEQUENCE, "min_len": INDEX, "lo": OPT_REAL,
          "positive": BOOL}, names=VALUE),
    Spec(validate.labels,
         lambda: {"name": NAME, "value": torch.tensor([0, 2, 1, 2, 0]), "shape": (5,),
                  "n_classes": 3},
         {"name": FREE, "value": LABELS, "shape": SHAPE, "n_classes": OPT_COUNT}, names=VALUE),
    Spec(validate.torch_device, lambda: {"name": NAME, "value": "cpu", "optional": True},
         {"name": FREE, "value": DEVICE, "optional": BOOL}, names=VALUE),
    # --- scaling, seeds, device, paths -------------------------------------------------------
    Spec(scaling.rescaled, lambda: {"x": _x(4, 3), "start_dim": 1},
         {"x": ARRAY, "start_dim": INDEX}),
    # --- provenance (outside a notebook nothing is registered or required) ------------------
    # FREE: register and made_in take any object (a generator, stored data, a token)
    Spec(provenance.register, lambda: {"obj": object()}, {"obj": FREE}, finite_result=False),
    Spec(provenance.made_in, lambda: {"obj": object()}, {"obj": FREE}, finite_result=False),
    Spec(provenance.snapshot, lambda: {}, {}, finite_result=False),
    Spec(provenance.measured, lambda: {"what": "timings"}, {"what": TEXT},
         finite_result=False),
    # FREE: drawn_by is what a check names as its sources; with snap=None (outside a
    # notebook) nothing is checked, whatever it is (tests/test_provenance.py checks them)
    Spec(provenance.check_drawn_after, lambda: {"snap": None, "drawn_by": None,
                                                "required": True},
         {"snap": OPT_TEXT, "drawn_by": FREE, "required": BOOL}, finite_result=False),
    Spec(seeds.seed_offset, lambda: {}, {}),
    Spec(seeds.derive, lambda: {"seed": 3}, {"seed": INDEX}),
    Spec(seeds.generator, lambda: {"seed": 3}, {"seed": INDEX}, finite_result=False),
    Spec(seeds.numpy_rng, lambda: {"seed": 3}, {"seed": INDEX}),
    Spec(device.scale, lambda: {}, {}),
    Spec(device.at_scale, lambda: {"default": 10, "paper": 1000, "smoke": 2},
         # FREE: at_scale returns one of its three arguments untouched, whatever it is (a
         # size, a tuple of depths, a list of rates): there is no wrong value
         {"default": FREE, "paper": FREE, "smoke": FREE}),
    Spec(device.paper_path, lambda: {}, {}),
    Spec(device.device, lambda: {}, {}),
    Spec(device.randn, lambda: {"gen": seeds.generator(0), "dtype": torch.float64},
         {"gen": GENERATOR, "dtype": DTYPE}),
    Spec(device.rand, lambda: {"gen": seeds.generator(0), "dtype": torch.float64},
         {"gen": GENERATOR, "dtype": DTYPE}),
    Spec(device.description, lambda: {}, {}),
    Spec(paths.book_root, lambda: {}, {}),
    Spec(paths.data_dir, lambda: {}, {}),
    # --- guard: register() and enable() are irreversible for the process ---------------------
    Spec(guard.register, lambda: _guard_call(_registered(), "register"), {}),
    Spec(guard.enable, lambda: _guard_call(guard.enabled(), "enable"), {}),
    Spec(guard.enabled, lambda: {}, {}),
    # --- dispatch counts ---------------------------------------------------------------------
    Spec(dispatch_counts.count_ops, lambda: {}, {}),
    Spec(dispatch_counts.per_layer,
         lambda: {"run": lambda depth: torch.ones(2).mul(depth), "depths": [1, 2]},
         {"run": OTHER, "depths": INTS}),
    # --- benchmarks --------------------------------------------------------------------------
    Spec(benchmarks.load, lambda: {"path": _bench_file("cpu")}, {"path": PATH}),
    Spec(benchmarks.load_cuda, lambda: {"path": _bench_file("cuda")}, {"path": PATH}),
    Spec(benchmarks.fmt, lambda: {"x": 12345.6}, {"x": REAL}),
    Spec(benchmarks.launch_rows, lambda: {"path": _op_count_file()}, {"path": PATH}),
    Spec(benchmarks.side_by_side_rows,
         lambda: {"cpu": benchmarks.Benchmark({}, {}, _bench_rows()),
                  "cuda": benchmarks.Benchmark({}, {}, _bench_rows(seconds=(0.01,))),
                  "workload": "w"},
         {"cpu": OTHER, "cuda": OTHER, "workload": CHOICE}),
    # --- store: inside a temporary book (see _in_book) ---------------------------------------
    Spec(_in_book(store.save_result),
         lambda: {"name": "part/result", "arrays": {"x": np.arange(3.0), "n": np.arange(2)},
                  "seed": 1, "command": "cmd", "meta": {"width": 10}, "replace": False},
         {"name": RESULT_NAME, "arrays": NAMED_ARRAYS, "seed": INDEX, "command": TEXT,
          "meta": META, "replace": BOOL}, strict=True),
    Spec(_in_book(store.load_result),
         lambda: {"name": _stored(), "scale": "paper", "seed": 1, "command": "cmd"},
         {"name": RESULT_NAME, "scale": OPT_CHOICE, "seed": OPT_INDEX, "command": OPT_TEXT},
         strict=True),
    Spec(_in_book(store.has_result), lambda: {"name": _stored()}, {"name": RESULT_NAME}),
    Spec(store.result_dir, lambda: {}, {}),
    Spec(_in_book(store.verify), lambda: {"root": str(_book() / "data")}, {"root": PATH}),
    Spec(_in_book(store.update_manifest), lambda: {"root": str(_book() / "data")},
         {"root": PATH}),
    Spec(_in_book(store.paper_scale_result),
         lambda: {"name": "part/paper", "arrays": {"x": np.arange(3.0)}, "seed": 2,
                  "chapter": "part/01-x.md", "meta": {"width": 10}},
         {"name": RESULT_NAME, "arrays": NAMED_ARRAYS, "seed": INDEX, "chapter": TEXT,
          "meta": META}, strict=True),
]
