"""Issue 25, items 7 and 8 in eit.verdicts: tail thresholds fast and exact, laws checked.

Regression tests: each fails on the behaviour the issue reported (a minute-long certified
threshold, NaN or negative laws accepted, an ``(L,)`` factor broadcast along the networks).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from eit.verdicts import length_moments as lm
from eit.verdicts import norm_ratios as nr
from eit.verdicts.stats import proportion
from eit.verdicts.tails import certified_threshold


def _brute_force(samples, delta, confidence=0.95):
    """The definition, one Clopper-Pearson limit per count (the former O(n^2) code)."""
    s = np.sort(np.asarray(samples, dtype=float).ravel())[::-1]
    n = s.size
    ok = [j for j in range(n + 1) if proportion(j, n, confidence).hi <= delta]
    if not ok:
        raise ValueError("samples")
    return float(s[max(ok)])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=1, max_size=300),
       st.sampled_from([0.001, 0.01, 0.05, 0.2, 0.5, 0.9]),
       st.sampled_from([0.5, 0.9, 0.95, 0.99]))
def test_certified_threshold_is_the_definition(xs, delta, confidence):
    samples = torch.tensor(xs, dtype=torch.float64)      # ties on purpose
    try:
        want = _brute_force(xs, delta, confidence)
    except ValueError:
        with pytest.raises(ValueError, match="samples"):
            certified_threshold(samples, delta, confidence)
        return
    assert certified_threshold(samples, delta, confidence) == want


def test_certified_threshold_is_fast_for_100000_samples():
    samples = torch.randn(100_000, generator=torch.Generator().manual_seed(0),
                          dtype=torch.float64)
    start = time.perf_counter()
    eps = certified_threshold(samples, 0.01)
    assert time.perf_counter() - start < 10              # over 60 s before
    assert (samples > eps).double().mean() < 0.01


@pytest.mark.parametrize(("kw", "name"), [({"delta": math.nan}, "delta"),
                                          ({"confidence": 1.5}, "confidence"),
                                          ({"confidence": 0.0}, "confidence")])
def test_certified_threshold_names_bad_arguments(kw, name):
    with pytest.raises((ValueError, TypeError), match=name):
        certified_threshold(torch.arange(100.0), **{"delta": 0.05, **kw})


@pytest.mark.parametrize("law", [[1.0, math.nan], [1.0, -2.0], [0.0, 1.0], [1.0, math.inf],
                                 ["a", 1.0]])
def test_profile_refuses_nan_negative_or_non_numeric_laws(law):
    with pytest.raises((ValueError, TypeError), match=r"factor_law\[\d\]"):
        nr.profile(torch.zeros(3, 4, 2), law, label="net")


def test_profile_refuses_a_law_whose_product_overflows():
    with pytest.raises(ValueError, match="running product"):
        nr.profile(torch.zeros(3, 4, 2), [1e200, 1e200], label="net")
    with pytest.raises(TypeError, match="factor_law"):
        nr.profile(torch.zeros(3, 4, 2), torch.ones(2), label="net")


def test_testable_points_refuse_nan_or_negative_variances():
    assert lm.testable_points({"a": np.array([0.0, 0.5, 3.0])}, [1, 2], 1.0) == [("a", 1)]
    assert lm.testable_points({"a": [0.0, math.inf]}, [1], 1.0) == []   # unbounded: skipped
    for law, where in (({"a": [0.0, math.nan]}, r"\['a'\]\[1\]"),
                       ({"a": [0.0, 0.5, -0.1]}, r"\['a'\]\[2\]")):
        with pytest.raises(ValueError, match=where):
            lm.testable_points(law, [1], 1.0)
    with pytest.raises(ValueError, match="limit"):
        lm.testable_points({"a": [0.0, 0.5]}, [1], -1.0)
    with pytest.raises(TypeError, match="relative_variance"):
        lm.testable_points({"a": "0.5"}, [1], 1.0)


def test_step_deviation_never_broadcasts_a_per_step_vector_along_the_networks():
    L = n_nets = 4                                       # the shapes that used to broadcast
    log_len = torch.zeros(L + 1, n_nets, dtype=torch.float64)
    per_step = torch.ones(L, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"factor must be a number or a tensor of shape"):
        lm.step_deviation(log_len, per_step)
    assert lm.step_deviation(log_len, per_step.unsqueeze(-1)).value == 0.0
    assert lm.step_deviation(log_len, torch.ones(L, n_nets, dtype=torch.float64)).value == 0.0
    assert lm.step_deviation(log_len, 1.0).value == 0.0
    for bad in (math.nan, -1.0, 0.0, torch.full((L, 1), math.nan, dtype=torch.float64),
                torch.full((L, 1), -1.0, dtype=torch.float64)):
        with pytest.raises(ValueError, match="factor"):
            lm.step_deviation(log_len, bad)


def test_extreme_log_lengths_overflow_loudly():
    with pytest.raises(ValueError, match="log_len"):
        lm.length_moment(torch.tensor([400.0, 1.0], dtype=torch.float64))
    with pytest.raises(ValueError, match="log_len"):
        lm.step_deviation(torch.tensor([[0.0, 0.0], [400.0, 0.0]], dtype=torch.float64), 1.0)
    with pytest.raises(ValueError, match="log_ratio"):
        nr.mean_square_ratio(torch.tensor([[400.0], [0.0]], dtype=torch.float64))
    with pytest.raises(ValueError, match="margin"):
        lm.relative_variance_limit(1e200, [10], z=1e-200)
