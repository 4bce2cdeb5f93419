"""Tests for eit.train.epochs_to_accuracy (Hanin & Rolnick 2018, Figures 1b-3b)."""

import pytest
import torch

from eit.core.device import generator
from eit.sample.laws import he
from eit.train import epochs_to_accuracy as hr
from eit.train.sgd import digits


def test_mlp_shapes_and_independent_nets():
    net = hr.mlp([7, 5], he(), n_nets=3, gen=generator(0))
    x = torch.rand(4, 64, dtype=torch.float64)
    out = net(x)
    assert out.shape == (3, 4, 10)
    assert not torch.allclose(out[0], out[1])


def test_residual_with_zero_scales_is_plain_net():
    gen = generator(1)
    res = hr.residual([0.0, 0.0], he(), width=5, n_nets=2, gen=gen)
    x = torch.rand(3, 64, dtype=torch.float64)
    h = torch.relu(x @ res.weights[0][0].T)                # modules add nothing when eta = 0
    assert torch.allclose(res(x)[0], h @ res.weights[-1][0].T)


def test_epochs_to_accuracy_reaches_trivial_target():
    data = digits(seed=0)
    gen = generator(2)
    net = hr.mlp([20, 20], he(), n_nets=2, gen=gen)
    reached = hr.epochs_to_accuracy(net, data, target=0.0, lr=0.05, max_epochs=3,
                                    batch_size=100, gen=gen)
    assert reached == [1, 1]


def test_epochs_to_accuracy_censors_diverging_nets():
    data = digits(seed=0)
    gen = generator(3)
    net = hr.mlp([20] * 3, he(), n_nets=2, gen=gen)
    reached = hr.epochs_to_accuracy(net, data, target=1.0, lr=0.05, max_epochs=1, batch_size=100,
                                    gen=gen, max_loss=1e-9)
    assert reached == [None, None]


def test_bad_arguments():
    gen = generator(0)
    with pytest.raises(ValueError, match="widths"):
        hr.mlp([], he(), n_nets=2, gen=gen)
    with pytest.raises(ValueError, match="etas"):
        hr.residual([-1.0], he(), width=5, n_nets=2, gen=gen)
    net = hr.mlp([5], he(), n_nets=2, gen=gen)
    with pytest.raises(ValueError, match="target"):
        hr.epochs_to_accuracy(net, digits(seed=0), target=1.5, lr=0.1, max_epochs=1,
                              batch_size=10, gen=gen)
    with pytest.raises(TypeError, match="net"):
        hr.epochs_to_accuracy("net", digits(seed=0), target=0.5, lr=0.1, max_epochs=1,
                              batch_size=10, gen=gen)
