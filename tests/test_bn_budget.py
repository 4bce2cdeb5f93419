"""Tests for eit.exact.bn_budget (the explicit bounds of Appendices C-D) and the curve helpers."""

from __future__ import annotations

import math

import matplotlib
import pytest
import sympy as sp
import torch

from eit.exact import bn_budget as bb
from eit.plotting import curves

matplotlib.use("Agg")


def test_lemma_c2_constants_follow_from_corollary_b5():
    d = sp.Symbol("d", positive=True)
    coefficient = sp.simplify(d / (2 * d**2 * (d + 2)))   # sum (lambda-1)^2 = d sigma
    for n in (2, 5, 100):
        c, a = bb.lemma_c2(n, proven=True)
        assert math.isclose(c, float(coefficient.subs(d, n)))
        assert math.isclose(a, float(coefficient.subs(d, n)) / (16 * n))
        printed = bb.lemma_c2(n)
        assert printed[0] > c and printed[1] > a        # the printed constants are stronger


def test_budget_bounds_at_small_and_large_depth():
    n, phi0 = 4, bb.threshold(4) / 2
    assert math.isclose(bb.lemma_d6(n, phi0, 1), math.sqrt(n * phi0), rel_tol=1e-3)
    assert math.isclose(bb.lemma_d6(n, phi0, 10**9), 32 * n**4.5 * math.sqrt(phi0))
    assert bb.lemma_d3(n, phi0, 7) == bb.lemma_d6(n, phi0, 7)
    assert bb.lemma_d3(n, 1.0, 7) > 512 * n**4
    assert bb.lemma_d5(n, phi0) == 0.0 and bb.lemma_d5(n, 1.0) == 512 * n**4
    assert math.isclose(bb.near_isometry_decrease(100), 2 / 102)


@pytest.mark.parametrize(("call", "name"), [
    (lambda: bb.threshold(0), "d"),
    (lambda: bb.lemma_d6(2, -1.0, 3), "phi0"),
    (lambda: bb.lemma_d3(2, 0.1, 0), "depth"),
    (lambda: bb.lemma_c2(2, proven=1), "proven"),
])
def test_bad_arguments_are_named(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()


def test_curve_helpers_refuse_nan_and_draw():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    curves.mean_band(ax, [1, 2, 3], torch.rand(5, 3, dtype=torch.float64), label="x")
    curves.survival(ax, torch.randn(100, dtype=torch.float64), label="y")
    with pytest.raises(ValueError, match="NaN"):
        curves.mean_band(ax, [1], torch.tensor([[float("nan")], [1.0]]))
    with pytest.raises(ValueError, match="2 runs"):
        curves.mean_band(ax, [1], torch.ones(1, 1))
    plt.close(fig)
