"""Property tests for every public function of ``eit`` (issue 25): the harness.

Each public function has a :class:`Spec`: a valid call (a factory of fresh keyword arguments)
and, for every parameter, its *kind*. The kind says which bad inputs the parameter receives:

==========  ==================================================================================
label       what the argument becomes
==========  ==================================================================================
nonfinite   NaN, +inf or -inf (a scalar, or one entry of an array, at a position Hypothesis picks)
type        a wrong type: a string, ``None``, a complex number, a dict
sentinel    the library's "never reached" value -1, zero where a positive value is required
degenerate  a constant array (zero variance, all ties), a single sample (n = 1), zeros
extreme     a finite value scaled by 2**k far outside the usual range (|k| from 800 to 1000
            in float64, 100 to 120 in float32), exactly
shape       one dimension too many, or the array flattened
==========  ==================================================================================

The contract, checked on every mutated call (and on the valid call, which must return a
finite result, so that the spec itself is known to work):

* an exception is a ``ValueError``, ``TypeError`` or ``AllocationTooLarge`` whose message
  names the argument; any other exception (an ``IndexError`` or a ``RuntimeError`` deep in
  torch or SciPy) fails;
* a returned result after ``nonfinite`` must carry the NaN or inf forward (some leaf of the
  result is non-finite), never a finite answer that silently dropped it; with
  ``Spec(strict=True)`` (the verdict helpers) it must raise;
* a returned result after ``type`` fails: a wrong type is always an error;
* a returned result after ``sentinel``, ``degenerate``, ``extreme`` or ``shape`` must be
  finite in every leaf (tensors, arrays, floats, the fields of dataclasses, the items of
  tuples, lists and dicts), unless the spec allows it for that argument and label, with the
  reason (``allow``).

Spec modules (``spec_<subpackage>.py``) define ``SPECS: list[Spec]``.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import torch
from hypothesis import strategies as st

from eit.core.validate import AllocationTooLarge

LABELS = ("nonfinite", "type", "sentinel", "degenerate", "extreme", "shape")
ALLOWED_ERRORS = (ValueError, TypeError, AllocationTooLarge)
WRONG_TYPES = ("1.0", None, 1 + 2j, {"a": 1})


# --- kinds: each maps a valid value to the bad values of each label --------------------------

@dataclass(frozen=True)
class Kind:
    """How a parameter is mutated: ``draw(data, valid) -> {label: [bad values]}``."""

    name: str
    mutate: Callable[[st.DataObject, object], dict[str, list]]


def _nonfinite(data: st.DataObject) -> float:
    return data.draw(st.sampled_from([math.nan, math.inf, -math.inf]), label="non-finite")


def _real(data, valid):
    return {"nonfinite": [_nonfinite(data)], "type": list(WRONG_TYPES)}


def _positive(data, valid):
    out = _real(data, valid)
    out["sentinel"] = [-1, 0, -abs(float(valid))]
    out["extreme"] = [_scaled(data, float(valid), torch.float64)]
    return out


def _nonnegative(data, valid):
    out = _real(data, valid)
    out["sentinel"] = [-1, -abs(float(valid)) - 1e-3]
    out["extreme"] = [_scaled(data, float(valid) or 1.0, torch.float64)]
    return out


def _unit(data, valid):
    """A number in [0, 1] (a probability, a fraction, a correlation's magnitude)."""
    out = _real(data, valid)
    out["sentinel"] = [-1, -0.25, 1.5]
    return out


def _count(data, valid):
    """A positive int: a width, a depth, a number of networks or of samples."""
    return {"nonfinite": [math.nan], "type": ["3", None, 2.5, True],
            "sentinel": [-1, 0]}


def _index(data, valid):
    """A non-negative int: an index, a seed, a number of steps that may be zero."""
    return {"nonfinite": [math.nan], "type": ["3", None, 2.5, True], "sentinel": [-1]}


def _choice(data, valid):
    """One of a fixed set of strings."""
    return {"type": [None, 3], "sentinel": ["bogus"]}


def _sequence(data, valid):
    """A non-empty sequence of finite numbers (widths, scales, depths)."""
    valid = list(valid)
    i = data.draw(st.integers(0, len(valid) - 1), label="position")
    nan = list(valid)
    nan[i] = _nonfinite(data)
    neg = list(valid)
    neg[i] = -1
    return {"nonfinite": [nan], "type": ["abc", None, [str(v) for v in valid]],
            "sentinel": [neg], "degenerate": [[]]}


def _ints(data, valid):
    """A non-empty sequence of positive ints (widths, depths)."""
    out = _sequence(data, valid)
    frac = list(valid)
    frac[0] = 2.5
    out["type"].append(frac)
    zero = list(valid)
    zero[-1] = 0
    out["sentinel"].append(zero)
    return out


def _scaled(data, x, dtype):
    exps = (800, 1000) if dtype == torch.float64 else (100, 120)
    k = data.draw(st.integers(*exps), label="exponent")
    sign = data.draw(st.sampled_from([1, -1]), label="direction")
    return x * 2.0 ** (sign * k)


def _array(data, valid):
    """A floating-point array (torch tensor or NumPy array) of data."""
    is_torch = isinstance(valid, torch.Tensor)
    t = valid if is_torch else torch.as_tensor(np.asarray(valid, dtype=float))
    back = (lambda a: a) if is_torch else (lambda a: a.cpu().numpy())
    flat = t.reshape(-1)
    out: dict[str, list] = {"type": ["abc", None, [["a"]]]}
    if flat.numel() > 0:
        i = data.draw(st.integers(0, flat.numel() - 1), label="position")
        bad = flat.clone()
        bad[i] = _nonfinite(data)
        out["nonfinite"] = [back(bad.reshape(t.shape))]
        exps = (800, 1000) if t.dtype == torch.float64 else (100, 120)
        k = data.draw(st.integers(*exps), label="exponent")
        sign = data.draw(st.sampled_from([1, -1]), label="direction")
        out["extreme"] = [back(torch.ldexp(t, torch.tensor(sign * k, device=t.device)))]
        first = flat[:1].item()
        out["degenerate"] = [back(torch.full_like(t, first or 1.0)), back(torch.zeros_like(t))]
        if t.ndim >= 1 and t.shape[0] > 1:
            out["degenerate"].append(back(t[:1].clone()))
        out["shape"] = [back(t[None].clone()), back(t.reshape(-1).clone())] if t.ndim != 1 \
            else [back(t[None].clone())]
    return out


def _other(data, valid):
    """An object of a library type (a record, a law, a layer description): wrong types only."""
    return {"type": [None, "abc", 3]}


def _generator(data, valid):
    """A ``torch.Generator`` or ``None``."""
    return {"type": ["abc", 3]}


REAL = Kind("real", _real)
POSITIVE = Kind("positive", _positive)
NONNEGATIVE = Kind("nonnegative", _nonnegative)
UNIT = Kind("unit", _unit)
COUNT = Kind("count", _count)
INDEX = Kind("index", _index)
CHOICE = Kind("choice", _choice)
SEQUENCE = Kind("sequence", _sequence)
INTS = Kind("ints", _ints)
ARRAY = Kind("array", _array)
OTHER = Kind("other", _other)
GENERATOR = Kind("generator", _generator)
#: an argument that takes any value (a label, a title, a matplotlib Axes): not mutated
FREE = Kind("free", lambda data, valid: {})


@dataclass
class Spec:
    """The property spec of one public function.

    Parameters
    ----------
    fn : callable
        The function.
    make : callable
        Returns fresh valid keyword arguments (every call: functions may modify their input).
    kinds : dict
        Parameter name -> :class:`Kind`. Every parameter of the signature is listed (or
        has a default and is left at it: list it in ``defaults``).
    defaults : dict
        Parameter -> reason, for parameters with a default that the spec leaves at it, with
        no mutation (for example, a ``device`` argument tested elsewhere).
    strict : bool
        A non-finite input must raise (verdict helpers: a NaN never becomes a verdict).
    allow : dict
        ``(parameter, label) -> reason``: a finite or non-finite result is accepted there
        (for example, a log-length that is ``-inf`` for a network whose input is zero).
    finite_result : bool
        The valid call's result must be finite (False for functions returning text or
        figures only, where there is nothing numeric to check).
    names : dict
        Parameter -> the text its errors must contain, where that is not the parameter's own
        name (the validators of ``eit.core.validate`` name the argument they are given).
    """

    fn: Callable
    make: Callable[[], dict]
    kinds: dict[str, Kind]
    defaults: dict[str, str] = field(default_factory=dict)
    strict: bool = False
    allow: dict[tuple[str, str], str] = field(default_factory=dict)
    finite_result: bool = True
    names: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.fn.__module__}.{self.fn.__qualname__}"


# --- the contract ----------------------------------------------------------------------------

def leaves(x, depth: int = 0):
    """The numeric leaves of a result (tensors, arrays, floats) with their path."""
    if depth > 6:
        return
    if isinstance(x, torch.Tensor):
        if x.is_floating_point() or x.is_complex():
            yield x
    elif isinstance(x, np.ndarray):
        if np.issubdtype(x.dtype, np.floating) or np.issubdtype(x.dtype, np.complexfloating):
            yield x
    elif isinstance(x, (float, np.floating)) and not isinstance(x, bool):
        yield x
    elif dataclasses.is_dataclass(x) and not isinstance(x, type):
        for f in dataclasses.fields(x):
            yield from leaves(getattr(x, f.name), depth + 1)
    elif isinstance(x, Mapping):
        for v in x.values():
            yield from leaves(v, depth + 1)
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from leaves(v, depth + 1)


def all_finite(x) -> bool:
    for leaf in leaves(x):
        if isinstance(leaf, torch.Tensor):
            if not bool(torch.isfinite(leaf).all()):
                return False
        elif not np.all(np.isfinite(leaf)):
            return False
    return True


def any_nonfinite(x) -> bool:
    return not all_finite(x)


def check_call(spec: Spec, arg: str, label: str, kwargs: dict) -> None:
    """Call ``spec.fn(**kwargs)`` with ``kwargs[arg]`` bad (``label``) and check the contract."""
    shown = _show(kwargs[arg])
    named = spec.names.get(arg, arg)
    try:
        result = spec.fn(**kwargs)
    except ALLOWED_ERRORS as e:
        if named not in str(e):
            raise AssertionError(f"{spec.name}: {label} {arg}={shown} raised "
                                 f"{type(e).__name__} without naming {named!r}: {e}") from e
        return
    except Exception as e:   # noqa: BLE001 - any other exception is the defect we look for
        raise AssertionError(f"{spec.name}: {label} {arg}={shown} raised "
                             f"{type(e).__name__} (not a named ValueError/TypeError): "
                             f"{e}") from e
    if (arg, label) in spec.allow:
        return
    if label == "type":
        raise AssertionError(f"{spec.name}: wrong-typed {arg}={shown} returned a result")
    if label == "nonfinite":
        if spec.strict:
            raise AssertionError(f"{spec.name}: non-finite {arg}={shown} returned a result "
                                 "(a verdict helper must refuse it)")
        if not any_nonfinite(result):
            raise AssertionError(f"{spec.name}: non-finite {arg}={shown} gave a finite "
                                 "result (the NaN or inf was silently dropped)")
        return
    if not all_finite(result):
        raise AssertionError(f"{spec.name}: {label} {arg}={shown} gave a non-finite result "
                             "without an error")


def _show(value) -> str:
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return f"<{type(value).__name__} shape {tuple(value.shape)}>"
    text = repr(value)
    return text if len(text) < 60 else text[:57] + "..."


def run_property(spec: Spec, arg: str, data: st.DataObject) -> None:
    """One Hypothesis example: every label of ``arg``'s kind, each with its drawn value."""
    valid = spec.make()[arg]
    for label, values in spec.kinds[arg].mutate(data, valid).items():
        for bad in values:
            kwargs = spec.make()
            kwargs[arg] = bad
            check_call(spec, arg, label, kwargs)


def check_valid(spec: Spec) -> None:
    """The valid call works (and its result is finite where ``finite_result``)."""
    result = spec.fn(**spec.make())
    if spec.finite_result:
        assert all_finite(result), f"{spec.name}: the valid call gave a non-finite result"


def unlisted(spec: Spec) -> list[str]:
    """Parameters of the signature that the spec neither mutates nor leaves at a default."""
    params = inspect.signature(spec.fn).parameters
    out = []
    for name, p in params.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if name not in spec.kinds and name not in spec.defaults:
            out.append(name)
    return out
