"""Tests for eit.core.validate: the shared argument checks name the argument."""

from __future__ import annotations

import pytest
import torch

from eit.core import validate as v


def test_per_network_expands_a_shared_batch_without_copying():
    x = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    out = v.per_network("x0", x, 4)
    assert out.shape == (4, 2, 3)
    assert out.data_ptr() == x.data_ptr()          # a view
    assert torch.equal(out[3], x)


def test_per_network_keeps_a_batch_per_network():
    x = torch.ones(3, 2, 2, dtype=torch.float64)
    assert v.per_network("x0", x, 3, square=True) is x


@pytest.mark.parametrize("x, n_nets, square, error", [
    ([[1.0]], 1, False, TypeError),                                  # not a tensor
    (torch.ones(2, 2, dtype=torch.int64), 1, False, TypeError),      # not floating point
    (torch.ones(2, dtype=torch.float64), 1, False, ValueError),      # one dimension
    (torch.ones(1, 2, 2, 2, dtype=torch.float64), 1, False, ValueError),  # four
    (torch.ones(2, 2, 2, dtype=torch.float64), 3, False, ValueError),     # wrong n_nets
    (torch.ones(2, 3, dtype=torch.float64), 1, True, ValueError),    # not square
    (torch.full((2, 2), float("nan"), dtype=torch.float64), 1, False, ValueError),
])
def test_per_network_names_bad_batches(x, n_nets, square, error):
    with pytest.raises(error, match="x0"):
        v.per_network("x0", x, n_nets, square=square)


def test_per_network_needs_a_positive_number_of_networks():
    with pytest.raises(ValueError, match="n_nets"):
        v.per_network("x0", torch.ones(2, 2, dtype=torch.float64), 0)


def test_nonzero_vector():
    u = torch.tensor([0.0, 2.0], dtype=torch.float64)
    assert v.nonzero_vector("u", u) is u
    with pytest.raises(ValueError, match="u must be a non-zero vector"):
        v.nonzero_vector("u", torch.zeros(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="u"):
        v.nonzero_vector("u", torch.ones(2, 2, dtype=torch.float64))
    with pytest.raises(TypeError, match="u"):
        v.nonzero_vector("u", [1.0])
