"""Theorem 5 of Arpit & Bengio (2019): eq. (228)'s bounds, the networks' ratios, the figure."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from eit.core.device import randn
from eit.core.seeds import generator
from eit.exact import residual_limit as rl
from eit.models.scaled_residual import output_sq_ratios
from eit.plotting.residual_bounds import residual_bounds_figure
from eit.verdicts.stats import Estimate

matplotlib.use("Agg")
B = sp.Symbol("B", positive=True, integer=True)
LOWER, UPPER = (1 - 1 / B) ** (2 * B), (1 + 1 / B) ** (2 * B)


def test_eq228_bounds_are_the_sympy_values_correctly_rounded():
    for b in range(1, 65):
        assert rl.eq228_bounds(b) == (float(LOWER.subs(B, b)), float(UPPER.subs(B, b)))


def test_eq228_margin_is_the_chapter_computation():
    grid_b, grid_sigma = range(1, 65), np.linspace(-1, 1, 21)
    slack = [min(rl.infinite_width_ratio(b, sg) - float(LOWER.subs(B, b)),
                 float(UPPER.subs(B, b)) - rl.infinite_width_ratio(b, sg))
             for b in grid_b for sg in grid_sigma]
    assert rl.eq228_margin(grid_b, grid_sigma) == min(slack) > 0


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 200), st.floats(-1.0, 1.0))
def test_the_recursion_lies_inside_eq228(blocks, sigma):
    lo, hi = rl.eq228_bounds(blocks)
    assert lo <= rl.infinite_width_ratio(blocks, sigma) <= hi


@pytest.mark.parametrize("wn", [True, False])
def test_output_sq_ratios_agree_between_the_two_engines(wn):
    """Weights drawn (explicit) and the exact conditional law give the same distribution."""
    x = randn(2, 16, gen=generator(0))
    n = 4000
    explicit = output_sq_ratios(x, 3, weight_norm=wn, n_nets=n, gen=generator(1),
                                explicit=True)
    exact = output_sq_ratios(x, 3, weight_norm=wn, n_nets=n, gen=generator(2))
    assert explicit.shape == exact.shape == (n, 2)
    assert bool((explicit > 0).all()) and bool((exact > 0).all())
    for k in range(2):          # 5 combined standard errors, 4 comparisons
        a, b = explicit[:, k], exact[:, k]
        se = (a.var() / n + b.var() / n).sqrt()
        assert abs(a.mean() - b.mean()) < 5 * se


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="blocks"):
        rl.eq228_bounds(0)
    with pytest.raises(ValueError, match="blocks"):
        rl.eq228_margin([], [0.0])
    with pytest.raises(ValueError, match="x"):
        output_sq_ratios(torch.ones(4, dtype=torch.float64), 2, weight_norm=False,
                         n_nets=2, gen=generator(0))
    with pytest.raises(ValueError, match="cos_x1"):
        residual_bounds_figure([1], [0.0, 1.0, -1.0, 0.5], {"plain": [[]] * 4})
    with pytest.raises(ValueError, match="measured"):
        residual_bounds_figure([1], [0.0], {})


def test_figure_has_the_bounds_curves_and_points():
    est = [[Estimate(1.3, 0.01, 10), Estimate(1.35, 0.01, 10)]]
    fig, axes = residual_bounds_figure([1, 2], [0.0], {"plain": est, "wn": est}, max_blocks=8)
    assert len(axes) == 1 and len(axes[0].lines) >= 5
