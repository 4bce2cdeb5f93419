"""Moments of M = ||h||^2 from log-lengths (eit.verdicts.length_moments), the relative variances
and chain predictions of residual networks (eit.exact.relu_residual, eit.sample.resnets): the
functions that replaced the residual-scales chapter's local code, checked against that code."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from eit.core.seeds import generator
from eit.exact import moments as fm
from eit.exact import relu_residual as rr
from eit.sample import resnets
from eit.verdicts import length_moments as lm
from eit.verdicts import stats

ETAS = st.lists(st.floats(0.0, 1.5, allow_nan=False), min_size=1, max_size=12)


def _chain(etas, n=5, n_nets=500, seed=0):
    x = torch.arange(1, n + 1, dtype=torch.float64)
    return fm.relu_residual_chain(x / x.norm(), etas, n_nets=n_nets, gen=generator(seed))


def test_length_moment_is_the_chapters_mean():
    log_len, _ = _chain([1.0, 0.5, 0.25])
    for L in range(4):
        assert lm.length_moment(log_len[L]) == stats.mean(torch.exp(2 * log_len[L]))
        assert lm.length_moment(log_len[L], 2) == stats.mean(torch.exp(4 * log_len[L]))


def test_step_deviation_is_the_chapters_statistic():
    etas = [0.9**k for k in range(1, 8)]
    log_len, unit_sum = _chain(etas)
    e_ = torch.tensor(etas, dtype=torch.float64, device=unit_sum.device).unsqueeze(-1)
    law = rr.mean_factor(e_, unit_sum[:-1], 5)
    ratio = torch.exp(2 * torch.diff(log_len, dim=0))
    assert lm.step_deviation(log_len, law) == stats.mean((ratio - law).mean(0))


def test_step_deviation_of_the_exact_chain_is_small():
    etas = [0.5] * 6
    log_len, unit_sum = _chain(etas, n_nets=4000, seed=3)
    law = rr.mean_factor(torch.tensor(etas, dtype=torch.float64,
                                      device=unit_sum.device).unsqueeze(-1), unit_sum[:-1], 5)
    est = lm.step_deviation(log_len, law)
    assert abs(est.value) < 5 * est.se


def test_relative_variance_limit_and_points_match_the_chapter():
    n_nets, n_chains = 10_000, 20_000
    limit = lm.relative_variance_limit(0.1, [n_nets, n_chains], z=5)
    assert limit == (0.1 / 5) ** 2 / (1 / n_nets + 1 / n_chains)
    schedules = {"one": [1.0] * 40, "half": [0.5**k for k in range(1, 41)],
                 "short": [1.0] * 3}
    check = [2, 5, 10, 20, 40, 100]
    rel = {nm: rr.relative_variance_bound(e, 5) for nm, e in schedules.items()}
    old = []
    for nm, etas in schedules.items():
        band = rr.bands(etas, 5)
        r = band["second_hi"] / band["mean_lo"] ** 2 - 1
        old += [(nm, L) for L in check if L <= len(etas) and r[L] <= limit]
    assert lm.testable_points(rel, check, limit) == old


@settings(max_examples=40, deadline=None)
@given(ETAS, st.integers(1, 8), st.integers(1, 8))
def test_linear_readout_relative_variance(etas, width, hidden):
    rel = resnets.linear_readout_relative_variance(etas, width=width, hidden=hidden)
    mean, second, _ = resnets.linear_readout_moments(etas, width=width, hidden=hidden)
    assert np.array_equal(rel, np.array(second) / np.array(mean) ** 2 - 1)
    assert rel[0] == 0 and (rel >= -1e-12).all()
    assert (np.diff(rel) >= -1e-12).all()          # the relative variance never shrinks


@settings(max_examples=40, deadline=None)
@given(ETAS, st.integers(1, 8))
def test_relative_variance_bound_dominates_the_exact_module_b_value_at_eta_zero(etas, n):
    rel = rr.relative_variance_bound(etas, n)
    assert rel.shape == (len(etas) + 1,) and rel[0] == 0
    assert (rel >= -1e-12).all()                   # second_hi >= mean_hi^2 >= mean_lo^2
    assert np.array_equal(rr.relative_variance_bound([0.0] * len(etas), n),
                          np.zeros(len(etas) + 1))


def test_chain_moment_is_the_chapters_prediction():
    etas = [0.75**k for k in range(1, 11)]
    log_len, unit_sum = _chain(etas, n_nets=300)
    for L in (1, 5, 10):
        for power, step in ((1, rr.mean_factor), (2, rr.second_factor)):
            old = stats.mean(torch.exp(2 * power * log_len[L - 1])
                             * step(etas[L - 1], unit_sum[L - 1], 5))
            assert rr.chain_moment(log_len, unit_sum, etas, L, 5, power) == old


def test_chain_moment_agrees_with_the_sample_mean():
    etas = [0.5] * 5
    log_len, unit_sum = _chain(etas, n_nets=20_000, seed=1)
    pred = rr.chain_moment(log_len, unit_sum, etas, 5, 5)
    meas = lm.length_moment(log_len[5])
    assert abs(pred.value - meas.value) < 5 * math.hypot(pred.se, meas.se)


def test_bad_input():
    log_len, unit_sum = _chain([1.0])
    with pytest.raises(ValueError, match="power"):
        lm.length_moment(log_len[1], 0)
    with pytest.raises(ValueError, match="log_len"):
        lm.length_moment(torch.tensor([0.0, -math.inf], dtype=torch.float64))
    with pytest.raises(ValueError, match="log_len"):
        lm.step_deviation(log_len[:1], 1.0)
    with pytest.raises(ValueError, match="margin"):
        lm.relative_variance_limit(0.0, [10], z=5)
    with pytest.raises(ValueError, match="sizes"):
        lm.relative_variance_limit(0.1, [], z=5)
    with pytest.raises(TypeError, match="relative_variance"):
        lm.testable_points([[0.0]], [1], 1.0)
    with pytest.raises(ValueError, match="power"):
        rr.chain_moment(log_len, unit_sum, [1.0], 1, 5, power=3)
    with pytest.raises(ValueError, match="L must"):
        rr.chain_moment(log_len, unit_sum, [1.0], 2, 5)
    with pytest.raises(ValueError, match="width"):
        resnets.linear_readout_relative_variance([1.0], width=0, hidden=5)


@pytest.mark.parametrize("n", [1, 5, 16])
def test_ramp_input_is_the_chapters_input(n):
    x = torch.arange(1, n + 1, dtype=torch.float64).unsqueeze(0)
    assert torch.equal(resnets.ramp_input(n), x / x.norm())
    with pytest.raises(ValueError, match="n must"):
        resnets.ramp_input(0)
