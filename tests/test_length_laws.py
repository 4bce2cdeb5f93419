"""Library moved out of the Hanin-Rolnick FM1/FM2 chapters and Meterez et al.'s implicit
orthogonality chapter: the one-unit symbolic moments, the closed forms of E[M_d^2], the log
length statistics of equal-width nets, the uniform/normal laws of law_moments, and the
gradient-norm and random-displacement helpers of the shaped MLP.

Each function is checked against the computation the chapter used to do by hand (kept here as
the reference), on invariants (hypothesis), and on bad input.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from eit.core.seeds import generator
from eit.exact import law_moments as lm
from eit.exact import length_laws as ll
from eit.exact import moments as fm
from eit.exact.unit_moments import nonnegative_coefficients, symmetric_law, symmetric_unit
from eit.models import shaped_mlp as smlp
from eit.sample import log_lengths
from eit.sample.laws import he

widths_st = st.lists(st.integers(1, 50), min_size=1, max_size=8)


# --- eit.exact.unit_moments ---------------------------------------------------------------

def _chapter_unit():
    """The FM2 chapter's hand-built unit (fan-in 3), as it was before the move."""
    kappa, nu2, nu4, mu4t = sp.symbols("kappa nu_2 nu_4 mutilde_4", positive=True)
    n = 3
    a = sp.symbols("a1:4", real=True)
    w = sp.symbols("w1:4", real=True)
    b = sp.Symbol("b", real=True)
    sigma2 = 2 * kappa / n
    weight_moments = {1: 0, 2: sigma2, 3: 0, 4: mu4t * sigma2**2}
    law = {**{wi: weight_moments.get for wi in w}, b: {1: 0, 2: nu2, 3: 0, 4: nu4}.get}
    return (kappa, nu2, nu4, mu4t), a, w, b, law


def test_unit_matches_the_chapter_construction():
    (kappa, nu2, nu4, mu4t), a, w, b, law = _chapter_unit()
    unit = symmetric_unit(3, weight_variance=2 * kappa / 3, kurtosis=mu4t, nu2=nu2, nu4=nu4)
    assert unit.a == a and unit.w == w and unit.b == b
    preact = b + sum(ai * wi for ai, wi in zip(a, w))
    for k in (2, 4):
        assert sp.expand(unit.expect(unit.preact**k)
                         - fm.expect_independent(preact**k, law)) == 0


def test_in_power_sums_matches_the_chapter_solver():
    (kappa, nu2, nu4, mu4t), a, w, b, law = _chapter_unit()
    M, Q = sp.symbols("M Q", positive=True)
    n = 3
    norm2, norm4 = sum(ai**2 for ai in a), sum(ai**4 for ai in a)
    al, be, ga, de = sp.symbols("alpha beta gamma delta")
    ansatz = al * norm2**2 + be * norm4 + ga * norm2 + de

    def in_mq(expr):   # the chapter's former in_MQ
        (sol,) = sp.solve(sp.Poly(sp.expand(expr - ansatz), *a).coeffs(),
                          [al, be, ga, de], dict=True)
        return sp.expand((al * (n * M) ** 2 + be * Q + ga * n * M + de).subs(sol))

    unit = symmetric_unit(3, weight_variance=2 * kappa / 3, kurtosis=mu4t, nu2=nu2, nu4=nu4)
    for k in (2, 4):
        e = unit.expect(unit.preact**k) / 2
        assert sp.expand(unit.in_power_sums(e, M, Q) - in_mq(e)) == 0
    # eq. (10): E[act^2 | F] = kappa M + nu_2 / 2
    assert sp.expand(unit.in_power_sums(unit.expect(unit.preact**2) / 2, M, Q)
                     - (kappa * M + nu2 / 2)) == 0


def test_in_power_sums_refuses_an_expression_outside_the_span():
    unit = symmetric_unit(2, weight_variance=1)
    with pytest.raises(ValueError, match="combination"):
        unit.in_power_sums(unit.a[0] ** 3, sp.Symbol("M"), sp.Symbol("Q"))


@given(st.integers(1, 4))
def test_gaussian_unit_fourth_moment(n):
    """Gaussian weights (kurtosis 3), no bias: E[preact^4] = 3 (sigma^2 ||a||^2)^2."""
    s = sp.Symbol("s", positive=True)
    unit = symmetric_unit(n, weight_variance=s)
    assert sp.expand(unit.expect(unit.preact**4) - 3 * (s * unit.norm2) ** 2) == 0


def test_symmetric_law_and_bad_input():
    law = symmetric_law(2, 3)
    assert [law(k) for k in (1, 2, 3, 4)] == [0, 2, 0, 12]
    with pytest.raises(ValueError, match="k must be"):
        law(6)
    with pytest.raises(ValueError, match="n must be"):
        symmetric_unit(0, weight_variance=1)
    with pytest.raises(ValueError, match="syms"):
        nonnegative_coefficients(sp.Integer(1))
    with pytest.raises(TypeError, match="syms"):
        nonnegative_coefficients(sp.Integer(1), "t")


def test_nonnegative_coefficients():
    t, u = sp.symbols("t u", nonnegative=True)
    assert nonnegative_coefficients((t + 1) ** 3 / (u + 2), t, u)
    assert not nonnegative_coefficients((t - 1) ** 2, t, u)   # >= 0, but not certified


# --- eit.exact.length_laws -----------------------------------------------------------------

@given(widths_st)
def test_gaussian_second_moments_equal_the_recursion(widths):
    mom = fm.moment_recursion([7] + widths, 1, 1)
    assert ll.gaussian_second_moments(widths) == mom.second


@given(widths_st)
def test_martingale_empirical_variance_equals_the_cross_moment_sum(widths):
    second = ll.gaussian_second_moments(widths)
    assert (ll.martingale_empirical_variance(second)
            == fm.expected_empirical_variance([3] + widths, 1, 1))


def test_martingale_identity_matches_the_chapter_formula():
    widths = [30, 10] * 3
    e2 = [sp.Integer(1)] + list(itertools.accumulate(
        (1 + sp.Rational(5, n_) for n_ in widths), lambda p, f: p * f))
    d_ = len(widths)
    chapter = sum((2 * j - d_ - 1) * e2[j] for j in range(1, d_ + 1)) / sp.Integer(d_) ** 2
    assert sp.Rational(ll.martingale_empirical_variance(ll.gaussian_second_moments(widths))) \
        == chapter


@settings(max_examples=30)
@given(widths_st, st.integers(1, 100))
def test_corrected_eq5_bounds_hold(widths, n0):
    lo, e2, up = ll.gaussian_second_moment_bounds([n0] + widths, Fraction(1, n0))
    assert lo <= e2 <= up


def test_bounds_match_the_chapter_arithmetic():
    import mpmath

    widths, m0 = [100] * 201, 1
    with mpmath.workdps(50):
        recip = sp.Rational(sum(Fraction(1, n) for n in widths[1:]))
        chapter_upper = 5 * mpmath.exp(mpmath.mpf(4 * recip.p) / recip.q)
    printed = ll.exponential_in_reciprocals(widths[1:], rate=4, factor=5)
    assert abs(printed - chapter_upper) < mpmath.mpf(10) ** -40 * chapter_upper
    _, e2, _ = ll.gaussian_second_moment_bounds(widths, m0)
    assert float(e2) == pytest.approx(1.05**200, rel=1e-12)
    assert e2 > printed            # the printed upper bound fails at width 100, depth 200


def test_increment_second_moment_matches_the_chapter_formula():
    nu = [0.1, 0.05, 0.02]
    mom = fm.moment_recursion([1, 10, 40, 90], 1, 1, nu2=nu, nu4=[3 * b * b for b in nu])
    chapter = mom.second[3] + mom.second[1] - 2 * fm.cross_moment(mom, 1, 3, nu2=nu)
    assert ll.increment_second_moment(mom, 1, 3, nu2=nu) == chapter


def test_length_laws_bad_input():
    with pytest.raises(ValueError, match="widths"):
        ll.gaussian_second_moments([])
    with pytest.raises(ValueError, match="second"):
        ll.martingale_empirical_variance([1])
    with pytest.raises(TypeError, match="m0"):
        ll.gaussian_second_moment_bounds([3, 3], 0.5)
    with pytest.raises(ValueError, match="widths"):
        ll.gaussian_second_moment_bounds([3], 1)
    with pytest.raises(TypeError, match="rate"):
        ll.exponential_in_reciprocals([3], rate=0.5)


# --- eit.exact.law_moments: normal and uniform -----------------------------------------------

def test_law_moments_normal_and_uniform():
    v = sp.Symbol("v", positive=True)
    assert sp.simplify(lm.variance(*lm.normal(v)) - v) == 0
    assert sp.simplify(lm.variance(*lm.uniform(v)) - v) == 0
    assert lm.kurtosis(*lm.uniform(v)) == sp.Rational(9, 5)
    assert lm.kurtosis(*lm.normal(v)) == 3


# --- eit.sample.log_lengths -----------------------------------------------------------------

def _chapter_log_length_per_net(lr):
    alive = torch.isfinite(lr)
    per_net = torch.where(alive, 2 * lr, 0.0).sum(-1) / alive.sum(-1)
    return per_net[alive.any(-1)]


def test_log_length_per_net_matches_the_chapter():
    from eit.sample import relu_mlp

    g = generator(1)
    x = torch.randn(4, 6, generator=g, device=g.device, dtype=torch.float64)
    lr = relu_mlp(x / x.norm(dim=-1, keepdim=True), [6] * 6, he(), n_nets=50,
                  gen=generator(2)).log_h_ratio
    assert torch.equal(log_lengths.log_length_per_net(lr[6]),
                       _chapter_log_length_per_net(lr[6]))
    kappa = 1.0
    steps = torch.exp(2 * torch.diff(lr, dim=0))
    chapter = torch.nan_to_num(steps / kappa - 1, nan=0.0).mean(dim=(0, 2))
    assert torch.equal(log_lengths.layer_factor_deviation(lr, kappa), chapter)


def test_equal_width_log_ratios_match_the_chapter_loop():
    from eit.sample import relu_mlp

    g1, g2 = generator(5), generator(5)
    for init in list(fm.named_initializers().values())[:3]:
        for depth in (4, 6):
            xs = torch.randn(3, depth, generator=g1, device=g1.device, dtype=torch.float64)
            xs = xs / xs.norm(dim=-1, keepdim=True)
            chapter = relu_mlp(xs, [depth] * depth, init, n_nets=7, gen=g1).log_h_ratio
            got = log_lengths.equal_width_log_ratios(init, depth, n_inputs=3, n_nets=7,
                                                     gen=g2)
            assert torch.equal(got, chapter)


def test_equal_width_log_lengths_match_the_chapter_paper_scale_block():
    import numpy as np

    from eit.exact.chains import norm_chain
    from eit.sample import relu_mlp

    for init, chain_var in ((he(), None), (he(), 2 / 6)):
        g1, g2 = generator(7), generator(7)
        dp = 6
        if chain_var is None:       # the chapter's former explicit branch
            x_ = torch.randn(1, dp, generator=g1, device=g1.device, dtype=torch.float64)
            lr = relu_mlp(x_ / x_.norm(), [dp] * dp, init, n_nets=20,
                          gen=g1).log_h_ratio[dp, :, 0]
        else:                       # the chapter's former norm-chain branch
            lh = norm_chain(dp, [dp] * dp, [chain_var] * dp, n_nets=20, gen=g1).log_h[:, :, 0]
            lr = lh[dp] - lh[0]
        chapter = torch.nan_to_num(2 * lr, neginf=np.nan).cpu().numpy()
        got = log_lengths.equal_width_log_lengths(init, dp, n_nets=20, gen=g2,
                                                  chain_variance=chain_var)
        assert np.array_equal(got, chapter, equal_nan=True)


def test_equal_width_log_lengths_engines_agree_in_law():
    """The norm chain and explicit He-normal nets sample the same law of log(M_d/M_0)."""
    chain = log_lengths.equal_width_log_lengths(he(), 6, n_nets=4000, gen=generator(3),
                                                chain_variance=2 / 6)
    explicit = log_lengths.equal_width_log_lengths(he(), 6, n_nets=4000, gen=generator(4))
    a, b = chain[~torch.isnan(torch.as_tensor(chain)).numpy()], explicit
    b = b[~torch.isnan(torch.as_tensor(b)).numpy()]
    se = (a.var() / len(a) + b.var() / len(b)) ** 0.5
    assert abs(a.mean() - b.mean()) < 5 * se


def test_log_lengths_bad_input():
    with pytest.raises(ValueError, match="NaN"):
        log_lengths.log_length_per_net(torch.tensor([[float("nan")]]))
    with pytest.raises(TypeError, match="log_ratio"):
        log_lengths.log_length_per_net(torch.zeros(3))
    with pytest.raises(ValueError, match="kappa"):
        log_lengths.layer_factor_deviation(torch.zeros(2, 1, 1), -1.0)
    with pytest.raises(ValueError, match="depth"):
        log_lengths.equal_width_log_lengths(he(), 0, n_nets=1, gen=generator(0))
    with pytest.raises(ValueError, match="n_inputs"):
        log_lengths.equal_width_log_ratios(he(), 3, n_inputs=0, n_nets=1, gen=generator(0))


# --- eit.models.shaped_mlp: gradient norms and the random displacement -----------------------

def test_gradient_norms_match_the_chapter_recorder():
    m = smlp.shaped_mlp(runs=3, width=5, depth=4, n_in=6, n_classes=3,
                        gains=smlp.power_gains(4, 1.0), activation=torch.tanh,
                        gen=generator(0), dtype=torch.float32)
    g = generator(1)
    xb = torch.randn(8, 6, generator=g, device=g.device).float()
    yb = torch.arange(8, device=xb.device) % 3
    x = xb.expand(m.runs, *xb.shape)             # the chapter's former grad_norms
    loss = torch.nn.functional.cross_entropy(m(x).transpose(1, 2), yb.expand(m.runs, -1))
    (g,) = torch.autograd.grad(loss * m.runs, [m.ws])
    assert torch.equal(smlp.gradient_norms(m, xb, yb), g.flatten(2).norm(dim=2).double())


def test_random_displacement_matches_the_chapter_and_keeps_norms():
    g = generator(5)
    moved = torch.randn(2, 3, 4, 4, generator=g, device=g.device, dtype=torch.float64)
    gen = generator(6)
    noise = torch.randn(moved.shape, generator=gen, device=gen.device,
                        dtype=moved.dtype)                        # the chapter's code
    noise *= (moved.flatten(2).norm(dim=2) / noise.flatten(2).norm(dim=2))[..., None, None]
    got = smlp.random_displacement(moved, generator(6))
    assert torch.equal(got, noise)
    assert torch.allclose(got.flatten(2).norm(dim=2), moved.flatten(2).norm(dim=2))


def test_shaped_helpers_bad_input():
    with pytest.raises(TypeError, match="model"):
        smlp.gradient_norms(object(), torch.zeros(2, 3), torch.zeros(2))
    with pytest.raises(TypeError, match="moved"):
        smlp.random_displacement(torch.zeros(3), generator(0))
    with pytest.raises(TypeError, match="gen"):
        smlp.random_displacement(torch.zeros(2, 2), 0)
