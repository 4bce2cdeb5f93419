"""Tests for eit.models.weightnorm (Arpit & Bengio 2019, section 4: K_n, WN layers)."""

import math

import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from eit.core.device import device
from eit.core.seeds import generator
from eit.models import weightnorm as wn


def test_sphere_area_conventions():
    assert sp.simplify(wn.sphere_area(2, "ambient") - 2 * sp.pi) == 0
    assert sp.simplify(wn.sphere_area(3, "ambient") - 4 * sp.pi) == 0
    assert sp.simplify(wn.sphere_area(2, "intrinsic") - 4 * sp.pi) == 0
    assert wn.sphere_area(0, "intrinsic") == 2
    with pytest.raises(ValueError, match="convention"):
        wn.sphere_area(2, "euclid")


@pytest.mark.parametrize("q", range(0, 9))
def test_wallis_matches_integral(q):
    t = sp.Symbol("t")
    direct = sp.integrate(sp.sin(t) ** q, (t, 0, sp.pi / 2))
    assert sp.simplify(wn.wallis(q) - direct) == 0


@pytest.mark.parametrize("n", range(1, 12))
def test_k_main_intrinsic_is_one(n):
    assert wn.k_printed(n, "main", "intrinsic") == 1
    assert wn.k_constant(n) == 1


@pytest.mark.parametrize("n", range(2, 12))
def test_k_appendix_ambient_is_one_and_others_differ(n):
    assert wn.k_printed(n, "appendix", "ambient") == 1
    assert wn.k_printed(n, "main", "ambient") != 1
    assert wn.k_printed(n, "appendix", "intrinsic") != 1


def test_k_printed_known_values():
    assert sp.simplify(wn.k_printed(2, "main", "ambient") - 2 / sp.pi) == 0
    assert sp.simplify(wn.k_printed(3, "main", "ambient") - sp.pi / 4) == 0
    assert sp.simplify(wn.k_printed(2, "appendix", "intrinsic") - sp.pi / 2) == 0


def test_k_constant_symbolic():
    n = sp.Symbol("n", positive=True)
    assert wn.k_constant(n) == 1


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3"])
def test_k_bad_n(bad):
    with pytest.raises(ValueError, match="n"):
        wn.k_printed(bad)
    with pytest.raises(ValueError, match="n"):
        wn.k_constant(bad)


def test_k_bad_source_and_ambient_n1():
    with pytest.raises(ValueError, match="source"):
        wn.k_printed(3, "preprint")
    with pytest.raises(ValueError, match="n must be >= 2"):
        wn.k_printed(1, "main", "ambient")


@pytest.mark.parametrize("law", wn.LAWS)
def test_rows_shape_and_finite(law):
    w = wn.rows(3, 4, 5, gen=generator(0), law=law)
    assert w.shape == (3, 4, 5) and w.dtype == torch.float64 and torch.isfinite(w).all()


def test_rows_sphere_radius():
    w = wn.rows(2, 3, 7, gen=generator(1), law="sphere")
    assert torch.allclose(w.norm(dim=-1),
                          torch.full((2, 3), math.sqrt(7), dtype=w.dtype, device=w.device))


def test_rows_bad_args():
    gen = generator(0)
    with pytest.raises(ValueError, match="law"):
        wn.rows(1, 2, 3, gen=gen, law="laplace")
    with pytest.raises(ValueError, match="fan_in"):
        wn.rows(1, 2, 0, gen=gen)
    with pytest.raises(ValueError, match="df"):
        wn.rows(1, 2, 3, gen=gen, law="student_t", df=0)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(1, 6), st.integers(1, 6), st.integers(0, 10**6))
def test_normalize_rows_unit(n_nets, fan_out, fan_in, seed):
    w = wn.rows(n_nets, fan_out, fan_in, gen=generator(seed))
    norms = wn.normalize_rows(w).norm(dim=-1)
    assert torch.allclose(norms, torch.ones_like(norms))


def test_normalize_rows_bad():
    with pytest.raises(ValueError, match="zero row"):
        wn.normalize_rows(torch.zeros(2, 3, dtype=torch.float64))
    with pytest.raises(TypeError, match="w"):
        wn.normalize_rows([[1.0]])


def test_proposed_gain_and_initializer():
    assert wn.proposed_gain(50, 100) == pytest.approx(1.0)
    init = wn.weight_normalized()
    w = init(2, 8, 32, generator(3))
    assert torch.allclose(w.norm(dim=-1), torch.full((2, 8), math.sqrt(2 * 32 / 8),
                                                     dtype=w.dtype, device=w.device))
    w1 = wn.weight_normalized("student_t", gain=1.0)(1, 3, 4, generator(3))
    assert torch.allclose(w1.norm(dim=-1), torch.ones(1, 3, dtype=w1.dtype, device=w1.device))
    with pytest.raises(ValueError, match="gain"):
        wn.weight_normalized(gain=0.0)
    with pytest.raises(ValueError, match="fan_out"):
        wn.proposed_gain(3, 0)
    with pytest.raises(ValueError, match="rows"):
        wn.weight_normalized("x")


@pytest.mark.parametrize("mask", ["relu", "bernoulli"])
def test_layer_sq_ratio_mean_is_one(mask):
    u = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    r = wn.layer_sq_ratio(u, 64, n_nets=4000, gen=generator(5), mask=mask)
    assert r.shape == (4000,)
    se = r.std().item() / math.sqrt(r.numel())
    assert abs(r.mean().item() - 1.0) < 5 * se


def test_layer_sq_ratio_bad_args():
    gen = generator(0)
    u = torch.ones(3, dtype=torch.float64)
    with pytest.raises(ValueError, match="mask"):
        wn.layer_sq_ratio(u, 4, n_nets=2, gen=gen, mask="dropout")
    with pytest.raises(ValueError, match="u must be a non-zero"):
        wn.layer_sq_ratio(torch.zeros(3, dtype=torch.float64), 4, n_nets=2, gen=gen)
    with pytest.raises(ValueError, match="m"):
        wn.layer_sq_ratio(u, 0, n_nets=2, gen=gen)


def _autograd_reference(x, ws, gains, head):
    """Per-sample ||dl/dW^l||_F by autograd, for one network and one sample."""
    ws = [w.clone().requires_grad_(True) for w in ws]
    h = x
    for w, k in zip(ws, gains):
        h = torch.relu(k * (w / w.norm(dim=-1, keepdim=True)) @ h)
    loss = head(h)
    grads = torch.autograd.grad(loss, ws)
    return [g.norm().item() for g in grads]


def test_wn_relu_mlp_matches_autograd():
    gen = generator(11)
    x = torch.randn(1, 6, dtype=torch.float64,
                    generator=torch.Generator().manual_seed(0)).to(device())
    target = torch.randn(5, dtype=torch.float64,
                         generator=torch.Generator().manual_seed(1)).to(device())
    head = lambda h: target.expand_as(h).clone()  # noqa: E731  loss = target . h^L
    state = gen.get_state()
    stats = wn.wn_relu_mlp(x, [4, 5], n_nets=1, gen=gen, delta=head, row_norm=None)
    gen.set_state(state)
    ws = [wn.rows(1, 4, 6, gen=gen)[0], wn.rows(1, 5, 4, gen=gen)[0]]
    ref = _autograd_reference(x[0], ws, stats.gains, lambda h: (target * h).sum())
    assert torch.allclose(stats.log_grad_w[:, 0, 0].exp().cpu(),
                          torch.tensor(ref, dtype=torch.float64))
    assert stats.gains == (wn.proposed_gain(6, 4), wn.proposed_gain(4, 5))
    # the effective-matrix gradient ||dl/dW_hat|| = k ||delta|| ||h|| (eq. 24)
    assert torch.allclose(stats.log_grad_w_hat, stats.log_delta + stats.log_h[:-1]
                          + torch.tensor(stats.gains, dtype=torch.float64,
                                         device=stats.log_h.device).log().view(-1, 1, 1))


def test_wn_relu_mlp_shapes_and_ratios():
    gen = generator(12)
    x = torch.randn(3, 8, dtype=torch.float64)
    s = wn.wn_relu_mlp(x, [16, 16, 16], n_nets=2, gen=gen)
    assert s.log_h.shape == (4, 2, 3) and s.log_delta.shape == (3, 2, 3)
    assert wn.log_grad_ratio(s, "w").shape == (3, 2, 3)
    assert wn.log_grad_ratio(s, "w_hat").shape == (3, 2, 3)
    assert torch.allclose(s.log_h_ratio[0].cpu(), torch.zeros(2, 3, dtype=torch.float64))
    # with unit rows, ||dl/dW|| <= ||dl/dW_hat|| (the projection removes a component)
    assert (s.log_grad_w <= s.log_grad_w_hat + 1e-12).all()
    with pytest.raises(ValueError, match="which"):
        wn.log_grad_ratio(s, "v")


def test_wn_relu_mlp_bad_args():
    gen = generator(0)
    x = torch.randn(3, 8, dtype=torch.float64)
    with pytest.raises(ValueError, match="delta"):
        wn.wn_relu_mlp(x, [4], n_nets=1, gen=gen, delta=None)
    with pytest.raises(ValueError, match="row_norm"):
        wn.wn_relu_mlp(x, [4], n_nets=1, gen=gen, row_norm=0.0)
    with pytest.raises(ValueError, match="widths"):
        wn.wn_relu_mlp(x, [], n_nets=1, gen=gen)
    with pytest.raises(ValueError, match="law"):
        wn.wn_relu_mlp(x, [4], n_nets=1, gen=gen, law="cauchy")


def test_prop3_mean():
    u = torch.tensor([1.0, 2.0, -1.0], dtype=torch.float64)
    r = wn.prop3_sq_norm(u, 50, n_nets=4000, gen=generator(7), row_norm=2.0)
    # E||M||^2/||u||^2 = 2n/(m c^2) (1 - 1/n) E||z||^2 = (6/200)(2/3)(25) = 0.5
    se = r.std().item() / math.sqrt(r.numel())
    assert abs(r.mean().item() - 0.5) < 5 * se
    with pytest.raises(ValueError, match="z must be"):
        wn.prop3_sq_norm(u, 5, n_nets=2, gen=generator(0), z="poisson")
