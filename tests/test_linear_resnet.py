"""Tests for eit.models.linear_resnet (Hardt & Ma 2017, Section 2)."""

import math

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from eit.models import linear_resnet as lr

F64 = torch.float64


def _problem(seed, ell=3, d=3, scale=0.3):
    g = torch.Generator().manual_seed(seed)
    A = scale * torch.randn(ell, d, d, generator=g, dtype=F64)
    R = torch.randn(d, d, generator=g, dtype=F64)
    L = torch.randn(d, d, generator=g, dtype=F64)
    return A, R, L @ L.T + 0.1 * torch.eye(d, dtype=F64)


def test_end_to_end_order():
    A, _, _ = _problem(0)
    eye = torch.eye(3, dtype=F64)
    want = (eye + A[2]) @ (eye + A[1]) @ (eye + A[0])
    assert torch.allclose(lr.end_to_end(A), want)


def test_risk_at_optimum_is_d():
    A, R, S = _problem(1, ell=1)
    A = (R - torch.eye(3, dtype=F64))[None]
    assert torch.isclose(lr.population_risk(A, R, S), torch.tensor(3.0, dtype=F64))


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 5), st.integers(1, 4))
def test_gradient_matches_autograd(seed, ell, d):
    A, R, S = _problem(seed, ell, d)
    assert torch.allclose(lr.gradient(A, R, S), lr.gradient_autograd(A, R, S), atol=1e-10)


def test_gradient_fd_close():
    A, R, S = _problem(2)
    assert torch.allclose(lr.gradient_fd(A, R, S), lr.gradient(A, R, S), atol=1e-6)


def test_printed_gradient_fails_only_with_two_factors():
    A, R, S = _problem(3, ell=3)
    gp, g = lr.gradient_printed(A, R, S), lr.gradient(A, R, S)
    assert torch.allclose(gp[1], g[1])                       # one factor on each side
    assert not torch.allclose(gp[0], g[0])
    A1, R1, S1 = _problem(3, ell=6, d=1)                     # scalars commute
    assert torch.allclose(lr.gradient_printed(A1, R1, S1), lr.gradient(A1, R1, S1))


def test_sample_loss_mean_matches_risk():
    A, R, S = _problem(4)
    g = torch.Generator().manual_seed(0)
    n = 200_000
    x = torch.randn(n, 3, generator=g, dtype=F64) @ torch.linalg.cholesky(S).T
    xi = torch.randn(n, 3, generator=g, dtype=F64)
    loss = lr.sample_loss(A, R, x, xi)
    se = loss.std() / math.sqrt(n)
    assert abs(loss.mean() - lr.population_risk(A, R, S)) < 5 * se


def test_project_ball_and_norm():
    A, _, _ = _problem(5, scale=2.0)
    P = lr.project_ball(A, 0.4)
    assert lr.spectral_norm(P) <= 0.4 + 1e-12


def test_corrected_bound_tight_scalar():
    tau, ell, s = 0.3, 4, 2.5
    A = torch.full((ell, 1, 1), -tau, dtype=F64)
    R, S = torch.tensor([[3.0]], dtype=F64), torch.tensor([[s]], dtype=F64)
    assert torch.isclose(lr.pl_ratio(A, R, S, tau, which="corrected"),
                         torch.tensor(1.0, dtype=F64))
    assert lr.pl_ratio(A, R, S, tau, which="printed") < 1


def test_minimize_ratio_keeps_ball():
    g = torch.Generator().manual_seed(0)
    A = 0.1 * torch.randn(4, 2, 2, 2, generator=g, dtype=F64)
    R = torch.randn(4, 2, 2, generator=g, dtype=F64)
    L = torch.randn(4, 2, 2, generator=g, dtype=F64)
    A, R, S, ratio = lr.minimize_pl_ratio(A, R, L, 0.2, which="corrected", steps=30)
    assert (lr.spectral_norm(A) <= 0.2 + 1e-12).all() and (ratio >= 1 - 1e-9).all()


def test_gradient_descent_residual_vs_standard():
    R = torch.tensor([[1.5, 0.2], [0.1, 0.8]], dtype=F64)
    S = torch.eye(2, dtype=F64)
    zero = torch.zeros(3, 2, 2, dtype=F64)
    hist, _ = lr.gradient_descent(zero, R, S, lr=0.05, steps=200)
    assert hist[-1] < 1e-8
    hist_s, W = lr.gradient_descent(zero, R, S, lr=0.05, steps=20, residual=False)
    assert torch.all(W == 0) and torch.allclose(hist_s[-1], hist_s[0])


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("ell", [3, 8, 25])
def test_small_norm_optimum(seed, ell):
    rng = np.random.default_rng(seed)
    R = rng.standard_normal((4, 4))
    if np.linalg.det(R) < 0:
        R[0] *= -1
    A = lr.small_norm_optimum(R, ell)
    P = np.eye(4)
    for a in A:
        P = (np.eye(4) + a) @ P
    assert np.allclose(P, R, atol=1e-12)
    assert max(np.linalg.norm(a, 2) for a in A) <= lr.theorem21_bound(lr.gamma(R), ell)


def test_orthogonal_root_with_minus_one_pair():
    Q = np.diag([-1.0, -1.0, 1.0])
    W = lr.orthogonal_root(Q, 5)
    assert np.allclose(np.linalg.matrix_power(W, 5), Q)
    assert np.allclose(W.T @ W, np.eye(3))


def test_symbolic_risk_claim_23():
    A, R, S = lr.symbolic_weights(2, 2)
    E = lr.symbolic_product(A) - R
    assert sp.expand(lr.symbolic_risk(A, R, S) - (E * S * E.T).trace() - 2) == 0


def test_symbolic_gradient_printed_l2_correct():
    A, R, S = lr.symbolic_weights(2, 2)
    f = lr.symbolic_risk(A, R, S)
    G = lr.symbolic_gradient_printed(A, R, S, 1)
    D = sp.Matrix(2, 2, lambda r, c: sp.diff(f, A[0][r, c]))
    assert sp.expand(D - G) == sp.zeros(2, 2)


def test_bad_arguments():
    A, R, S = _problem(0)
    with pytest.raises(ValueError, match="A"):
        lr.end_to_end(torch.zeros(3, 2, 3, dtype=F64))
    with pytest.raises(ValueError, match="R"):
        lr.population_risk(A, torch.zeros(2, 2, dtype=F64), S)
    with pytest.raises(ValueError, match="Sigma"):
        lr.gradient(A, R, torch.zeros(2, 2, dtype=F64))
    with pytest.raises(ValueError, match="tau"):
        lr.pl_bound_printed(3, 1.5, S)
    with pytest.raises(ValueError, match="ell"):
        lr.pl_bound_corrected(0, 0.1, S)
    with pytest.raises(ValueError, match="which"):
        lr.pl_ratio(A, R, S, 0.5, which="other")
    with pytest.raises(ValueError, match="x and xi"):
        lr.sample_loss(A, R, torch.zeros(4, 2, dtype=F64), torch.zeros(4, 2, dtype=F64))
    with pytest.raises(ValueError, match="R must have det R > 0"):
        lr.small_norm_optimum(np.diag([1.0, -1.0]), 10)
    c, s_ = np.cos(1.0), np.sin(1.0)
    rotated = np.array([[c, -s_], [s_, c]]) @ np.diag([2.0, 1.0])   # rotations and K != I
    with pytest.raises(ValueError, match="ell"):
        lr.small_norm_optimum(rotated, 2)          # needs 2q + p >= 3 with q, p >= 1
    with pytest.raises(ValueError, match="R must be invertible"):
        lr.gamma(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="gam"):
        lr.theorem21_bound(-1.0, 3)
    with pytest.raises(ValueError, match="Q must have det"):
        lr.orthogonal_root(np.diag([1.0, -1.0]), 3)
    with pytest.raises(ValueError, match="i must"):
        lr.symbolic_gradient_printed(*lr.symbolic_weights(1, 2), 3)
    with pytest.raises(ValueError, match="A must be unbatched"):
        lr.gradient_fd(A[None], R, S)


def test_symbolic_gradient_matches_derivative_l3():
    A, R, S = lr.symbolic_weights(2, 3)
    f = sp.expand(((lr.symbolic_product(A) - R) * S * (lr.symbolic_product(A) - R).T).trace())
    for i in (1, 3):
        D = sp.Matrix(2, 2, lambda r, c, i=i: sp.diff(f, A[i - 1][r, c]))
        assert sp.expand(D - lr.symbolic_gradient(A, R, S, i)) == sp.zeros(2, 2)


def test_pl_ratio_tensor_tau():
    A, R, S = _problem(6)
    taus = torch.tensor([0.5, 0.6], dtype=F64)
    A2 = torch.stack([lr.project_ball(A, 0.5), lr.project_ball(A, 0.6)])
    r = lr.pl_ratio(A2, R, S, taus, which="corrected")
    assert r.shape == (2,) and (r >= 1 - 1e-9).all()
    with pytest.raises(ValueError, match="tau"):
        lr.pl_bound_corrected(3, torch.tensor([1.2], dtype=F64), S)


def test_projected_gradient_descent_negative_det_floor():
    R = torch.diag(torch.tensor([-1.0, 1.0], dtype=F64))
    g = torch.Generator().manual_seed(0)
    A0 = 0.3 * torch.randn(4, 5, 2, 2, generator=g, dtype=F64)
    excess, A = lr.projected_gradient_descent(A0, R, torch.eye(2, dtype=F64), 0.9, lr=0.02,
                                              steps=100)
    assert (excess >= 1 - 1e-9).all() and (lr.spectral_norm(A) <= 0.9 + 1e-12).all()


@pytest.mark.parametrize("ell", [2, 5, 40])
def test_polar_optimum_half_bound(ell):
    rng = np.random.default_rng(ell)
    R = rng.standard_normal((5, 5))
    if np.linalg.det(R) < 0:
        R[0] *= -1
    A = lr.small_norm_optimum(R, ell, method="polar")
    P = np.eye(5)
    for a in A:
        P = (np.eye(5) + a) @ P
    assert A.shape == (ell, 5, 5) and np.allclose(P, R, atol=1e-11)
    with pytest.raises(ValueError, match="method"):
        lr.small_norm_optimum(R, ell, method="qr")


@pytest.mark.parametrize("ell", [1, 2, 4, 10, 11])
def test_small_norm_optimum_gamma_zero_uses_every_layer(ell):
    """K = I (gamma = 0): p = 0, all l layers go to the orthogonal roots (no wasted layer)."""
    rng = np.random.default_rng(ell)
    Q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    if np.linalg.det(Q) < 0:
        Q[:, 0] *= -1
    theta = max(abs(t) for *_, t in lr._rotation_blocks(Q)[1])
    for method, n_rot in (("svd", 2), ("polar", 1)):
        if ell < n_rot:
            continue
        A = lr.small_norm_optimum(Q, ell, method=method)
        P = np.eye(4)
        for a in A:
            P = (np.eye(4) + a) @ P
        assert A.shape == (ell, 4, 4) and np.allclose(P, Q, atol=1e-11)
        worst = max(np.linalg.norm(a, 2) for a in A)
        if method == "polar":                  # q = l roots of Q: 2 sin(theta / 2l)
            assert worst == pytest.approx(2 * np.sin(theta / (2 * ell)), abs=1e-12)
    if ell % 2 == 0:                            # svd: q = l/2 roots of U and of V^T, p = 0
        A = lr.small_norm_optimum(Q, ell, method="svd")
        assert max(np.linalg.norm(a, 2) for a in A) <= lr.theorem21_bound(0.0, ell)


def test_small_norm_optimum_identity_target():
    A = lr.small_norm_optimum(np.eye(3), 1)
    assert A.shape == (1, 3, 3) and np.allclose(A, 0)
