"""eit.train.runs, eit.train.runs and eit.plotting.curves (Arpit & Bengio 2019,
Figure 5), checked against the chapter's former code."""

from __future__ import annotations

import itertools
import math

import matplotlib
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from hypothesis.extra import numpy as hnp

from eit.plotting.curves import mean_shaded
from eit.train.batched import Result
from eit.train.runs import first_epoch_below, split_runs

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _old_escape_epoch(losses, level: float) -> int:
    """The former chapter code (07-training-figure-5)."""
    return next((i + 1 for i, loss in enumerate(losses) if loss < level), len(losses) + 1)


@settings(max_examples=50, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=8),
                  elements=hs.floats(0, 3) | hs.just(math.nan)))
def test_first_epoch_below_is_the_former_chapter_code(losses):
    level = math.log(10) - 0.1
    assert first_epoch_below(losses, level) == [_old_escape_epoch(r, level) for r in losses]


def _result(runs: int) -> Result:
    return Result(np.arange(2.0 * runs).reshape(runs, 2), np.zeros(runs, bool),
                  -np.ones(runs, int), np.ones(runs), np.arange(float(runs)))


def test_split_runs_is_the_former_chapter_code():
    schemes, lrs, seeds, d = ("traditional", "proposed"), (0.01, 0.1), range(3), 5
    keys = [(s, d, lr, 100 + k) for s in schemes for lr in lrs for k in seeds]
    res = _result(len(keys))
    old = {}
    for s, lr in itertools.product(schemes, lrs):
        old[s, d, lr] = res.select(np.array([k_[:3] == (s, d, lr) for k_ in keys]))
    new = split_runs(res, [k_[:3] for k_ in keys])
    assert list(new) == list(old)
    for k in old:
        assert np.array_equal(new[k].losses, old[k].losses)
        assert np.array_equal(new[k].test_accuracy, old[k].test_accuracy)


@settings(max_examples=30, deadline=None)
@given(hs.lists(hs.sampled_from("abc"), min_size=1, max_size=12))
def test_split_runs_partitions_the_runs(labels):
    res = _result(len(labels))
    groups = split_runs(res, labels)
    assert sum(len(g) for g in groups.values()) == len(labels)
    for key, g in groups.items():
        assert g.test_accuracy.tolist() == [float(i) for i, lab in enumerate(labels)
                                            if lab == key]


def test_mean_shaded_draws_the_mean_and_a_band():
    fig, ax = plt.subplots()
    s = np.array([[1.0, 2.0, 3.0], [3.0, 4.0, 7.0]])
    (line,) = mean_shaded(ax, [1, 2, 3], s, color="tab:red", label="runs")
    assert np.array_equal(line.get_ydata(), s.mean(0))
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    se = s.std(0, ddof=1) / math.sqrt(2)
    assert math.isclose(band.max(), (s.mean(0) + 2 * se).max())
    plt.close(fig)


@pytest.mark.parametrize("call, error", [
    (lambda: first_epoch_below([1.0, 2.0], 1.5), ValueError),
    (lambda: first_epoch_below(np.zeros((2, 0)), 1.5), ValueError),
    (lambda: first_epoch_below([[1.0]], "1"), TypeError),
    (lambda: split_runs(_result(3), ["a", "b"]), ValueError),
    (lambda: split_runs("runs", ["a"]), TypeError),
    (lambda: mean_shaded(plt.gca(), [1], [[1.0]]), ValueError),
    (lambda: mean_shaded(plt.gca(), [1], [1.0, 2.0]), ValueError),
    (lambda: mean_shaded(plt.gca(), [1, 2], [[1.0, math.inf], [1.0, 2.0]]), ValueError),
])
def test_bad_input(call, error):
    with pytest.raises(error):
        call()
