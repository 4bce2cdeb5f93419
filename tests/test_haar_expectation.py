"""Tests for eit.exact.haar_expectation: exact Haar expectations of polynomials."""

from __future__ import annotations

import pytest
import sympy as sp

from eit.exact.haar_expectation import haar_expectation, haar_matrix_symbols
from eit.exact.weingarten import haar_moment


@pytest.mark.parametrize("d", [2, 3, 4])
def test_rows_are_orthonormal_in_expectation(d):
    w = haar_matrix_symbols(d)
    row0 = sum(w[0, k] ** 2 for k in range(d))
    dot = sum(w[0, k] * w[1, k] for k in range(d))
    assert haar_expectation(row0**2, w) == 1
    assert haar_expectation(dot**2, w) == 0
    assert haar_expectation(row0, w) == 1


def test_constants_and_parameters_pass_through():
    a = sp.Symbol("a")
    w = haar_matrix_symbols(3)
    assert sp.simplify(haar_expectation(a * w[0, 1] ** 2 + 5, w) - (a / 3 + 5)) == 0


def test_matches_the_weingarten_moment():
    w = haar_matrix_symbols(4)
    assert haar_expectation(w[0, 0] ** 2 * w[1, 2] ** 2, w) == haar_moment(
        (0, 0, 1, 1), (0, 0, 2, 2), 4)
    assert haar_expectation(w[0, 0] * w[1, 1], w) == 0


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="d must"):
        haar_matrix_symbols(0)
    with pytest.raises(TypeError, match="w must"):
        haar_expectation(sp.Integer(1), sp.Matrix(2, 3, sp.symbols("a:6")))
    with pytest.raises(ValueError, match="distinct"):
        x = sp.Symbol("x")
        haar_expectation(x, sp.Matrix([[x, x], [x, x]]))
