"""One layer of Arpit & Bengio (2019): tail frequencies as estimates, and the two figures."""

from __future__ import annotations

import math

import matplotlib
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from eit.plotting.distortion import distortion_figure, tail_figure
from eit.verdicts import stats
from eit.verdicts.stats import frequency_estimate

matplotlib.use("Agg")


def _chapter_frequency(f, p_):
    """frequency() of chapters/arpit-bengio-2019/01-one-layer-norm-preservation.md."""
    return stats.Estimate(f.value, math.sqrt(p_ * (1 - p_) / f.trials), f.trials)


@given(st.integers(1, 10_000), st.floats(0.0, 1.0), st.data())
def test_frequency_estimate_is_the_chapter_function(trials, p, data):
    k = data.draw(st.integers(0, trials))
    f = stats.proportion(k, trials)
    new, old = frequency_estimate(f, p), _chapter_frequency(f, p)
    assert (new.value, new.se, new.n, new.df) == (old.value, old.se, old.n, old.df)


def test_frequency_estimate_bad_input():
    with pytest.raises(TypeError, match="frequency"):
        frequency_estimate(0.3, 0.2)
    with pytest.raises(ValueError, match="probability"):
        frequency_estimate(stats.proportion(1, 10), 1.5)


def test_tail_figure_draws_theory_and_counts():
    p = [stats.proportion(30, 1000), stats.proportion(0, 1000)]
    fig, axes = tail_figure(0.3, [100, 200], {"a": p, "b": p}, grid=(50, 400))
    assert len(axes) == 1 and len(axes[0].lines) >= 3
    with pytest.raises(ValueError, match="measured"):
        tail_figure(0.3, [100], {})


def test_distortion_figure_panels_and_stored_overlay():
    d = {"relu": torch.rand(2, 40, dtype=torch.float64) / 10,
         "bernoulli": torch.rand(2, 40, dtype=torch.float64) / 10}
    stored = {k: torch.stack([v.mean(1), v.std(1) / 6], 1).numpy() for k, v in d.items()}
    fig, axes = distortion_figure([500, 1000], 0.05, d, stored,
                                  titles={"relu": "ReLU", "bernoulli": "mask"})
    assert [ax.get_title() for ax in axes] == ["ReLU", "mask"]
    with pytest.raises(ValueError, match="distortion"):
        distortion_figure([500], 0.05, {})
