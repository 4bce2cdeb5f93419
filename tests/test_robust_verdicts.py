"""Property tests of the verdict helpers over bad evidence (issue 25).

Hypothesis feeds non-finite, degenerate (zero variance, one sample, ties), extreme-scale and
wrong-typed inputs to the estimators and the checks of :mod:`eit.verdicts`. Every call either
returns a sensible result (finite numbers; a verdict whose record is valid JSON with no NaN or
infinity, and never confirmed on evidence with standard error 0) or raises a ``ValueError`` or
``TypeError`` whose message names an argument.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eit.verdicts import (
    CONFIRMED,
    PAPER,
    SUBSTITUTE,
    Agreement,
    Detection,
    Estimate,
    Exact,
    Inequality,
    Statistic,
    agree,
    at_least,
    at_most,
    bound,
    detects,
    order,
    stats,
)
from eit.verdicts import length_moments as lm
from eit.verdicts import norm_ratios as nr
from eit.verdicts.fits import sample_slope, slope_of
from eit.verdicts.records import OUTCOMES
from eit.verdicts.stats import Proportion
from eit.verdicts.tails import certified_threshold, leaves_envelope

HEAD = ("key", "claim", "statement")
PROPS = settings(max_examples=150, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

#: Finite numbers of every scale, the special values, and wrong types.
EXTREME = st.sampled_from([0.0, -0.0, 1.0, -1.0, 1e-300, 5e-324, -5e-324, 1e300, -1e300,
                           1.7e308, -1.7e308, 2.0**-1074, 1e-12])
FINITE = st.one_of(st.floats(allow_nan=False, allow_infinity=False), EXTREME,
                   st.integers(-10**6, 10**6))
NON_FINITE = st.sampled_from([math.nan, math.inf, -math.inf, np.float32("nan"),
                              np.float32("inf"), np.float64("-inf")])
WRONG = st.sampled_from(["1.0", None, [1.0], {"a": 1}, 1 + 2j, True, np.bool_(True),
                         object(), b"1"])
ANY_REAL = st.one_of(FINITE, NON_FINITE)
ANYTHING = st.one_of(ANY_REAL, WRONG)

#: The names a message may cite for these calls (arguments and fields).
NAMES = ("value", "se", "n", "df", "theory", "estimate", "bound", "larger", "smaller",
         "failures", "margin", "alpha", "samples", "successes", "trials", "confidence",
         "probability", "frequency", "p_value", "detectable", "statistic", "criterion", "x",
         "y", "delta", "log_len", "log_ratio", "factor", "limit", "relative_variance", "at",
         "sizes", "z", "estimates", "bounds", "batches", "n_boot", "digits", "lo", "hi",
         "steps", "eps", "factor_law", "mask", "log_sq_ratio")


def named_error(err: BaseException) -> bool:
    """Whether ``err`` is a ValueError or TypeError whose message names an argument."""
    if not isinstance(err, (ValueError, TypeError)):
        return False
    text = str(err)
    return any(re.search(rf"(?<![A-Za-z_]){re.escape(n)}(?![A-Za-z_])", text) for n in NAMES)


def outcome_of(call):
    """The result of ``call()``, or None when it raised an error naming an argument."""
    try:
        return call()
    except (ValueError, TypeError) as err:
        assert named_error(err), f"unnamed error: {type(err).__name__}: {err}"
        return None


def sound(verdict, *evidence, exact: bool = False) -> None:
    """A verdict never carries NaN or inf, and never confirms on zero-variance evidence
    (unless the check was asked to compare exact values)."""
    assert verdict.outcome in OUTCOMES
    json.dumps(verdict.record(), allow_nan=False)
    assert not re.search(r"\bnan\b", verdict.line(), flags=re.IGNORECASE)
    if verdict.outcome == CONFIRMED and not exact:
        assert all(e.se > 0 for e in evidence if isinstance(e, Estimate))


def estimate_or_none(value, se, n, df):
    return outcome_of(lambda: Estimate(value, se, n, df=df))


ESTIMATE_ARGS = st.tuples(ANYTHING, st.one_of(ANYTHING, st.just(0.0)),
                          st.one_of(st.integers(-2, 10**6), WRONG),
                          st.one_of(st.none(), st.floats(-1, 1e6), NON_FINITE, WRONG))
GOOD_ESTIMATE = st.builds(
    lambda v, se, n, df: Estimate(v, se, n, df=df),
    st.one_of(st.floats(-1e300, 1e300), EXTREME),
    st.one_of(st.floats(0, 1e300), st.sampled_from([0.0, 5e-324, 1e-300, 1e300])),
    st.integers(1, 10**6), st.one_of(st.none(), st.floats(1, 1e6)))


# -- estimators ------------------------------------------------------------------------------------
@PROPS
@given(ESTIMATE_ARGS)
def test_estimates_are_finite_or_a_named_error(args):
    e = estimate_or_none(*args)
    if e is not None:
        assert math.isfinite(e.value) and math.isfinite(e.se) and e.se >= 0 and e.n >= 1
        assert e.df is None or (math.isfinite(e.df) and e.df >= 1)
        assert "nan" not in str(e).lower()


SAMPLES = st.one_of(
    st.lists(ANY_REAL, min_size=0, max_size=30),
    st.lists(st.sampled_from([0.0, 1.0, 1.0, 1.0]), min_size=1, max_size=30),   # ties
    st.lists(st.sampled_from([1e308, -1e308, 1.7e308]), min_size=1, max_size=5),  # overflow
    st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=30),
    WRONG)


@PROPS
@given(SAMPLES, st.sampled_from(["mean", "log_mean", "median", "batch_mean"]))
def test_estimators_return_finite_estimates_or_name_the_samples(samples, which):
    def call():
        if which == "batch_mean":
            return stats.batch_mean(samples, 2)
        if which == "median":
            return stats.median(samples, n_boot=100)
        return getattr(stats, which)(samples)

    e = outcome_of(call)
    if e is not None:
        assert math.isfinite(e.value) and math.isfinite(e.se) and e.se >= 0


@PROPS
@given(st.one_of(st.integers(-3, 50), WRONG), st.one_of(st.integers(-3, 50), WRONG),
       st.one_of(st.floats(-1, 2), NON_FINITE, WRONG, st.just(0.95)))
def test_proportions_are_valid_or_a_named_error(k, n, confidence):
    for make in (lambda: stats.proportion(k, n, confidence),
                 lambda: Proportion(k, n, confidence)):
        p = outcome_of(make)
        if p is not None:
            assert 0 <= p.lo <= p.value <= p.hi <= 1 and "nan" not in str(p)


@PROPS
@given(st.integers(0, 20), st.integers(1, 20), ANYTHING)
def test_frequency_estimates(k, n, probability):
    e = outcome_of(lambda: stats.frequency_estimate(stats.proportion(min(k, n), n),
                                                    probability))
    if e is not None:
        assert math.isfinite(e.se) and e.se >= 0


# -- checks ----------------------------------------------------------------------------------------
CRITERIA = st.builds(lambda m, rel, law, a: Agreement(margin=m, relative=rel, exact_law=law,
                                                       alpha=a),
                     st.one_of(st.floats(1e-300, 1e300), st.sampled_from([1e-12, 0.05, 1e300])),
                     st.booleans(), st.booleans(), st.sampled_from([0.001, 0.05, 0.49]))


@PROPS
@given(st.lists(GOOD_ESTIMATE, min_size=1, max_size=4), st.one_of(ANYTHING, st.lists(ANY_REAL,
       min_size=1, max_size=4)), CRITERIA, st.sampled_from([PAPER, SUBSTITUTE]),
       st.sampled_from(["test", "consistency", "exact"]))
def test_agree_is_sound(estimates, theory, criterion, scope, kind):
    v = outcome_of(lambda: agree(*HEAD, theory=theory, estimate=estimates, criterion=criterion,
                                 scope=scope, kind=kind))
    if v is not None:
        sound(v, *estimates, exact=kind == "exact")
        if kind == "exact":
            assert all(e.se == 0 for e in estimates)
        else:
            assert all(e.se > 0 for e in estimates)


@PROPS
@given(st.lists(GOOD_ESTIMATE, min_size=1, max_size=4), st.one_of(ANYTHING, st.lists(ANY_REAL,
       min_size=1, max_size=4)), st.booleans(), st.sampled_from(["test", "exact"]))
def test_one_sided_checks_are_sound(estimates, bounds, upper, kind):
    check = at_most if upper else at_least
    v = outcome_of(lambda: check(*HEAD, estimate=estimates, bound=bounds, criterion=Inequality(),
                                 scope=PAPER, kind=kind))
    if v is not None:
        sound(v, *estimates, exact=kind == "exact")


SIDES = st.one_of(GOOD_ESTIMATE, st.builds(Exact, FINITE),
                  st.builds(lambda k, n: stats.proportion(min(k, n), n), st.integers(0, 30),
                            st.integers(1, 30)))


@PROPS
@given(st.lists(st.tuples(SIDES, SIDES), min_size=1, max_size=3))
def test_order_is_sound(pairs):
    larger, smaller = [p[0] for p in pairs], [p[1] for p in pairs]
    v = outcome_of(lambda: order(*HEAD, larger=larger, smaller=smaller, criterion=Inequality(),
                                 scope=PAPER))
    if v is not None:
        sound(v, *larger, *smaller)


@PROPS
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(1, 50)), min_size=1, max_size=3),
       st.one_of(ANYTHING, st.lists(ANY_REAL, min_size=1, max_size=3)))
def test_probability_bounds_are_sound(counts, bounds):
    failures = [stats.proportion(min(k, n), n) for k, n in counts]
    v = outcome_of(lambda: bound(*HEAD, bound=bounds, failures=failures, criterion=Inequality(),
                                 scope=PAPER))
    if v is not None:
        sound(v)
        values = bounds if isinstance(bounds, list) else [bounds]
        assert all(0 <= float(b) <= 1 for b in values)


@PROPS
@given(ANYTHING, ANYTHING, st.one_of(st.none(), ANYTHING))
def test_detects_is_sound(statistic, p_value, detectable):
    v = outcome_of(lambda: detects(*HEAD, statistic=Statistic(statistic), p_value=p_value,
                                   criterion=Detection("a test"), scope=PAPER,
                                   detectable=detectable))
    if v is not None:
        sound(v)


@PROPS
@given(st.lists(GOOD_ESTIMATE, min_size=1, max_size=3), st.lists(ANY_REAL, min_size=1,
                                                                max_size=3))
def test_significant_exceedances_count_or_name(estimates, bounds):
    p = outcome_of(lambda: stats.significant_exceedances(estimates, bounds, side="above"))
    if p is not None:
        assert 0 <= p.successes <= p.trials == len(estimates)


@PROPS
@given(st.lists(FINITE, min_size=0, max_size=8), st.lists(FINITE, min_size=0, max_size=8))
def test_slopes_are_finite_or_named(x, y):
    e = outcome_of(lambda: sample_slope(x, y))
    if e is not None:
        assert math.isfinite(e.value) and math.isfinite(e.se)
    ests = [Estimate(float(v), 0.1, 10) for v in y if abs(v) < 1e300]
    e = outcome_of(lambda: slope_of(x[:len(ests)], ests, df=9))
    if e is not None:
        assert math.isfinite(e.value) and math.isfinite(e.se)


# -- tails, norm ratios, length moments ------------------------------------------------------------
@PROPS
@given(st.lists(ANY_REAL, min_size=0, max_size=50), ANYTHING, st.one_of(st.just(0.95), ANYTHING))
def test_certified_thresholds_are_samples_or_named(xs, delta, confidence):
    def call():
        return certified_threshold(torch.tensor([float(x) for x in xs], dtype=torch.float64),
                                   delta, confidence)

    eps = outcome_of(call)
    if eps is not None:
        assert eps in [float(x) for x in xs]


@PROPS
@given(st.lists(st.lists(st.one_of(st.floats(-800, 800), NON_FINITE), min_size=2, max_size=2),
                min_size=2, max_size=4), st.one_of(ANYTHING, st.sampled_from([0.5, 0.99])))
def test_log_length_helpers(rows, eps):
    log = torch.tensor([[float(x) for x in r] for r in rows], dtype=torch.float64)
    for call in (lambda: lm.length_moment(log[0]), lambda: lm.step_deviation(log, 1.0),
                 lambda: nr.mean_square_ratio(log),
                 lambda: lm.step_deviation(log, torch.ones(len(rows) - 1, dtype=log.dtype))):
        e = outcome_of(call)
        if e is not None:
            assert math.isfinite(e.value) and math.isfinite(e.se)
    out = outcome_of(lambda: leaves_envelope(log, [1.0] * len(rows), eps))
    if out is not None:
        assert out.dtype == torch.bool


@PROPS
@given(st.lists(st.one_of(ANY_REAL, WRONG), min_size=1, max_size=4), ANYTHING,
       st.lists(st.one_of(st.integers(-2, 5), WRONG), min_size=0, max_size=3))
def test_testable_points_are_a_subset_or_named(variances, limit, at):
    got = outcome_of(lambda: lm.testable_points({"a": variances}, at, limit))
    if got is not None:
        for name, row in got:
            assert name == "a" and 0 <= float(variances[row]) <= float(limit)


@PROPS
@given(st.lists(st.one_of(ANY_REAL, WRONG), min_size=2, max_size=2))
def test_profiles_carry_positive_finite_laws_or_name_them(law):
    p = outcome_of(lambda: nr.profile(torch.zeros(3, 4, 2, dtype=torch.float64), law,
                                      label="net"))
    if p is not None:
        assert all(math.isfinite(x) and x > 0 for x in p.factor_law + p.curve_law)


def test_the_property_harness_rejects_unnamed_errors():
    assert not named_error(ZeroDivisionError("x"))
    assert not named_error(ValueError("something went wrong"))
    assert named_error(ValueError("samples contains inf or NaN"))
    with pytest.raises(AssertionError):
        outcome_of(lambda: 1 / 0 if False else (_ for _ in ()).throw(ValueError("bad")))
