"""Tests for eit.sample.resnets (residual networks with scales eta_l)."""

import math

import pytest
import torch

from eit.core.device import device
from eit.core.seeds import generator
from eit.sample import resnets
from eit.sample.laws import gaussian, he


def test_zero_scales_keep_the_input():
    x = torch.randn(3, 5, dtype=torch.float64)
    out = resnets.residual_log_lengths(x, resnets.relu_layer(he()), [0.0, 0.0], n_nets=2,
                                       gen=generator(0))
    assert out.shape == (3, 2, 3)
    assert torch.allclose(out.cpu(), torch.log(x.norm(dim=-1)).expand(3, 2, 3))


def test_matches_explicit_recursion():
    x = torch.randn(2, 4, dtype=torch.float64).to(device())
    block = resnets.relu_layer(he())
    out = resnets.residual_log_lengths(x, block, [0.5, 2.0], n_nets=3, gen=generator(1))
    gen = generator(1)
    h = x.unsqueeze(0).expand(3, -1, -1)
    for eta in (0.5, 2.0):                      # replay: one He matrix per module
        w = he()(3, 4, 4, gen)
        h = h + eta * torch.relu(h @ w.transpose(-2, -1))
    assert torch.allclose(out[-1], torch.log(h.norm(dim=-1)))


def test_linear_readout_mean_growth():
    # E||x + eta V ReLU(W x)||^2 = ||x||^2 (1 + eta^2) with variances 2/n and 1/hidden.
    block = resnets.relu_then_linear(5, he(), lambda k, o, i, g: gaussian(k, o, i, 1.0 / i, gen=g))
    x = torch.ones(1, 5, dtype=torch.float64) / math.sqrt(5)
    out = resnets.residual_log_lengths(x, block, [1.0], n_nets=40000, gen=generator(2))
    est = torch.exp(2 * out[-1]).mean().item()
    assert abs(est - 2.0) < 0.06


def test_bad_args():
    x = torch.ones(1, 3, dtype=torch.float64)
    block = resnets.relu_layer(he())
    with pytest.raises(ValueError, match="etas"):
        resnets.residual_log_lengths(x, block, [], n_nets=1, gen=generator(0))
    with pytest.raises(ValueError, match="etas"):
        resnets.residual_log_lengths(x, block, [-1.0], n_nets=1, gen=generator(0))
    with pytest.raises(ValueError, match="blocks"):
        resnets.residual_log_lengths(x, [block], [1.0, 1.0], n_nets=1, gen=generator(0))
    with pytest.raises(ValueError, match="x"):
        resnets.residual_log_lengths(torch.zeros(1, 3, dtype=torch.float64), block, [1.0],
                                     n_nets=1, gen=generator(0))
    with pytest.raises(TypeError, match="law"):
        resnets.relu_layer(3)
    with pytest.raises(ValueError, match="etas"):
        resnets.residual_log_lengths(x, block, [math.inf], n_nets=1, gen=generator(0))
    with pytest.raises(TypeError, match="blocks"):
        resnets.residual_log_lengths(x, [lambda h, g: h], [1.0], n_nets=1, gen=generator(0))
    with pytest.raises(ValueError, match="hidden"):
        resnets.relu_then_linear(0, he(), he())


def test_observe_records_unit_stream_statistic():
    x = torch.rand(2, 5, dtype=torch.float64) + 0.1
    out, seen = resnets.residual_log_lengths(x, resnets.relu_layer(he()), [1.0, 1.0, 1.0],
                                             n_nets=3, gen=generator(4),
                                             observe=lambda h: h.norm(dim=-1))
    assert seen.shape == out.shape == (4, 3, 2)
    assert torch.allclose(seen, torch.ones_like(seen))
    with pytest.raises(TypeError, match="observe"):
        resnets.residual_log_lengths(x, resnets.relu_layer(he()), [1.0], n_nets=1,
                                     gen=generator(0), observe=3)


def test_linear_readout_moments_against_simulation():
    mean, second, evar = resnets.linear_readout_moments([0.5, 0.5], width=5, hidden=5)
    assert mean == [1.0, 1.25, 1.5625]
    block = resnets.relu_then_linear(5, he(), lambda k, o, i, g: gaussian(k, o, i, 1.0 / i, gen=g))
    x = torch.ones(1, 5, dtype=torch.float64) / math.sqrt(5)
    out = resnets.residual_log_lengths(x, block, [0.5, 0.5], n_nets=100000, gen=generator(7))
    m = torch.exp(2 * out[:, :, 0])
    assert abs(m[2].square().mean().item() / second[2] - 1) < 0.03
    var_hat = (m[1:].square().mean(0) - m[1:].mean(0).square()).mean().item()
    assert abs(var_hat / evar - 1) < 0.05
    with pytest.raises(ValueError, match="width"):
        resnets.linear_readout_moments([0.5], width=0, hidden=5)
    with pytest.raises(ValueError, match="etas"):
        resnets.linear_readout_moments([], width=5, hidden=5)
