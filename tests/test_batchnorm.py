"""Tests for eit.models.batchnorm: BN of eq. (4), the isometry gap (eq. 5), BN MLPs in depth."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from eit.core import device
from eit.core.seeds import generator
from eit.models.batchnorm import (
    bn,
    bn_centered,
    bn_standard,
    first_layer_grad_lognorm,
    gram_eigenvalues,
    isometry,
    isometry_gap,
    isometry_gaps_in_depth,
    logit_loss_gradient,
    row_norm_factor,
    shaped_first_layer_grad_lognorm,
    shaped_leaky_relu,
    shaped_nonlinearity,
    shaped_weight_grad_lognorms,
    spectral_inputs,
    weight_grad_lognorms,
)
from eit.sample.laws import haar_orthogonal


def _matrix(seed: int, d: int, n: int | None = None) -> torch.Tensor:
    return device.randn(d, n or d, gen=generator(seed))


def _phi_slogdet(x: torch.Tensor) -> torch.Tensor:
    """phi of a square batch from its determinant, without the library's clamp or rank test."""
    d = x.shape[-1]
    return (torch.log((x * x).sum(dim=(-2, -1)) / d)
            - 2.0 / d * torch.linalg.slogdet(x).logabsdet)


def _rounding(x: torch.Tensor) -> float:
    """Rounding error of phi from the eigenvalues of the Gram matrix: eigvalsh has absolute error
    ~ eps lambda_max, so log lambda_min is off by ~ eps cond(X)^2 (ill-conditioned draws)."""
    return 4 * torch.finfo(torch.float64).eps * torch.linalg.cond(x).item() ** 2


SEEDS = st.integers(0, 10_000)
DIMS = st.integers(2, 7)


@settings(max_examples=40, deadline=None)
@given(SEEDS, DIMS)
def test_isometry_gap_is_non_negative(seed, d):
    # independent of the library's clamp: phi from slogdet, no clamping (AM-GM, up to rounding)
    x = _matrix(seed, d)
    raw = _phi_slogdet(x).item()
    assert raw >= -1e-12
    assert isometry_gap(x).item() == pytest.approx(max(raw, 0.0), rel=1e-8, abs=1e-10)


@settings(max_examples=40, deadline=None)
@given(SEEDS, DIMS, st.floats(1e-3, 1e3))
def test_isometry_gap_is_zero_for_orthogonal_rows_with_any_scale(seed, d, c):
    q = haar_orthogonal(1, d, d, gen=generator(seed))[0]
    assert isometry_gap(c * q).item() < 1e-10


@settings(max_examples=40, deadline=None)
@given(SEEDS, DIMS, st.floats(1e-3, 1e3))
def test_isometry_gap_is_scale_invariant(seed, d, c):
    x = _matrix(seed, d)
    assert isometry_gap(c * x).item() == pytest.approx(isometry_gap(x).item(), rel=1e-9,
                                                       abs=_rounding(x))


@settings(max_examples=40, deadline=None)
@given(SEEDS, DIMS)
def test_isometry_gap_is_invariant_under_rotations(seed, d):
    x = _matrix(seed, d)
    w = haar_orthogonal(2, d, d, gen=generator(seed + 1))
    assert isometry_gap(w[0] @ x).item() == pytest.approx(isometry_gap(x).item(), rel=1e-8,
                                                          abs=1e-10 + _rounding(x))
    assert isometry_gap(x @ w[1]).item() == pytest.approx(isometry_gap(x).item(), rel=1e-8,
                                                          abs=1e-10 + _rounding(x))


@settings(max_examples=30, deadline=None)
@given(SEEDS, DIMS)
def test_isometry_gap_is_infinite_for_repeated_samples(seed, d):
    x = _matrix(seed, d)
    # approaching collinearity: det(X_t) = t det(X), so phi grows by 2 log(10) / d per decade
    ts = [10.0**-k for k in range(1, 9)]
    phis = []
    for t in ts:
        xt = x.clone()
        xt[:, -1] = 2.0 * x[:, 0] + t * x[:, -1]
        phis.append(_phi_slogdet(xt).item())
    steps = [b - a for a, b in zip(phis, phis[1:])]
    assert steps[-1] == pytest.approx(2 * math.log(10) / d, rel=1e-4)
    assert all(s > 0 for s in steps[1:])
    # the library agrees with the independent value while the batch is well conditioned ...
    xt = x.clone()
    xt[:, -1] = 2.0 * x[:, 0] + 0.1 * x[:, -1]
    assert isometry_gap(xt).item() == pytest.approx(_phi_slogdet(xt).item(), abs=1e-4)
    # ... and returns the limit, inf, for exactly collinear samples
    x[:, -1] = 2.0 * x[:, 0]
    assert math.isinf(isometry_gap(x).item()) and isometry(x).item() == 0.0


@settings(max_examples=40, deadline=None)
@given(SEEDS, DIMS)
def test_bn_isometry_inequality_lemma_b1(seed, d):
    x = _matrix(seed, d)
    lhs = isometry(bn(x)).item()
    rhs = (row_norm_factor(x) * isometry(x)).item()
    assert lhs >= rhs * (1 - 1e-10)


def test_bn_rows_have_unit_norm_and_trace_d():
    x = bn(_matrix(3, 5))
    assert torch.allclose(x.norm(dim=-1), torch.ones(5, dtype=torch.float64, device=x.device))
    assert gram_eigenvalues(x).sum().item() == pytest.approx(5.0)
    c = bn_centered(_matrix(4, 5))
    assert torch.allclose(c.mean(dim=-1), torch.zeros(5, dtype=torch.float64, device=c.device),
                          atol=1e-12)


def test_isometry_gap_matches_definition():
    x = _matrix(5, 4)
    g = x.T @ x
    expected = math.log(torch.trace(g).item() / 4) - torch.logdet(g).item() / 4
    assert isometry_gap(x).item() == pytest.approx(expected, rel=1e-10)


def test_isometry_gaps_in_depth_are_non_increasing_for_orthogonal_weights():
    gaps = isometry_gaps_in_depth(_matrix(6, 4), 30, n_nets=8, gen=generator(7))
    assert gaps.shape == (31, 8)                      # (depth + 1, n_nets)
    assert (gaps[1:] <= gaps[:-1] + 1e-12).all()


def test_first_layer_grad_lognorm_matches_autograd():
    x0 = _matrix(8, 4)
    got = first_layer_grad_lognorm(x0, [3], n_nets=2, gen=generator(9))
    gen = generator(9)
    ws = [haar_orthogonal(2, 4, 4, gen=gen) for _ in range(3)]
    r = device.randn(2, 4, 4, gen=gen)
    r = r / r.flatten(1).norm(dim=1).view(-1, 1, 1)
    w0 = ws[0].clone().requires_grad_(True)
    x = bn(w0 @ x0)
    for w in ws[1:]:
        x = bn(w @ x)
    (g,) = torch.autograd.grad((r * x).sum(), w0)
    assert got.shape == (1, 2)                        # (len(depths), n_nets)
    assert torch.allclose(got[0], torch.log(g.flatten(1).norm(dim=1)), rtol=1e-10)


def test_shaped_activation_is_identity_at_slope_one():
    h = _matrix(10, 3)
    assert torch.equal(shaped_leaky_relu(1.0)(h), h)


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="x"):
        bn(torch.zeros(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="zero row"):
        bn(torch.zeros(2, 2, dtype=torch.float64))
    with pytest.raises(TypeError, match="x"):
        isometry_gap([[1.0]])
    with pytest.raises(ValueError, match="depth"):
        isometry_gaps_in_depth(_matrix(0, 3), 0, n_nets=1, gen=generator(0))
    with pytest.raises(ValueError, match="weights"):
        isometry_gaps_in_depth(_matrix(0, 3), 1, n_nets=1, gen=generator(0),
                               weights="uniform")
    with pytest.raises(ValueError, match="x0"):
        isometry_gaps_in_depth(torch.zeros(2, 3, 3, dtype=torch.float64) + 1, 1, n_nets=3,
                               gen=generator(0))
    with pytest.raises(ValueError, match="depths"):
        first_layer_grad_lognorm(_matrix(0, 3), [], n_nets=1, gen=generator(0))
    with pytest.raises(ValueError, match="slope"):
        shaped_leaky_relu(1.5)


def test_spectral_inputs_have_the_prescribed_singular_values():
    x = spectral_inputs(5, 4, gen=generator(11), spread=2.0)
    assert x.shape == (5, 4, 4)
    s = torch.linalg.svdvals(x)
    assert (s.log().abs() <= 2.0 + 1e-9).all()
    q = spectral_inputs(3, 4, gen=generator(12), spread=0.0)
    assert (isometry_gap(q) < 1e-10).all()
    with pytest.raises(ValueError, match="spread"):
        spectral_inputs(1, 2, gen=generator(0), spread=-1.0)
    with pytest.raises(ValueError, match="n_mats"):
        spectral_inputs(0, 2, gen=generator(0), spread=1.0)


@pytest.mark.parametrize("centered", [False, True])
def test_manual_backward_matches_autograd_path(centered):
    """The closed-form BN vector-Jacobian product equals autograd (identity activation)."""
    x0 = _matrix(13, 5)
    fast = first_layer_grad_lognorm(x0, [1, 4], n_nets=3, gen=generator(14),
                                    centered=centered)
    slow = first_layer_grad_lognorm(x0, [1, 4], n_nets=3, gen=generator(14),
                                    centered=centered, activation=lambda h: h)
    assert torch.allclose(fast, slow, rtol=1e-10, atol=1e-12)


def test_bn_standard_has_unit_variance_rows():
    y = bn_standard(_matrix(15, 4, 6))
    assert torch.allclose(y.mean(dim=-1), torch.zeros(4, dtype=torch.float64, device=y.device),
                          atol=1e-12)
    assert torch.allclose(y.var(dim=-1, unbiased=False),
                          torch.ones(4, dtype=torch.float64, device=y.device))


def test_shaped_network_with_identity_matches_centered_linear_network():
    """sigma = id: X_{l+1} = alpha sqrt(n) BN_centered(W X_l): only the read-out scale differs."""
    x0 = _matrix(16, 4, 4)
    shaped = shaped_first_layer_grad_lognorm(x0, [1, 5], n_nets=2, gen=generator(17),
                                             activation=lambda h: h, gains=0.3)
    linear = first_layer_grad_lognorm(x0, [1, 5], n_nets=2, gen=generator(17),
                                      centered=True)
    assert torch.allclose(shaped, linear + math.log(0.3 * math.sqrt(4)), rtol=1e-9)
    per_layer = shaped_weight_grad_lognorms(x0, 5, n_nets=2, gen=generator(17),
                                            activation=lambda h: h, gains=[0.3] * 5)
    assert per_layer.shape == (5, 2) and shaped.shape == (2, 2)
    assert torch.allclose(per_layer[0], shaped[1], rtol=1e-9)


def test_shaped_output_scale_removes_the_last_gain_exactly():
    """BN is scale invariant, so only the last gain reaches dL/dW_0: first - scale is gain-free."""
    x0, gains = _matrix(21, 4, 5), [1.0, 0.5, 0.25, 0.2, 0.1]
    ident = lambda h: h  # noqa: E731
    first, scale = shaped_first_layer_grad_lognorm(x0, [2, 5], n_nets=3, gen=generator(23),
                                                   activation=ident, gains=gains,
                                                   with_output_scale=True)
    plain = shaped_first_layer_grad_lognorm(x0, [2, 5], n_nets=3, gen=generator(23),
                                            activation=ident, gains=gains)
    unit = shaped_first_layer_grad_lognorm(x0, [2, 5], n_nets=3, gen=generator(23),
                                           activation=ident, gains=1.0)
    assert torch.equal(first, plain)  # same draws with or without the scale
    assert first.shape == scale.shape == (2, 3)       # (len(depths), n_nets)
    assert torch.allclose(scale, torch.log(torch.tensor([[0.5] * 3, [0.1] * 3],
                                                        dtype=torch.float64, device=scale.device)))
    assert torch.allclose(first - scale, unit, rtol=1e-9)
    _, tanh_scale = shaped_first_layer_grad_lognorm(x0, [5], n_nets=3, gen=generator(23),
                                                    activation=torch.tanh, gains=gains,
                                                    with_output_scale=True)
    assert torch.all(tanh_scale < math.log(0.1)) and torch.all(tanh_scale > math.log(0.1) - 0.05)
    with pytest.raises(TypeError, match="with_output_scale"):
        shaped_first_layer_grad_lognorm(x0, [2], n_nets=1, gen=generator(0),
                                        activation=ident, gains=1.0, with_output_scale="yes")


def test_shaped_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="gains"):
        shaped_weight_grad_lognorms(_matrix(0, 3), 4, n_nets=1, gen=generator(0),
                                    activation=torch.tanh, gains=[1.0, 1.0])
    with pytest.raises(ValueError, match="gains"):
        shaped_first_layer_grad_lognorm(_matrix(0, 3), [2], n_nets=1, gen=generator(0),
                                        activation=torch.tanh, gains=-1.0)
    with pytest.raises(TypeError, match="activation"):
        shaped_weight_grad_lognorms(_matrix(0, 3), 2, n_nets=1, gen=generator(0),
                                    activation=None, gains=1.0)


def test_shaped_nonlinearity_is_zero_for_identity_and_small_for_small_gains():
    x0 = _matrix(18, 4, 5)
    ident = shaped_nonlinearity(x0, 3, n_nets=2, gen=generator(19),
                                activation=lambda h: h, gains=0.7)
    assert ident.shape == (3, 2) and torch.all(ident == 0)     # (depth, n_nets)
    small = shaped_nonlinearity(x0, 3, n_nets=2, gen=generator(19), activation=torch.tanh,
                                gains=1e-3)
    # tanh(u) - u = -u^3/3 + ...: the relative deviation is of order gain^2
    assert torch.all(small > 0) and torch.all(small < 1e-5)
    big = shaped_nonlinearity(x0, 3, n_nets=2, gen=generator(19), activation=torch.tanh,
                              gains=[1.0, 1.0, 1.0])
    assert torch.all(big > 100 * small)


def test_shaped_nonlinearity_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="depth"):
        shaped_nonlinearity(_matrix(0, 3), 0, n_nets=1, gen=generator(0),
                            activation=torch.tanh, gains=1.0)
    with pytest.raises(ValueError, match="gains"):
        shaped_nonlinearity(_matrix(0, 3), 3, n_nets=1, gen=generator(0),
                            activation=torch.tanh, gains=[1.0])
    with pytest.raises(TypeError, match="activation"):
        shaped_nonlinearity(_matrix(0, 3), 2, n_nets=1, gen=generator(0),
                            activation="tanh", gains=1.0)


def test_logit_loss_gradient_matches_autograd():
    gen = generator(31)
    z = (3 * device.randn(50, 5, gen=gen)).requires_grad_(True)
    y = torch.softmax(device.randn(50, 5, gen=gen), dim=1)          # soft targets
    y[:25] = torch.nn.functional.one_hot(torch.arange(25) % 5, 5).to(y)
    logp = torch.log_softmax(z, dim=1)
    for loss, per in (("cross_entropy", -(y * logp).sum(dim=1)),
                      ("mse", ((y - logp.exp()) ** 2).sum(dim=1) / 5)):
        (grad,) = torch.autograd.grad(per.sum(), z, retain_graph=True)
        assert torch.allclose(logit_loss_gradient(z.detach(), y, loss), grad, atol=1e-13)


def test_logit_loss_gradient_bad_arguments_name_the_argument():
    z = torch.zeros(3, 4, dtype=torch.float64)
    with pytest.raises(ValueError, match="loss"):
        logit_loss_gradient(z, z, "hinge")
    with pytest.raises(ValueError, match="y must have the shape"):
        logit_loss_gradient(z, z[:, :3], "mse")
    with pytest.raises(TypeError, match="z"):
        logit_loss_gradient([1.0, 2.0], z, "mse")
    with pytest.raises(ValueError, match="z"):
        logit_loss_gradient(torch.zeros(3, 1, dtype=torch.float64), torch.zeros(3, 1), "mse")


def test_weight_grad_lognorms_first_layer_matches_first_layer_function():
    x0 = _matrix(40, 5)
    every = weight_grad_lognorms(x0, [1, 3, 6], n_nets=2, gen=generator(41))
    first = first_layer_grad_lognorm(x0, [1, 3, 6], n_nets=2, gen=generator(41))
    assert every.shape == (3, 6, 2)                   # (len(depths), max(depths), n_nets)
    assert torch.allclose(every[:, 0], first, atol=1e-12)
    assert torch.isnan(every[0, 1:]).all() and torch.isnan(every[1, 3:]).all()
    assert torch.isfinite(every[2]).all()
    assert torch.isfinite(every[0, 0]).all() and torch.isfinite(every[1, :3]).all()


@pytest.mark.parametrize("loss", ["cross_entropy", "mse"])
def test_weight_grad_lognorms_match_autograd_at_every_layer(loss):
    d, n, depth, n_nets, n_classes = 5, 5, 4, 2, 3
    x0 = _matrix(42, d, n)
    labels = torch.tensor([0, 2, 1, 1, 0])
    out = weight_grad_lognorms(x0, [depth], n_nets=n_nets, gen=generator(43), loss=loss,
                               labels=labels, n_classes=n_classes)
    gen = generator(43)                    # the same draws: weights, then the head
    ws = [haar_orthogonal(n_nets, d, d, gen=gen).requires_grad_(True) for _ in range(depth)]
    head = haar_orthogonal(n_nets, n_classes, d, gen=gen)
    x = x0.expand(n_nets, d, n)
    for w in ws:
        x = bn(w @ x)
    logp = torch.log_softmax((head @ x).transpose(-2, -1), dim=-1)  # (n_nets, n, C)
    y = torch.nn.functional.one_hot(labels, n_classes).to(logp)
    per = (-(y * logp).sum(-1) if loss == "cross_entropy"
           else ((y - logp.exp()) ** 2).sum(-1) / n_classes)
    grads = torch.autograd.grad(per.mean(-1).sum(), ws)
    expected = torch.stack([torch.log(g.flatten(1).norm(dim=1)) for g in grads])
    assert out.shape == (1, depth, n_nets)
    assert torch.allclose(out[0], expected, atol=1e-10)


def test_weight_grad_lognorms_bad_arguments_name_the_argument():
    x0, gen = _matrix(0, 4), generator(0)
    with pytest.raises(ValueError, match="loss"):
        weight_grad_lognorms(x0, [2], n_nets=1, gen=gen, loss="hinge")
    with pytest.raises(ValueError, match="labels and n_classes"):
        weight_grad_lognorms(x0, [2], n_nets=1, gen=gen, n_classes=2)
    with pytest.raises(ValueError, match="n_classes"):
        weight_grad_lognorms(x0, [2], n_nets=1, gen=gen, loss="mse",
                             labels=torch.zeros(4, dtype=torch.int64), n_classes=5)
    with pytest.raises(ValueError, match="labels"):
        weight_grad_lognorms(x0, [2], n_nets=1, gen=gen, loss="mse",
                             labels=torch.tensor([0, 1, 2, 3]), n_classes=3)
    with pytest.raises(TypeError, match="labels"):
        weight_grad_lognorms(x0, [2], n_nets=1, gen=gen, loss="cross_entropy", labels=[0, 1, 0, 1],
                             n_classes=2)
    with pytest.raises(ValueError, match="depths"):
        weight_grad_lognorms(x0, [0], n_nets=1, gen=gen)
