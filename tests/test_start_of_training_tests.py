"""The start-of-training statistics added to eit.train.start_of_training (mean epochs, the
one-sided rank test), checked against the former chapter code of Figures 1b, 2b and 3b, and the
"range" series of eit.plotting.series."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from eit.plotting import series  # noqa: E402
from eit.train import start_of_training as sot  # noqa: E402
from eit.verdicts import stats  # noqa: E402

RUNS = st.lists(st.one_of(st.none(), st.integers(1, 10)), min_size=2, max_size=8)


@settings(max_examples=50, deadline=None)
@given(RUNS)
def test_mean_epochs_is_the_summarys_mean(reached):
    assert sot.mean_epochs(reached, 10) == sot.epoch_summary(reached, 10)[0]


@settings(max_examples=50, deadline=None)
@given(st.lists(RUNS, min_size=3, max_size=5))
def test_rank_association_is_the_chapters_rank_test(runs):
    predictor = [float(i) for i in range(len(runs))]
    try:
        tau, p_two = sot.pooled_kendall(predictor, runs, 10)
    except ValueError:                   # constant epochs: no tau, in both versions
        with pytest.raises(ValueError):
            sot.rank_association(predictor, runs, 10, alpha=0.01)
        return
    p_old = p_two / 2 if tau.value > 0 else 1 - p_two / 2
    det_old = stats.kendall_detectable(sum(len(r) for r in runs), 0.01)
    new = sot.rank_association(predictor, runs, 10, alpha=0.01)
    assert new == (tau, p_old, det_old)
    assert 0 <= new[1] <= 1


def test_rank_association_detects_a_clear_trend():
    runs = [[1, 2, 1], [4, 5, 4], [8, None, 9]]
    tau, p, tau_min = sot.rank_association([0.0, 1.0, 2.0], runs, 10, alpha=0.01)
    assert tau.value > tau_min and p < 0.01


def test_range_series_is_a_shaded_region():
    fig, axes = series.panels([("range", "band", [1, 2, 3], [0, 0, 0], [1, 2, 3])],
                              xlabel="x", ylabel="y")
    assert len(axes[0].collections) == 1
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["band"]


def test_bad_input():
    with pytest.raises(ValueError, match="alpha"):
        sot.rank_association([0.0, 1.0], [[1], [2]], 10, alpha=1.5)
    with pytest.raises(ValueError, match="max_epochs"):
        sot.mean_epochs([1, None], 0)


# -- issue 25: the library's own sentinel and other impossible epochs are refused ------------------
@pytest.mark.parametrize(("reached", "match"), [
    ([-1, -1, 3, 4], r"reached\[0\] is -1"),
    ([3, 0, 4], r"reached\[1\] must lie in \[1, max_epochs=10\]"),
    ([3, 11], r"reached\[1\] must lie in \[1, max_epochs=10\]"),
    ([3.7, 4], r"reached\[0\] must be an int"),
    ([3, True], r"reached\[1\] must be an int"),
    ([], "reached must hold at least one run"),
    ("34", "reached must be a sequence"),
])
def test_impossible_epochs_are_refused(reached, match):
    for call in (sot.mean_epochs, sot.epoch_summary, sot.censored_epochs):
        with pytest.raises((ValueError, TypeError), match=match):
            call(reached, 10)


def test_rank_tests_refuse_the_sentinel_and_bad_predictors():
    with pytest.raises(ValueError, match=r"runs\[0\]\[0\] is -1"):
        sot.rank_association([0.0, 1.0], [[-1, -1], [3, 4]], 10, alpha=0.01)
    with pytest.raises(ValueError, match=r"runs\[1\]\[1\]"):
        sot.pooled_kendall([0.0, 1.0], [[1, 2], [3, 0]], 10)
    with pytest.raises(ValueError, match=r"predictor\[1\]"):
        sot.pooled_kendall([0.0, float("nan")], [[1, 2], [3, 4]], 10)
    with pytest.raises(ValueError, match="max_epochs"):
        sot.pooled_kendall([0.0, 1.0], [[1, 2], [3, 4]], 0)
    import numpy as np

    tau, _ = sot.pooled_kendall(np.array([0.0, 1.0]), [np.array([1, 2]), [3, None]], 10)
    assert tau.value > 0
