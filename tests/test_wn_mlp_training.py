"""Tests of the pieces the Figure 5 chapter (Arpit & Bengio 2019) adds: the traditional and
isotropic-row weight-normalized MLPs, and SGD with weight decay and a halving schedule."""

import math

import pytest
import torch

from eit.core.device import DTYPE, device
from eit.core.seeds import generator
from eit.models.wn_init import wn_mlp_model
from eit.train.sgd import digits, sgd


@pytest.mark.parametrize("scheme", ["traditional", "proposed"])
def test_sphere_rows_are_unit_gaussian_directions_with_the_scheme_gain(scheme):
    net = wn_mlp_model(scheme, d_in=8, widths=[16, 12], d_out=3, gen=generator(3),
                       direction="sphere")
    fans = [(16, 8), (12, 16), (3, 12)]
    for (fan_out, fan_in), layer in zip(fans, [*net.hidden, net.head]):
        assert layer.v.shape == (fan_out, fan_in)
        like = dict(dtype=DTYPE, device=layer.v.device)
        assert torch.allclose(layer.v.norm(dim=-1), torch.ones(fan_out, **like))
        gamma = 1.0 if layer is net.head else 2.0
        want = 1.0 if scheme == "traditional" else math.sqrt(gamma * fan_in / fan_out)
        assert torch.allclose(layer.g, torch.full((fan_out,), want, **like))
        assert not layer.b.any()
    # isotropic rows are not orthogonal: a square layer's rows are not an orthonormal basis
    square = wn_mlp_model("proposed", d_in=12, widths=[12], d_out=2, gen=generator(3),
                          direction="sphere").hidden[0].v
    assert not torch.allclose(square @ square.T, torch.eye(12, dtype=DTYPE, device=square.device),
                              atol=1e-3)


def test_traditional_forward_law_two_to_the_minus_depth():
    """E||h^L||^2/||x||^2 = (w / (2 n0)) 2^-(L-1) for k = 1 (the chapter's derivation)."""
    x = torch.randn(64, 32, generator=torch.Generator().manual_seed(0), dtype=DTYPE).to(device())
    ratios = []
    for seed in range(60):
        h = wn_mlp_model("traditional", d_in=32, widths=[48] * 4, d_out=2, gen=generator(seed),
                         direction="sphere").features(x)[-1]
        ratios.append((h.square().sum(1) / x.square().sum(1)).mean().item())
    r = torch.tensor(ratios, dtype=DTYPE)
    theory = 48 / 64 * 2.0**-3
    assert abs(r.mean().item() - theory) < 4 * r.std().item() / math.sqrt(len(r))


def test_direction_is_validated():
    with pytest.raises(ValueError, match="direction"):
        wn_mlp_model("traditional", d_in=4, widths=[4], d_out=2, gen=generator(0),
                     direction="gaussian")


def _linear(seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    w = (0.01 * torch.randn(64, 10, generator=gen, dtype=DTYPE)).requires_grad_(True)
    return (lambda x: x @ w), [w]


def test_weight_decay_and_halving_change_the_trajectory_reproducibly():
    data = digits(seed=0)
    losses = {}
    for key, kw in {"plain": {}, "plain2": {}, "decay": {"weight_decay": 0.1},
                    "halve": {"halve_every": 1}}.items():
        model, params = _linear()
        losses[key] = sgd(model, params, data, lr=0.5, epochs=3, batch_size=64,
                          gen=torch.Generator().manual_seed(1), **kw).losses
    assert losses["plain"] == losses["plain2"]
    assert losses["decay"] != losses["plain"] and losses["halve"] != losses["plain"]
    assert losses["halve"][0] == losses["plain"][0]   # the first epoch runs at the base lr


def test_weight_decay_shrinks_the_weights():
    data = digits(seed=0)
    norms = []
    for decay in (0.0, 0.5):
        model, params = _linear()
        sgd(model, params, data, lr=0.1, epochs=2, batch_size=64, weight_decay=decay,
            gen=torch.Generator().manual_seed(1))
        norms.append(params[0].norm().item())
    assert norms[1] < norms[0]


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"weight_decay": -0.1}, "weight_decay"), ({"weight_decay": 1.0}, "weight_decay"),
    ({"halve_every": 0}, "halve_every"), ({"halve_every": 1.5}, "halve_every"),
])
def test_sgd_schedule_arguments_are_named(kwargs, name):
    data = digits(seed=0)
    model, params = _linear()
    with pytest.raises((ValueError, TypeError), match=name):
        sgd(model, params, data, lr=0.1, epochs=1, batch_size=32, gen=torch.Generator(), **kwargs)
