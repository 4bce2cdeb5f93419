"""The per-batch measurements moved out of the Meterez et al. (2024) chapters 01-05.

Each function is checked against the chapter code it replaced (kept here verbatim, so that the
move is known to compute the same numbers), on invariants, and on bad input.
"""

from __future__ import annotations

import math
from collections import Counter

import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from eit.core.device import DTYPE, device
from eit.core.seeds import generator
from eit.exact import weingarten as wg
from eit.models import batchnorm as bnm
from eit.models.bn_jacobian import bn_jacobian, bn_jacobian_norm, jacobian_lemma_violations
from eit.models.bn_one_layer import one_layer_expectations, quasi_spectral_inputs
from eit.models.isometry_lemmas import isometry_gap_logdet, isometry_lemma_checks
from eit.sample.laws import haar_orthogonal
from eit.sample.logits import random_logits
from eit.sample.quasi import quasi_normal, quasi_uniform
from eit.train.batch_rank import (
    batch_ranks,
    gram_ranks,
    random_batch_ranks,
    random_batches,
)
from eit.verdicts import stats
from eit.verdicts.stats import significant_exceedances

SEEDS = st.integers(0, 2**31 - 1)


# -- eit.verdicts.stats -------------------------------------------------------------------
def _beyond_chapter_03(ests, bounds, above):
    """The chapter's former helper (03-isometry-gain-per-layer)."""
    k = len(ests)
    crit = [e.critical(0.001 / k, sides=1) for e in ests]
    far = [(e.value - b) / e.se * (1 if above else -1) > c
           for e, b, c in zip(ests, bounds, crit, strict=True)]
    return stats.proportion(sum(far), k)


@settings(max_examples=30, deadline=None)
@given(SEEDS, st.integers(1, 30))
def test_exceedances_match_the_former_chapter_helper(seed, k):
    g = torch.Generator().manual_seed(seed)
    ests = [stats.mean(torch.randn(20, generator=g, dtype=DTYPE) + 3 * float(torch.randn(
        1, generator=g))) for _ in range(k)]
    bounds = torch.randn(k, generator=g, dtype=DTYPE).tolist()
    for side, above in (("above", True), ("below", False)):
        new = significant_exceedances(ests, bounds, side=side)
        old = _beyond_chapter_03(ests, bounds, above)
        assert (new.successes, new.trials) == (old.successes, old.trials)


@settings(max_examples=30, deadline=None)
@given(SEEDS, st.floats(0.0, 5.0))
def test_exceedances_fall_as_the_bounds_move_away(seed, shift):
    g = torch.Generator().manual_seed(seed)
    ests = [stats.mean(torch.randn(30, generator=g, dtype=DTYPE)) for _ in range(8)]
    values = [e.value for e in ests]
    near = significant_exceedances(ests, values, side="above").successes
    far = significant_exceedances(ests, [x + shift for x in values], side="above").successes
    assert far <= near == 0


def test_exceedances_bad_input():
    e = stats.mean([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="estimates"):
        significant_exceedances([], [], side="above")
    with pytest.raises(TypeError, match="estimates"):
        significant_exceedances([1.0], [0.0], side="above")
    with pytest.raises(ValueError, match="bounds"):
        significant_exceedances([e], [0.0, 1.0], side="above")
    with pytest.raises(ValueError, match="bounds"):
        significant_exceedances([e], [math.nan], side="above")
    with pytest.raises(ValueError, match="side"):
        significant_exceedances([e], [0.0], side="up")
    with pytest.raises(ValueError, match="alpha"):
        significant_exceedances([e], [0.0], side="above", alpha=1.5)


# -- eit.models.bn_one_layer --------------------------------------------------------------------
def _fixed_batches_chapter_03(n_x, n, a, offset):
    u, v = (torch.linalg.qr(quasi_normal(n_x, n, n, offset=offset + t))[0]
            for t in (0.1, 0.2))
    log_s = a * (2 * torch.from_numpy(quasi_uniform(n_x, 1, n, offset=offset)) - 1)
    s = torch.exp(log_s)
    return (u * s) @ v.mT


def _one_layer_chapter_03(n, a, n_x, n_w, gen, offset=0.0):
    X = bnm.bn(_fixed_batches_chapter_03(n_x, n, a, offset))
    lam = bnm.gram_eigenvalues(X)
    Xr = X.repeat_interleave(n_w, dim=0).to(device())
    Xp = haar_orthogonal(n_x * n_w, n, n, gen=gen) @ Xr
    post = bnm.bn(Xp)
    per_w = {"ratio": bnm.isometry(post) / bnm.isometry(Xr),
             "drop": bnm.isometry_gap(Xr) - bnm.isometry_gap(post),
             "rot": bnm.isometry_gap(Xp), "sumsq": Xp.norm(dim=-1).sum(-1) ** 2}
    rows = [dict(d=n, S=float(((lam[i] - 1) ** 2).sum()),
                 phi=float(bnm.isometry_gap(X[i])), lam_max=float(lam[i, -1]),
                 lam_min=float(lam[i, 0])) for i in range(n_x)]
    for key, v in per_w.items():
        for i, row in enumerate(v.view(n_x, n_w)):
            rows[i][key] = stats.mean(row)
    return rows


@pytest.mark.parametrize("n, a, offset", [(2, 0.02, 0.0), (4, 0.7, 0.5), (8, 2.0, 0.0)])
def test_one_layer_matches_the_former_chapter_code(n, a, offset):
    assert torch.equal(quasi_spectral_inputs(3, n, spread=a, offset=offset),
                       _fixed_batches_chapter_03(3, n, a, offset))
    old = _one_layer_chapter_03(n, a, 3, 40, generator(7), offset)
    x = bnm.bn(quasi_spectral_inputs(3, n, spread=a, offset=offset))
    new = one_layer_expectations(x, 40, gen=generator(7))
    assert len(new) == len(old)
    for r_new, r_old in zip(new, old, strict=True):
        assert r_new.keys() == r_old.keys()
        for key in r_old:
            got, want = r_new[key], r_old[key]
            if isinstance(want, stats.Estimate):
                assert (got.value, got.se, got.n) == (want.value, want.se, want.n)
            else:
                assert got == want


def test_one_layer_orthogonal_batch_has_no_gain():
    x = quasi_spectral_inputs(2, 4, spread=0.0)
    rows = one_layer_expectations(x, 10, gen=generator(0))
    for r in rows:
        assert r["S"] < 1e-20 and r["phi"] < 1e-12
        assert abs(r["ratio"].value - 1) < 1e-10 and abs(r["drop"].value) < 1e-10


def test_one_layer_bad_input():
    with pytest.raises(ValueError, match="spread"):
        quasi_spectral_inputs(2, 3, spread=-1.0)
    with pytest.raises(TypeError, match="offset"):
        quasi_spectral_inputs(2, 3, spread=1.0, offset="a")
    with pytest.raises(ValueError, match="n_mats"):
        quasi_spectral_inputs(0, 3, spread=1.0)
    x = quasi_spectral_inputs(2, 3, spread=1.0)
    with pytest.raises(ValueError, match="n_rotations"):
        one_layer_expectations(x, 1, gen=generator(0))
    with pytest.raises(ValueError, match="x"):
        one_layer_expectations(x[:, :2], 5, gen=generator(0))


# -- eit.models.bn_jacobian ---------------------------------------------------------------------
def _jacobian_lemmas_chapter_05(H, every):
    bad = {"d7": 0, "exact": 0, "d8": 0, "d4": 0}
    n = H.shape[-1]
    lam_min, phi = bnm.gram_eigenvalues(H)[:, 0], bnm.isometry_gap(H)
    min_row = H.norm(dim=-1).min(dim=-1).values
    small = phi <= 1 / (16 * n)
    for lemma, value in (("d8", -lam_min.log()), ("d4", -min_row.log())):
        over = (value > n * phi + 1 + 1e-9).sum()
        over += (value[small] > 2 * (n * phi[small]).sqrt() + 1e-9).sum()
        bad[lemma] += int(over)
    n_full = 0
    for i in range(0, H.shape[0], every):
        J = torch.autograd.functional.jacobian(bnm.bn, H[i]).reshape(n * n, n * n)
        op = float(torch.linalg.matrix_norm(J, ord=2))
        bad["exact"] += abs(op * float(min_row[i]) - 1) > 1e-9
        bad["d7"] += op**2 > 1 / float(lam_min[i]) * (1 + 1e-9)
        n_full += 1
    return {**bad, "n_all": H.shape[0], "n_full": n_full}


@pytest.mark.parametrize("n, a", [(2, 0.05), (4, 0.5), (8, 2.0)])
def test_jacobian_lemmas_match_the_former_chapter_code(n, a):
    gen = generator(3)
    H = haar_orthogonal(30, n, n, gen=gen) @ bnm.bn(
        bnm.spectral_inputs(30, n, gen=gen, spread=a))
    new = jacobian_lemma_violations(H, every=3)
    assert new == _jacobian_lemmas_chapter_05(H, 3)
    assert new["n_full"] == 10 and new["d4"] == new["d8"] == new["exact"] == new["d7"] == 0


def test_jacobian_lemmas_detect_an_unnormalized_input():
    # 0.2 I: phi = 0 but log ||J_BN|| = log 5 > 1 (Lemma D.4 needs trace d)
    bad = jacobian_lemma_violations(0.2 * torch.eye(3, dtype=DTYPE).expand(1, 3, 3))
    assert bad["d4"] == 2 and bad["exact"] == 0


@settings(max_examples=25, deadline=None)
@given(SEEDS, st.integers(1, 4), st.integers(2, 4))
def test_bn_jacobian_norm_is_one_over_the_smallest_row(seed, d, n):
    x = torch.randn(d, n, generator=torch.Generator().manual_seed(seed), dtype=DTYPE)
    assert bn_jacobian(x).shape == (d * n, d * n)
    assert math.isclose(bn_jacobian_norm(x) * float(x.norm(dim=-1).min()), 1.0,
                        rel_tol=1e-9)


def test_bn_jacobian_bad_input():
    with pytest.raises(ValueError, match="x"):
        bn_jacobian(torch.ones(3, dtype=DTYPE))
    with pytest.raises(ValueError, match="h"):
        jacobian_lemma_violations(torch.ones(2, 3, 4, dtype=DTYPE))
    with pytest.raises(ValueError, match="every"):
        jacobian_lemma_violations(torch.eye(2, dtype=DTYPE)[None], every=0)


# -- eit.models.isometry_lemmas -----------------------------------------------------------------
def _checks_chapter_02(X, W):
    d = X.shape[-1]
    phi_det = (torch.log((X * X).sum((-2, -1)) / d)
               - 2 / d * torch.linalg.slogdet(X).logabsdet)
    phi, Y, Xp = bnm.isometry_gap(X), bnm.bn(X), W @ X
    moved = torch.stack([bnm.isometry_gap(m) for m in (7 * X, Xp, X @ W)])
    X_deg = torch.cat([X[..., :-1], -2 * X[..., :1]], dim=-1)
    gain = bnm.isometry(bnm.bn(Xp)) / bnm.isometry(X)
    U, _, Vh = torch.linalg.svd(X)
    dev = (bnm.gram_eigenvalues(Y) - 1).abs().amax(-1)
    u = 2 * d * bnm.isometry_gap(Y)
    return dict(
        phi_det=phi_det, invariance=(moved - phi).abs().amax(0),
        collinear_inf=torch.isinf(bnm.isometry_gap(X_deg)),
        lemma2=gain / bnm.row_norm_factor(Xp) - 1,
        b3=(bnm.bn(U.mT @ X) - Vh).abs().amax((-2, -1)),
        c1=dev > 8 * u * (1 + 1e-9),
        c1_fixed=dev > (u + (u * u + 4 * u).sqrt()) / 2 * (1 + 1e-9),
        factor=bnm.row_norm_factor(Xp), gain=gain)


@pytest.mark.parametrize("d, a", [(2, 0.05), (4, 1.0), (16, 3.0)])
def test_isometry_checks_match_the_former_chapter_code(d, a):
    gen = generator(5)
    X = bnm.spectral_inputs(50, d, gen=gen, spread=a)
    W = haar_orthogonal(50, d, d, gen=gen)
    new, old = isometry_lemma_checks(X, W, rtol=1e-9), _checks_chapter_02(X, W)
    assert new.keys() == old.keys()
    for key in old:
        assert torch.equal(new[key], old[key]), key
    assert bool(new["collinear_inf"].all()) and not bool(new["c1_fixed"].any())


@settings(max_examples=30, deadline=None)
@given(SEEDS, st.integers(1, 6), st.floats(1e-3, 1e3))
def test_logdet_gap_is_scale_invariant_and_non_negative(seed, d, c):
    x = torch.randn(d, d, generator=torch.Generator().manual_seed(seed), dtype=DTYPE)
    phi = float(isometry_gap_logdet(x))
    assert phi > -1e-10
    assert math.isclose(float(isometry_gap_logdet(c * x)), phi, rel_tol=1e-8, abs_tol=1e-9)


def test_isometry_checks_bad_input():
    with pytest.raises(TypeError, match="x"):
        isometry_gap_logdet([[1.0]])
    with pytest.raises(ValueError, match="x"):
        isometry_gap_logdet(torch.ones(2, 3, dtype=DTYPE))
    x = torch.eye(3, dtype=DTYPE)[None]
    with pytest.raises(ValueError, match="x and w"):
        isometry_lemma_checks(x, torch.eye(2, dtype=DTYPE)[None])
    with pytest.raises(ValueError, match="rtol"):
        isometry_lemma_checks(x, x, rtol=0.0)


# -- eit.train.batch_rank, eit.sample.logits ----------------------------------------------------
def test_batch_ranks_match_the_former_chapter_code():
    data = torch.randn(60, 10, generator=torch.Generator().manual_seed(0), dtype=DTYPE)
    data[:, -1] = 0                                             # rank at most 9
    cols = torch.tensor([0, 2, 4, 6, 8, 9])
    g_old, g_new = generator(12), generator(12)
    for n in (3, 9, 12):
        idx = torch.stack([torch.randperm(60, generator=g_old, device=g_old.device)[:n].cpu()
                           for _ in range(7)])
        xb = data[idx][:, :, cols]
        old = torch.linalg.matrix_rank(xb @ xb.transpose(-2, -1))
        new = random_batch_ranks(data[:, cols], n, 7, gen=g_new)
        assert torch.equal(new, old)
        assert int(new.max()) <= min(n, 5)


def test_gram_ranks_are_numerical_ranks_at_sqrt_n_eps():
    # sigma_i(B B^T) = sigma_i(B)^2: in single precision a singular value of B below
    # sigma_max sqrt(n eps) (4.9e-4 for n = 2) is lost, in double precision it is not
    batch = torch.diag(torch.tensor([1.0, 1e-4], dtype=DTYPE))[None]
    assert gram_ranks(batch).tolist() == [2]
    assert gram_ranks(batch.float()).tolist() == [1]
    assert torch.linalg.matrix_rank(batch.float()).tolist() == [2]
    assert gram_ranks(torch.diag(torch.tensor([1.0, 1e-3]))[None]).tolist() == [2]


def test_batch_ranks_are_the_batches_own_ranks_with_their_margin():
    # the single-precision Gram matrix loses sigma = 1e-4; the batch itself keeps it, 9
    # decades above the threshold 2 eps (eps = 2.2e-16)
    batch = torch.diag(torch.tensor([1.0, 1e-4], dtype=DTYPE))[None]
    own = batch_ranks(batch.float())
    assert own.ranks.tolist() == [2] and gram_ranks(batch.float()).tolist() == [1]
    own = batch_ranks(batch)
    assert own.ranks.tolist() == [2] and float(own.ratio[0]) == pytest.approx(1e-4)
    assert float(own.margin[0]) == pytest.approx(-4 - math.log10(2 * 2.0**-52), abs=1e-9)
    # a dependent row: rank 1, its zero-ish singular value far below the threshold
    dep = torch.tensor([[[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]]], dtype=DTYPE)
    assert batch_ranks(dep).ranks.tolist() == [1]
    assert float(batch_ranks(dep).margin[0]) > 0
    zero = batch_ranks(torch.zeros(1, 2, 3, dtype=DTYPE))
    assert zero.ranks.tolist() == [0] and zero.ratio.tolist() == [0.0]
    assert math.isinf(float(zero.margin[0]))
    with pytest.raises(ValueError, match="batches"):
        batch_ranks(torch.ones(2, 3, dtype=DTYPE))


def test_random_batches_are_the_batches_that_random_batch_ranks_measures():
    data = torch.randn(40, 6, generator=torch.Generator().manual_seed(3), dtype=DTYPE)
    data[:, 0] = data[:, 1]                                     # rank at most 5
    batches = random_batches(data, 8, 5, gen=generator(4))
    assert batches.shape == (5, 8, 6) and batches.dtype == DTYPE
    rows = {tuple(r) for r in data.tolist()}
    assert all(tuple(r) in rows for r in batches.reshape(-1, 6).tolist())
    assert all(len({tuple(r) for r in b.tolist()}) == 8 for b in batches)   # distinct
    assert torch.equal(gram_ranks(batches), random_batch_ranks(data, 8, 5, gen=generator(4)))
    assert gram_ranks(batches).tolist() == [5] * 5


def test_batch_ranks_bad_input():
    with pytest.raises(ValueError, match="batch_size"):
        random_batch_ranks(torch.ones(3, 2, dtype=DTYPE), 4, 1, gen=generator(0))
    with pytest.raises(ValueError, match="data"):
        random_batch_ranks(torch.ones(3, dtype=DTYPE), 1, 1, gen=generator(0))
    with pytest.raises(ValueError, match="batch_size"):
        random_batches(torch.ones(3, 2, dtype=DTYPE), 4, 1, gen=generator(0))
    with pytest.raises(ValueError, match="batches"):
        gram_ranks(torch.ones(3, 2, dtype=DTYPE))


def _logits_chapter_05(n, C, gen):
    kw = dict(generator=gen, dtype=DTYPE, device=gen.device)
    u, xi = torch.rand(2 * n, C + 2, **kw), torch.randn(2 * n, C, **kw)
    z = (10 ** (4 * u[:, :1] - 2) * xi).cpu()
    y = -torch.log(u[:, 2:].cpu())
    y = y / y.sum(dim=1, keepdim=True)
    hot = (u[:n, 1] * C).long().cpu()
    y[:n] = torch.nn.functional.one_hot(hot, C).to(DTYPE)
    return z, y


@pytest.mark.parametrize("C", [2, 3, 10])
def test_random_logits_match_the_former_chapter_code(C):
    z, y = random_logits(50, C, gen=generator(13))
    z_old, y_old = _logits_chapter_05(50, C, generator(13))
    assert torch.equal(z, z_old) and torch.equal(y, y_old)
    assert torch.allclose(y.sum(dim=1), torch.ones(100, dtype=DTYPE))
    assert bool((y[:50].max(dim=1).values == 1).all()) and bool((y >= 0).all())


def test_random_logits_bad_input():
    with pytest.raises(ValueError, match="n_classes"):
        random_logits(3, 1, gen=generator(0))
    with pytest.raises(ValueError, match="n"):
        random_logits(0, 3, gen=generator(0))


# -- eit.exact.weingarten: coset types and contributing pairs ---------------------------------
@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_coset_types_are_the_partitions_in_sympy_order(k):
    from sympy.utilities.iterables import partitions

    old = [tuple(sorted((a for a, m in p.items() for _ in range(m)), reverse=True))
           for p in partitions(k)]
    assert wg.coset_types(k) == old
    assert len(wg.coset_types(k)) == sp.partition(k)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 2), min_size=4, max_size=4),
       st.lists(st.integers(0, 2), min_size=4, max_size=4))
def test_contributing_pairs_sum_to_the_moment(rows, cols):
    d = sp.Symbol("d", positive=True)
    pairs = wg.contributing_pairs(rows, cols)
    total = sum((wg.weingarten_coset(mu, d) for *_, mu in pairs), sp.Integer(0))
    assert sp.cancel(total - wg.haar_moment(rows, cols, d)) == 0
    assert Counter(mu for *_, mu in pairs) == Counter(
        wg.coset_type(p, q) for p, q, _ in pairs)


def test_contributing_pairs_bad_input():
    with pytest.raises(ValueError, match="indices"):
        wg.contributing_pairs((0, 0, 1), (0, 0, 1))
    with pytest.raises(ValueError, match="indices_i"):
        wg.contributing_pairs("ab", (0, 0))


# -- eit.exact.isometry_symbolic ----------------------------------------------------------------
def test_symbolic_gap_matches_the_former_chapter_helper_and_is_scale_invariant():
    from eit.exact.isometry_symbolic import isometry_gap_of

    lams = sp.symbols("lambda1:5", positive=True)
    c = sp.Symbol("c", positive=True)
    old = sp.log(sum(lams) / 4) - sum(sp.log(e) for e in lams) / 4
    assert isometry_gap_of(lams) == old
    scaled = isometry_gap_of([c**2 * lam for lam in lams]) - isometry_gap_of(lams)
    assert sp.simplify(sp.expand_log(scaled, force=True)) == 0


def test_symbolic_means_and_bn():
    from eit.exact.isometry_symbolic import arithmetic_mean, bn_matrix, geometric_mean

    a, b = sp.symbols("a b", positive=True)
    assert sp.factor(arithmetic_mean([a, b]) ** 2 - geometric_mean([a, b]) ** 2
                     ) == (a - b) ** 2 / 4
    m = sp.Matrix(2, 2, sp.symbols("p q r s", real=True))
    bn, norms = bn_matrix(m)
    assert all(sp.simplify(sum(bn[j, k] ** 2 for k in range(2)) - 1) == 0 for j in range(2))
    assert sp.simplify(norms[0] ** 2 - m[0, 0] ** 2 - m[0, 1] ** 2) == 0


def test_symbolic_bad_input():
    from eit.exact.isometry_symbolic import arithmetic_mean, bn_matrix, isometry_gap_of

    with pytest.raises(ValueError, match="xs"):
        arithmetic_mean([])
    with pytest.raises(ValueError, match="eigenvalues"):
        isometry_gap_of("ab")
    with pytest.raises(TypeError, match="m"):
        bn_matrix([[1, 2]])
