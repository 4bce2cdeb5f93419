"""Tests for eit.sample.monomials: pooled Monte Carlo moments of Haar-orthogonal matrices."""

from __future__ import annotations

import pytest
import sympy as sp
import torch

from eit.core.seeds import generator
from eit.exact.weingarten import haar_moment
from eit.sample.monomials import pooled_monomial_samples


def test_second_moment_is_exact_for_every_matrix():
    # the pooled W_00^2 is the mean of all squared entries of an orthogonal matrix: 1/d
    x = pooled_monomial_samples([((0, 0), (0, 0))], 5, 50, gen=generator(1))
    assert torch.allclose(x, torch.full_like(x, 0.2), atol=1e-12)


@pytest.mark.parametrize("mono", [((0, 0, 1, 1), (0, 0, 0, 0)), ((0, 0, 1, 1), (0, 1, 0, 1)),
                                  ((0, 0, 0, 0), (0, 0, 0, 0))])
def test_pooled_mean_is_unbiased(mono):
    d = 4
    x = pooled_monomial_samples([mono], d, 20_000, gen=generator(2))[0]
    exact = float(haar_moment(*mono, d))
    assert abs(float(x.mean()) - exact) < 5 * float(x.std()) / 20_000**0.5


def test_pooling_reduces_the_variance():
    from eit.exact.weingarten import haar_monomial_samples
    mono = [((0, 0, 1, 1), (0, 0, 1, 1))]
    pooled = pooled_monomial_samples(mono, 6, 4_000, gen=generator(3))[0]
    single = haar_monomial_samples(mono, 6, 4_000, gen=generator(3))[0]
    assert float(pooled.var()) < 0.1 * float(single.var())


@pytest.mark.parametrize("bad", [[], [((0, 1), (0,))], [((0, 7), (0, 0))], [((0,), )],
                                 "abc"])
def test_bad_monomials_are_named(bad):
    with pytest.raises(ValueError, match="monomials"):
        pooled_monomial_samples(bad, 4, 10, gen=generator(0))


def test_shape_and_chunking():
    x = pooled_monomial_samples([((0, 0), (0, 0)), ((0, 1), (0, 1))], 3, 25, gen=generator(0),
                                chunk=7)
    assert x.shape == (2, 25)
    assert sp.Rational(1, 3) == sp.nsimplify(round(float(x[0, 0]), 12))
