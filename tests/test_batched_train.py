"""The batched training engine (eit.train.batched) against one-run-at-a-time SGD
(eit.train.sgd.sgd, the reference): the same trajectories, independent runs, divergence."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from eit.core.device import DTYPE
from eit.core.seeds import generator
from eit.models.wn_init import wn_mlp_model
from eit.models.wn_stacked import stack
from eit.train import batched
from eit.train.sgd import digits, sgd


def _nets(scheme, data, seeds, depth=3, direction="orthogonal"):
    out = []
    for s in seeds:
        gen = generator(s)
        batch = torch.randperm(len(data.x_train), generator=gen,
                               device=gen.device)[:64].to(data.x_train.device)
        out.append((wn_mlp_model(scheme, d_in=64, widths=[16] * depth, d_out=10, gen=gen,
                                 data=data.x_train[batch], on=data.x_train.device,
                                 direction=direction), gen))
    return out


def _reference(scheme, data, seed, lr, **kw):
    net, gen = _nets(scheme, data, [seed], **kw.pop("net", {}))[0]
    return sgd(net, net.parameters(), data, lr=lr, gen=gen, **kw)


@pytest.mark.parametrize("policy", ["freeze", "drop"])
@pytest.mark.parametrize("scheme", ["proposed", "data_dependent"])
def test_batched_runs_follow_the_sequential_runs(scheme, policy):
    """Momentum (buf = grad first), warm-up, divergence: every run as if trained alone."""
    data = digits(seed=1)
    lrs = [0.05, 0.5, 50.0]
    kw = dict(epochs=2, batch_size=128, momentum=0.9, warmup_steps=5)
    ref = [_reference(scheme, data, 7, lr, **kw) for lr in lrs]
    made = [_nets(scheme, data, [7])[0] for _ in lrs]
    res = batched.train(stack([m for m, _ in made]), data, lr=lrs, gens=[g for _, g in made],
                        on_divergence=policy, **kw)
    assert res.diverged.tolist() == [r.diverged for r in ref]
    for i, r in enumerate(ref):
        if not r.diverged:
            assert np.allclose(res.losses[i], r.losses, rtol=1e-6)
            assert abs(res.test_accuracy[i] - r.test_accuracy) < 0.02
        else:
            assert res.diverged_at_step[i] == r.diverged_at_step
            assert res.train_accuracy[i] == res.test_accuracy[i] == 0.0
            done = len(r.losses)
            assert np.allclose(res.losses[i, :done], r.losses, rtol=1e-6)
            assert np.isnan(res.losses[i, done:]).all()


def test_weight_decay_and_halving_follow_the_sequential_runs():
    """The Figure 5 protocol of Arpit & Bengio (2019): momentum, weight decay, halving."""
    data = digits(seed=3)
    lrs = [0.01, 0.1]
    kw = dict(epochs=3, batch_size=100, momentum=0.9, weight_decay=5e-4, halve_every=1)
    arch = dict(direction="sphere")
    ref = [_reference("traditional", data, 4, lr, net=arch, **kw) for lr in lrs]
    made = [_nets("traditional", data, [4], **arch)[0] for _ in lrs]
    res = batched.train(stack([m for m, _ in made]), data, lr=lrs,
                        gens=[g for _, g in made], **kw)
    for i, r in enumerate(ref):
        assert not r.diverged and np.allclose(res.losses[i], r.losses, rtol=1e-6)
        assert abs(res.train_accuracy[i] - r.train_accuracy) < 0.01


def test_vanilla_sgd_is_p_minus_lr_grad():
    """One step without momentum or weight decay moves every run by -lr * its own gradient."""
    data = digits(seed=0)
    made = _nets("proposed", data, [1, 2], depth=1)
    net = stack([m for m, _ in made])
    before = [p.detach().clone() for p in net.parameters()]
    n = len(data.x_train)
    gs = [generator(9) for _ in range(2)]
    idx = torch.stack([torch.randperm(n, generator=g, device=g.device)[:n]
                       for g in gs]).to(data.x_train.device)
    loss = batched.run_losses(net, data.x_train[idx], data.y_train[idx])
    grads = torch.autograd.grad(loss.sum(), net.parameters())
    batched.train(net, data, lr=[0.1, 0.2], epochs=1, batch_size=n,
                  gens=[generator(9), generator(9)])
    for p, p0, g in zip(net.parameters(), before, grads, strict=True):
        rate = torch.tensor([0.1, 0.2], dtype=DTYPE, device=p.device).view(-1, *[1] * (p.ndim - 1))
        assert torch.allclose(p.detach(), p0 - rate * g, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("policy", ["freeze", "drop"])
def test_a_diverged_run_does_not_disturb_the_others(policy):
    data = digits(seed=2)
    made = _nets("proposed", data, [1, 1])
    res = batched.train(stack([m for m, _ in made]), data, lr=[0.05, 1e6], epochs=2,
                        batch_size=128, gens=[g for _, g in made], momentum=0.9,
                        on_divergence=policy)
    alone = _reference("proposed", data, 1, 0.05, epochs=2, batch_size=128, momentum=0.9)
    assert res.diverged.tolist() == [False, True]
    assert np.allclose(res.losses[0], alone.losses, rtol=1e-6)
    assert len(res.select([0])) == 1
    assert len(res.model.parameters()[0]) == (1 if policy == "drop" else 2)


def test_runs_are_independent_of_their_companions():
    """A run's trajectory does not depend on which other runs share its stack."""
    data = digits(seed=5)
    pair = _nets("proposed", data, [3, 4])
    solo = _nets("proposed", data, [3])
    both = batched.train(stack([m for m, _ in pair]), data, lr=[0.1, 0.3], epochs=2,
                         batch_size=64, gens=[g for _, g in pair], momentum=0.9)
    one = batched.train(stack([m for m, _ in solo]), data, lr=[0.1], epochs=2,
                        batch_size=64, gens=[g for _, g in solo], momentum=0.9)
    assert np.allclose(both.losses[0], one.losses[0], rtol=1e-9)


def test_one_generator_gives_every_run_its_own_order():
    data = digits(seed=0)
    made = _nets("proposed", data, [1, 1])
    res = batched.train(stack([m for m, _ in made]), data, lr=0.1, epochs=1, batch_size=64,
                        gens=generator(3))
    assert res.losses[0, 0] != res.losses[1, 0]     # same net, other mini-batches


def test_raise_and_max_loss_inf():
    data = digits(seed=0)
    made = _nets("proposed", data, [1])
    with pytest.raises(FloatingPointError, match="diverged"):
        batched.train(stack([made[0][0]]), data, lr=1e6, epochs=1, batch_size=128,
                      gens=generator(0), on_divergence="raise", momentum=0.9)
    res = batched.train(stack([made[0][0]]), data, lr=0.05, epochs=1, batch_size=128,
                        gens=generator(0), max_loss=math.inf)
    assert not res.diverged.any()


def _call(**kw):
    data = digits(seed=0)
    net = stack([_nets("proposed", data, [1], depth=1)[0][0]])
    args = dict(lr=[0.1], epochs=1, batch_size=8, gens=[generator(0)])
    args.update(kw)
    return batched.train(args.pop("model", net), args.pop("data", data), **args)


@pytest.mark.parametrize(("kw", "name"), [
    ({"lr": [0.1, 0.2]}, "lr"),
    ({"lr": [-0.1]}, r"lr\[0\]"),
    ({"epochs": 0}, "epochs"),
    ({"batch_size": 0}, "batch_size"),
    ({"gens": [generator(0), generator(1)]}, "gens"),
    ({"gens": [0]}, r"gens\[0\]"),
    ({"gens": 3}, "gens"),
    ({"momentum": 1.0}, "momentum"),
    ({"weight_decay": -0.1}, "weight_decay"),
    ({"warmup_steps": -1}, "warmup_steps"),
    ({"halve_every": 0}, "halve_every"),
    ({"max_loss": float("nan")}, "max_loss"),
    ({"on_divergence": "ignore"}, "on_divergence"),
    ({"drop_last": 1}, "drop_last"),
    ({"target": 1.5}, "target"),
    ({"record": 3}, "record"),
    ({"data": "digits"}, "data"),
    ({"model": "net"}, "model"),
])
def test_bad_arguments_are_named(kw, name):
    with pytest.raises((ValueError, TypeError), match=name):
        _call(**kw)
