"""Batched SGD (eit.train.batched_sgd) against one-run-at-a-time SGD (eit.train.sgd)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from eit.core.device import DTYPE, generator
from eit.models.wn_init import wn_mlp_model
from eit.models.wn_stacked import stack
from eit.train.batched_sgd import batched_sgd
from eit.train.sgd import digits, sgd


def _nets(scheme, data, seeds, depth=3):
    out = []
    for s in seeds:
        gen = generator(s)
        batch = torch.randperm(len(data.x_train), generator=gen)[:64]
        out.append((wn_mlp_model(scheme, d_in=64, widths=[16] * depth, d_out=10, gen=gen,
                                 data=data.x_train[batch], on=data.x_train.device), gen))
    return out


@pytest.mark.parametrize("scheme", ["proposed", "data_dependent"])
def test_batched_runs_follow_the_sequential_runs(scheme):
    data = digits(seed=1)
    lrs = [0.05, 0.5, 50.0]
    ref = []
    for lr in lrs:
        net, gen = _nets(scheme, data, [7])[0]
        ref.append(sgd(net, net.parameters(), data, lr=lr, epochs=2, batch_size=128,
                       gen=gen, momentum=0.9, warmup_steps=5))
    made = [_nets(scheme, data, [7])[0] for _ in lrs]
    runs = batched_sgd(stack([m for m, _ in made]), data, lr=lrs, epochs=2, batch_size=128,
                       gens=[g for _, g in made], momentum=0.9, warmup_steps=5)
    assert runs.diverged.tolist() == [r.diverged for r in ref]
    for i, r in enumerate(ref):
        if not r.diverged:
            assert np.allclose(runs.losses[i], r.losses, rtol=1e-6)
            assert abs(runs.test_accuracy[i] - r.test_accuracy) < 0.02
        else:
            assert runs.diverged_at_step[i] == r.diverged_at_step
            assert runs.test_accuracy[i] == 0.0


def test_a_diverged_run_does_not_disturb_the_others():
    data = digits(seed=2)
    made = _nets("proposed", data, [1, 1])
    runs = batched_sgd(stack([m for m, _ in made]), data, lr=[0.05, 1e6], epochs=1,
                       batch_size=128, gens=[g for _, g in made], momentum=0.9)
    net, gen = _nets("proposed", data, [1])[0]
    alone = sgd(net, net.parameters(), data, lr=0.05, epochs=1, batch_size=128, gen=gen,
                momentum=0.9)
    assert runs.diverged.tolist() == [False, True]
    assert np.allclose(runs.losses[0], alone.losses, rtol=1e-6)
    assert len(runs.select([0])) == 1


def test_bad_arguments_are_named():
    data = digits(seed=0)
    made = _nets("proposed", data, [1])
    with pytest.raises(ValueError, match="lr"):
        batched_sgd(stack([made[0][0]]), data, lr=[0.1, 0.2], epochs=1, batch_size=8,
                    gens=[made[0][1]])
    with pytest.raises(ValueError, match="epochs"):
        batched_sgd(stack([made[0][0]]), data, lr=[0.1], epochs=0, batch_size=8,
                    gens=[made[0][1]])
    assert DTYPE == torch.float64
