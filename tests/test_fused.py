"""The device path of plain ReLU chains (eit.sample._fused) against the general engines.

``./book test`` runs the library's tests on the simulated device, whose random streams are the
CPU's: there the explicit chain and the vector sampler draw the same numbers as the general
engines (``eit.sample.engine.forward``, a Pass, never takes the fused path), so the two agree
to rounding; the QR chain and the norm chain drawn at once draw other numbers, so they are
compared in law. Every test runs on the compute device (the CPU without the guard, where the
engines' own paths are the general ones and the comparisons are trivially true).
"""

from __future__ import annotations

import math

import pytest
import torch

from eit.core.device import DTYPE, device
from eit.core.seeds import generator
from eit.exact import engine as exact
from eit.sample import _fused as fused
from eit.sample import engine, laws
from eit.sample.layers import Dense, ReLU, Serial, mlp, serial

WIDTHS = [7, 5, 9] + [6] * 18          # depth 21: two rescalings (fused.RENORM = 8)


def _x(n_in: int, n0: int = 4, seed: int = 3) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n_in, n0, dtype=DTYPE, generator=g).to(device())


def _general(net, x, n_nets, seed, backward=None):
    p = engine.forward(net, x, n_nets=n_nets, gen=generator(seed),
                       backward=backward is not None)
    return p.trace if backward is None else p.backward(backward)


def _close(a: torch.Tensor, b: torch.Tensor) -> None:
    assert torch.equal(torch.isneginf(a), torch.isneginf(b))
    assert not torch.isnan(a).any() and not torch.isnan(b).any()
    finite = torch.isfinite(a)
    assert torch.allclose(a[finite], b[finite], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backward", [None, "random", "random_preactivation"])
def test_the_explicit_chain_is_the_general_engine_to_rounding(backward):
    net, x = mlp(WIDTHS, laws.he()), _x(3)
    fast = engine.trace(net, x, n_nets=4, gen=generator(5), backward=backward)
    slow = _general(net, x, 4, 5, backward)
    _close(fast.log_h, slow.log_h)
    assert fast.widths == slow.widths and fast.meta == slow.meta
    if backward is not None:
        assert set(fast.stats) == set(slow.stats) == {"log_delta", "log_grad_w"}
        _close(fast.log_grad, slow.log_grad)
        for name in fast.stats:
            _close(fast.stats[name], slow.stats[name])


def test_dead_networks_stay_minus_inf_never_nan():
    """Width 1: about half the networks die at every layer (and an input of zeros)."""
    x = torch.cat([_x(2, 3), torch.zeros(1, 3, dtype=DTYPE, device=device())])
    net = mlp([1] * 12, laws.he())
    fast = engine.trace(net, x, n_nets=64, gen=generator(2), backward="random")
    slow = _general(net, x, 64, 2, "random")
    assert torch.isneginf(fast.log_h[-1]).float().mean() > 0.5
    for a, b in [(fast.log_h, slow.log_h), (fast.log_grad, slow.log_grad),
                 (fast.log_grad_w, slow.log_grad_w)]:
        _close(a, b)


def test_the_vector_sampler_is_the_general_conditional_engine_to_rounding():
    net, x = mlp(WIDTHS, laws.he()), _x(1)
    fast = exact.trace(net, x, n_nets=6, gen=generator(1), method="conditional")
    slow = engine.forward(net, x, n_nets=6, gen=generator(1),
                          _rule=exact._Conditional()).trace
    _close(fast.log_h, slow.log_h)
    assert fast.meta["method"] == "conditional" and fast.widths == slow.widths


def _two_sample_z(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(mean(a) - mean(b)) / se, per column; ``a``, ``b`` are (samples, columns)."""
    se = (a.var(0) / a.shape[0] + b.var(0) / b.shape[0]).sqrt()
    diff = a.mean(0) - b.mean(0)
    # two constant samples: equal (z = 0) or told apart for certain (z = inf)
    return torch.where(se > 0, diff / se, torch.where(diff == 0, 0.0, math.inf))


def test_the_qr_chain_has_the_law_of_the_conditional_engine():
    """Three inputs (two nearly parallel), width 5: the last layer's log-norms (clipped at
    -5: dead networks are -inf) in mean and mean square, and the dead fraction, against the
    general conditional engine."""
    x = torch.tensor([[1.0, 0.0, 0.0], [0.9, 0.1, 0.0], [0.0, 0.5, 1.0]], dtype=DTYPE,
                     device=device())
    net, n = mlp([5] * 6, laws.he()), 20000
    fast = exact.trace(net, x, n_nets=n, gen=generator(11), method="conditional")
    slow = engine.forward(net, x, n_nets=n, gen=generator(12),
                          _rule=exact._Conditional()).trace
    alive = lambda t: t.clamp_min(-5.0)  # noqa: E731
    for t in (lambda tr: alive(tr.log_h[-1]), lambda tr: alive(tr.log_h[-1]).square(),
              lambda tr: torch.isneginf(tr.log_h[-1]).to(DTYPE)):
        z = _two_sample_z(t(fast), t(slow))
        assert z.abs().max() < 5, z
    # the control: the same test tells a 20% larger weight variance apart
    wrong = engine.forward(mlp([5] * 6, laws.Law("normal", lambda a, b: 2.4 / a, "1.2 He")), x,
                           n_nets=n, gen=generator(12), _rule=exact._Conditional()).trace
    assert _two_sample_z(alive(fast.log_h[-1]), alive(wrong.log_h[-1])).abs().max() > 5


def test_the_qr_chain_keeps_dependent_and_dead_inputs_exactly():
    x = torch.tensor([[1.0, 2.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 0.0], [0.5, 0.0, 1.0]],
                     dtype=DTYPE, device=device())
    t = exact.trace(mlp([8] * 20, laws.he()), x, n_nets=16, gen=generator(0),
                    method="conditional")
    assert not torch.isnan(t.log_h).any()
    assert torch.isneginf(t.log_h[:, :, 2]).all()
    alive = torch.isfinite(t.log_h[:, :, 0])
    assert torch.allclose(t.log_h[:, :, 0][alive], t.log_h[:, :, 1][alive], atol=1e-9)


def test_the_norm_chain_at_once_has_the_law_of_the_layer_by_layer_chain():
    """Width 2 (deaths are common) and 6: log r_L and the dead fraction."""
    dense = [Dense(w, laws.he()) for w in [2, 6, 2, 6, 2]]
    fans, n = [3, 2, 6, 2, 6, 2], 40000
    log_r = torch.zeros(n, 1, dtype=DTYPE, device=device())
    at_once = exact._norm_chain_at_once(dense, fans, log_r, generator(1))
    by_layer = exact._norm_chain_layer_by_layer(dense, fans, log_r, generator(2))
    for stat in (lambda r: torch.where(torch.isfinite(r), r, -50.0),
                 lambda r: torch.isneginf(r).to(DTYPE)):
        a, b = (stat(torch.stack(out[0])[1:, :, 0]).T for out in (at_once, by_layer))
        assert _two_sample_z(a, b).abs().max() < 5
    k = torch.stack(at_once[1])
    dead_before = torch.isneginf(torch.stack(at_once[0])[:-1])
    assert (k[dead_before] == 0).all() and (k[~dead_before] >= 0).all()
    assert at_once[2] == by_layer[2]


def test_the_norm_chain_backward_after_the_draw_at_once(monkeypatch):
    """The backward law of the norm chain, after the forward drawn at once (this device)
    and layer by layer (the CPU): log ||dL/dW^l|| at the first and the last layer."""
    def run(seed):
        return exact.trace(mlp([2, 6, 2, 6, 2, 6], laws.he()), torch.ones(1, 3, dtype=DTYPE),
                           n_nets=20000, gen=generator(seed), backward="random_preactivation")

    fast = run(4)
    monkeypatch.setenv("EIT_DEVICE", "cpu")
    slow = run(5)
    assert fast.meta["method"] == slow.meta["method"] == "norm"
    assert not torch.isnan(fast.log_grad).any() and not torch.isnan(fast.log_grad_w).any()
    dead = torch.isneginf(fast.log_h[-2])
    assert dead.any() and torch.isneginf(fast.log_grad_w[-1][dead]).all()
    for stat in (lambda t: torch.where(torch.isfinite(t), t, -50.0),
                 lambda t: torch.isneginf(t).to(DTYPE)):
        for row in (0, -1):
            a, b = (stat(t.log_grad_w[row].to("cpu")) for t in (fast, slow))
            assert _two_sample_z(a, b).abs().max() < 5


def test_an_overflowing_norm_is_an_error_not_a_number():
    rows = fused._Rows(torch.zeros(2, 1, dtype=DTYPE, device=device()))
    rows.add(torch.tensor([[1.0], [math.inf]], dtype=DTYPE, device=device()))
    with pytest.raises(FloatingPointError, match="overflowed"):
        rows.log_norms("Dense")


def test_which_descriptions_take_the_device_path():
    he = laws.he()
    assert fused.chain(mlp([4, 4], he)) is not None
    assert fused.chain(Serial((serial(Dense(4, he), ReLU(), ReLU()),))) is None
    assert fused.chain(mlp([4], laws.he(distribution="uniform"))) is None
    on_device = device().type != "cpu"
    assert (fused.applies(mlp([4, 4], he), observe=None, record=()) is not None) == on_device
    biased = mlp([4], he, bias=laws.gaussian_bias(0.1))
    assert fused.applies(biased, observe=None, record=()) is None
    assert fused.applies(mlp([4], he), observe={"f": lambda h, r: r}, record=()) is None
    assert fused.applies(mlp([4], he), observe=None, record=("nonlinearity",)) is None


@pytest.mark.parametrize("backward", ["random", "random_preactivation"])
def test_the_qr_chain_backward_has_the_law_of_the_conditional_engine(backward):
    """Three inputs, width 5, depth 10 (a rescaling): log ||dL/dW^l|| and log ||dL/dh^l||
    at the first and last layers (clipped at -5), and the dead fraction, against the
    general conditional engine; the control: a 20% larger variance is told apart."""
    x = torch.tensor([[1.0, 0.0, 0.0], [0.9, 0.1, 0.0], [0.0, 0.5, 1.0]], dtype=DTYPE,
                     device=device())
    n = 20000

    def general(law, seed):
        p = engine.forward(mlp([5] * 10, law), x, n_nets=n, gen=generator(seed),
                           backward=True, _rule=exact._Conditional())
        return p.backward(backward)

    fast = exact.trace(mlp([5] * 10, laws.he()), x, n_nets=n, gen=generator(21),
                       backward=backward, method="conditional")
    slow = general(laws.he(), 22)
    assert set(fast.stats) == {"log_delta", "log_grad_w"}
    assert fast.meta == {**slow.meta, "method": "conditional"}
    assert not any(torch.isnan(t).any() for t in (fast.log_grad, *fast.stats.values()))
    clip = lambda t: t.clamp_min(-5.0)  # noqa: E731
    for pick in (lambda t: t.log_grad_w[0], lambda t: t.log_grad_w[-1],
                 lambda t: t.log_grad[0], lambda t: t.log_grad[-2]):
        z = _two_sample_z(clip(pick(fast)), clip(pick(slow)))
        assert z.abs().max() < 5, z
        dead = _two_sample_z(*(torch.isneginf(pick(t)).to(DTYPE) for t in (fast, slow)))
        assert dead.abs().max() < 5, dead
    wrong = general(laws.Law("normal", lambda a, b: 2.4 / a, "1.2 He"), 22)
    assert _two_sample_z(clip(fast.log_grad[0]), clip(wrong.log_grad[0])).abs().max() > 5


@pytest.mark.parametrize("where", ["cpu", "sim"])
def test_the_general_conditional_backward_has_the_explicit_law(where, monkeypatch):
    """The general conditional engine (a Pass never takes the device path), on the CPU and
    on the simulated device, against the explicit engine, width 5, three orthogonal inputs,
    40,000 networks: log ||dL/dh^l|| (clipped at -5) and the fraction of dead inputs at
    every row below the top.

    Two defects this caught: on a device, a Cholesky solve with a regularized, nearly
    singular Gram matrix (7.2 to 8.2 standard errors off one row below the top, depth 10);
    on the CPU, the eigenvector root of a singular Gram matrix left rounding noise in a dead
    input's row, which the next ReLU read as signs (input 1: mean log-norm 0.34 against
    0.62 two rows below the top, depth 4, and too few dead inputs)."""
    monkeypatch.setenv("EIT_DEVICE", where)
    x = torch.eye(3, dtype=DTYPE, device=device())
    for depth, seed in ((4, 41), (10, 31)):
        net, n = mlp([5] * depth, laws.he()), 40000
        conditional = engine.forward(net, x, n_nets=n, gen=generator(seed), backward=True,
                                     _rule=exact._Conditional()).backward("random_preactivation")
        explicit = _general(net, x, n, seed + 1, "random_preactivation")
        for row in range(depth):
            a, b = (t.log_grad[row] for t in (conditional, explicit))
            for stat in (lambda t: t.clamp_min(-5.0), lambda t: torch.isneginf(t).to(DTYPE)):
                z = _two_sample_z(stat(a), stat(b))
                assert z.abs().max() < 5, (depth, row, z)
