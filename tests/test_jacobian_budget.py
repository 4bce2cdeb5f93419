"""The budget of BN Jacobians (eit.models.jacobian_budget) and its figure (eit.plotting.budget)."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pytest
import torch

from eit.core.seeds import generator
from eit.exact import bn_budget as bb
from eit.models import bn_chain as bc
from eit.models import jacobian_budget as jb
from eit.plotting.budget import budget_panels

matplotlib.use("Agg")
DEPTHS = [1, 2, 4]


def _chapter_loop(x0, depths, n_nets, gen):
    """The loop of chapters/meterez-et-al-2024/08-jacobian-budget.md before the move."""
    n = x0.shape[-1]
    thr = bb.threshold(n)
    phi0 = float(bc.isometry_gap_det(x0))
    extra = int(3 * (n + 2) * math.log(16 * n * phi0)) if phi0 > thr else 0
    chain = bc.run_chain(x0, max(depths) + 1 + extra, n_nets=n_nets, gen=gen)
    S = bc.hitting_time(chain.gaps, thr)
    d6 = bc.tail_sums(torch.sqrt(n * chain.gaps.clamp_min(0)), S, depths)
    d3 = torch.stack([chain.jac[1:L + 1].sum(dim=0) for L in depths])
    return phi0, S.double(), d6, d3


@pytest.mark.parametrize("d", [2, 4])
def test_measure_is_the_chapter_loop_bitwise(d):
    far, near = bc.with_isometry_gap(d, [1.0, bb.threshold(d) / 2])
    for x0 in (far, near):
        new = jb.measure(x0, DEPTHS, n_nets=7, gen=generator(3))
        old = _chapter_loop(x0, DEPTHS, 7, generator(3))
        assert new.phi0 == old[0]
        for a, b in zip(new[1:], old[1:]):
            assert torch.equal(a, b)


def test_near_input_starts_below_threshold_and_sums_are_monotone():
    d = 4
    near = bc.with_isometry_gap(d, [bb.threshold(d) / 2])[0]
    b = jb.measure(near, DEPTHS, n_nets=5, gen=generator(0))
    assert bool((b.S == 0).all())
    assert b.d6.shape == b.d3.shape == (len(DEPTHS), 5)   # (len(depths), n_nets)
    assert bool((b.d6.diff(dim=0) >= 0).all())  # sums of non-negative terms grow with L


def test_arrays_round_trip_and_depth_selection():
    b = jb.measure(bc.with_isometry_gap(2, [1.0])[0], DEPTHS, n_nets=3, gen=generator(1))
    runs = {(2, "far"): b, (4, "far"): b}
    arrays = jb.to_arrays(runs, [2])
    assert sorted(arrays) == ["d2_far_S", "d2_far_d3", "d2_far_d6", "d2_far_phi0"]
    # the stored layout of the files in data/ is (n_nets, len(depths))
    assert np.array_equal(arrays["d2_far_d6"], b.d6.T.cpu().numpy())
    assert np.array_equal(arrays["d2_far_d3"], b.d3.T.cpu().numpy())
    assert arrays["d2_far_d6"].flags["C_CONTIGUOUS"] and arrays["d2_far_phi0"].shape == ()
    back = jb.from_arrays(arrays, {"meta": {"dims": [2], "depths": DEPTHS}}, [1, 4])
    got = back[2, "far"]
    assert got.phi0 == b.phi0 and torch.equal(got.S, b.S.cpu())   # stored data: on the host
    assert torch.equal(got.d6, b.d6[[0, 2]].cpu()) and torch.equal(got.d3, b.d3[[0, 2]].cpu())
    with pytest.raises(ValueError, match="depths"):
        jb.from_arrays(arrays, {"meta": {"dims": [2], "depths": DEPTHS}}, [8])


def test_over_bounds_divides_by_the_bounds():
    b = jb.measure(bc.with_isometry_gap(2, [1.0])[0], DEPTHS, n_nets=4, gen=generator(2))
    d6, d3 = jb.over_bounds(b, 2, DEPTHS)
    for j, L in enumerate(DEPTHS):
        assert d6[j].value == pytest.approx(float(b.d6[j].mean()) / bb.lemma_d6(2, b.phi0, L))
        assert d3[j].value == pytest.approx(float(b.d3[j].mean()) / bb.lemma_d3(2, b.phi0, L))


def test_lemma_d12_gap_is_rounding():
    gen = generator(5)
    assert max(jb.lemma_d12_gap(d, gen=gen) for d in (2, 3, 5)) < 1e-10


def test_bad_input_names_the_argument():
    with pytest.raises(TypeError, match="x0"):
        jb.measure([[1.0, 0.0], [0.0, 1.0]], DEPTHS, n_nets=2, gen=generator(0))
    with pytest.raises(ValueError, match="depths"):
        jb.measure(bc.with_isometry_gap(2, [1.0])[0], [], n_nets=2, gen=generator(0))
    with pytest.raises(TypeError, match="budget"):
        jb.over_bounds((1.0, None, None, None), 2, DEPTHS)
    b = jb.Budget(1.0, torch.zeros(2), torch.ones(1, 2), torch.ones(1, 2))
    with pytest.raises(ValueError, match="depths"):
        jb.over_bounds(b, 2, DEPTHS)
    with pytest.raises(ValueError, match="d"):
        jb.lemma_d12_gap(0, gen=generator(0))
    with pytest.raises(ValueError, match="runs"):
        budget_panels(DEPTHS, {}, {}, {})


def test_budget_panels_draws_two_axes():
    b = jb.measure(bc.with_isometry_gap(2, [1.0])[0], DEPTHS, n_nets=3, gen=generator(1))
    runs = {(2, "far"): b, (2, "near"): b}
    d6, d3 = jb.over_bounds(b, 2, DEPTHS)
    over6 = {(2, "near", j): e for j, e in enumerate(d6)}
    over3 = {(2, "near", j): e for j, e in enumerate(d3)}
    fig, axes = budget_panels(DEPTHS, runs, over6, over3)
    assert len(axes) == 2 and len(axes[1].lines) == 3  # two series and the line at 1
