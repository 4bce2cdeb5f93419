"""The layer vocabulary and its two engines: explicit backward vs autograd, exact vs explicit.

Cross-checks of issue 15: the explicit engine (eit.sample.engine) is compared with an
autograd computation on the same draws (replayed from the generator), and the exact engines
(eit.exact.engine) with the explicit one on the same description by two-sample KS tests at
fixed seeds (p > 1e-3 for each of a handful of marginals).
"""

from __future__ import annotations

import math

import pytest
import torch
from scipy import stats as sst

from eit.core.device import device
from eit.core.seeds import generator
from eit.core.validate import AllocationTooLarge
from eit.exact import engine as exact
from eit.sample import engine as explicit
from eit.sample import laws
from eit.sample.layers import (
    Activation,
    BatchNorm,
    Conv,
    Dense,
    LeakyReLU,
    ReLU,
    Residual,
    Scale,
    Serial,
    WeightNorm,
    mlp,
    serial,
    tanh,
)
from eit.sample.traces import Trace, UndefinedRatio

F64 = torch.float64


def _x(n: int, d: int, seed: int) -> torch.Tensor:
    """Inputs drawn on the host (fixed values), placed on the compute device."""
    return torch.randn(n, d, dtype=F64,
                       generator=torch.Generator().manual_seed(seed)).to(device())


# ----------------------------------------------------------------- reference (autograd)

def _apply(layer, h, gen, params):
    """Forward of one description on h (n_nets, N, d) drawing in the engine's order."""
    if isinstance(layer, Serial):
        for sub in layer.layers:
            h = _apply(sub, h, gen, params)
        return h
    if isinstance(layer, Residual):
        stream = h
        b = _apply(layer.branch, h, gen, params + [("stream", stream.shape[-1])])
        s = h if layer.shortcut is None else _apply(layer.shortcut, h, gen, params)
        return s + layer.scale * b
    if isinstance(layer, Dense):
        fan_in = h.shape[-1]
        streams = [p for p in params if isinstance(p, tuple)]
        fan_out = layer.width or (streams[-1][1] if streams else fan_in)
        w = layer.law(h.shape[0], fan_out, fan_in, gen).requires_grad_(True)
        params.append(w)
        a = h @ w.transpose(-2, -1)
        if layer.bias is not None:
            a = a + layer.bias(h.shape[0], fan_out, gen).unsqueeze(1)
        return a
    if isinstance(layer, ReLU):
        return torch.relu(h)
    if isinstance(layer, LeakyReLU):
        return torch.where(h >= 0, h, layer.slope * h)
    if isinstance(layer, Activation):
        return layer.fn(h)
    if isinstance(layer, Scale):
        return layer.gain * h
    if isinstance(layer, BatchNorm):
        if layer.centered:
            h = h - h.mean(dim=1, keepdim=True)
        y = h / h.norm(dim=1, keepdim=True)
        return y * math.sqrt(h.shape[1]) if layer.standard else y
    raise TypeError(type(layer))


def _reference(net, x, n_nets, seed):
    gen = generator(seed)
    xx = x.expand(n_nets, *x.shape).clone().requires_grad_(True)
    params: list = []
    out = _apply(net, xx, gen, params)
    g = laws.standard_normal(*out.shape, gen=gen)
    ws = [p for p in params if isinstance(p, torch.Tensor)]
    grads = torch.autograd.grad((out * g).sum(), [xx, *ws])
    return out, grads[0], grads[1:]


NETS = {
    "relu mlp": (mlp([7, 5, 6]), 1),
    "tanh mlp with biases": (mlp([6, 6], laws.lecun(), activation=tanh(),
                                 bias=laws.gaussian_bias(0.3)), 1),
    "leaky residual": (serial(Dense(6), *[Residual(serial(Dense(4), LeakyReLU(0.2), Dense()), 0.7)
                                          for _ in range(3)]), 1),
    "projection shortcut": (serial(Residual(serial(Dense(5), ReLU()), 0.5, Dense(5))), 1),
    "batch norm": (serial(*[serial(Dense(5, laws.orthogonal()), BatchNorm(centered=True),
                                   Scale(0.7), tanh()) for _ in range(3)]), 4),
}


@pytest.mark.parametrize("name", sorted(NETS))
def test_explicit_backward_matches_autograd(name):
    net, n_in = NETS[name]
    x = _x(n_in, 4, 1)
    t = explicit.trace(net, x, n_nets=3, gen=generator(5), backward="random",
                       record={"log_grad_w_batch"} if n_in > 1 else ())
    out, gx, gws = _reference(net, x, 3, 5)
    assert torch.allclose(t.log_h[-1], out.detach().norm(dim=-1).log(), atol=1e-10)
    assert torch.allclose(t.log_grad[0], gx.norm(dim=-1).log(), atol=1e-9)
    if n_in == 1 and name in ("relu mlp", "tanh mlp with biases"):    # per-sample = total
        ref = torch.stack([g.flatten(1).norm(dim=1) for g in gws]).log()
        assert torch.allclose(t.log_grad_w[..., 0], ref, atol=1e-9)
    if name == "batch norm":
        ref = torch.stack([g.flatten(1).norm(dim=1) for g in gws]).log()
        assert torch.allclose(t.log_grad_w_batch, ref, atol=1e-9)


def test_conv_forward_and_backward_match_autograd():
    net = serial(serial(Conv(3, 3, padding="circular"), ReLU()), serial(Conv(2, 3), ReLU()))
    x = torch.randn(2, 1, 5, 5, dtype=F64,
                    generator=torch.Generator().manual_seed(0)).to(device())
    t = explicit.trace(net, x, n_nets=2, gen=generator(3), backward="random")
    gen = generator(3)
    xx = x.expand(2, *x.shape).clone().requires_grad_(True)
    h, c_in = xx, 1
    for conv in (net.layers[0].layers[0], net.layers[1].layers[0]):
        w = conv.law(2, conv.channels, c_in * 9, gen).reshape(2 * conv.channels, c_in, 3, 3)
        h = torch.relu(explicit._conv(h, w, conv))
        c_in = conv.channels
    g = laws.standard_normal(*h.shape, gen=gen)
    (gx,) = torch.autograd.grad((h * g).sum(), xx)
    assert torch.allclose(t.log_h[-1], h.detach().flatten(2).norm(dim=-1).log(), atol=1e-10)
    assert torch.allclose(t.log_grad[0], gx.flatten(2).norm(dim=-1).log(), atol=1e-9)


def test_weight_norm_layer_matches_autograd():
    net = serial(serial(WeightNorm(5, row_norm=None), ReLU()), serial(WeightNorm(4), ReLU()))
    x = _x(1, 6, 2)
    t = explicit.trace(net, x, n_nets=2, gen=generator(8), backward="random")
    gen = generator(8)
    vs = [laws.rows(2, 5, 6, gen=gen).requires_grad_(True),
          laws.rows(2, 4, 5, gen=gen).requires_grad_(True)]
    h = x.expand(2, 1, 6)
    for v_ in vs:
        k = laws.proposed_gain(v_.shape[-1], v_.shape[-2])
        h = torch.relu(k * h @ (v_ / v_.norm(dim=-1, keepdim=True)).transpose(-2, -1))
    g = laws.standard_normal(*h.shape, gen=gen)
    grads = torch.autograd.grad((h * g).sum(), vs)
    # row_norm=None: the gradient of the un-normalized weights themselves (eqs. 27-28)
    assert torch.allclose(t.log_grad_w[0, :, 0], grads[0].flatten(1).norm(dim=1).log())


# ----------------------------------------------------------------- exact vs explicit

def _ks(a: torch.Tensor, b: torch.Tensor) -> float:
    return sst.ks_2samp(a.flatten().cpu().numpy(), b.flatten().cpu().numpy()).pvalue


WIDTHS, VARS = [48, 32, 64, 40], [2 / 48, 1.5 / 32, 2 / 64, 2.5 / 40]


@pytest.mark.parametrize("method", ["norm", "conditional"])
@pytest.mark.parametrize("backward", ["random", "random_preactivation"])
def test_exact_engines_match_explicit_on_one_input(method, backward):
    from eit.exact.chains import gaussian_relu_mlp

    net = gaussian_relu_mlp(WIDTHS, VARS)
    x = _x(1, 24, 3)
    ex = explicit.trace(net, x, n_nets=4000, gen=generator(11), backward=backward)
    ch = exact.trace(net, x, n_nets=4000, gen=generator(12), backward=backward, method=method)
    assert ch.meta["method"] == method
    for l in range(1, 5):
        assert _ks(ex.log_h[l], ch.log_h[l]) > 1e-3, ("h", l)
    for l in range(5):
        assert _ks(ex.log_grad[l], ch.log_grad[l]) > 1e-3, ("grad", l)
    for l in range(4):
        assert _ks(ex.log_delta[l], ch.log_delta[l]) > 1e-3, ("delta", l)


def test_exact_conditional_matches_explicit_with_several_inputs_and_residuals():
    net = serial(Dense(8), *[Residual(serial(Dense(6, laws.he(), laws.gaussian_bias(0.1)), tanh(),
                                             Dense(None, laws.lecun())), 0.8) for _ in range(3)])
    x = _x(3, 5, 4)
    ex = explicit.trace(net, x, n_nets=3000, gen=generator(13), backward="random")
    ch = exact.trace(net, x, n_nets=3000, gen=generator(14), backward="random")
    assert ch.meta["method"] == "conditional"
    for l in range(1, 5):
        for k in range(3):
            assert _ks(ex.log_h[l, :, k], ch.log_h[l, :, k]) > 1e-3
    for k in range(3):
        assert _ks(ex.log_grad[0, :, k], ch.log_grad[0, :, k]) > 1e-3
    # joint statistics of the inputs (they share the weights)
    assert _ks(ex.log_h[-1].sum(-1), ch.log_h[-1].sum(-1)) > 1e-3
    assert _ks(ex.log_grad[0].sum(-1), ch.log_grad[0].sum(-1)) > 1e-3
    assert _ks(ex.cos_branch[1], ch.cos_branch[1]) > 1e-3


def test_exact_conditional_matches_explicit_with_batch_norm():
    net = serial(*[serial(Dense(6, laws.gaussian_fixed(1 / 6)), BatchNorm()) for _ in range(3)])
    x = _x(4, 6, 5)
    ex = explicit.trace(net, x, n_nets=2000, gen=generator(15), backward="random",
                        record={"isometry_gap"})
    ch = exact.trace(net, x, n_nets=2000, gen=generator(16), backward="random",
                     record={"isometry_gap"})
    for l in range(3):
        assert _ks(ex.isometry_gap[l], ch.isometry_gap[l]) > 1e-3
    assert _ks(ex.log_grad[0].sum(-1), ch.log_grad[0].sum(-1)) > 1e-3


@pytest.mark.parametrize("rows", ["sphere", "orthogonal"])
def test_exact_weight_norm_forward_matches_explicit(rows):
    net = serial(serial(WeightNorm(6, rows), ReLU()), serial(WeightNorm(5, rows), ReLU()))
    x = _x(1, 10, 6)
    ex = explicit.trace(net, x, n_nets=4000, gen=generator(17))
    ch = exact.trace(net, x, n_nets=4000, gen=generator(18))
    for l in (1, 2):
        assert _ks(ex.log_h[l], ch.log_h[l]) > 1e-3


def test_no_exact_law_names_the_layer():
    x = _x(1, 4, 0)
    with pytest.raises(exact.NoExactLaw, match="Dense"):
        exact.trace(mlp([4], laws.he(distribution="uniform")), x, n_nets=2, gen=generator(0))
    with pytest.raises(exact.NoExactLaw, match="Conv"):
        exact.trace(serial(Conv(2)), torch.ones(1, 1, 3, 3, dtype=F64), n_nets=2,
                    gen=generator(0))
    with pytest.raises(exact.NoExactLaw, match="WeightNorm"):
        exact.trace(serial(WeightNorm(3), ReLU()), x, n_nets=2, gen=generator(0),
                    backward="random")
    with pytest.raises(exact.NoExactLaw, match="norm"):
        exact.trace(mlp([4]), _x(2, 4, 0), n_nets=2, gen=generator(0), method="norm")


# ----------------------------------------------------------------- degenerate cases

@pytest.mark.parametrize("backward", ["random", "random_preactivation"])
def test_dead_networks_give_minus_inf_in_every_engine(backward):
    """issue 17: norm_chain gave NaN in log_delta at width 10, depth 1000 (He)."""
    net, x = mlp([10] * 1000), torch.ones(1, 10, dtype=F64)
    runs = [explicit.trace(net, x, n_nets=100, gen=generator(1), backward=backward),
            exact.trace(net, x, n_nets=1000, gen=generator(2), backward=backward),
            exact.trace(net, x, n_nets=100, gen=generator(3), backward=backward,
                        method="conditional")]
    dead = []
    for t in runs:
        for q in (t.log_h, t.log_grad, t.log_delta, t.log_grad_w):
            assert not torch.isnan(q).any()
        dead.append(torch.isneginf(t.log_h[-1]).double().mean().item())
    assert all(0.4 < d < 0.8 for d in dead), dead


def test_log_norms_stay_finite_at_depth_1000():
    for gain in (0.5, 2.0):
        law = laws.named("he", gain=gain)
        t = exact.trace(mlp([32] * 1000, law), torch.ones(1, 8, dtype=F64), n_nets=20,
                        gen=generator(4), backward="random")
        alive = torch.isfinite(t.log_h[-1])
        assert torch.isfinite(t.log_grad[:, alive]).all()


def test_non_homogeneous_overflow_is_an_error_not_a_nan():
    big = laws.named("he", gain=1e150)
    net = serial(*[serial(Dense(4, big), ReLU()) for _ in range(3)],
                 serial(Dense(4, laws.he(), laws.gaussian_bias(1.0)), tanh()))
    with pytest.raises(FloatingPointError, match="float64"):
        explicit.trace(net, torch.ones(1, 4, dtype=F64), n_nets=2, gen=generator(0))


def test_bad_arguments_are_named():
    x = torch.ones(2, 3, dtype=F64)
    with pytest.raises(ValueError, match="width"):
        Dense(0)
    with pytest.raises(TypeError, match="law"):
        Dense(3, law=3)
    with pytest.raises(ValueError, match="kernel"):
        Conv(3, kernel=2)
    with pytest.raises(ValueError, match="scale"):
        Residual(ReLU(), math.inf)
    with pytest.raises(ValueError, match="record"):
        explicit.trace(mlp([3]), x, n_nets=2, gen=generator(0), record={"gap"})
    with pytest.raises(ValueError, match="cotangent"):
        explicit.trace(mlp([3]), x, n_nets=2, gen=generator(0), backward="zeros")
    with pytest.raises(ValueError, match="cotangent"):
        explicit.trace(mlp([3]), x, n_nets=2, gen=generator(0),
                       backward=torch.ones(2, 2, 4, dtype=F64))
    with pytest.raises(TypeError, match="gen"):
        explicit.trace(mlp([3]), x, n_nets=2, gen=None)
    with pytest.raises(ValueError, match="method"):
        exact.trace(mlp([3]), x, n_nets=2, gen=generator(0), method="gram")
    with pytest.raises(ValueError, match="x"):
        explicit.trace(mlp([3]), torch.full((2, 3), math.nan), n_nets=2, gen=generator(0))
    with pytest.raises(AllocationTooLarge, match="n_nets"):
        explicit.trace(mlp([100_000]), torch.ones(1, 100_000), n_nets=1000, gen=generator(0))


# ----------------------------------------------------------------- trace and generator

def test_trace_ratios_and_statistics():
    t = explicit.trace(mlp([5, 5]), _x(2, 3, 0), n_nets=2, gen=generator(0),
                       backward="random_preactivation")
    assert t.widths == (3, 5, 5) and t.depth == 2 and t.n_nets == 2
    assert torch.allclose(t.log_grad_w_ratio, t.log_grad_w - t.log_delta[-1] - t.log_h[0])
    assert torch.allclose(t.mean_square, torch.exp(2 * t.log_h) / torch.tensor(
        [3.0, 5.0, 5.0], dtype=F64, device=t.log_h.device).view(-1, 1, 1))
    with pytest.raises(AttributeError, match="log_f"):
        _ = t.log_f
    with pytest.raises(KeyError, match="log_branch"):
        t.stat("log_branch")
    dead = Trace(torch.tensor([[[-math.inf]], [[0.0]]]))
    with pytest.raises(UndefinedRatio):
        _ = dead.log_h_ratio


def test_parallel_draws_do_not_depend_on_the_number_of_threads():
    n = laws.PARALLEL_MIN + 5
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = laws.standard_normal(n, gen=generator(9))
        torch.set_num_threads(2)
        two = laws.standard_normal(n, gen=generator(9))
    finally:
        torch.set_num_threads(before)
    assert torch.equal(one, two)
    assert abs(float(one.mean())) < 5 / math.sqrt(n) and abs(float(one.var()) - 1) < 0.01


@pytest.mark.cpu_only("eit.sample.laws.chunks is the CPU generator's stream, CPU only by "
                      "design")
def test_a_chunked_stream_is_the_draw_whatever_the_buffers_and_threads():
    n = laws.PARALLEL_MIN + 3 * laws.CHUNK // 2
    whole = laws.standard_normal(n, gen=generator(11))
    before = torch.get_num_threads()
    try:
        for threads in (1, 2, 3):
            torch.set_num_threads(threads)
            parts = [(start, c.clone()) for start, c in laws.chunks("normal", n, generator(11))]
            assert [start for start, _ in parts] == list(range(0, n, laws.CHUNK))
            assert torch.equal(torch.cat([c for _, c in parts]), whole)
            out = torch.empty(n, dtype=F64)
            for _ in laws.chunks("normal", n, generator(11), out=out):
                pass
            assert torch.equal(out, whole)
    finally:
        torch.set_num_threads(before)
    with pytest.raises(ValueError, match="kind"):
        next(laws.chunks("cauchy", n, generator(0)))
    with pytest.raises(ValueError, match="out"):
        next(laws.chunks("normal", n, generator(0), out=torch.empty(3, dtype=F64)))


@pytest.mark.parametrize("widths, n0, n_nets, keep", [
    ([1300, 9], 700, 5, 0.25),        # rows split between chunks, several networks a chunk
    ([1300, 9], 700, 5, 0.0),         # forward held nowhere, weights re-drawn backward
    ([3], 1_500_000, 1, 0.25),        # a row longer than a chunk
    ([100, 100], 300, 150, 0.25),     # many whole networks in one chunk
])
def test_streamed_layers_draw_the_same_weights_as_whole_layers(monkeypatch, widths, n0,
                                                               n_nets, keep):
    """A large Gaussian layer is multiplied chunk by chunk as it is drawn: the same weights
    (so the same law) as drawing the stack whole, for any number of threads."""
    net, x = mlp(widths, laws.he()), _x(3, n0, 5)
    monkeypatch.setattr(explicit, "KEEP_FRACTION", keep)
    before = torch.get_num_threads()
    try:
        got = []
        for threads in (1, 2):
            torch.set_num_threads(threads)
            got.append(explicit.trace(net, x, n_nets=n_nets, gen=generator(1),
                                      backward="random"))
        monkeypatch.setattr(explicit, "_streamed_std", lambda *a: None)
        whole = explicit.trace(net, x, n_nets=n_nets, gen=generator(1), backward="random")
    finally:
        torch.set_num_threads(before)
    for t in got:               # the same weights; the products may round differently
        assert torch.allclose(t.log_h, whole.log_h, rtol=0, atol=1e-12)
        assert torch.allclose(t.log_grad, whole.log_grad, rtol=0, atol=1e-12)


@pytest.mark.cpu_only("the explicit engine streams a layer's weights on the CPU only")
def test_streamed_layer_weights_have_the_law(monkeypatch):
    """The pre-activations of a streamed He layer on a unit input are N(0, 2/n0)."""
    n0, width, n_nets = 1000, 2100, 2
    x = torch.zeros(1, n0, dtype=F64)
    x[0, 0] = 1.0
    seen = {}
    apply = explicit._apply_rows

    def spy(x_, rows_, first, a):
        apply(x_, rows_, first, a)
        seen["a"] = a
    monkeypatch.setattr(explicit, "_apply_rows", spy)
    explicit.trace(serial(Dense(width, law=laws.he())), x, n_nets=n_nets, gen=generator(3))
    z = seen["a"].flatten()             # x @ Z^T, before the factor sqrt(2 / n0)
    assert z.numel() == n_nets * width
    assert sst.kstest(z.numpy(), "norm").pvalue > 1e-4


def test_kept_and_redrawn_weights_agree(monkeypatch):
    net = serial(serial(Dense(6), ReLU()), Residual(serial(Dense(5), ReLU(), Dense()), 0.5))
    x = _x(2, 4, 1)
    kept = explicit.trace(net, x, n_nets=2, gen=generator(4), backward="random")
    monkeypatch.setattr(explicit, "KEEP_FRACTION", 0.0)
    redrawn = explicit.trace(net, x, n_nets=2, gen=generator(4), backward="random")
    assert torch.equal(kept.log_grad, redrawn.log_grad)


def test_truncated_backward_from_several_depths():
    net = mlp([6] * 5)
    p = explicit.forward(net, _x(2, 4, 3), n_nets=3, gen=generator(2), backward=True,
                         tops=[2, 5])
    short = p.backward(torch.ones(3, 2, 6, dtype=F64), top=2)
    assert short.log_grad.shape == (3, 3, 2) and short.log_grad_w.shape == (2, 3, 2)
    with pytest.raises(ValueError, match="top"):
        p.backward("random", top=3)
