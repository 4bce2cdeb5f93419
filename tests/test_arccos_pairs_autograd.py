"""eit.exact.arccos, eit.sample.pairs, eit.sample.autograd and eit.exact.ratio_profiles (Arpit &
Bengio 2019, eqs. 8-9, Lemmas 5-6, section 3.4, Figures 1-2), checked against the laws and
the chapters' former code."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as hs

from eit.core.device import randn
from eit.core.seeds import generator
from eit.exact import arccos
from eit.exact.chains import norm_chain
from eit.exact.norm_product import variances
from eit.exact.one_layer import gaussian_layer_tail
from eit.exact.ratio_profiles import ratio_profiles
from eit.sample import pairs
from eit.sample.autograd import relu_mlp_grad_norms

THETA = sp.Symbol("theta", positive=True)


def _sympy_k1():
    """The chapter's derivation of the arc-cosine kernel (polar coordinates)."""
    phi, rho = sp.symbols("phi rho", positive=True)
    radial = sp.integrate(rho**3 * sp.exp(-rho**2 / 2), (rho, 0, sp.oo)) / (2 * sp.pi)
    angular = sp.integrate(sp.cos(phi) * sp.cos(phi - THETA),
                           (phi, THETA - sp.pi / 2, sp.pi / 2))
    return sp.simplify(radial * angular)


def test_relu_kernel_is_the_derivation_bitwise():
    k1 = sp.lambdify(THETA, _sympy_k1())
    for th in np.linspace(0.0, math.pi, 201):
        assert arccos.relu_kernel(float(th)) == k1(float(th))


def test_distance_ratio_is_the_former_chapter_code():
    k1 = sp.lambdify(THETA, _sympy_k1())

    def old(th: float, depth: int) -> float:
        c_ = math.cos(th)
        for _ in range(depth):
            c_ = min(1.0, 2 * k1(math.acos(max(-1.0, min(1.0, c_)))))
        return (2 - 2 * c_) / (2 - 2 * math.cos(th))

    for th in [0.1, 0.5, 1.0, math.pi / 2, 2.5, math.pi]:
        for depth in (1, 5):
            assert arccos.distance_ratio(th, depth) == old(th, depth)


@settings(max_examples=50, deadline=None)
@given(hs.floats(1e-3, math.pi), hs.integers(1, 20))
def test_distance_ratio_contracts_with_depth(theta, depth):
    """The kernel map brings the angle closer to 0: the ratio falls with depth, within (0, 1]."""
    r, deeper = arccos.distance_ratio(theta, depth), arccos.distance_ratio(theta, depth + 1)
    assert 0 < deeper <= r * (1 + 1e-12) <= 1 + 1e-12


def test_distance_ratio_matches_a_wide_layer():
    """One layer: the mean over many units of the squared distance ratio (variance 2/m)."""
    g = torch.Generator().manual_seed(1)
    th = math.pi / 2
    w = torch.randn(400_000, 2, generator=g, dtype=torch.float64)
    x1, x2 = torch.tensor([1.0, 0.0], dtype=torch.float64), torch.tensor(
        [math.cos(th), math.sin(th)], dtype=torch.float64)
    # per unit, with variance 2/m: E ||f(x1) - f(x2)||^2 = 2 E (ReLU(w.x1) - ReLU(w.x2))^2
    ratio = 2 * ((w @ x1).relu() - (w @ x2).relu()).square() / (x1 - x2).square().sum()
    se = ratio.std().item() / math.sqrt(ratio.numel())
    assert abs(ratio.mean().item() - arccos.distance_ratio(th)) < 5 * se


def _old_failures(m, var, cos, samples, masked, gen):
    """The former chapter code (06), one angle."""
    z1, z2 = randn(samples, m, gen=gen), randn(samples, m, gen=gen)
    prod = var * z1 * (cos * z1 + math.sqrt(1 - cos**2) * z2)
    if masked:
        prod = prod * (randn(samples, m, gen=gen) > 0)
    return (prod.sum(-1) - cos).abs()


@pytest.mark.parametrize("masked", [False, True])
def test_projection_gaps_is_the_former_chapter_code(masked):
    for cos in (1.0, 0.5, 0.0):
        old = _old_failures(30, 2 / 30, cos, 50, masked, generator(3))
        new = pairs.projection_gaps(30, cos, 50, variance=2 / 30, gen=generator(3),
                                    masked=masked)
        assert torch.equal(old, new)


def test_projection_gaps_law():
    """Unmasked, u1 = u2, variance 1/m: <v, v> is chi^2_m / m, mean 1, variance 2/m."""
    m = 50
    g = pairs.projection_gaps(m, 1.0, 20_000, variance=1 / m, gen=generator(4))
    se = g.square().std().item() / math.sqrt(g.numel())
    assert abs(g.square().mean().item() - 2 / m) < 5 * se


def test_angle_inputs_and_distances():
    thetas = [0.1, math.pi / 2, math.pi]
    x = pairs.angle_inputs(thetas, 5)
    assert x.shape == (4, 5)
    assert torch.allclose(x.norm(dim=-1), torch.ones(4, dtype=torch.float64))
    assert torch.allclose(x[1:] @ x[0], torch.tensor([math.cos(t) for t in thetas],
                                                      dtype=torch.float64))
    h = x.unsqueeze(0)
    d = pairs.sq_distances_to_first(h / h.norm(dim=-1, keepdim=True),
                                    h.norm(dim=-1).log())
    assert torch.allclose(d[0], (x[1:] - x[0]).square().sum(-1))


def test_grad_norms_satisfy_eq_9_and_the_chain_rule():
    g = generator(9)
    widths = [6, 8, 8, 3]
    w = [randn(o, i, gen=g) * math.sqrt(2 / o) for i, o in zip(widths, widths[1:])]
    x = randn(3, 6, gen=g)
    gw, ga, h = relu_mlp_grad_norms(w, x, [0, 1, 2])
    assert gw.shape == (3, 2)
    assert torch.allclose(gw, ga * h, rtol=1e-12)
    assert torch.allclose(h[:, 0], x.norm(dim=-1))
    # the first layer's gradient by finite differences of the loss (one entry)
    eps, i, j = 1e-6, 2, 3

    def loss(w0):
        hid = (w[1] @ (w0 @ x[0]).relu()).relu()
        return torch.nn.functional.cross_entropy((w[2] @ hid)[None],
                                                 torch.tensor([0], device=hid.device))

    bump = torch.zeros_like(w[0])
    bump[i, j] = eps
    fd = (loss(w[0] + bump) - loss(w[0] - bump)) / (2 * eps)
    w0 = w[0].clone().requires_grad_()
    loss(w0).backward()
    assert abs(fd.item() - w0.grad[i, j].item()) < 1e-6
    assert math.isclose(w0.grad.norm().item(), gw[0, 0].item(), rel_tol=1e-12)


def test_ratio_profiles_is_the_former_chapter_code():
    dim, depth, draws, widths = 7, 3, 20, [10, 30]
    old_gen, old = generator(5), {}
    for q, stat in (("h", "log_h_ratio"), ("g", "log_grad_w_ratio")):
        r = [getattr(norm_chain(dim, [w_] * depth,
                                [float(s) for s in variances("He", dim, w_, depth)],
                                n_nets=draws, gen=old_gen, delta="random"),
                     stat)[-depth:, :, 0].exp() for w_ in widths]
        old[f"{q}_mean"] = np.stack([r_.mean(-1).cpu().numpy() for r_ in r])
        old[f"{q}_sd"] = np.stack([r_.std(-1).cpu().numpy() for r_ in r])
    new = ratio_profiles("He", dim, widths, depth, draws=draws, gen=generator(5))
    assert sorted(new) == sorted(old)
    assert all(np.array_equal(new[k], old[k]) for k in old)


def test_gaussian_layer_tail_is_the_former_chapter_code_and_the_sampled_law():
    from scipy import stats as st

    m = 200
    for e_ in (0.2, 0.25, 0.3):
        old = st.chi2.sf(m * (1 + e_), m) + st.chi2.cdf(m * (1 - e_), m)
        assert gaussian_layer_tail(m, e_) == old
    g = pairs.projection_gaps(m, 1.0, 20_000, variance=1 / m, gen=generator(6))
    p, n = float((g > 0.2).double().mean()), g.numel()
    assert abs(p - gaussian_layer_tail(m, 0.2)) < 5 * math.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("call, error", [
    (lambda: gaussian_layer_tail(0, 0.1), ValueError),
    (lambda: gaussian_layer_tail(10, -0.1), ValueError),
    (lambda: arccos.relu_kernel(4.0), ValueError),
    (lambda: arccos.distance_ratio(0.0), ValueError),
    (lambda: arccos.distance_ratio(1.0, depth=0), ValueError),
    (lambda: arccos.distance_ratio("1"), TypeError),
    (lambda: pairs.projection_gaps(0, 0.5, 3, variance=1.0, gen=generator(0)), ValueError),
    (lambda: pairs.projection_gaps(5, 1.5, 3, variance=1.0, gen=generator(0)), ValueError),
    (lambda: pairs.projection_gaps(5, 0.5, 3, variance=-1.0, gen=generator(0)), ValueError),
    (lambda: pairs.angle_inputs([], 3), ValueError),
    (lambda: pairs.angle_inputs([1.0], 1), ValueError),
    (lambda: pairs.sq_distances_to_first(torch.zeros(2, 3), torch.zeros(2)), ValueError),
    (lambda: relu_mlp_grad_norms([torch.eye(2)], torch.zeros(1, 2), [0]), ValueError),
    (lambda: relu_mlp_grad_norms([torch.eye(2)] * 2, torch.zeros(2, 2), [0]), ValueError),
    (lambda: ratio_profiles("He", 5, [10], 2, draws=1, gen=generator(0)), ValueError),
    (lambda: ratio_profiles("He", 5, [], 2, draws=5, gen=generator(0)), ValueError),
])
def test_bad_input(call, error):
    with pytest.raises(error):
        call()
