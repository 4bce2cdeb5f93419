"""Bad input to the public API fails loudly and names the argument (issue: no silent results).

Hypothesis feeds NaN, infinities, zero, negative, wrong-typed and wrong-shaped arguments to the
verdict and core functions and asserts a ``ValueError`` or ``TypeError`` whose message names
the offending argument: never a crash deep inside torch or SciPy, never a silent verdict.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from eit.core import device, seeds
from eit.verdicts import (
    PAPER,
    Agreement,
    Detection,
    Estimate,
    Inequality,
    Statistic,
    agree,
    at_most,
    bound,
    detects,
    exact,
    holds,
    mean,
    order,
    proportion,
    stats,
)

HEAD = ("key", "claim", "statement")
BAD_REALS = st.sampled_from([math.nan, math.inf, -math.inf])
NOT_REALS = st.sampled_from(["1.0", None, [1.0], {"a": 1}, 1 + 2j, True])


def named(name: str):
    return pytest.raises((ValueError, TypeError), match=name)


@settings(deadline=None)          # the first call imports and sets up the device guard
@given(BAD_REALS)
def test_non_finite_theory_never_becomes_a_verdict(x):
    with named("theory"):
        agree(*HEAD, theory=x, estimate=Estimate(1, 0.1, 10), criterion=Agreement(margin=0.1),
              scope=PAPER)


@given(BAD_REALS, st.integers(1, 5))
def test_a_nan_at_any_point_of_a_curve_is_an_error(x, where):
    theory = [1.0] * 6
    theory[where] = x
    with named(rf"theory\[{where}\]"):
        agree(*HEAD, theory=theory, estimate=[Estimate(1, 0.1, 10)] * 6,
              criterion=Agreement(margin=0.1), scope=PAPER)


@given(BAD_REALS)
def test_non_finite_estimates_are_refused(x):
    with named("value"):
        Estimate(x, 0.1, 10)
    with named("se"):
        Estimate(1.0, x if not x < 0 else -1.0, 10)


@given(st.floats(max_value=-1e-300, allow_nan=False, allow_infinity=False))
def test_negative_standard_errors_are_refused(se):
    with named("se"):
        Estimate(1.0, se, 10)


@given(NOT_REALS)
def test_wrong_types_are_named(x):
    with named("value"):
        Estimate(x, 0.1, 10)
    if not isinstance(x, list):  # a list is a curve of theory values (here of one point)
        with named("theory"):
            agree(*HEAD, theory=x, estimate=Estimate(1, 0.1, 10),
                  criterion=Agreement(margin=0.1), scope=PAPER)


@given(st.sampled_from([math.inf, -1.0, 0.0, math.nan]))
def test_tolerances_must_be_finite_and_positive(margin):
    with named("margin"):
        Agreement(margin=margin)


@given(st.sampled_from([0.0, 1.0, 0.7, -0.01, math.nan]))
def test_levels_must_be_levels(alpha):
    for make in (lambda a: Agreement(margin=0.1, alpha=a), lambda a: Inequality(alpha=a),
                 lambda a: Detection("t", alpha=a)):
        with named("alpha"):
            make(alpha)


@given(BAD_REALS)
def test_bounds_and_p_values_must_be_finite(x):
    with named("bound"):
        bound(*HEAD, bound=x, failures=proportion(1, 10), criterion=Inequality(), scope=PAPER)
    with named("bound"):
        at_most(*HEAD, estimate=Estimate(1, 0.1, 10), bound=x, criterion=Inequality(),
                scope=PAPER)
    with named("p_value"):
        detects(*HEAD, statistic=Statistic(0.1), p_value=x, criterion=Detection("t"),
                scope=PAPER)


def test_mismatched_lengths_are_named():
    with named("theory"):
        agree(*HEAD, theory=[1.0, 2.0], estimate=[Estimate(1, 0.1, 10)] * 3,
              criterion=Agreement(margin=0.1), scope=PAPER)
    with named("larger"):
        order(*HEAD, larger=[Estimate(1, 0.1, 10)], smaller=[Estimate(1, 0.1, 10)] * 2,
              criterion=Inequality(), scope=PAPER)
    with named("labels"):
        agree(*HEAD, theory=1.0, estimate=[Estimate(1, 0.1, 10)] * 2, labels=["a"],
              criterion=Agreement(margin=0.1), scope=PAPER)


def test_exact_checks_refuse_nan_and_non_bools():
    with named("printed"):
        exact(*HEAD, printed=math.nan, derived=math.nan, scope=PAPER)
    with named("holds"):
        holds(*HEAD, holds="yes", evidence="e", scope=PAPER)
    with named("holds"):
        holds(*HEAD, holds=np.float64(1.0), evidence="e", scope=PAPER)


@settings(max_examples=30)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=2, max_size=20))
def test_means_of_samples_with_nan_or_inf_are_errors(xs):
    if all(math.isfinite(x) for x in xs):
        if max(abs(x) for x in xs) < 1e150:
            assert math.isfinite(mean(xs).value)
        return
    with named("samples"):
        mean(xs)


def test_tensors_of_the_wrong_kind_are_named():
    with named("samples"):
        mean(torch.tensor([1 + 1j, 2 + 0j]))
    with named("samples"):
        mean(np.array(["a", "b"]))
    with named("dim"):
        stats.mean_se(torch.ones(3, 4), dim=5)
    with named("samples"):
        stats.mean_se(torch.ones(3, 4, dtype=torch.int64), dim=0)


@given(st.sampled_from([-1, 1.5, "7", None, True]))
def test_seeds_must_be_non_negative_ints(seed):
    with named("seed"):
        seeds.generator(seed)


def test_generators_and_dtypes_are_checked(monkeypatch):
    with named("gen"):
        device.randn(3, gen=None)
    with named("dtype"):
        device.randn(3, gen=seeds.generator(0), dtype=torch.int64)
    monkeypatch.setenv("EIT_SEED", "-3")
    with named("EIT_SEED"):
        seeds.generator(0)
    monkeypatch.setenv("EIT_SCALE", "huge")
    with named("EIT_SCALE"):
        device.scale()


def test_proportions_are_checked():
    with named("successes"):
        proportion(-1, 10)
    with named("trials"):
        proportion(1, 2.5)
    with named("successes"):
        proportion(np.bool_(True), 10)
