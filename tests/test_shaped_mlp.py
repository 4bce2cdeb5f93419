"""Tests for eit.models.shaped_mlp, trained by the batched engine (eit.train.batched)."""

from __future__ import annotations

import math

import pytest
import torch

from eit.core.device import DTYPE
from eit.core.seeds import generator
from eit.models import shaped_mlp as smlp
from eit.train import batched
from eit.train.sgd import digits


def _model(runs=2, depth=3, normalized=True, activation=torch.tanh, dtype=DTYPE):
    return smlp.shaped_mlp(runs=runs, width=6, depth=depth, n_in=8, n_classes=3,
                           gains=smlp.power_gains(depth, 1.0), activation=activation,
                           gen=generator(0), normalized=normalized, dtype=dtype)


def test_initial_weights_are_orthogonal():
    m = _model()
    eye = torch.eye(6, dtype=DTYPE, device=m.ws.device)
    assert torch.allclose(m.ws @ m.ws.transpose(-2, -1), eye.expand(2, 3, 6, 6), atol=1e-12)
    assert torch.allclose(m.w_in @ m.w_in.transpose(-2, -1), eye.expand(2, 6, 6), atol=1e-12)
    assert float(smlp.weight_gaps(m.ws).abs().max()) < 1e-12


def test_normalized_shaping_only_rescales_the_logits():
    g = generator(1)
    x = torch.randn(2, 10, 8, generator=g, device=g.device, dtype=DTYPE)
    a, b = _model(normalized=True), _model(normalized=False)
    gain = smlp.power_gains(3, 1.0)[-1]
    assert torch.allclose(gain * a(x), b(x), rtol=1e-10, atol=1e-12)


def test_runs_do_not_interact():
    m = _model(runs=2)
    g2, g3 = generator(2), generator(3)
    x = torch.randn(2, 10, 8, generator=g2, device=g2.device, dtype=DTYPE)
    y = torch.randint(0, 3, (2, 10), generator=g3, device=g3.device)
    per_run = torch.nn.functional.cross_entropy(m(x).transpose(1, 2), y,
                                                reduction="none").mean(1)
    (g_all,) = torch.autograd.grad(per_run.sum(), [m.ws], retain_graph=True)
    (g_0,) = torch.autograd.grad(per_run[0], [m.ws])
    assert torch.equal(g_all[0], g_0[0]) and float(g_0[1].abs().max()) == 0.0


def test_per_run_activations_apply_to_their_groups():
    act = smlp.per_run([torch.tanh, torch.sin], 2)
    h = torch.full((4, 1), 0.7)
    assert torch.allclose(act(h).flatten(), torch.tensor([0.7] * 4).tanh()
                          .where(torch.arange(4) < 2, torch.tensor(0.7).sin()))
    with pytest.raises(ValueError, match="runs"):
        act(torch.ones(3, 1))


def test_training_lowers_the_loss_on_digits():
    data = digits(seed=0)
    m = smlp.shaped_mlp(runs=2, width=8, depth=2, n_in=64, n_classes=10,
                        gains=smlp.power_gains(2, 1.0), activation=torch.tanh,
                        gen=generator(4), dtype=torch.float32)
    res = batched.train(m, data, lr=0.1, epochs=2, batch_size=32, gens=generator(5),
                        max_loss=math.inf, on_divergence="raise", drop_last=True,
                        record=lambda model, epoch: epoch)
    assert res.losses.shape == (2, 2) and res.records == [0, 1, 2]
    assert bool((res.losses[:, -1] < res.losses[:, 0]).all())
    acc = batched.accuracies(m, data.x_test, data.y_test)
    assert torch.allclose(acc.cpu(), torch.from_numpy(res.test_accuracy))
    assert acc.shape == (2,) and bool((acc > 0.3).all())


def test_divergence_is_an_error():
    data = digits(seed=0)
    m = smlp.shaped_mlp(runs=1, width=8, depth=2, n_in=64, n_classes=10,
                        gains=smlp.power_gains(2, 1.0), activation=torch.tanh,
                        gen=generator(6), normalized=False)
    with torch.no_grad():
        m.w_out *= 1e300
    with pytest.raises(FloatingPointError, match="diverged"):
        batched.train(m, data, lr=1e300, epochs=1, batch_size=32, gens=generator(7),
                      max_loss=math.inf, on_divergence="raise")


@pytest.mark.parametrize(("call", "name"), [
    (lambda: smlp.power_gains(0, 1.0), "depth"),
    (lambda: smlp.power_gains(3, -1.0), "exponent"),
    (lambda: _model(dtype=torch.float16), "dtype"),
    (lambda: smlp.ShapedMLP(torch.zeros(1, 2, 2), torch.zeros(1, 1, 2, 2),
                            torch.zeros(1, 2, 2), [1.0], torch.tanh), "gains"),
    (lambda: batched.train(_model(), digits(seed=0), lr=0.1, epochs=1, batch_size=10**6,
                           gens=generator(0), drop_last=True), "batch_size"),
])
def test_bad_arguments_are_named(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()
