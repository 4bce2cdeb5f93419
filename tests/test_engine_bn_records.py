"""The explicit engine's optional BN records: ``log_bn_jacobian`` and ``log_grad_w_batch_op``.

Both are checked against autograd on the same draws (replayed from the generator), in float64
on tiny networks; adding them must leave the pass (its numbers and its random stream) as it was.
"""

from __future__ import annotations

import math

import pytest
import torch

from eit.core.device import device
from eit.core.seeds import generator
from eit.sample import engine as explicit
from eit.sample import laws
from eit.sample.layers import BatchNorm, Dense, Serial, serial

F64 = torch.float64


def _x(n: int, d: int, seed: int, scales=None) -> torch.Tensor:
    x = torch.randn(n, d, dtype=F64, generator=torch.Generator().manual_seed(seed))
    x = x if scales is None else x * torch.tensor(scales, dtype=F64).unsqueeze(-1)
    return x.to(device())                       # host values, placed on the compute device


def _bn(h: torch.Tensor, layer: BatchNorm) -> torch.Tensor:
    """BN of one network's state (N, d): each feature (column) normalized over the N inputs."""
    if layer.centered:
        h = h - h.mean(dim=0, keepdim=True)
    y = h / h.norm(dim=0, keepdim=True)
    return y * math.sqrt(h.shape[0]) if layer.standard else y


@pytest.mark.parametrize("centered", [False, True])
@pytest.mark.parametrize("standard", [False, True])
@pytest.mark.parametrize("n_in", [2, 3, 5])
def test_log_bn_jacobian_is_the_operator_norm_of_the_layer_jacobian(centered, standard, n_in):
    d, n_nets = 3, 2
    layer = BatchNorm(centered=centered, standard=standard)
    scales = [10.0 ** (4 * k - 3) for k in range(n_in)]     # inputs of very different norms
    x = _x(n_in, d, 1, scales)
    net = Serial((serial(Dense(d, laws.orthogonal()), layer),))        # one element
    t = explicit.trace(net, x, n_nets=n_nets,
                       gen=generator(2), record={"log_bn_jacobian"})
    got = t.stats["log_bn_jacobian"][0]
    w = laws.orthogonal()(n_nets, d, d, generator(2))           # the engine's draw
    for net in range(n_nets):
        h = x @ w[net].T                                          # H^T, actual scale
        jac = torch.autograd.functional.jacobian(lambda z: _bn(z, layer), h)
        op = torch.linalg.matrix_norm(jac.reshape(n_in * d, n_in * d), ord=2)
        rows = (h - h.mean(dim=0) if centered else h).norm(dim=0)   # ||(P H)_i.||
        if n_in - 1 - int(centered) <= 0:                       # the Jacobian vanishes
            assert float(op * rows.min()) < 1e-10
            assert math.isinf(float(got[net])) and float(got[net]) < 0
        else:
            assert abs(float(torch.log(op) - got[net])) < 1e-9


def test_log_bn_jacobian_is_exact_beyond_float64():
    d, n_in, n_nets = 3, 4, 2
    law = laws.gaussian_fixed(1e300)                              # H has rows of norm ~1e450
    net = Serial((serial(Dense(d, law), Dense(d, law), Dense(d, law), BatchNorm()),))
    x = _x(n_in, d, 3)
    t = explicit.trace(net, x, n_nets=n_nets, gen=generator(4), record={"log_bn_jacobian"})
    gen = generator(4)
    h = x.expand(n_nets, n_in, d)
    for _ in range(3):
        h = h @ laws.standard_normal(n_nets, d, d, gen=gen).transpose(-2, -1)
    rows = h.norm(dim=-2)                                         # the rows of H / 1e450
    want = -(450 * math.log(10) + torch.log(rows.amin(dim=-1)))
    assert torch.allclose(t.stats["log_bn_jacobian"][0], want, rtol=0, atol=1e-9)


def _net(d: int, depth: int) -> Serial:
    return Serial((serial(Dense(d, laws.orthogonal()), BatchNorm()),) * depth)


def test_log_grad_w_batch_op_is_the_spectral_norm_of_autograd_gradients():
    d, n_in, depth, n_nets = 3, 4, 3, 2
    x = _x(n_in, d, 5, [1.0, 0.1, 3.0, 20.0])
    r = torch.randn(n_nets, n_in, d, dtype=F64,
                    generator=torch.Generator().manual_seed(6)).to(device())
    t = explicit.trace(_net(d, depth), x, n_nets=n_nets, gen=generator(7), backward=r,
                       record={"log_grad_w_batch_op", "log_grad_w_batch"})
    gen = generator(7)
    ws = [laws.orthogonal()(n_nets, d, d, gen).requires_grad_(True) for _ in range(depth)]
    h = x.expand(n_nets, n_in, d)
    for w in ws:
        h = torch.stack([_bn(a, BatchNorm()) for a in h @ w.transpose(-2, -1)])
    grads = torch.autograd.grad((r * h).sum(), ws)
    op = torch.stack([torch.linalg.matrix_norm(g, ord=2) for g in grads]).log()
    fro = torch.stack([g.flatten(1).norm(dim=1) for g in grads]).log()
    assert torch.allclose(t.stats["log_grad_w_batch_op"], op, atol=1e-9)
    assert torch.allclose(t.stats["log_grad_w_batch"], fro, atol=1e-9)
    assert bool((t.stats["log_grad_w_batch_op"] <= t.stats["log_grad_w_batch"] + 1e-12).all())


def test_new_records_leave_the_pass_and_its_stream_unchanged():
    d, n_in = 4, 5
    x = _x(n_in, d, 8)
    plain = explicit.forward(_net(d, 4), x, n_nets=3, gen=generator(9), backward=True,
                             record={"log_grad_w_batch"})
    more = explicit.forward(_net(d, 4), x, n_nets=3, gen=generator(9), backward=True,
                            record={"log_grad_w_batch", "log_grad_w_batch_op",
                                    "log_bn_jacobian"})
    assert torch.equal(plain.trace.log_h, more.trace.log_h)
    a, b = plain.backward("random"), more.backward("random")
    assert torch.equal(a.log_grad, b.log_grad)
    assert torch.equal(a.stats["log_grad_w_batch"], b.stats["log_grad_w_batch"])
    assert "log_grad_w_batch_op" not in a.stats and "log_bn_jacobian" not in a.stats
    only = explicit.trace(_net(d, 2), x, n_nets=3, gen=generator(9), backward="random",
                          record={"log_grad_w_batch_op"})
    assert "log_grad_w_batch" not in only.stats and "log_grad_w_batch_op" in only.stats


def test_unknown_record_names_the_argument():
    with pytest.raises(ValueError, match="record"):
        explicit.trace(_net(3, 1), _x(3, 3, 0), n_nets=1, gen=generator(0),
                       record={"log_bn_jacobians"})
