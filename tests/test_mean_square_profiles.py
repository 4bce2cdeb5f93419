"""Mean-square estimates from log-ratios (eit.verdicts.norm_ratios) and running products of
per-layer factors (eit.exact.layer_products), as used by the Arpit, Campos & Bengio chapters."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from eit.exact.layer_products import cumulative_law
from eit.verdicts import stats
from eit.verdicts.norm_ratios import (
    Profile,
    mean_square_profile,
    mean_square_ratio,
    mean_square_ratios,
    pooled,
    profile,
)


def _log_ratios(rows=4, nets=20, inputs=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    lr = 0.3 * torch.randn(rows, nets, inputs, generator=g, dtype=torch.float64)
    return lr - lr[0]


# ------------------------------------------------------------------ the chapters' old code
def test_matches_the_old_chapter_computations_bitwise():
    lr = _log_ratios()
    # 04-figure-1: stats.mean of (2 row).exp().mean(-1), row by row
    old = [stats.mean((2 * row).exp().mean(-1)) for row in lr]
    assert mean_square_ratios(lr) == old
    # 03-residual-networks: the same with batch means
    old_b = stats.batch_mean((2 * lr[-1]).exp().mean(-1), 5)
    assert mean_square_ratio(lr[-1], batches=5) == old_b
    # 04-figure-1: the per-layer factors, forward and backward
    curve, factors = mean_square_profile(lr)
    assert curve == old[1:]
    assert factors == [stats.mean((2 * r).exp().mean(-1)) for r in lr[1:] - lr[:-1]]
    back = lr - lr[-1]
    curve_b, factors_b = mean_square_profile(back, backward=True)
    assert curve_b == [stats.mean((2 * r).exp().mean(-1)) for r in back][:-1]
    assert factors_b == [stats.mean((2 * r).exp().mean(-1)) for r in back[:-1] - back[1:]]


def test_cumulative_law_matches_the_old_sympy_products():
    q = sp.Rational(41, 40)
    f = [sp.Rational(a, b) for a, b in [(3, 5), (7, 4), (2, 9)]]
    assert cumulative_law(f) == [sp.prod(f[: i + 1]) for i in range(3)]
    assert cumulative_law(f, backward=True) == [sp.prod(f[i:]) for i in range(3)]
    powers = [q**b for b in range(5)]                      # resnet_laws of 04-figure-1
    assert cumulative_law([q] * 4) == powers[1:]
    assert cumulative_law([q] * 4, backward=True) == powers[::-1][:-1]
    floats = [1 + a**2 for a in (0.3, 0.9, 0.81)]          # 03: math.prod, left to right
    assert cumulative_law(floats) == [math.prod(floats[: k + 1]) for k in range(3)]


# --------------------------------------------------------------------------- properties
@settings(max_examples=50, deadline=None)
@given(st.lists(st.fractions(min_value=Fraction(1, 10), max_value=10), min_size=1,
                max_size=8))
def test_forward_and_backward_products_split_the_total(factors):
    fwd, bwd = cumulative_law(factors), cumulative_law(factors, backward=True)
    total = math.prod(factors)
    assert fwd[-1] == bwd[0] == total
    for i in range(len(factors) - 1):
        assert fwd[i] * bwd[i + 1] == total


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(min_value=-1.0, max_value=1.0), min_size=2, max_size=6))
def test_a_deterministic_network_has_its_own_factors(logs):
    # every net and input identical: the estimates are the squared ratios exactly
    lr = torch.tensor([0.0, *logs], dtype=torch.float64).cumsum(0).view(-1, 1, 1)
    lr = lr.expand(-1, 3, 2)
    curve, factors = mean_square_profile(lr)
    for e, x in zip(factors, logs, strict=True):
        assert e.value == pytest.approx(math.exp(2 * x), rel=1e-12)
        assert e.se == pytest.approx(0.0, abs=1e-12)
    assert curve[-1].value == pytest.approx(math.exp(2 * sum(logs)), rel=1e-12)


def test_profile_and_pooled():
    lr = _log_ratios(rows=3)
    p = profile(lr, [sp.Rational(1, 2), sp.Integer(2)], label="net", row0=1)
    assert isinstance(p, Profile)
    assert p.rows == [2, 3] and p.curve_law == [0.5, 1.0] and p.factor_law == [0.5, 2.0]
    b = profile(lr - lr[-1], [1, 1], label="grad", backward=True)
    assert b.rows == [0, 1] and b.first == 0
    pts = pooled([p, b], "curve")
    assert pts["labels"] == ["net, row 2", "net, row 3", "grad, row 0", "grad, row 1"]
    assert pts["theory"] == [0.5, 1.0, 1.0, 1.0]
    assert pts["estimate"] == p.curve + b.curve


# ---------------------------------------------------------------------------- bad input
def test_bad_input_is_refused_by_name():
    lr = _log_ratios()
    with pytest.raises(TypeError, match="log_ratio"):
        mean_square_ratio([[0.0, 0.0]])
    with pytest.raises(ValueError, match="log_ratio"):
        mean_square_ratio(lr)                                # 3-D where 2-D is expected
    with pytest.raises(ValueError, match="inf or NaN"):
        mean_square_ratios(torch.full((2, 3, 2), -math.inf))
    with pytest.raises(ValueError, match="at least 2 rows"):
        mean_square_profile(lr[:1])
    with pytest.raises(ValueError, match="factor_law"):
        profile(lr, [1, 1], label="x")
    with pytest.raises(TypeError, match="label"):
        profile(lr, [1, 1, 1], label=3)
    with pytest.raises(TypeError, match="row0"):
        profile(lr, [1, 1, 1], label="x", row0=True)
    with pytest.raises(ValueError, match="part"):
        pooled([], "factor")
    with pytest.raises(TypeError, match=r"profiles\[0\]"):
        pooled([object()], "curve")
    with pytest.raises(ValueError, match="factors"):
        cumulative_law([])
    with pytest.raises(TypeError, match="factors"):
        cumulative_law(3)
