"""eit.verdicts.tails, eit.verdicts.stats and eit.verdicts.stats: the statistics that left
the chapters of Arpit & Bengio (2019), checked against the chapters' former code."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as hs
from scipy import stats as st

from eit.verdicts import stats
from eit.verdicts.stats import from_summary, mann_whitney, proportion_of
from eit.verdicts.tails import certified_threshold, leaves_envelope


def _old_certified_eps(samples: torch.Tensor, delta: float) -> float:
    """The former chapter code (06-infinite-data-and-distances)."""
    n = samples.numel()
    k = max(j for j in range(n + 1) if stats.proportion(j, n).hi <= delta)
    return float(samples.sort(descending=True).values[k])


@settings(max_examples=25, deadline=None)
@given(hs.integers(100, 400), hs.sampled_from([0.05, 0.1, 0.2]), hs.integers(0, 2**31))
def test_certified_threshold_is_the_former_chapter_code(n, delta, seed):
    x = torch.rand(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    assert certified_threshold(x, delta) == _old_certified_eps(x, delta)


@settings(max_examples=25, deadline=None)
@given(hs.integers(100, 400), hs.integers(0, 2**31))
def test_certified_threshold_is_certified(n, seed):
    """At the certified eps the upper limit of P(X > eps) is at most delta; just below the
    certified sample, it is not (the threshold is the smallest one)."""
    x = torch.rand(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    eps = certified_threshold(x, 0.05)
    assert proportion_of(x > eps).hi <= 0.05
    assert proportion_of(x > eps - 1e-12).hi > 0.05


def test_leaves_envelope_is_the_former_chapter_code():
    g = torch.Generator().manual_seed(0)
    depth, eps = 2, 0.3
    lh = 0.3 * torch.randn(depth, 1000, generator=g, dtype=torch.float64)
    lg = 0.3 * torch.randn(depth, 1000, generator=g, dtype=torch.float64)
    up, lo = math.log1p(eps), math.log1p(-eps)
    steps = torch.arange(1, depth + 1, dtype=lh.dtype).unsqueeze(-1)
    old = (((lh > steps * up) | (lh < steps * lo)).any(0)
           | ((lg > depth * up) | (lg < depth * lo)).any(0))
    new = leaves_envelope(torch.cat([lh, lg]), [1, 2, 2, 2], eps)
    assert torch.equal(old, new)
    assert 0 < int(new.sum()) < 1000


def test_mann_whitney_is_scipy():
    late, early = [3, 5, 4, 13, 6, 4, 5], [1, 2, 1, 1, 3, 2, 1]
    u, p = mann_whitney(late, early)
    assert u.value == float(st.mannwhitneyu(late, early).statistic) / 49
    assert p == float(st.mannwhitneyu(late, early, alternative="greater").pvalue)
    u_equal, _ = mann_whitney([1, 2, 3], [1, 2, 3])
    assert u_equal.value == 0.5


def test_from_summary_is_the_former_chapter_code():
    m, s, n = np.array([1.0, 0.99]), np.array([0.11, 0.12]), 2000
    old = [stats.Estimate(m_, s_ / math.sqrt(n), n, df=n - 1) for m_, s_ in zip(m, s)]
    assert from_summary(m, s, n) == old


@pytest.mark.parametrize("call, error", [
    (lambda: certified_threshold(torch.rand(10), 0.05), ValueError),     # too few samples
    (lambda: certified_threshold(torch.tensor([]), 0.05), ValueError),
    (lambda: certified_threshold(torch.tensor([1.0, math.nan]), 0.05), ValueError),
    (lambda: certified_threshold(torch.rand(100), 1.5), ValueError),
    (lambda: leaves_envelope(torch.zeros(2, 3), [1], 0.1), ValueError),
    (lambda: leaves_envelope(torch.zeros(2, 3), [1, 2], 1.0), ValueError),
    (lambda: leaves_envelope([[0.0]], [1], 0.1), TypeError),
    (lambda: mann_whitney([], [1.0]), ValueError),
    (lambda: mann_whitney([1.0], [2.0], alternative="more"), ValueError),
    (lambda: from_summary([1.0], [0.1, 0.2], 10), ValueError),
    (lambda: from_summary([1.0], [0.1], 1), ValueError),
    (lambda: from_summary([1.0], [-0.1], 10), ValueError),
])
def test_bad_input(call, error):
    with pytest.raises(error):
        call()
