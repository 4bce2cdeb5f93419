"""Tests for eit.exact.moments (Hanin & Rolnick 2018, FM1 and FM2)."""

import math
from fractions import Fraction

import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from eit.core.seeds import generator
from eit.exact import moments as fm
from eit.sample.laws import he


def test_gaussian_second_moment_is_product():
    mom = fm.moment_recursion([7, 3, 5, 10], 2, 1)
    assert mom.mean == [2, 2, 2, 2]
    expected = 4 * Fraction(8, 3) * 2 * Fraction(3, 2)
    assert mom.second[-1] == expected


@given(st.lists(st.integers(1, 40), min_size=2, max_size=6), st.fractions(0, 5))
@settings(max_examples=40, deadline=None)
def test_gaussian_zero_bias_product_formula(widths, kappa):
    mom = fm.moment_recursion(widths, 1, 1, kappa=kappa)
    prod = Fraction(1)
    for n in widths[1:]:
        prod *= kappa**2 * (1 + Fraction(5, n))
    assert mom.second[-1] == prod
    assert mom.mean[-1] == kappa ** (len(widths) - 1)


def test_bias_mean_is_eq_11():
    mom = fm.moment_recursion([3, 4, 4, 4], Fraction(1, 3), 1, nu2=[1, 2, 3])
    assert mom.mean[-1] == Fraction(1, 3) + Fraction(6, 2)


def test_accepts_sympy_symbols():
    k = sp.Symbol("k")
    mom = fm.moment_recursion([2, 2], sp.Symbol("M"), sp.Symbol("Q"), mu4_tilde=k)
    assert sp.simplify(mom.second[1] - (sp.Symbol("M") ** 2 * sp.Rational(7, 2)
                                         + (k - 3) * sp.Symbol("Q") / 4)) == 0


def test_cross_moment_martingale():
    mom = fm.moment_recursion([4, 5, 6, 7], 1, 1)
    assert fm.cross_moment(mom, 1, 3) == mom.second[1]
    with pytest.raises(ValueError, match="j and k"):
        fm.cross_moment(mom, 2, 1)


def test_expected_empirical_variance_two_layers():
    # d = 2: Var^ = (M1 - M2)^2 / 4, so E = (E M2^2 - E M1^2) / 4 under the martingale.
    mom = fm.moment_recursion([3, 4, 6], 1, 1)
    assert fm.expected_empirical_variance([3, 4, 6], 1, 1) == (mom.second[2] - mom.second[1]) / 4


def test_moment_recursion_bad_args():
    with pytest.raises(ValueError, match="widths"):
        fm.moment_recursion([3], 1, 1)
    with pytest.raises(ValueError, match="kappa"):
        fm.moment_recursion([3, 4, 5], 1, 1, kappa=[1])
    with pytest.raises(TypeError, match="nu2"):
        fm.moment_recursion([3, 4], 1, 1, nu2="a")


def test_empirical_variance():
    m = torch.tensor([[9.0], [1.0], [3.0]], dtype=torch.float64)
    assert torch.allclose(fm.empirical_variance(m), torch.tensor([1.0], dtype=torch.float64))
    with pytest.raises(ValueError, match="m"):
        fm.empirical_variance(torch.ones(3, dtype=torch.float64))


def test_lengths_match_relu_mlp_without_bias():
    from eit.sample import relu_mlp
    x = torch.randn(3, 6, dtype=torch.float64)
    a = fm.relu_mlp_lengths(x, [5, 4], he(), n_nets=2, gen=generator(1))
    b = relu_mlp(x, [5, 4], he(), n_nets=2, gen=generator(1))
    widths = torch.tensor([6, 5, 4], dtype=torch.float64, device=a.device).view(-1, 1, 1)
    assert torch.allclose(a, torch.exp(2 * b.log_h) / widths)


def test_lengths_with_bias_mean():
    x = torch.ones(1, 4, dtype=torch.float64)
    m = fm.relu_mlp_lengths(x, [50], he(), n_nets=4000, gen=generator(2),
                            bias=fm.gaussian_bias(0.5))
    est = m[1].mean().item()
    assert abs(est - (1 + 0.25)) < 0.05


def test_lengths_bad_args():
    x = torch.ones(1, 4, dtype=torch.float64)
    with pytest.raises(TypeError, match="init"):
        fm.relu_mlp_lengths(x, [3], 1, n_nets=2, gen=generator(0))
    with pytest.raises(TypeError, match="bias"):
        fm.relu_mlp_lengths(x, [3], he(), n_nets=2, gen=generator(0), bias=3)
    with pytest.raises(ValueError, match="n_nets"):
        fm.relu_mlp_lengths(x, [3], he(), n_nets=0, gen=generator(0))
    with pytest.raises(ValueError, match="variance"):
        fm.gaussian_bias(0.0)


def test_gaussian_chain_mean_and_second_moment():
    m = fm.gaussian_bias_length_chain([10, 10], n_nets=200000, gen=generator(3), kappa=0.5)
    assert m.shape == (3, 200000)
    assert abs(m[2].mean().item() - 0.25) < 0.01
    assert abs(m[2].square().mean().item() - 0.0625 * 1.5**2) < 0.01


def test_gaussian_chain_bad_args():
    with pytest.raises(ValueError, match="kappa"):
        fm.gaussian_bias_length_chain([3], n_nets=2, gen=generator(0), kappa=-1.0)
    with pytest.raises(ValueError, match="widths"):
        fm.gaussian_bias_length_chain([], n_nets=2, gen=generator(0))


def test_named_initializers_variances():
    kappas = {"He normal": 1, "He uniform": 1, "LeCun normal": 0.5, "LeCun uniform": 0.5,
              "Glorot normal": 0.5, "Glorot uniform": 0.5, "2x He normal": 2,
              "He normal truncated (Keras, rescaled)": 1,
              "He normal truncated (PyTorch trunc_normal_)": 0.7737413}
    inits = fm.named_initializers()
    assert set(inits) == set(kappas)
    for name, init in inits.items():
        w = init(4, 200, 200, generator(5))
        assert w.shape == (4, 200, 200)
        assert abs(w.var().item() * 200 / 2 - kappas[name]) < 0.02, name


def test_expect_independent():
    w1, w2, a, b = sp.symbols("w1 w2 a b")
    gauss = lambda k: 0 if k % 2 else sp.factorial2(k - 1)  # noqa: E731
    out = fm.expect_independent((a * w1 + b * w2) ** 4, {w1: gauss, w2: gauss})
    assert sp.expand(out - 3 * (a**2 + b**2) ** 2) == 0
    with pytest.raises(ValueError, match="moments"):
        fm.expect_independent(w1, {})
    with pytest.raises(TypeError, match="moments"):
        fm.expect_independent(w1, {"w1": gauss})


def test_expected_empirical_variance_matches_cross_moments_with_bias():
    kap, nu2 = [1, Fraction(1, 2), 2], [Fraction(1, 10), Fraction(1, 5), Fraction(3, 10)]
    mom = fm.moment_recursion([5, 4, 6, 3], 1, 1, nu2=nu2, kappa=kap)
    brute = sum(mom.second[1:]) / 3 - sum(
        (1 if j == k else 2) * fm.cross_moment(mom, j, k, kappa=kap, nu2=nu2)
        for j in range(1, 4) for k in range(j, 4)) / 9
    assert fm.expected_empirical_variance([5, 4, 6, 3], 1, 1, nu2=nu2, kappa=kap) == brute


def test_gaussian_bias_chain_matches_moment_recursion():
    widths, nu2 = [4, 30, 7], [0.5, 0.0, 0.2]
    m = fm.gaussian_bias_length_chain(widths, n_nets=200000, gen=generator(11), nu2=nu2)
    assert m.shape == (4, 200000)
    mom = fm.moment_recursion([3] + widths, 1, 1, nu2=nu2, nu4=[3 * b * b for b in nu2])
    for j in range(1, 4):
        assert abs(m[j].mean().item() - float(mom.mean[j])) < 0.02
        assert abs(m[j].square().mean().item() / float(mom.second[j]) - 1) < 0.05


def test_gaussian_bias_chain_agrees_with_explicit_net():
    x = torch.ones(1, 6, dtype=torch.float64)
    explicit = fm.relu_mlp_lengths(x, [5, 5], he(), n_nets=100000, gen=generator(12),
                                   bias=fm.gaussian_bias(0.3))[:, :, 0]
    chain = fm.gaussian_bias_length_chain([5, 5], n_nets=100000, gen=generator(13), nu2=0.3)
    for j in (1, 2):
        for power in (1, 2):
            a, b = explicit[j].pow(power).mean().item(), chain[j].pow(power).mean().item()
            assert abs(a / b - 1) < 0.04


def test_gaussian_bias_chain_bad_args():
    with pytest.raises(ValueError, match="nu2"):
        fm.gaussian_bias_length_chain([3, 3], n_nets=2, gen=generator(0), nu2=-0.1)
    with pytest.raises(ValueError, match="nu2"):
        fm.gaussian_bias_length_chain([3, 3], n_nets=2, gen=generator(0), nu2=[0.1])
    with pytest.raises(ValueError, match="n_nets"):
        fm.gaussian_bias_length_chain([3], n_nets=0, gen=generator(0))
    with pytest.raises(TypeError, match="gen"):
        fm.gaussian_bias_length_chain([3], n_nets=2, gen=0)
    for keep in ([3], [], [1.0], [True]):
        with pytest.raises(ValueError, match="keep"):
            fm.gaussian_bias_length_chain([3, 3], n_nets=2, gen=generator(0), keep=keep)


def test_gaussian_bias_chain_keeps_depths_and_groups_networks(monkeypatch):
    """keep selects rows in order; many networks are drawn in groups of the same law."""
    widths, nu2 = [3, 5, 2, 8], 0.3
    whole = fm.gaussian_bias_length_chain(widths, n_nets=7, gen=generator(2), nu2=nu2)
    kept = fm.gaussian_bias_length_chain(widths, n_nets=7, gen=generator(2), nu2=nu2,
                                         keep=[4, 0, 2])
    assert torch.equal(kept, whole[[4, 0, 2]]) and bool((kept[1] == 1.0).all())
    monkeypatch.setattr(fm, "CHAIN_CHUNK_BYTES", 8 * 5 * 1000)   # groups of 1,000 nets
    n = 200_000
    m = fm.gaussian_bias_length_chain(widths, n_nets=n, gen=generator(1), nu2=nu2)
    assert m.shape == (5, n)
    mom = fm.moment_recursion([1] + widths, 1, 1, nu2=nu2, nu4=3 * nu2**2)
    for j in range(1, len(widths) + 1):
        for k, exact in ((1, float(mom.mean[j])), (2, float(mom.second[j]))):
            x = m[j] ** k   # 5 standard errors on 8 comparisons: family-wise < 5e-6
            assert abs(x.mean().item() - exact) < 5 * x.std().item() / math.sqrt(n)


def test_relu_residual_chain_matches_explicit_modules():
    from eit.sample import resnets

    x = torch.tensor([0.3, 0.1, 0.5, 0.2, 0.4], dtype=torch.float64)
    etas = [1.0, 0.5, 0.25]
    log_s, sum_s = fm.relu_residual_chain(x, etas, n_nets=20000, gen=generator(1))
    log_e, sum_e = resnets.residual_log_lengths(x.unsqueeze(0), resnets.relu_layer(he()), etas,
                                                n_nets=20000, gen=generator(2),
                                                observe=lambda h: h.sum(-1))
    assert log_s.shape == sum_s.shape == (4, 20000)
    assert torch.allclose(log_s[0].cpu(), torch.log(x.norm()).expand(20000))
    for a, b in ((torch.exp(2 * log_s), torch.exp(2 * log_e[:, :, 0])), (sum_s, sum_e[:, :, 0])):
        ma, mb = a.mean(1), b.mean(1)
        se = (a.var(1) / 20000 + b.var(1) / 20000).sqrt()
        assert bool(((ma - mb).abs() <= 5 * se + 1e-12).all())
    # non-negative input: the stream only grows (the module adds ReLU outputs)
    assert bool((torch.diff(log_s, dim=0) >= -1e-12).all())


def test_relu_residual_chain_one_step_mean():
    # E[M_1] = M_0 (1 + eta^2 + 2 eta sum(x^) / sqrt(n pi)) for a unit input
    x = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    log_len, _ = fm.relu_residual_chain(x, [0.7], n_nets=100000, gen=generator(3))
    m1 = torch.exp(2 * log_len[1])
    exact = 1 + 0.49 + 2 * 0.7 / (4 * torch.pi) ** 0.5
    assert abs(m1.mean().item() - exact) <= 5 * (m1.std().item() / 100000**0.5)


def test_relu_residual_chain_bad_args():
    x = torch.ones(3, dtype=torch.float64)
    gen = generator(0)
    with pytest.raises(ValueError, match="etas"):
        fm.relu_residual_chain(x, [], n_nets=2, gen=gen)
    with pytest.raises(ValueError, match=r"etas\[1\]"):
        fm.relu_residual_chain(x, [1.0, -0.5], n_nets=2, gen=gen)
    with pytest.raises(ValueError, match="n_nets"):
        fm.relu_residual_chain(x, [1.0], n_nets=0, gen=gen)
    with pytest.raises(TypeError, match="gen"):
        fm.relu_residual_chain(x, [1.0], n_nets=2, gen=None)
    with pytest.raises(ValueError, match="x"):
        fm.relu_residual_chain(torch.zeros(3, dtype=torch.float64), [1.0], n_nets=2, gen=gen)
    with pytest.raises(ValueError, match="x"):
        fm.relu_residual_chain(torch.ones(4, 3, dtype=torch.float64), [1.0], n_nets=2, gen=gen)
    with pytest.raises(TypeError, match="x"):
        fm.relu_residual_chain([1.0, 2.0], [1.0], n_nets=2, gen=gen)
