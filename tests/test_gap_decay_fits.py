"""Isometry-gap decay, slopes, positive effects, the paper-scale block and figure scaffolding.

Each helper replaces code that chapters of Meterez et al. (2024) and Arpit, Campos & Bengio
(2019) held; the old chapter computation is repeated here as the reference.
"""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from eit.core.seeds import generator
from eit.core.store import paper_scale_result
from eit.exact import bn_budget as bb
from eit.models import batchnorm as bnm
from eit.models import gap_decay as gd
from eit.plotting.curves import log_axis_at, mean_band_above, proportion_bars, proportion_panels
from eit.verdicts.checks import detects, detects_positive
from eit.verdicts.criteria import Detection
from eit.verdicts.fits import sample_slope, slope_of, slope_weights
from eit.verdicts.stats import Estimate, Statistic, positive, proportion

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


@settings(max_examples=30, deadline=None)
@given(st.floats(1e-6, 0.3), st.sampled_from([2, 4, 8, 16]))
def test_alternating_diagonal_has_the_exact_gap(phi, d):
    x = gd.alternating_diagonal(d, phi)
    assert math.isclose(float(bnm.isometry_gap(x)), phi, rel_tol=1e-6, abs_tol=1e-12)


def test_alternating_diagonal_bad_input():
    with pytest.raises(ValueError, match="d must be even"):
        gd.alternating_diagonal(3, 0.1)
    with pytest.raises(ValueError, match="phi"):
        gd.alternating_diagonal(4, 0.0)


def test_mean_ratio_after_and_monotonicity_are_the_chapters():
    g = bnm.isometry_gaps_in_depth(torch.randn(4, 4, dtype=torch.float64,
                                               generator=torch.Generator().manual_seed(0)),
                                   80, n_nets=6, gen=generator(1))
    assert g.shape == (81, 6)                         # (depth + 1, n_nets)
    gt = g.T                                          # the chapter's former (n_nets, depth + 1)
    entry = (gt < 1e-3).double().argmax(dim=1)
    window = (entry.view(-1, 1) + torch.arange(5, device=gt.device)).clamp_max(gt.shape[1] - 2)
    old = (gt[:, 1:] / gt[:, :-1]).gather(1, window).mean(dim=1)
    assert torch.equal(gd.mean_ratio_after(g, 1e-3, 5), old)
    mono = gd.non_increasing_steps([g])
    assert mono.successes == mono.trials == g[1:].numel()
    with pytest.raises(ValueError, match="too short"):
        gd.mean_ratio_after(g, 1e-300, 5)
    with pytest.raises(ValueError, match="gaps"):
        gd.non_increasing_steps([])


def test_theorem1():
    assert bb.theorem1_k(4, 1 / 128) == 32.0 and bb.theorem1_k(4, 1.0) == 2048.0
    layers = torch.arange(5, dtype=torch.float64)
    old = 0.3 * torch.exp(-layers / 32.0)
    assert torch.equal(bb.theorem1_bound(0.3, 32.0, layers), old)
    assert bb.theorem1_bound(0.3, 32.0, 0.0) == 0.3
    with pytest.raises(ValueError, match="k"):
        bb.theorem1_bound(0.3, 0.0, layers)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=2, max_size=6, unique=True),
       st.floats(-3, 3), st.floats(-3, 3))
def test_slope_weights_recover_a_line(x, a, b):
    if np.ptp(x) < 1e-3:
        return
    w = slope_weights(x)
    assert math.isclose(float(w @ (a + b * np.asarray(x))), b, abs_tol=1e-6)


def test_slope_of_is_the_chapters_delta_method():
    dims = [4, 8, 16, 32]
    ests = [Estimate(math.log(n) * 0.9 + 0.1 * k, 0.01 * (k + 1), 60, df=59)
            for k, n in enumerate(dims)]
    xs = np.log(dims)
    w = (xs - xs.mean()) / ((xs - xs.mean()) ** 2).sum()
    fit = sum((wi * e for wi, e in zip(w, ests, strict=True)), Estimate(0.0, 0.0, 1))
    got = slope_of(xs, ests, df=59)
    assert (got.value, got.se, got.n, got.df) == (fit.value, fit.se, fit.n, 59)
    with pytest.raises(ValueError, match="one entry per x"):
        slope_of(xs, ests[:2], df=59)
    with pytest.raises(ValueError, match="constant"):
        slope_weights([1.0, 1.0])


def test_sample_slope():
    from scipy.stats import linregress
    x = np.repeat([2, 5, 10], 4)
    y = -0.17 * x + np.random.default_rng(0).normal(size=x.size)
    fit = linregress(x, y)
    e = sample_slope(x, y)
    assert (e.value, e.se, e.n, e.df) == (fit.slope, fit.stderr, 12, 10)
    with pytest.raises(ValueError):
        sample_slope([1, 1, 1], [1.0, 2.0, 3.0])


def test_detects_positive_is_detects_with_stats_positive():
    crit = Detection("one-sided t-test")
    a, b = Estimate(0.3, 0.1, 50, df=49), Estimate(0.05, 0.1, 50, df=49)
    p, det = positive(a, b, alpha=crit.alpha)
    old = detects("k", "c", "s", statistic=Statistic(0.05), p_value=p, detectable=det,
                  criterion=crit, scope="paper")
    new = detects_positive("k", "c", "s", a, b, criterion=crit, scope="paper")
    assert new.record() == old.record()
    with pytest.raises(ValueError, match="estimates"):
        detects_positive("k", "c", "s", criterion=crit, scope="paper")
    with pytest.raises(TypeError, match="criterion"):
        detects_positive("k", "c", "s", a, criterion=None, scope="paper")


def test_paper_scale_result(monkeypatch):
    monkeypatch.setenv("EIT_SCALE", "default")
    assert paper_scale_result("no-part/none", {"x": [1.0]}, seed=0,
                              chapter="no-part/01-x.md") is None
    with pytest.raises(TypeError, match="chapter"):
        paper_scale_result("no-part/none", {"x": [1.0]}, seed=0, chapter=None)


def test_plot_scaffolding():
    fig, ax = plt.subplots()
    proportion_bars(ax, [1, 2], [proportion(0, 4), proportion(4, 4)], marker="o")
    with pytest.raises(TypeError, match=r"props\[0\]"):
        proportion_bars(ax, [1], [0.5])
    with pytest.raises(ValueError, match="x must have"):
        proportion_bars(ax, [1, 2, 3], [proportion(1, 2)])
    fig2, axes = proportion_panels({"a": [("s", [1.0, 0.1], [proportion(1, 2)] * 2),
                                          ("t", [1.0, 0.1], [proportion(2, 2)] * 2,
                                           {"marker": "s"})], "b": []},
                                   xlabel="rate", ylabel="fraction", spread=0.1,
                                   xscale="log")
    assert len(axes) == 2 and axes[0].get_xscale() == "log"
    x_s = axes[0].lines[0].get_xdata()
    assert np.allclose(x_s, np.array([1.0, 0.1]) * 10**-0.05)
    with pytest.raises(ValueError, match="panels"):
        proportion_panels({}, xlabel="x", ylabel="y")
    plt.close(fig2)
    log_axis_at(ax, [2, 5, 10])
    assert ax.get_xscale() == "log"
    with pytest.raises(ValueError, match="values"):
        log_axis_at(ax, [0, 1])
    x, m = mean_band_above(ax, torch.tensor([[1.0, 1e-20], [2.0, 1e-20]]), floor=1e-13,
                           label=None)
    assert x.tolist() == [0] and m.shape == (2,)
    x1, m1 = mean_band_above(ax, torch.tensor([[1.0, 2.0], [1e-20, 1e-20]]), floor=1e-13,
                             label=None, dim=1)        # (points, runs)
    assert x1.tolist() == [0] and torch.equal(m1, m)
    with pytest.raises(ValueError, match="samples"):
        mean_band_above(ax, torch.ones(1, 3), floor=1e-13, label=None)
    with pytest.raises(ValueError, match="samples"):
        mean_band_above(ax, torch.ones(3, 1), floor=1e-13, label=None, dim=1)
    with pytest.raises(ValueError, match="dim"):
        mean_band_above(ax, torch.ones(3, 3), floor=1e-13, label=None, dim=2)
    plt.close(fig)
