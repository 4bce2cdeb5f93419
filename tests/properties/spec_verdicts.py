"""Property specs of ``eit.verdicts`` (see ``harness.py``).

Custom kinds for the arguments that are library objects or records:

* ``TEXT``: a string (a bibliography key, a claim, an explanation): wrong types, and the empty
  or blank string as the sentinel (refused where a text is required, kept where it may be
  empty);
* ``EVIDENCE``: an :class:`~eit.verdicts.stats.Estimate` (or a sequence of them): wrong types
  (a bare float among them), the degenerate estimate of one sample with standard error 0 (and
  the empty sequence), and the same estimate scaled by ``2**k``. An Estimate holding a NaN
  cannot be built (its constructor refuses it), so there is no non-finite mutation;
* ``VALUES``: the ``values`` mapping of a verdict: a bare NaN and a SymPy NaN as non-finite
  entries, wrong types of the mapping, of a key and of an entry;
* ``SYMPY``: a formula (a SymPy expression, a number or a text): NaN, complex infinity and
  float infinities, and values that are no formula;
* record kinds (a value, verdict, table record as stored in a notebook's metadata): a NaN in
  a stored number, wrong types of the record and of its fields, missing fields.

``detects_positive`` and ``positive`` take ``*estimates``, which the harness (keyword calls)
cannot pass: their specs call them through a wrapper with the same name that spreads the
keyword ``estimates``. The pytest hooks of ``nbval_plugin`` get minimal fakes (a parser,
a config, a report and a terminal reporter that record what they are given); the hooks that
touch the plugin's store on the ``pytest`` module are wrapped so that the store is restored
after each call (the running session's own summary is not changed).
"""

from __future__ import annotations

import atexit
import functools
import inspect
import json
import math
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import strategies as st

from eit.verdicts import (
    checks,
    compare,
    criteria,
    fits,
    ledger,
    length_moments,
    nbval_plugin,
    norm_ratios,
    records,
    stability,
    stats,
    tails,
)
from eit.verdicts.records import MIME_VERDICT
from eit.verdicts.stats import Estimate, Proportion, Statistic
from properties.harness import (
    ARRAY,
    CHOICE,
    COUNT,
    INDEX,
    INTS,
    NONNEGATIVE,
    POSITIVE,
    REAL,
    SEQUENCE,
    UNIT,
    Kind,
    Spec,
)

HEAD = {"paper": "key", "claim": "Lemma 1", "statement": "E X = 1", "scope": "paper"}


# --- custom kinds ---------------------------------------------------------------------------


def _CPU_GEN() -> torch.Generator:   # noqa: N802 - data drawn on the host, whatever device()
    """A host generator for the specs' data (``seeds.generator`` lives on the compute device,
    a simulated one under the device guard)."""
    return torch.Generator().manual_seed(0)

def _optional(kind: Kind) -> Kind:
    """``kind`` for a parameter where None is a documented valid value (not a wrong type)."""
    def mutate(data, valid):
        out = kind.mutate(data, valid)
        out["type"] = [x for x in out.get("type", []) if x is not None]
        return out
    return Kind(f"optional {kind.name}", mutate)


def _text(data, valid):
    return {"type": [None, 3, {"a": 1}, b"key"], "sentinel": ["", "   "]}


def _bool(data, valid):
    return {"nonfinite": [math.nan], "type": ["True", None, 1, 1.0, {"a": 1}]}


def _labels(data, valid):
    return {"type": [3, "ab", {"a": 1}, 1 + 2j], "degenerate": [[]]}


def _values(data, valid):
    return {"nonfinite": [{"x": math.nan}, {"x": sp.nan}, {"x": np.float64(math.inf)}],
            "type": [3, "abc", [1.0], {"x": object()}, {3: 1}, {"x": 1.5}]}


def _scale(data) -> float:
    k = data.draw(st.integers(800, 1000), label="exponent")
    return 2.0 ** (data.draw(st.sampled_from([1, -1]), label="direction") * k)


def _one_estimate(e: Estimate, c: float) -> Estimate:
    return Estimate(e.value * c, e.se * c, e.n, e.df)


def _evidence(data, valid):
    c = _scale(data)
    if isinstance(valid, Estimate):
        return {"type": [None, "abc", 3, 1.0, [1.0], {"a": 1}],
                "degenerate": [Estimate(valid.value, 0.0, 1)],
                "extreme": [_one_estimate(valid, c)]}
    valid = list(valid)
    return {"type": [None, "abc", 3, [1.0] * len(valid), [*valid[:-1], "x"]],
            "degenerate": [[], [Estimate(e.value, 0.0, 1) for e in valid]],
            "extreme": [[_one_estimate(e, c) for e in valid]]}


def _proportion(data, valid):
    return {"type": [None, "abc", 3, 0.3, Estimate(0.3, 0.1, 10)],
            "degenerate": [Proportion(0, 1), Proportion(1, 1)]}


def _instance(*bad):
    """An object of a library type: wrong types, and the wrong library objects ``bad``."""
    return lambda data, valid: {"type": [None, "abc", 3, *bad]}


def _sympy(data, valid):
    return {"nonfinite": [sp.nan, sp.zoo, math.nan, math.inf, np.float64(-math.inf)],
            "type": [None, {"a": 1}, "1 +* x", b"x", object(), [1, 2], True]}


def _mask(data, valid):
    return {"nonfinite": [np.array([1.0, math.nan])],
            "type": [None, "abc", [1.0, 0.0], torch.ones(3), {"a": True}],
            "degenerate": [torch.zeros(0, dtype=torch.bool), torch.ones(4, dtype=torch.bool)],
            "shape": [valid.reshape(2, 2)]}


def _variances(data, valid):
    return {"nonfinite": [{"a": [0.0, math.nan]}, {"a": [-math.inf]}],
            "type": [None, "abc", 3, {"a": "0.5"}, {"a": [None]}, {"a": 0.5}],
            "sentinel": [{"a": [0.0, -1.0]}], "degenerate": [{}, {"a": []}]}


def _profiles(data, valid):
    return {"type": [None, "abc", 3, [3], [valid[0], "x"]], "degenerate": [[]]}


def _value_record(data, valid):
    return {"nonfinite": [{**valid, "value": math.nan}, {**valid, "se": math.inf}],
            "type": [None, "abc", 3, [1], {**valid, "value": "abc"}, {**valid, "se": None},
                     {**valid, "type": 3}],
            "sentinel": [{**valid, "type": "bogus"}],
            "degenerate": [{}, {"type": "estimate"}, {**valid, "se": 0.0}]}


def _nan_in_values(rec: dict) -> dict:
    vals = [dict(v) for v in rec["values"]]
    vals[0]["value"] = math.nan
    return {**rec, "values": vals}


def _verdict_record(data, valid):
    return {"nonfinite": [_nan_in_values(valid)],
            "type": [None, "abc", 3, {**valid, "values": 3}, {**valid, "values": ["abc"]},
                     {**valid, "test": "abc"}, {**valid, "criterion": 3}],
            "degenerate": [{}, {**valid, "values": []}]}


def _table_record(data, valid):
    rows = [list(r) for r in valid["rows"]]
    rows[0][1] = {**rows[0][1], "value": math.nan}
    return {"nonfinite": [{**valid, "rows": rows}],
            "type": [None, "abc", 3, {**valid, "rows": 3}, {**valid, "rows": ["abc"]},
                     {**valid, "rows": [[3, 4]]}],
            "degenerate": [{}, {**valid, "rows": []}]}


def _verdict_records(data, valid):
    rec = valid[0]
    return {"nonfinite": [[_nan_in_values(rec)]],
            "type": [None, "abc", 3, [3], [rec, "abc"], {"a": rec}],
            "degenerate": [[], [{}]]}


def _outputs(data, valid):
    out = valid[0]
    nan = {**out, "metadata": {MIME_VERDICT: _nan_in_values(out["metadata"][MIME_VERDICT])}}
    return {"nonfinite": [[nan]],
            "type": [None, "abc", 3, [3], [{**out, "metadata": 3}],
                     [{**out, "metadata": {MIME_VERDICT: "abc"}}]],
            "degenerate": [[], [{}]]}


def _record_list(data, valid):
    rec = valid[0]
    return {"type": [None, "abc", 3, [3], [{**rec, "kind": None}], {"a": rec}],
            "sentinel": [[{**rec, "outcome": "bogus"}], [{**rec, "kind": "bogus"}]],
            "degenerate": [[], [{}]]}


def _ledger_record(data, valid):
    return {"type": [None, "abc", 3, [valid], {**valid, "outcome": 3}],
            "sentinel": [{**valid, "schema": 1}, {**valid, "scope": "bogus"}],
            "degenerate": [{}, {"schema": 2}]}


def _root(data, valid):
    return {"type": [3, {"a": 1}, 1 + 2j, b"/tmp"],
            "sentinel": [Path(valid) / "no such book", Path(valid) / "chapters"]}


def _argv(data, valid):
    return {"type": [3, "abc", [3], {"a": 1}]}


def _recordable(data, valid):
    c = _scale(data)
    return {"nonfinite": [math.nan, np.float64(math.inf), sp.nan, sp.zoo, np.float32("nan")],
            "type": [None, 1 + 2j, {"a": 1}, object(), [1], 1.5],
            "degenerate": [Estimate(1.0, 0.0, 1)], "extreme": [_one_estimate(valid, c)]}


def _fake(*attrs):
    """Wrong types and objects lacking the attributes a pytest object must have."""
    return lambda data, valid: {"type": [None, "abc", 3, SimpleNamespace()],
                                "sentinel": [SimpleNamespace(**{a: None for a in attrs})]}


TEXT = Kind("text", _text)
BOOL = Kind("bool", _bool)
LABELS = Kind("labels", _labels)
VALUES = Kind("values", _values)
EVIDENCE = Kind("evidence", _evidence)
PROPORTION = Kind("proportion", _proportion)
SYMPY = Kind("sympy", _sympy)
MASK = Kind("mask", _mask)
VARIANCES = Kind("variances", _variances)
PROFILES = Kind("profiles", _profiles)
VALUE_RECORD = Kind("value record", _value_record)
VERDICT_RECORD = Kind("verdict record", _verdict_record)
TABLE_RECORD = Kind("table record", _table_record)
VERDICT_RECORDS = Kind("verdict records", _verdict_records)
OUTPUTS = Kind("outputs", _outputs)
RECORD_LIST = Kind("record list", _record_list)
LEDGER_RECORD = Kind("ledger record", _ledger_record)
ROOT = Kind("root", _root)
ARGV = Kind("argv", _argv)
RECORDABLE = Kind("recordable", _recordable)
OPTIONAL_COUNT = _optional(COUNT)
OPTIONAL_POSITIVE = _optional(POSITIVE)
OPTIONAL_SEQUENCE = _optional(SEQUENCE)
STR = Kind("str", lambda data, valid: {"type": [None, 3, b"x", {"a": 1}]})


def _instance_kind(name, *bad):
    return Kind(name, _instance(*bad))


AGREEMENT = _instance_kind("agreement", criteria.Inequality())
INEQUALITY = _instance_kind("inequality", criteria.Agreement(margin=0.1))
DETECTION = _instance_kind("detection", criteria.Inequality())
STATISTIC = _instance_kind("statistic", 0.2, Estimate(0.2, 0.1, 10))
PROPORTION_ONLY = _instance_kind("proportion object", 0.3, Estimate(0.3, 0.1, 10))


# --- valid calls ----------------------------------------------------------------------------

def _est(value, se=0.01, n=100):
    return Estimate(value, se, n, df=n - 1)


def _agree_args():
    return {**HEAD, "theory": [1.0, 2.0], "estimate": [_est(1.0), _est(2.01)],
            "criterion": criteria.Agreement(margin=0.05, relative=True),
            "labels": ["a", "b"], "corrected": [1.0, 2.0], "correction": "the erratum",
            "values": {"n": 100}, "kind": "test"}


def _one_sided_args():
    return {**HEAD, "estimate": _est(1.5, 0.1, 50), "bound": 2.0,
            "criterion": criteria.Inequality(), "labels": ["pt"], "kind": "test",
            "values": {"width": 10}}


def _verdict_record_value():
    return checks.at_least(**{**_one_sided_args(), "bound": 1.0}).record()


def _table_record_value():
    return records.Table(["width", "E[M]"], [[10, _est(1.02)], [20, _est(1.01)]]).record()


def _output(rec):
    return {"output_type": "display_data", "data": {"text/plain": "verdict"},
            "metadata": {MIME_VERDICT: rec}}


_BOOK: dict[str, Path] = {}


def _book() -> Path:
    """A tiny book (one chapter notebook with two verdicts), made once, removed at exit."""
    if "root" not in _BOOK:
        root = Path(tempfile.mkdtemp(prefix="eit-ledger-"))
        atexit.register(shutil.rmtree, root, True)
        chapter = root / "chapters" / "part-one"
        chapter.mkdir(parents=True)
        recs = [_verdict_record_value(),
                checks.holds(**{k: v for k, v in HEAD.items()}, holds=True,
                             evidence="computed").record()]
        nb = {"cells": [{"cell_type": "markdown", "source": ["# A chapter\n"], "metadata": {}},
                        {"cell_type": "code", "source": "x", "metadata": {},
                         "outputs": [_output(r) for r in recs]}],
              "metadata": {"eit": {"wall_time_s": 1.0, "device": "cpu"}},
              "nbformat": 4, "nbformat_minor": 5}
        (chapter / "01-chapter.ipynb").write_text(json.dumps(nb))
        _BOOK["root"] = root
    return _BOOK["root"]


def _out_dir() -> Path:
    if "out" not in _BOOK:
        out = Path(tempfile.mkdtemp(prefix="eit-ledger-out-"))
        atexit.register(shutil.rmtree, out, True)
        _BOOK["out"] = out
    return _BOOK["out"]


# --- wrappers for what the harness cannot pass ------------------------------------------------

def _spread(fn):
    """``fn(*estimates, **rest)`` called as ``fn(estimates=..., **rest)`` (same name)."""
    params = inspect.signature(fn).parameters.values()
    lead = [p.name for p in params if p.kind == p.POSITIONAL_OR_KEYWORD]

    @functools.wraps(fn)
    def call(*, estimates, **rest):
        first = [rest.pop(name) for name in lead]
        if isinstance(estimates, (list, tuple)):
            return fn(*first, *estimates, **rest)
        return fn(*first, estimates, **rest)
    return call


def _isolated(fn):
    """Call a hook with the plugin's store on the ``pytest`` module saved and restored."""
    @functools.wraps(fn)
    def call(**kwargs):
        had = hasattr(pytest, "_eit_tolerated")
        saved = getattr(pytest, "_eit_tolerated", None)
        pytest._eit_tolerated = [("tests/x.ipynb::Cell 1", ("cell 1", ["a line"] * 9))]
        try:
            return fn(**kwargs)
        finally:
            if had:
                pytest._eit_tolerated = saved
            else:
                del pytest._eit_tolerated
    return call


class _Parser:
    def __init__(self):
        self.options = []

    def addoption(self, *args, **kwargs):
        self.options.append((args, kwargs))


class _Config:
    def __init__(self):
        self.options = {"--eit-strict": False}

    def getoption(self, name):
        return self.options[name]


class _Reporter:
    def __init__(self):
        self.lines = []

    def section(self, title, *args, **kwargs):
        self.lines.append(title)

    def write_line(self, line, **kwargs):
        self.lines.append(line)


def _report():
    return SimpleNamespace(when="call", nodeid="tests/x.ipynb::Cell 2",
                           user_properties=[("eit_tolerated", ("cell 2", ["a line"]))])


# --- the specs --------------------------------------------------------------------------------

_HEAD_KINDS = {"paper": TEXT, "claim": TEXT, "statement": TEXT, "scope": CHOICE}

#: drawn_by is checked only in a notebook, against the criterion's snapshot of the generators
#: (outside one nothing is registered): tests/test_provenance.py runs those cells
_DRAWN = {"drawn_by": "checked only inside a notebook: tests/test_provenance.py"}

CHECKS = [
    Spec(checks.agree, _agree_args,
         {**_HEAD_KINDS, "theory": SEQUENCE, "estimate": EVIDENCE, "criterion": AGREEMENT,
          "labels": LABELS, "corrected": OPTIONAL_SEQUENCE, "correction": TEXT, "values": VALUES,
          "kind": CHOICE}, strict=True, defaults=_DRAWN),
    Spec(checks.at_most, _one_sided_args,
         {**_HEAD_KINDS, "estimate": EVIDENCE, "bound": REAL, "criterion": INEQUALITY,
          "labels": LABELS, "kind": CHOICE, "values": VALUES}, strict=True, defaults=_DRAWN),
    Spec(checks.at_least, lambda: {**_one_sided_args(), "bound": 1.0},
         {**_HEAD_KINDS, "estimate": EVIDENCE, "bound": REAL, "criterion": INEQUALITY,
          "labels": LABELS, "kind": CHOICE, "values": VALUES}, strict=True, defaults=_DRAWN),
    Spec(checks.bound, lambda: {**HEAD, "bound": 0.5, "failures": Proportion(3, 100),
                                "criterion": criteria.Inequality(), "labels": ["pt"],
                                "kind": "test", "values": {"width": 10}},
         {**_HEAD_KINDS, "bound": UNIT, "failures": PROPORTION, "criterion": INEQUALITY,
          "labels": LABELS, "kind": CHOICE, "values": VALUES}, strict=True, defaults=_DRAWN),
    Spec(checks.order, lambda: {**HEAD, "larger": _est(2.0, 0.1, 50),
                                "smaller": _est(1.0, 0.1, 50),
                                "criterion": criteria.Inequality(), "labels": ["pt"],
                                "values": {"width": 10}},
         {**_HEAD_KINDS, "larger": EVIDENCE, "smaller": EVIDENCE, "criterion": INEQUALITY,
          "labels": LABELS, "values": VALUES}, strict=True, defaults=_DRAWN),
    Spec(checks.detects, lambda: {**HEAD, "statistic": Statistic(0.2), "p_value": 0.3,
                                  "criterion": criteria.Detection("one-sided t-test"),
                                  "values": {"n": 10}, "detectable": 0.5},
         {**_HEAD_KINDS, "statistic": STATISTIC, "p_value": UNIT, "criterion": DETECTION,
          "values": VALUES, "detectable": OPTIONAL_POSITIVE}, strict=True, defaults=_DRAWN),
    Spec(_spread(checks.detects_positive),
         lambda: {**HEAD, "estimates": [_est(0.3, 0.05, 50), _est(0.4, 0.05, 50)],
                  "criterion": criteria.Detection("one-sided t-test"), "values": {"n": 50}},
         {**_HEAD_KINDS, "estimates": EVIDENCE, "criterion": DETECTION, "values": VALUES},
         strict=True, defaults=_DRAWN),
    Spec(checks.exact, lambda: {**HEAD, "printed": "2*x", "derived": 2 * sp.Symbol("x"),
                                "if_wrong": "confirmed with a correction",
                                "correction": "", "kind": "exact"},
         {**_HEAD_KINDS, "printed": SYMPY, "derived": SYMPY, "if_wrong": CHOICE,
          "correction": TEXT, "kind": CHOICE}, strict=True),
    Spec(checks.holds, lambda: {**HEAD, "holds": True, "evidence": "computed",
                                "theory": "holds", "kind": "exact",
                                "if_wrong": "confirmed with a correction",
                                "correction": "the erratum", "corrected": True,
                                "values": {"n": 3}},
         {**_HEAD_KINDS, "holds": BOOL, "evidence": TEXT, "theory": TEXT, "kind": CHOICE,
          "if_wrong": CHOICE, "correction": TEXT, "corrected": BOOL, "values": VALUES},
         strict=True),
    Spec(checks.consistency, lambda: {**HEAD, "holds": True, "evidence": "computed",
                                      "reason": "an identity", "values": {"n": 3}},
         {**_HEAD_KINDS, "holds": BOOL, "evidence": TEXT, "reason": TEXT, "values": VALUES},
         strict=True),
]

RECORDS = [
    Spec(records.value_record, lambda: {"value": _est(1.0, 0.1, 10)}, {"value": RECORDABLE},
         strict=True),
    Spec(records.render_value, lambda: {"value": _est(1.0, 0.1, 10)}, {"value": RECORDABLE},
         strict=True),
    Spec(records.render_html, lambda: {"value": _est(1.0, 0.1, 10)}, {"value": RECORDABLE},
         strict=True),
    Spec(records.tex_to_html, lambda: {"text": "a $x^2$ < b"}, {"text": STR}),
]


COMPARE = [
    Spec(compare.compare_values,
         lambda: {"ref": records.value_record(_est(1.0, 0.1, 10)),
                  "new": records.value_record(_est(1.01, 0.1, 10)), "where": "cell 1"},
         {"ref": VALUE_RECORD, "new": VALUE_RECORD, "where": STR},
         allow={("ref", "nonfinite"): "a NaN or inf in a stored estimate is reported as a "
                "problem of the comparison (Comparison.ok is False): the regression test "
                "fails naming it instead of stopping at the first one",
                ("new", "nonfinite"): "as for ref"}),
    Spec(compare.compare_verdicts,
         lambda: {"ref": _verdict_record_value(), "new": _verdict_record_value(),
                  "where": "verdict"},
         {"ref": VERDICT_RECORD, "new": VERDICT_RECORD, "where": STR},
         allow={("ref", "nonfinite"): "reported as a problem of the comparison (see "
                "compare_values)", ("new", "nonfinite"): "as for ref"}),
    Spec(compare.compare_tables,
         lambda: {"ref": _table_record_value(), "new": _table_record_value(),
                  "where": "table"},
         {"ref": TABLE_RECORD, "new": TABLE_RECORD, "where": STR},
         allow={("ref", "nonfinite"): "reported as a problem of the comparison (see "
                "compare_values)", ("new", "nonfinite"): "as for ref"}),
    Spec(compare.compare_records,
         lambda: {"ref": [_verdict_record_value()], "new": [_verdict_record_value()],
                  "where": "chapter"},
         {"ref": VERDICT_RECORDS, "new": VERDICT_RECORDS, "where": STR},
         allow={("ref", "nonfinite"): "reported as a problem of the comparison (see "
                "compare_values)", ("new", "nonfinite"): "as for ref"}),
    Spec(compare.compare_outputs,
         lambda: {"ref": [_output(_verdict_record_value())],
                  "new": [_output(_verdict_record_value())], "where": "cell 3"},
         {"ref": OUTPUTS, "new": OUTPUTS, "where": STR},
         allow={("ref", "nonfinite"): "reported as a problem of the comparison (see "
                "compare_values)", ("new", "nonfinite"): "as for ref"}),
]

FITS = [
    Spec(fits.slope_weights, lambda: {"x": [0.0, 1.0, 2.0]}, {"x": ARRAY}),
    Spec(fits.slope_of, lambda: {"x": [0.0, 1.0, 2.0],
                                 "estimates": [_est(1.0, 0.1, 10), _est(3.0, 0.1, 10),
                                               _est(5.0, 0.1, 10)], "df": 9.0},
         {"x": ARRAY, "estimates": EVIDENCE, "df": OPTIONAL_POSITIVE}),
    Spec(fits.sample_slope, lambda: {"x": [1.0, 1.0, 2.0, 2.0, 3.0, 3.0],
                                     "y": [1.0, 1.2, 2.0, 2.3, 3.0, 3.1]},
         {"x": ARRAY, "y": ARRAY}),
]


def _ledger_record_value():
    return ledger.normalize(_verdict_record_value())


LEDGER = [
    Spec(ledger.chapter_notebooks, lambda: {"root": _book()}, {"root": ROOT}),
    Spec(ledger.normalize, lambda: {"record": _verdict_record_value()},
         {"record": LEDGER_RECORD}),
    Spec(ledger.verdicts, lambda: {"root": _book()}, {"root": ROOT}),
    Spec(ledger.status, lambda: {"root": _book()}, {"root": ROOT}),
    Spec(ledger.summary, lambda: {"records": [_ledger_record_value()]},
         {"records": RECORD_LIST}),
    Spec(ledger.export, lambda: {"root": _book()}, {"root": ROOT}),
    # main() reads the real book (it has no root argument), read-only, and writes the ledger
    # into a temporary directory; argv=None would parse pytest's own command line
    Spec(ledger.main, lambda: {"argv": [str(_out_dir() / "ledger.json")]}, {"argv": ARGV}),
]

LENGTH_MOMENTS = [
    Spec(length_moments.length_moment,
         lambda: {"log_len": torch.log(torch.tensor([1.0, 2.0, 3.0, 1.5],
                                                    dtype=torch.float64)), "power": 2},
         {"log_len": ARRAY, "power": COUNT}),
    Spec(length_moments.step_deviation,
         lambda: {"log_len": 0.1 * torch.randn(3, 4, dtype=torch.float64,
                                                generator=_CPU_GEN()),
                  "factor": 1.0},
         {"log_len": ARRAY, "factor": POSITIVE}),
    Spec(length_moments.relative_variance_limit,
         lambda: {"margin": 0.1, "sizes": [10_000, 400], "z": 5.0},
         {"margin": POSITIVE, "sizes": INTS, "z": POSITIVE}),
    Spec(length_moments.testable_points,
         lambda: {"relative_variance": {"a": [0.0, 0.5, 3.0], "b": [0.0, 0.1]},
                  "at": [1, 2], "limit": 1.0},
         {"relative_variance": VARIANCES, "at": INTS, "limit": NONNEGATIVE}),
]


def _log_ratio(*shape):
    return 0.1 * torch.randn(*shape, dtype=torch.float64, generator=_CPU_GEN())


NORM_RATIOS = [
    Spec(norm_ratios.mean_square_ratio, lambda: {"log_ratio": _log_ratio(4, 2), "batches": 2},
         {"log_ratio": ARRAY, "batches": OPTIONAL_COUNT}),
    Spec(norm_ratios.mean_square_ratios,
         lambda: {"log_ratio": _log_ratio(3, 4, 2), "batches": 2},
         {"log_ratio": ARRAY, "batches": OPTIONAL_COUNT}),
    Spec(norm_ratios.mean_square_profile,
         lambda: {"log_ratio": _log_ratio(3, 4, 2), "backward": True, "batches": 2},
         {"log_ratio": ARRAY, "backward": BOOL, "batches": OPTIONAL_COUNT}),
    Spec(norm_ratios.profile,
         lambda: {"log_ratio": _log_ratio(3, 4, 2), "factor_law": [1.0, sp.Rational(1, 2)],
                  "label": "net", "row0": 1, "backward": False, "batches": 2},
         {"log_ratio": ARRAY, "factor_law": SEQUENCE, "label": STR, "row0": INDEX,
          "backward": BOOL, "batches": OPTIONAL_COUNT}),
    Spec(norm_ratios.pooled,
         lambda: {"profiles": [norm_ratios.profile(_log_ratio(3, 4, 2), [1, 1], label="a")],
                  "part": "factors"},
         {"profiles": PROFILES, "part": CHOICE}),
]

NBVAL_PLUGIN = [
    Spec(nbval_plugin.pytest_addoption, lambda: {"parser": _Parser()},
         {"parser": Kind("parser", _fake("addoption"))}),
    Spec(nbval_plugin.pytest_configure, lambda: {"config": _Config()},
         {"config": Kind("config", _fake("getoption"))}),
    Spec(_isolated(nbval_plugin.pytest_runtest_logreport), lambda: {"report": _report()},
         {"report": Kind("report", _fake("when", "user_properties", "nodeid"))}),
    Spec(_isolated(nbval_plugin.pytest_terminal_summary),
         lambda: {"terminalreporter": _Reporter(), "exitstatus": 0, "config": _Config()},
         {"terminalreporter": Kind("reporter", _fake("section", "write_line")),
          "exitstatus": INDEX, "config": Kind("config", _fake("getoption"))}),
]

STABILITY = [
    Spec(stability.of_record, lambda: {"record": _verdict_record_value()},
         {"record": VERDICT_RECORD}),
]


def _samples(n=8):
    return 1.0 + torch.randn(n, dtype=torch.float64, generator=_CPU_GEN())


STATS = [
    Spec(stats.mean, lambda: {"samples": _samples()}, {"samples": ARRAY}),
    Spec(stats.batch_mean, lambda: {"samples": [1.0, 2.0, 3.5, 4.0, 5.0, 6.5], "batches": 3},
         {"samples": ARRAY, "batches": COUNT}),
    Spec(stats.log_mean, lambda: {"samples": [1.0, 2.0, 3.0, 4.5]}, {"samples": ARRAY}),
    Spec(stats.median, lambda: {"samples": _samples(), "n_boot": 100, "seed": 3},
         {"samples": ARRAY, "n_boot": COUNT, "seed": INDEX}),
    Spec(stats.mean_se, lambda: {"samples": torch.randn(4, 3, dtype=torch.float64,
                                                        generator=_CPU_GEN()),
                                 "dim": 0},
         {"samples": ARRAY, "dim": INDEX}),
    Spec(stats.proportion, lambda: {"successes": 3, "trials": 10, "confidence": 0.95},
         {"successes": INDEX, "trials": COUNT, "confidence": UNIT}),
    Spec(stats.significant, lambda: {"value": 1.23456, "se": 0.0123, "digits": 2},
         {"value": REAL, "se": NONNEGATIVE, "digits": COUNT}),
    Spec(stats.fisher_exact, lambda: {"a": Proportion(3, 10), "b": Proportion(7, 10),
                                      "alternative": "two-sided"},
         {"a": PROPORTION_ONLY, "b": PROPORTION_ONLY, "alternative": CHOICE}, strict=True),
    Spec(stats.kendall_tau, lambda: {"x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
                                     "y": [1.5, 1.0, 3.5, 3.0, 6.0, 5.0]},
         {"x": ARRAY, "y": ARRAY}, strict=True),
    Spec(stats.kendall_detectable, lambda: {"n": 100, "alpha": 0.01},
         {"n": COUNT, "alpha": UNIT}),
    Spec(stats.mann_whitney_detectable, lambda: {"n1": 20, "n2": 15, "alpha": 0.01},
         {"n1": COUNT, "n2": COUNT, "alpha": UNIT}),
    Spec(_spread(stats.positive),
         lambda: {"estimates": [_est(0.3, 0.1, 50), _est(0.5, 0.1, 50)], "alpha": 0.001},
         {"estimates": EVIDENCE, "alpha": UNIT}, strict=True),
    Spec(stats.execution_count, dict, {}),
    Spec(stats.proportion_of, lambda: {"mask": torch.tensor([True, False, False, True]),
                                       "confidence": 0.95},
         {"mask": MASK, "confidence": UNIT}),
    Spec(stats.paired_difference, lambda: {"a": [0.9, 0.8, 0.7, 0.75],
                                           "b": [0.5, 0.6, 0.65, 0.55]},
         {"a": ARRAY, "b": ARRAY}),
    Spec(stats.from_summary, lambda: {"means": [1.0, 2.0], "sds": [0.5, 1.0], "n": 4},
         {"means": ARRAY, "sds": ARRAY, "n": COUNT}),
    Spec(stats.frequency_estimate, lambda: {"frequency": Proportion(30, 1000),
                                            "probability": 0.025},
         {"frequency": PROPORTION_ONLY, "probability": UNIT}),
    Spec(stats.mann_whitney, lambda: {"x": [3.0, 4.0, 5.0, 6.0], "y": [1.0, 2.0, 2.5, 3.5],
                                      "alternative": "greater"},
         {"x": ARRAY, "y": ARRAY, "alternative": CHOICE}, strict=True),
    Spec(stats.significant_exceedances,
         lambda: {"estimates": [_est(1.0), _est(2.0)], "bounds": [1.5, 1.5], "side": "above",
                  "alpha": 0.001},
         {"estimates": EVIDENCE, "bounds": SEQUENCE, "side": CHOICE, "alpha": UNIT},
         strict=True),
]

TAILS = [
    Spec(tails.certified_threshold,
         lambda: {"samples": torch.arange(100.0, dtype=torch.float64), "delta": 0.05,
                  "confidence": 0.95},
         {"samples": ARRAY, "delta": UNIT, "confidence": UNIT}),
    Spec(tails.leaves_envelope,
         lambda: {"log_sq_ratio": torch.log(torch.tensor([[1.05, 1.2], [1.0, 1.0]],
                                                         dtype=torch.float64)),
                  "steps": [1.0, 2.0], "eps": 0.1},
         {"log_sq_ratio": ARRAY, "steps": SEQUENCE, "eps": UNIT}),
]

SPECS = CHECKS + RECORDS + COMPARE + FITS + LEDGER + LENGTH_MOMENTS + NORM_RATIOS \
    + NBVAL_PLUGIN + STABILITY + STATS + TAILS

# the exact tail of the depth-L norm ratio (Arpit & Bengio 2019, chapter 03: Corollary 1)
SPECS.append(
    Spec(tails.depth_ratio_tail, lambda: {"width": 40, "depth": 3, "eps": 0.2, "tol": 1e-9},
         {"width": COUNT, "depth": COUNT, "eps": NONNEGATIVE, "tol": UNIT}))
