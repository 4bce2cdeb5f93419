"""Fixed quasi-random test instances (eit.sample.quasi)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from eit.sample.quasi import quasi_normal, quasi_uniform


def test_a_fixed_function_of_the_index(monkeypatch):
    a = quasi_normal(3, 4, 5)
    monkeypatch.setenv("EIT_SEED", "7")          # no random stream: the seed shift is ignored
    assert torch.equal(a, quasi_normal(3, 4, 5)) and torch.equal(a, quasi_normal((3, 4, 5)))
    assert a.dtype == torch.float64 and a.shape == (3, 4, 5)
    assert not torch.equal(a, quasi_normal(3, 4, 5, offset=0.5))


def test_the_entries_look_standard_normal_and_uncorrelated():
    z = quasi_normal(20_000).numpy()
    assert stats.kstest(z, "norm").pvalue > 1e-3
    assert abs(np.corrcoef(z[:-1], z[1:])[0, 1]) < 0.03


def test_uniform_entries_lie_strictly_inside_the_unit_interval():
    u = quasi_uniform(10_000, offset=0.3)
    assert ((u > 0) & (u < 1)).all()


@pytest.mark.parametrize(("call", "name"), [
    (lambda: quasi_normal(0, 3), "shape"),
    (lambda: quasi_normal(), "shape"),
    (lambda: quasi_uniform(3, offset=float("nan")), "offset"),
    (lambda: quasi_normal(3, dtype=torch.int64), "dtype"),
])
def test_bad_arguments_are_named(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()
