"""stats.batch_mean: the mean of equal batch means, with df = batches - 1."""

from __future__ import annotations

import math

import numpy as np
import pytest

from eit.verdicts import stats


def test_batch_mean_is_the_mean_with_batch_degrees_of_freedom():
    x = np.arange(12.0)
    e = stats.batch_mean(x, 4)
    assert e.value == x.mean() and e.n == 4 and e.df == 3
    means = x.reshape(4, 3).mean(1)
    assert math.isclose(e.se, means.std(ddof=1) / 2)


@pytest.mark.parametrize(("samples", "batches", "name"), [
    (np.ones(10), 3, "multiple"), (np.ones(10), 1, "batches"), ([1.0, np.nan], 2, "samples")])
def test_bad_batches_are_named(samples, batches, name):
    with pytest.raises((ValueError, TypeError), match=name):
        stats.batch_mean(samples, batches)
