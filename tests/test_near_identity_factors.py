"""Theorem 2.1's factorization into near-identity factors (eit.models.near_identity_factors)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import special_ortho_group

from eit.models import near_identity_factors as nif


def haar(d, rng):
    return special_ortho_group.rvs(d, random_state=rng)


def plane_rotation(d, angle):
    Q = np.eye(d)
    Q[:2, :2] = [[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]]
    return Q


@pytest.mark.parametrize("method", ["svd", "polar"])
@pytest.mark.parametrize("kappa", [1, 4, 64])
def test_the_factors_reproduce_the_target_within_the_guarantee(method, kappa):
    rng = np.random.default_rng(kappa)
    d = 4
    k = np.geomspace(kappa**-0.5, kappa**0.5, d)
    gamma = math.log(kappa) / 2
    for ell in (3, 5, 8, 13):
        if ell < 3 * gamma:
            continue
        U, V = haar(d, rng), haar(d, rng)
        A = nif.construct(U, k, V, ell, method=method)
        assert A.shape == (ell, d, d)
        assert np.allclose(nif.product(A), U @ np.diag(k) @ V.T, atol=1e-10)
        norm = max(np.linalg.norm(a, 2) for a in A)
        assert norm <= nif.guarantee(gamma, ell, method=method) + 1e-12


def test_the_worst_svd_of_an_orthogonal_target_attains_the_guarantee():
    """kappa = 1: any V gives an SVD (U = R V); one with a half turn costs 2 sin(pi / 2q)."""
    d, ell = 4, 5
    R = haar(d, np.random.default_rng(1))
    V = plane_rotation(d, math.pi)
    A = nif.construct(R @ V, np.ones(d), V, ell)
    norm = max(np.linalg.norm(a, 2) for a in A)
    assert math.isclose(norm, nif.guarantee(0.0, ell), rel_tol=1e-9)
    assert norm > nif.theorem21_bound(0.0, ell)          # the stated bound fails here


def test_the_polar_construction_does_not_depend_on_the_choice_of_svd():
    d, ell = 4, 7
    rng = np.random.default_rng(2)
    R = haar(d, rng)
    V1, V2 = haar(d, rng), haar(d, rng)
    A1 = nif.construct(R @ V1, np.ones(d), V1, ell, method="polar")
    A2 = nif.construct(R @ V2, np.ones(d), V2, ell, method="polar")
    assert np.allclose(A1, A2, atol=1e-10)


def test_guarantees_against_the_stated_bound():
    for ell in range(3, 60):
        svd, polar = nif.guarantee(0.0, ell), nif.guarantee(0.0, ell, method="polar")
        bound = nif.theorem21_bound(0.0, ell)
        assert (svd > bound) == (ell % 2 == 1 and ell >= 5)
        assert polar < bound / 2
    q, p, _ = nif.split(1.0, 10)
    assert 2 * q + p == 10 and p >= 1


def test_rotation_angle_is_a_property_of_the_matrix():
    Q = plane_rotation(3, 2.0)
    S = haar(3, np.random.default_rng(3))
    assert math.isclose(nif.rotation_angle(S @ Q @ S.T), 2.0, rel_tol=1e-12)


@pytest.mark.parametrize(("call", "name"), [
    (lambda: nif.split(-1.0, 5), "gamma"),
    (lambda: nif.split(0.0, 0), "ell"),
    (lambda: nif.split(0.0, 5, method="qr"), "method"),
    (lambda: nif.split(0.0, 5, theta=4.0), "theta"),
    (lambda: nif.construct(np.eye(2), np.ones(3), np.eye(2), 3), "shapes"),
    (lambda: nif.construct(np.diag([1.0, -1.0]), np.ones(2), np.eye(2), 3), "det"),
    (lambda: nif.construct(np.eye(2), np.array([1.0, 0.0]), np.eye(2), 3), "singular"),
    (lambda: nif.rotation_angle(np.ones((2, 2))), "orthogonal"),
    (lambda: nif.schur_blocks(np.ones((2, 3))), "square"),
    (lambda: nif.max_norm(np.ones((2, 2))), "shape"),
])
def test_bad_arguments_are_named(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()


def test_random_factors_have_the_stated_spectrum():
    from eit.core.seeds import generator

    factors = nif.random_factors(16.0, 3, 4, gen=generator(5))
    assert len(factors) == 3
    for U, k, V in factors:
        R = U @ np.diag(k) @ V.T
        s = np.linalg.svd(R, compute_uv=False)
        assert np.allclose(sorted(s), k) and math.isclose(s[0] / s[-1], 16.0)
        assert np.linalg.det(U) > 0 and np.linalg.det(V) > 0


def test_schur_blocks_of_normal_matrices():
    rng = np.random.default_rng(6)
    for d in (4, 6):
        Q = haar(d, rng)
        Q[:, 0] *= -1                                    # det -1
        off, err, reflection = nif.schur_blocks(Q)
        assert off < 1e-10 and err < 1e-10 and reflection   # even d: always a reflection
        off, err, reflection = nif.schur_blocks(haar(d, rng))
        assert off < 1e-10 and err < 1e-10 and not reflection
