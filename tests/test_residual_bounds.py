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
from eit.exact.engine import trace as exact_trace
from eit.models.scaled_residual import output_sq_ratios, scaled_resnet
from eit.plotting.residual_bounds import residual_bounds_figure
from eit.sample.engine import trace as explicit_trace
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


def _chapter_final_ratio(x, blocks, wn, n_nets, gen, explicit):
    """final_ratio of chapters/arpit-bengio-2019/05-residual-scaling.md before the move."""
    net = scaled_resnet(x.shape[-1], blocks, weight_norm=wn)
    if explicit:
        log_r = explicit_trace(net, x, n_nets=n_nets, gen=gen).log_h_ratio[-1]
    else:
        log_r = torch.stack([exact_trace(net, x_[None], n_nets=n_nets, gen=gen,
                                         method="conditional").log_h_ratio[-1, :, 0]
                             for x_ in x], -1)
    return (2 * log_r).exp()


@pytest.mark.parametrize("explicit", [True, False])
@pytest.mark.parametrize("wn", [True, False])
def test_output_sq_ratios_is_the_chapter_function_bitwise(explicit, wn):
    x = randn(3, 16, gen=generator(0))
    new = output_sq_ratios(x, 2, weight_norm=wn, n_nets=5, gen=generator(1), explicit=explicit)
    old = _chapter_final_ratio(x, 2, wn, 5, generator(1), explicit)
    assert new.shape == (5, 3) and torch.equal(new, old)


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
