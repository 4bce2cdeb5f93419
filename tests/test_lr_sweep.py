"""Learning-rate sweeps, training helpers and curvature of the Arpit, Campos & Bengio chapters.

Each helper replaces code that chapters 05 and 06 of Part III held; the old chapter
computation is repeated here as the reference.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from eit.core.device import device
from eit.core.seeds import generator
from eit.models.residual_growth import block_growth_ratio
from eit.models.wn_init import wn_mlp_model, wn_resnet_model
from eit.models.wn_stacked import stack
from eit.train import batched
from eit.train.gradient_growth import hidden_gradient_growth
from eit.train.lanczos import hessian_operator, lanczos_extreme, loss_hessian_norms
from eit.train.sgd import digits, pixel_batch, spaced_digits, train_batch
from eit.train.sweep import Sweep, log_largest_rate, lr_sweep


def old_eta_star(survived, lrs):
    logs = np.log10(lrs)
    return np.where(survived, logs, -np.inf).max(1).clip(min=logs.min())


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.booleans(), min_size=3, max_size=3), min_size=1, max_size=6))
def test_log_largest_rate_is_the_old_eta_star(rows):
    lrs = [1.0, 1e-1, 1e-3]
    ok = np.array(rows, dtype=bool)
    got = log_largest_rate(ok, lrs)
    assert np.array_equal(got, old_eta_star(ok, lrs))
    assert ((got >= -3) & (got <= 0)).all()


def test_log_largest_rate_bad_input():
    with pytest.raises(ValueError, match="survived"):
        log_largest_rate(np.ones((2, 3)), [1.0, 0.1, 0.01])
    with pytest.raises(ValueError, match="lrs"):
        log_largest_rate(np.ones((2, 3), dtype=bool), [1.0, 0.1])
    with pytest.raises(ValueError, match=r"lrs\[1\]"):
        log_largest_rate(np.ones((2, 2), dtype=bool), [1.0, 0.0])


def test_sweep_summaries():
    diverged = np.array([False, True, False, False, True, True])   # 3 seeds x 2 rates
    res = batched.Result(np.zeros((6, 1)), diverged, np.where(diverged, 0, -1),
                         np.zeros(6), np.zeros(6))
    sw = Sweep(res, (1.0, 0.1))
    assert sw.survived.tolist() == [[True, False], [True, True], [False, False]]
    assert [q.successes for q in sw.fractions()] == [2, 1]
    assert sw.diverged_everywhere().successes == 1
    assert sw.diverged_at_best_rate().successes == 1     # rate 1.0: one seed diverges
    assert sw.log_eta_star().tolist() == [0.0, 0.0, -1.0]


def old_sweep(scheme, depth, lrs, seeds, data, *, batch):
    """The chapter's train() before the move (Arpit, Campos & Bengio, chapter 06)."""
    n_train = len(data.x_train)
    nets, gens = [], []
    for seed in seeds:
        gen = generator(seed)
        idx = torch.randperm(n_train, generator=gen, device=gen.device)[:batch]
        net = wn_mlp_model(scheme, d_in=64, widths=[8] * depth, d_out=10, gen=gen,
                           data=data.x_train[idx.to(data.x_train.device)])
        state = gen.get_state()
        for _ in lrs:
            nets.append(net)
            gens.append(generator(seed))
            gens[-1].set_state(state)
    runs = batched.train(stack(nets, dtype=torch.float32), data, lr=list(lrs) * len(seeds),
                         epochs=1, batch_size=batch, gens=gens, momentum=0.9, max_loss=100.0,
                         on_divergence="drop")
    return runs


def test_lr_sweep_reproduces_the_chapter_runs():
    data = digits(seed=0)
    lrs, seeds = [10.0, 0.1], [3, 4]

    def build(gen):
        x, _ = train_batch(data, 64, gen=gen)
        return wn_mlp_model("data_dependent", d_in=64, widths=[8] * 3, d_out=10, gen=gen,
                            data=x)

    sw = lr_sweep(build, data, lrs=lrs, seeds=seeds, stack=stack, epochs=1, batch_size=64,
                  momentum=0.9, max_loss=100.0)
    ref = old_sweep("data_dependent", 3, lrs, seeds, data, batch=64)
    assert np.array_equal(sw.result.diverged, ref.diverged)
    assert np.array_equal(sw.result.test_accuracy, ref.test_accuracy)
    with pytest.raises(ValueError, match="seeds"):
        lr_sweep(build, data, lrs=lrs, seeds=[], stack=stack, epochs=1, batch_size=64)


def test_train_batch_and_spaced_digits():
    data = digits(seed=1)
    gen_a, gen_b = generator(5), generator(5)
    x, y = train_batch(data, 10, gen=gen_a)
    idx = torch.randperm(len(data.x_train), generator=gen_b,
                         device=gen_b.device)[:10].to(data.x_train.device)
    assert torch.equal(x, data.x_train[idx]) and torch.equal(y, data.y_train[idx])
    assert torch.equal(gen_a.get_state(), gen_b.get_state())
    with pytest.raises(ValueError, match="size"):
        train_batch(data, 10**6, gen=gen_a)
    with pytest.raises(TypeError, match="data"):
        train_batch(object(), 3, gen=gen_a)
    xs, ys = spaced_digits(10, on=torch.device("cpu"))
    assert xs.shape == (180, 64) and xs.max() <= 1 and len(ys) == 180
    with pytest.raises(ValueError, match="step"):
        spaced_digits(0)


def test_pixel_batch_is_the_chapters_batch():
    from sklearn.datasets import load_digits
    images = torch.tensor(load_digits().data, dtype=torch.float64)
    pixels = torch.argsort(images.var(dim=0), descending=True, stable=True)[:32]
    pick = torch.arange(33) * (images.shape[0] // 33)
    old = images[pick[:32]][:, pixels].T.contiguous()
    assert torch.equal(pixel_batch(32, 32, step=1797 // 33), old)
    with pytest.raises(ValueError):
        pixel_batch(33, 65, step=1)


def test_hidden_gradient_growth_is_the_chapters_ratio():
    net = wn_mlp_model("data_dependent", d_in=64, widths=[16] * 5, d_out=10, gen=generator(2),
                       data=digits(seed=0).x_train[:64])
    data = digits(seed=0)
    x, y = data.x_train[:32].to(device()), data.y_train[:32].to(device())
    hidden = net.features(x)
    loss = F.cross_entropy(net.head(hidden[-1]), y)
    sq = torch.stack([g.square().sum() for g in torch.autograd.grad(loss, hidden)])
    assert hidden_gradient_growth(net, x, y) == (sq[:-1] / sq[1:]).mean().item()
    with pytest.raises(TypeError, match="net"):
        hidden_gradient_growth(object(), x, y)


def test_loss_hessian_norms_is_the_chapters_computation():
    x, y = spaced_digits(40, on=device())
    built = [wn_resnet_model("proposed", d_in=64, width=8, d_out=10, blocks=2,
                             gen=generator(k), data=x) for k in range(3)]
    nets = stack(built)
    out = loss_hessian_norms(nets, x, y, gen=generator(0), max_steps=30, rtol=1e-3)
    logits = nets(x)
    loss = F.cross_entropy(logits.flatten(0, 1), y.repeat(3), reduction="sum")
    dim = sum(p[0].numel() for p in nets.parameters())
    ref = lanczos_extreme(hessian_operator(loss / len(y), nets.parameters()), 3, dim,
                          gen=generator(0), max_steps=30, rtol=1e-3)
    assert np.array_equal(out.value, ref.value)
    with pytest.raises(ValueError, match="x and y"):
        loss_hessian_norms(nets, x, y[:-1], gen=generator(0), max_steps=3, rtol=1e-3)


def test_block_growth_ratio_is_the_chapters_ratio():
    x, _ = spaced_digits(40, on=device())
    built = [wn_resnet_model("proposed", d_in=64, width=8, d_out=10, blocks=3,
                             gen=generator(k), data=x) for k in range(4)]
    feats = stack(built).features(x)
    q = [1 + 1 / 3] * 3
    sq = torch.stack([h.detach().square().sum(-1) for h in feats])
    qt = torch.tensor(q, dtype=torch.float64, device=sq.device)[:, None, None]
    old = ((sq[1:] - 0.0) / (qt * sq[:-1])).mean((0, 2))
    assert torch.equal(block_growth_ratio(feats, q), old)
    assert math.isclose(float(block_growth_ratio(feats, q).mean()), 1.0, rel_tol=0.5)
    with pytest.raises(ValueError, match="factors"):
        block_growth_ratio(feats, q[:2])
    with pytest.raises(ValueError, match="features"):
        block_growth_ratio(feats[:1], [])
