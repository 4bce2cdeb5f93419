"""Batched propagation: agreement with autograd, log-space robustness at depth 1000."""

import math

import pytest
import torch

from eit.core.device import device
from eit.core.seeds import generator
from eit.sample import laws as I
from eit.sample import mlps as P
from eit.verdicts import stats


def reference(x, weights, delta):
    """A per-network, per-input autograd computation of the same quantities."""
    out_h, out_grad = [], []
    for w_net, d_net in zip(zip(*weights), delta):
        hs, gs = [], []
        for xi, di in zip(x, d_net):
            ws = [w.clone().requires_grad_(True) for w in w_net]
            h, norms, a = xi, [xi.norm()], None
            for w in ws:
                a = w @ h
                h = torch.relu(a)
                norms.append(h.norm())
            (a * di).sum().backward()  # loss with dloss/da^L = di
            hs.append(torch.stack(norms))
            gs.append(torch.stack([w.grad.norm() for w in ws]))
        out_h.append(torch.stack(hs))
        out_grad.append(torch.stack(gs))
    return torch.stack(out_h).permute(2, 0, 1), torch.stack(out_grad).permute(2, 0, 1)


def test_matches_autograd_on_a_small_network():
    widths, n_nets = [7, 5, 6], 3
    x = torch.randn(4, 3, dtype=torch.float64,
                    generator=torch.Generator().manual_seed(0)).to(device())
    init = I.he("fan_in")
    gen = generator(11)
    stats_ = P.relu_mlp(x, widths, init, n_nets=n_nets, gen=gen, delta="random")
    # replay the same random stream to build the explicit weights and delta
    replay = generator(11)
    fans = [3, *widths]
    weights = [init(n_nets, o, i, replay) for i, o in zip(fans[:-1], fans[1:])]
    delta = torch.randn(n_nets, 4, widths[-1], generator=replay, device=replay.device,
                        dtype=torch.float64)
    ref_h, ref_grad = reference(x, weights, delta)
    assert torch.allclose(stats_.log_h, ref_h.log(), atol=1e-10)
    assert torch.allclose(stats_.log_grad_w, ref_grad.log(), atol=1e-10)


def test_loss_gradient_callable_is_masked_at_the_top():
    x = torch.randn(2, 4, dtype=torch.float64,
                    generator=torch.Generator().manual_seed(1)).to(device())
    ones = P.relu_mlp(x, [5], I.he(), n_nets=2, gen=generator(3), delta=torch.ones_like)
    replay = generator(3)
    w = I.he()(2, 5, 4, replay)
    active = (x @ w.transpose(-2, -1) > 0).double()
    assert torch.allclose(ones.log_delta[-1], active.sum(-1).sqrt().log())


@pytest.mark.parametrize("gain", [0.5, 1.0, 2.0])
def test_depth_1000_stays_finite(gain):
    x = torch.randn(3, 16, dtype=torch.float64)
    init = I.named("he", gain=gain)
    s = P.relu_mlp(x, [32] * 1000, init, n_nets=2, gen=generator(5), delta="random")
    assert torch.isfinite(s.log_h).all() and torch.isfinite(s.log_grad_w).all()
    # the drift of log ||h|| is about 1000 log(gain): far outside float64's range for gain 2
    drift = s.log_h_ratio[-1].mean().item()
    assert abs(drift - 1000 * math.log(gain)) < 60


def test_one_layer_mean_is_one_and_shapes():
    u = torch.randn(8, dtype=torch.float64)
    r = P.one_layer(u, 64, n_nets=3000, gen=generator(6))
    assert r.shape == (3000,)
    assert abs(stats.mean(r).z(1.0)) < 4
    batch = P.one_layer(torch.randn(5, 8, dtype=torch.float64), 64, n_nets=10, gen=generator(6),
                        mask="bernoulli", p=0.3)
    assert batch.shape == (10, 5)


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"widths": []}, "widths"),
    ({"widths": [3, 0]}, r"widths\[1\]"),
    ({"n_nets": 0}, "n_nets"),
    ({"init": 3}, "init"),
    ({"delta": "zeros"}, "delta"),
    ({"x": torch.zeros(2, 3, dtype=torch.int64)}, "x"),
    ({"x": torch.full((2, 3), float("nan"))}, "x"),
    ({"x": torch.zeros(4, 2, 3)}, "n_nets"),
])
def test_relu_mlp_bad_arguments(kwargs, name):
    args = {"x": torch.ones(2, 3, dtype=torch.float64), "widths": [4], "init": I.he(),
            "n_nets": 2, "gen": generator(0), **kwargs}
    x, widths, init = args.pop("x"), args.pop("widths"), args.pop("init")
    with pytest.raises((ValueError, TypeError), match=name):
        P.relu_mlp(x, widths, init, **args)


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"m": 0}, "m"), ({"mask": "dropout"}, "mask"), ({"p": 1.5}, "p"),
    ({"variance": -1.0}, "variance"), ({"u": torch.zeros(3, dtype=torch.float64)}, "u"),
])
def test_one_layer_bad_arguments(kwargs, name):
    args = {"u": torch.ones(3, dtype=torch.float64), "m": 4, "n_nets": 2, "gen": generator(0),
            **kwargs}
    u, m = args.pop("u"), args.pop("m")
    with pytest.raises((ValueError, TypeError), match=name):
        P.one_layer(u, m, **args)


def test_kept_and_redrawn_weights_give_the_same_numbers(monkeypatch):
    """The general engine (a Pass): weights kept, or re-drawn from the saved states."""
    from eit.sample import engine
    from eit.sample.layers import mlp

    x = torch.randn(3, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(2))

    def run():
        p = engine.forward(mlp([8, 7, 9], I.he()), x, n_nets=2, gen=generator(4),
                           backward=True)
        return p.backward("random_preactivation")

    kept = run()
    monkeypatch.setattr(engine, "KEEP_FRACTION", 0.0)
    redrawn = run()
    assert torch.equal(kept.log_h, redrawn.log_h)
    assert torch.equal(kept.log_delta, redrawn.log_delta)


def test_zero_input_gives_minus_inf_and_a_named_error_for_the_ratio():
    """issue 17: an all-zero input gave NaN in log_grad_w_ratio."""
    from eit.sample.traces import UndefinedRatio

    x = torch.zeros(2, 5, dtype=torch.float64)
    s = P.relu_mlp(x, [4, 4], I.he(), n_nets=3, gen=generator(1), delta="random")
    assert torch.isneginf(s.log_h).all() and not torch.isnan(s.log_grad_w).any()
    with pytest.raises(UndefinedRatio, match="log_grad_w_ratio"):
        _ = s.log_grad_w_ratio
    with pytest.raises(UndefinedRatio, match="log_h_ratio"):
        _ = s.log_h_ratio


def test_wrong_shaped_initializer_and_head_are_named():
    x = torch.ones(2, 3, dtype=torch.float64)
    bad = lambda n_nets, fan_out, fan_in, gen: torch.zeros(fan_out, fan_in)  # noqa: E731
    with pytest.raises(ValueError, match="law must return shape"):
        P.relu_mlp(x, [4], bad, n_nets=2, gen=generator(0))
    with pytest.raises(ValueError, match="loss head"):
        P.relu_mlp(x, [4], I.he(), n_nets=2, gen=generator(0), delta=lambda h: h[..., :2])


def test_oversized_network_is_refused_before_allocating():
    from eit.core.validate import AllocationTooLarge

    x = torch.ones(1, 10_000, dtype=torch.float64)
    with pytest.raises(AllocationTooLarge, match="n_nets"):
        P.relu_mlp(x, [10_000], I.he(), n_nets=10_000, gen=generator(0))


@pytest.mark.parametrize("chunk", [0, -1, 1.5])
def test_one_layer_chunk_must_be_a_positive_int(chunk):
    with pytest.raises(ValueError, match="chunk"):
        P.one_layer(torch.ones(3, dtype=torch.float64), 4, n_nets=2, gen=generator(0),
                    chunk=chunk)


def test_one_layer_chunk_bounds_a_single_wide_network():
    """chunk splits the units too: one network wider than the chunk still works, same law."""
    u = torch.randn(3, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    small = P.one_layer(u, 64, n_nets=4000, gen=generator(5), chunk=100)
    big = P.one_layer(u, 64, n_nets=4000, gen=generator(6))
    from scipy import stats as sst

    for k in range(3):
        assert sst.ks_2samp(small[:, k].cpu(), big[:, k].cpu()).pvalue > 1e-3


def test_one_layer_conditional_draws_match_explicit_weights():
    """N < n draws R u from its joint Gaussian law: the same law as drawing R (KS, joint too)."""
    from scipy import stats as sst

    u = torch.randn(2, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    cond = P.one_layer(u, 32, n_nets=4000, gen=generator(7)).cpu()   # ref is on the host
    r = torch.randn(4000, 32, 6, dtype=torch.float64,
                    generator=torch.Generator().manual_seed(8)) * (2 / 32) ** 0.5
    ref = (r @ u.T).clamp_min(0).square().sum(-2) / u.square().sum(-1)
    for k in range(2):
        assert sst.ks_2samp(cond[:, k], ref[:, k]).pvalue > 1e-3
    assert sst.ks_2samp(cond.sum(-1), ref.sum(-1)).pvalue > 1e-3
