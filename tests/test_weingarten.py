"""Tests for eit.exact.weingarten: exact orthogonal Weingarten calculus, cross-checked by haarpy."""

from __future__ import annotations

import math

import haarpy
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from eit.core.seeds import generator
from eit.exact.weingarten import (
    D,
    coset_type,
    delta,
    gram_matrix,
    haar_moment,
    haar_monomial_samples,
    loops,
    monomial_samples,
    pair_partitions,
    weingarten_coset,
    weingarten_matrix,
    weingarten_o,
)
from eit.sample.laws import haar_orthogonal


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_number_of_pair_partitions_is_double_factorial(k):
    ps = pair_partitions(k)
    assert len(ps) == math.prod(range(2 * k - 1, 0, -2))
    assert len(set(ps)) == len(ps)


def test_loops_and_coset_types_for_k2():
    p0, p1, p2 = pair_partitions(2)
    assert loops(p0, p0) == 2 and coset_type(p0, p0) == (1, 1)
    assert loops(p0, p1) == 1 and coset_type(p0, p1) == (2,)
    assert coset_type(p1, p2) == (2,)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_weingarten_matrix_inverts_gram_matrix(k):
    product = (gram_matrix(k) * weingarten_matrix(k)).applyfunc(sp.cancel)
    assert product == sp.eye(len(pair_partitions(k)))


@pytest.mark.parametrize("mu", [(1,), (1, 1), (2,), (1, 1, 1), (2, 1), (3,), (1, 1, 1, 1),
                                (2, 1, 1), (2, 2), (3, 1), (4,)])
def test_weingarten_coset_matches_haarpy(mu):
    theirs = haarpy.weingarten_orthogonal(mu, D)
    assert sp.cancel(weingarten_coset(mu) - theirs) == 0


def test_known_values_collins_matsumoto():
    assert sp.cancel(weingarten_coset((1, 1)) - (D + 1) / (D * (D - 1) * (D + 2))) == 0
    assert sp.cancel(weingarten_coset((2,)) + 1 / (D * (D - 1) * (D + 2))) == 0


MONOMIALS = [
    ((0, 0), (0, 0)),
    ((0, 0, 1, 1), (0, 0, 1, 1)),
    ((0, 0, 1, 1), (0, 0, 0, 0)),
    ((0, 0, 0, 0), (0, 0, 0, 0)),
    ((0, 1, 0, 1), (0, 1, 1, 0)),
    ((0, 0, 1, 1, 2, 2), (0, 2, 2, 1, 1, 0)),
    ((0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0)),
    ((0, 0, 1, 1, 1, 1), (0, 1, 0, 1, 2, 2)),
]


@pytest.mark.parametrize("ii,jj", MONOMIALS)
def test_haar_moment_matches_haarpy_symbolically(ii, jj):
    theirs = haarpy.haar_integral_orthogonal((ii, jj), D)
    assert sp.cancel(haar_moment(ii, jj) - theirs) == 0


@pytest.mark.parametrize("ii,jj", MONOMIALS[:6])
def test_haar_moment_matches_haarpy_at_integer_d(ii, jj):
    theirs = haarpy.haar_integral_orthogonal((ii, jj), 5)
    assert haar_moment(ii, jj, 5) == sp.Rational(theirs.numerator, theirs.denominator)


def test_odd_degree_vanishes_and_unit_row():
    assert haar_moment((0,), (0,)) == 0
    # sum_k E[W_0k^2] = 1: d * E[W_00^2] = 1
    assert sp.cancel(D * haar_moment((0, 0), (0, 0)) - 1) == 0


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 2), min_size=4, max_size=4),
       st.lists(st.integers(0, 2), min_size=4, max_size=4),
       st.permutations(range(4)))
def test_haar_moment_invariances(ii, jj, perm):
    """Transposition (W^T is Haar) and reordering of the factors leave the moment unchanged."""
    m = haar_moment(ii, jj)
    assert sp.cancel(m - haar_moment(jj, ii)) == 0
    assert sp.cancel(m - haar_moment([ii[p] for p in perm], [jj[p] for p in perm])) == 0


def test_haar_moment_agrees_with_monte_carlo():
    gen = generator(1)
    w = haar_orthogonal(20000, 4, 4, gen=gen)
    samples = monomial_samples(w, (0, 0, 1, 1), (0, 0, 1, 1))
    exact = float(haar_moment((0, 0, 1, 1), (0, 0, 1, 1), 4))
    se = samples.std().item() / math.sqrt(samples.numel())
    assert abs(samples.mean().item() - exact) < 5 * se


def test_weingarten_o_uses_coset_type():
    p0, p1, _ = pair_partitions(2)
    assert weingarten_o(p0, p1, 7) == weingarten_coset((2,), 7)


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="k"):
        pair_partitions(0)
    with pytest.raises(ValueError, match="d must be >= k"):
        weingarten_coset((1, 1, 1), 2)
    with pytest.raises(ValueError, match="mu"):
        weingarten_coset(())
    with pytest.raises(ValueError, match="indices_j"):
        haar_moment((0, 0), (0,))
    with pytest.raises(ValueError, match="indices_i"):
        haar_moment((0, 7), (0, 0), 3)
    with pytest.raises(ValueError, match="p must be a pair partition"):
        delta(((0, 2),), (0, 0))
    with pytest.raises(TypeError, match="d must"):
        gram_matrix(2, 2.5)
    with pytest.raises(ValueError, match="indices_j"):
        monomial_samples(torch.zeros(2, 3, 3, dtype=torch.float64), (0, 1), (0, 3))


def test_haar_monomial_samples_shape_and_chunking():
    a = haar_monomial_samples([((0, 0), (0, 0)), ((0, 1), (0, 1))], 3, 50,
                              gen=generator(2), chunk=7)
    b = haar_monomial_samples([((0, 0), (0, 0)), ((0, 1), (0, 1))], 3, 50,
                              gen=generator(2), chunk=50)
    assert a.shape == (2, 50)
    assert b.shape == (2, 50)
    assert (a[0] >= 0).all() and (a[0] <= 1).all()  # squares of entries of an orthogonal matrix
    with pytest.raises(ValueError, match="monomials"):
        haar_monomial_samples([], 3, 5, gen=generator(0))
    with pytest.raises(ValueError, match="n_samples"):
        haar_monomial_samples([((0,), (0,))], 3, 0, gen=generator(0))


def test_haar_monomial_samples_refuses_unbounded_sizes():
    """issue 17: n = 1e9 ran with no limit; the result is checked against memory first."""
    from eit.core.validate import AllocationTooLarge

    with pytest.raises(AllocationTooLarge, match="n_samples"):
        haar_monomial_samples([([0, 0], [0, 0])] * 4, 3, 10**12, gen=generator(0))
