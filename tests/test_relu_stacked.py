"""Stacks of ReLU nets (eit.models.relu_stacked) and epochs to a target accuracy (Hanin &
Rolnick 2018, Figures 1b-3b), trained by the batched engine."""

import numpy as np
import pytest
import torch

from eit.core.device import device
from eit.core.seeds import generator
from eit.models import relu_stacked as hr
from eit.sample.laws import he
from eit.train import batched
from eit.train.sgd import digits


def test_mlp_shapes_and_independent_nets():
    net = hr.mlp([7, 5], he(), n_nets=3, gen=generator(0))
    x = torch.rand(4, 64, dtype=torch.float64).to(device())
    out = net(x)
    assert out.shape == (3, 4, 10)
    assert not torch.allclose(out[0], out[1])
    # the selected net alone computes what it computed in the stack (a smaller batch may
    # take another kernel, so equal up to rounding, not bitwise)
    torch.testing.assert_close(net.select(torch.tensor([1]))(x)[0], out[1], rtol=1e-12,
                               atol=1e-14)


def test_residual_with_zero_scales_is_plain_net():
    gen = generator(1)
    res = hr.residual([0.0, 0.0], he(), width=5, n_nets=2, gen=gen)
    x = torch.rand(3, 64, dtype=torch.float64).to(device())
    h = torch.relu(x @ res.weights[0][0].T)                # modules add nothing when eta = 0
    assert torch.allclose(res(x)[0], h @ res.weights[-1][0].T)


def test_a_trivial_target_is_reached_after_one_epoch():
    data = digits(seed=0)
    gen = generator(2)
    net = hr.mlp([20, 20], he(), n_nets=2, gen=gen)
    res = batched.train(net, data, lr=0.05, epochs=3, batch_size=100, gens=gen, target=0.0)
    assert res.epochs_to_target() == [1, 1]
    assert res.losses.shape == (2, 3) and np.isnan(res.losses[:, 1:]).all()  # stopped


def test_diverging_nets_are_censored():
    data = digits(seed=0)
    gen = generator(3)
    net = hr.mlp([20] * 3, he(), n_nets=2, gen=gen)
    res = batched.train(net, data, lr=0.05, epochs=1, batch_size=100, gens=gen, target=1.0,
                        max_loss=1e-9)
    assert res.epochs_to_target() == [None, None] and res.diverged.all()


def test_bad_arguments():
    gen = generator(0)
    with pytest.raises(ValueError, match="widths"):
        hr.mlp([], he(), n_nets=2, gen=gen)
    with pytest.raises(ValueError, match="etas"):
        hr.residual([-1.0], he(), width=5, n_nets=2, gen=gen)
    net = hr.mlp([5], he(), n_nets=2, gen=gen)
    with pytest.raises(ValueError, match="target"):
        batched.train(net, digits(seed=0), target=1.5, lr=0.1, epochs=1, batch_size=10,
                      gens=gen)
    with pytest.raises(TypeError, match="model"):
        batched.train("net", digits(seed=0), target=0.5, lr=0.1, epochs=1, batch_size=10,
                      gens=gen)
    with pytest.raises(ValueError, match="target accuracy"):
        batched.train(net, digits(seed=0), lr=0.1, epochs=1, batch_size=500,
                      gens=gen).epochs_to_target()
