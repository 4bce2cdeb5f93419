"""The Hardt & Ma (2017) helpers that the five chapters of that part call (moved out of them).

Where a helper replaces code that stood in a chapter, the test runs the chapter's former code
next to it on the same generator state and asks for bitwise equality: the chapters' records
must not move.
"""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from eit.core.device import rand, randn
from eit.core.seeds import generator
from eit.models import expressivity as ex
from eit.models import linear_resnet as lr
from eit.models import near_identity_factors as nif
from eit.plotting.curves import annotated_grid, runs
from eit.sample.laws import haar_orthogonal
from eit.sample.quasi import quasi_normal
from eit.verdicts import stats
from eit.verdicts.stats import paired_difference, proportion_of

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


# ------------------------------------------------------------ Claim 2.3 and Lemma 2.4
def test_random_instance_is_the_chapter_draw():
    d, ell, scale = 4, 3, 0.3
    A, R, Sigma = lr.random_instance(d, ell, scale, gen=generator(5), batch=(2,))
    gen = generator(5)
    A0 = scale / d**0.5 * randn(2, ell, d, d, gen=gen)
    R0 = randn(2, d, d, gen=gen) / d**0.5
    L = randn(2, d, d, gen=gen)
    S0 = L @ L.mT / d + 0.1 * torch.eye(d, dtype=torch.float64, device=L.device)
    assert torch.equal(A, A0) and torch.equal(R, R0) and torch.equal(Sigma, S0)


def test_quasi_instance_is_the_chapter_instance():
    d, ell, scale = 8, 6, 0.3
    A, R, Sigma = lr.quasi_instance(d, ell, scale)
    L0 = quasi_normal(d, d, offset=0.5)
    assert torch.equal(A, scale / d**0.5 * quasi_normal(ell, d, d))
    assert torch.equal(R, quasi_normal(d, d, offset=0.25) / d**0.5)
    assert torch.equal(Sigma, L0 @ L0.T / d + 0.1 * torch.eye(d, dtype=torch.float64))


def test_sampled_loss_is_the_chapter_draw_and_estimates_the_risk():
    A, R, Sigma = lr.random_instance(3, 2, 0.3, gen=generator(1))
    loss = lr.sampled_loss(A, R, Sigma, 200_000, gen=generator(2))
    gen = generator(2)
    x = randn(200_000, 3, gen=gen) @ torch.linalg.cholesky(Sigma).mT
    assert torch.equal(loss, lr.sample_loss(A, R, x, randn(200_000, 3, gen=gen)))
    se = float(loss.std() / math.sqrt(loss.numel()))
    assert abs(float(loss.mean() - lr.population_risk(A, R, Sigma))) < 5 * se


def test_group_gradients_is_the_chapter_loop():
    A0, R0, Sigma0 = lr.quasi_instance(3, 3, 0.3)
    got = lr.group_gradients(A0, R0, Sigma0, groups=4, size=50, gen=generator(3))
    gen, chol = generator(3), torch.linalg.cholesky(Sigma0)
    old = []
    for _ in range(4):
        x = randn(50, 3, gen=gen) @ chol.mT.to(gen.device)
        A = A0.clone().to(x.device).requires_grad_(True)
        lr.sample_loss(A, R0.to(x.device), x, randn(50, 3, gen=gen)).mean().backward()
        old.append(A.grad)
    assert torch.equal(got, torch.stack(old).cpu())


def test_relative_error_and_printed_gradient_error():
    A, R, Sigma = lr.random_instance(3, 4, 0.3, gen=generator(0), batch=(5,))
    err = lr.printed_gradient_error(A, R, Sigma)
    assert err.shape == (5,) and bool((err > 1e-6).all())          # l = 4, d = 3: wrong
    assert float(lr.relative_error(lr.gradient(A, R, Sigma),
                                   lr.gradient_autograd(A, R, Sigma)).max()) < 1e-12
    with pytest.raises(ValueError, match="same shape"):
        lr.relative_error(torch.ones(2, 2), torch.ones(3, 3))


def test_monomials_left():
    a = sp.Symbol("a")
    assert lr.monomials_left(sp.Matrix([[a - a, 0]])) == 0
    with pytest.raises(TypeError, match="M"):
        lr.monomials_left(a)


# ------------------------------------------------------------------ Theorem 2.2, eq. (2.3)
def test_random_ball_instances_is_the_chapter_draw():
    d, ell, n = 2, 3, 5
    A, R, Sigma, tau = lr.random_ball_instances(d, ell, n, gen=generator(4))
    gen = generator(4)
    tau0 = 0.95 * rand(n, gen=gen)
    G = randn(n, ell, d, d, gen=gen)
    u = rand(n, ell, 1, 1, gen=gen) * tau0[:, None, None, None]
    A0 = G / torch.linalg.matrix_norm(G, ord=2)[..., None, None] * u
    R0, L = randn(n, d, d, gen=gen), randn(n, d, d, gen=gen)
    scale = torch.exp(randn(n, gen=gen))[:, None, None]
    S0 = scale * L @ L.mT / d + 1e-3 * torch.eye(d, dtype=torch.float64, device=L.device)
    for new, old in ((A, A0), (R, R0), (Sigma, S0), (tau, tau0)):
        assert torch.equal(new, old)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 4), st.integers(1, 5), st.integers(0, 2**31 - 1))
def test_corrected_pl_inequality_holds_in_the_ball(d, ell, seed):
    r = lr.pl_ratio_search([d], [ell], 8, gen=generator(seed))
    assert bool((r["corrected"] >= 1 - 1e-9).all())


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 5), st.integers(0, 2**31 - 1))
def test_claim_c2_holds_and_is_attained(d, seed):
    ratio, tight = lr.claim_c2_trials(d, 16, gen=generator(seed))
    assert bool((ratio >= 1 - 1e-12).all())
    assert float((tight - 1).abs().max()) < 1e-9


def test_scalar_pl_sides_are_the_counterexamples():
    half = sp.Rational(1, 2)
    assert lr.scalar_pl_sides([0], 0, 2, half) == (16, 32)
    lhs, rhs = lr.scalar_pl_sides([-half, -half], 0, 1, half)
    assert lhs < rhs
    with pytest.raises(ValueError, match="a_vals"):
        lr.scalar_pl_sides([], 0, 1, half)


def test_adversarial_minima_is_the_chapter_loop():
    found, printed_id, corrected = lr.adversarial_minima(2, 2, 0.3, starts=3, steps=4,
                                                         gen=generator(6))
    gen, old = generator(6), []
    for which, ident in (("printed", False), ("printed", True), ("corrected", False)):
        A0 = 0.5 * 0.3 * randn(3, 2, 2, 2, gen=gen)
        R0, L0 = randn(3, 2, 2, gen=gen), randn(3, 2, 2, gen=gen)
        *_, rat = lr.minimize_pl_ratio(A0, R0, L0, 0.3, which=which, steps=4,
                                       identity_sigma=ident)
        old.append(rat.min())
    assert found == bool(old[0] < 1)
    assert torch.equal(printed_id, old[1]) and torch.equal(corrected, old[2])


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="scale"):
        lr.random_instance(2, 2, -1.0, gen=generator(0))
    with pytest.raises(ValueError, match="groups"):
        lr.group_gradients(*lr.quasi_instance(2, 2, 0.3), groups=0, size=2,
                           gen=generator(0))
    with pytest.raises(ValueError, match="tau_max"):
        lr.random_ball_instances(2, 2, 2, gen=generator(0), tau_max=1.5)
    with pytest.raises(ValueError, match="dims and depths"):
        lr.pl_ratio_search([], [2], 2, gen=generator(0))


# ------------------------------------------------------------------------- Theorem 2.1
def test_guarantee_ratios_is_the_chapter_grid():
    gammas, max_depth = [0.0, 0.5, 2.0], 30
    for method in ("svd", "polar"):
        old = []
        for gam in gammas:
            for ell in range(max(3, int(np.ceil(3 * gam))), max_depth + 1):
                bnd = lr.theorem21_bound(float(gam), ell)
                old.append((gam, ell, nif.guarantee(gam, ell, method=method) / bnd))
        assert np.array_equal(nif.guarantee_ratios(gammas, max_depth, method=method),
                              np.array(old))
    with pytest.raises(ValueError, match="method"):
        nif.guarantee_ratios([0.0], 5, method="qr")


def test_norms_by_depth_is_the_chapter_loop():
    (U, k, V), = nif.random_factors(4.0, 1, 4, gen=generator(7))
    gam = float(np.log(4.0) / 2)
    rows = nif.norms_by_depth(U, k, V, [3, 8, 20], gam)
    R = U @ np.diag(k) @ V.T
    for row, ell in zip(rows, [3, 8, 20]):
        A_svd, A_pol = nif.construct(U, k, V, ell), nif.construct(U, k, V, ell, method="polar")
        err = max(np.abs(nif.product(A) - R).max() for A in (A_svd, A_pol))
        assert tuple(row) == (ell, lr.theorem21_bound(gam, ell), nif.max_norm(A_svd),
                              nif.max_norm(A_pol), nif.guarantee(gam, ell), err)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 5), st.integers(1, 40), st.integers(0, 2**31 - 1))
def test_psd_root_factors_reproduce_the_target(d, ell, seed):
    U = haar_orthogonal(1, d, d, gen=generator(seed))[0].cpu().numpy()
    z = np.geomspace(1 / 8, 8, d)
    A = nif.psd_root_factors(U, z, ell)
    assert np.allclose(nif.product(A), U @ np.diag(z) @ U.T, atol=1e-9)
    gam = float(np.log(8)) if d > 1 else float(abs(np.log(z[0])))
    if ell >= 3 * gam:
        assert nif.max_norm(A) <= 3 * gam / ell + 1e-12


def test_normal_families_are_the_chapter_draw():
    fams = nif.normal_families(3, 4, gen=generator(8))
    gen = generator(8)
    Qs = haar_orthogonal(3, 4, 4, gen=gen).cpu().numpy()
    coef = randn(3, 3, gen=gen).cpu().numpy()
    G = randn(3, 4, 4, gen=gen).cpu().numpy()
    assert all(np.array_equal(a, b) for a, b in zip(fams["orthogonal"], Qs))
    assert all(np.array_equal(a, b) for a, b in zip(
        fams["aQ + bQ^T + cI"], [a * Q + b * Q.T + c * np.eye(4) for (a, b, c), Q in
                                 zip(coef, Qs)]))
    assert all(np.array_equal(a, g + g.T) for a, g in zip(fams["symmetric"], G))
    with pytest.raises(ValueError, match="z"):
        nif.psd_root_factors(np.eye(2), np.array([1.0, -1.0]), 2)


# ------------------------------------------------------------------------- Theorem 3.2
def test_random_labelled_and_label_errors_are_the_chapter_code():
    x, labels = ex.random_labelled(30, 16, 3, gen=generator(9))
    gen = generator(9)
    x0 = ex.unit_sphere(30, 16, gen=gen)
    labels0 = torch.randint(0, 3, (30,), generator=gen, device=gen.device)
    assert torch.equal(x, x0) and torch.equal(labels, labels0)
    net = ex.build(x, labels, 3, 20, 0.2, gen=generator(10))
    _, y_hat = ex.forward(net, x)
    old = (y_hat - torch.eye(3, dtype=torch.float64, device=y_hat.device)[labels]).abs().amax(1)
    assert torch.equal(ex.label_errors(net, x, labels), old)
    log = ex.block_log(net, 1e-12)
    assert log == [(c["norms"] and c["corrected"], e <= 1e-12)
                   for c, e in zip(net.conditions, net.block_errors)]
    with pytest.raises(ValueError, match="labels"):
        ex.label_errors(net, x, labels[:3])
    with pytest.raises(ValueError, match="tol"):
        ex.block_log(net, -1.0)


def test_printed_last_block():
    assert not ex.printed_last_block_composes(5, 3)
    assert ex.printed_last_block_composes(4, 4)
    with pytest.raises(ValueError, match="k"):
        ex.printed_last_block_composes(0, 3)


# ------------------------------------------------------------------ figures, paired gaps
def test_runs_and_annotated_grid():
    fig, ax = plt.subplots()
    lines = runs(ax, [0, 1], torch.tensor([[1.0, 0.0], [2.0, 3.0]]), floor=0.5, label="r")
    assert [ln.get_label() for ln in lines][0] == "r"
    assert float(lines[1].get_ydata()[0]) == 0.5
    with pytest.raises(ValueError, match="samples"):
        runs(ax, [0], torch.ones(3))
    with pytest.raises(ValueError, match="marks"):
        annotated_grid(ax, np.ones((2, 2)), xticklabels=[1, 2], yticklabels=[1, 2],
                       marks=np.ones(3, dtype=bool))
    with pytest.raises(ValueError, match="xticklabels"):
        annotated_grid(ax, np.ones((2, 2)), xticklabels=[1], yticklabels=[1, 2])
    plt.close(fig)


def test_paired_difference_is_the_chapter_gap():
    a, b = [0.9, 0.7, 0.8, 0.95], [0.5, 0.6, 0.65]
    d = paired_difference(a, b)
    assert d.n == 3 and d.df == 2
    assert d.value == pytest.approx(np.mean(np.subtract(a[:3], b)), abs=1e-15)
    with pytest.raises(ValueError, match="a and b"):
        paired_difference([], [1.0])


def test_proportion_of_is_the_chapter_count():
    ratios = torch.tensor([0.5, 1.0, 2.0, 0.99])
    p = proportion_of(ratios < 1)
    assert (p.successes, p.trials) == (2, 4)
    assert p == stats.proportion(int((ratios < 1).sum()), ratios.numel())
    assert proportion_of([True, False]).trials == 2
    with pytest.raises(TypeError, match="mask"):
        proportion_of(torch.tensor([0.5]))
    with pytest.raises(ValueError, match="mask"):
        proportion_of(np.array([], dtype=bool))
