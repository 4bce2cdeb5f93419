"""Exact one-layer laws (eit.exact.one_layer): values and named errors (issue 17)."""

import math

import pytest
import torch

from eit.core.seeds import generator
from eit.exact import one_layer as exact
from eit.sample import one_layer


@pytest.mark.parametrize("t", [math.nan, math.inf, -math.inf])
def test_cdf_refuses_non_finite_thresholds(t):
    with pytest.raises(ValueError, match="t must be finite"):
        exact.relu_layer_sq_ratio_cdf(8, t)


def test_cdf_and_tail_are_consistent():
    m = 16
    assert exact.relu_layer_sq_ratio_cdf(m, -1.0) == 0.0
    assert exact.relu_layer_sq_ratio_cdf(m, 0.0) == pytest.approx(0.5**m)
    tail = exact.relu_layer_tail(m, 0.5)
    inside = exact.relu_layer_sq_ratio_cdf(m, 1.5) - exact.relu_layer_sq_ratio_cdf(m, 0.5)
    assert tail == pytest.approx(1 - inside)
    with pytest.raises(ValueError, match="eps"):
        exact.relu_layer_tail(m, math.nan)


def test_cdf_matches_monte_carlo():
    r = one_layer(torch.ones(5, dtype=torch.float64), 16, n_nets=20000, gen=generator(1))
    for t in (0.5, 1.0, 1.5):
        p = exact.relu_layer_sq_ratio_cdf(16, t)
        assert abs(float((r <= t).double().mean()) - p) < 5 * math.sqrt(p * (1 - p) / 20000)


def test_exact_law_of_one_relu_layer():
    # E||v||^2/||u||^2 = 1 and Var = 5/m from the exact law (2/m) chi2_K, K ~ Bin(m, 1/2)
    import numpy as np
    from scipy import stats as sst
    m = 50
    k = np.arange(m + 1)
    w = sst.binom.pmf(k, m, 0.5)
    mean = np.dot(w, 2 / m * k)
    second = np.dot(w, (2 / m) ** 2 * (2 * k + k**2))
    assert math.isclose(mean, 1.0) and math.isclose(second - mean**2, 5 / m)
    assert 0 < exact.relu_layer_tail(m, 0.3) < 1
    assert exact.relu_layer_tail(m, 5.0) < 1e-12
    q = exact.relu_layer_distortion_quantile(m, 0.5)
    assert 0 < q < 1


# -- issue 25: probabilities stay in [0, 1]; extreme widths are computed or refused ---------------
def test_tails_never_exceed_one():
    assert exact.relu_layer_tail(887, 0) <= 1
    for m in range(1, 3000, 29):
        assert 0 <= exact.relu_layer_tail(m, 0.0) <= 1
        assert 0 <= exact.gaussian_layer_tail(m, 0.0) <= 1
        assert 0 <= exact.relu_layer_sq_ratio_cdf(m, 1.0) <= 1


def test_extreme_widths():
    big = 10**7                                             # summed over the bulk only
    p = exact.relu_layer_tail(big, 1e-2)
    assert 0 < p < 1e-40                                    # about 2 Phi(-14): sd sqrt(5/m)
    assert 0 < exact.relu_layer_mean_distortion(big) < 1e-3
    assert exact.relu_layer_sq_ratio_cdf(big, 1.0) == pytest.approx(0.5, abs=1e-3)
    for call in (lambda m: exact.relu_layer_tail(m, 0.1), exact.relu_layer_mean_distortion,
                 lambda m: exact.relu_layer_sq_ratio_cdf(m, 1.0),
                 lambda m: exact.gaussian_layer_tail(m, 0.1)):
        with pytest.raises(ValueError, match="m must be at most"):
            call(exact.MAX_WIDTH + 1)
    assert exact.relu_layer_tail(5, 1e300) == 0.0
    assert exact.relu_layer_sq_ratio_cdf(5, 1e300) == pytest.approx(1.0, abs=1e-12)
