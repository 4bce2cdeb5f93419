"""Tests for eit.models.wn_init: WN layers, MLPs, ResNets (Arpit, Campos & Bengio)."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from eit.core.device import device
from eit.core.seeds import generator
from eit.models import wn_init as W
from eit.sample import relu_mlp
from eit.sample.laws import haar_orthogonal as qr_haar


def test_proposed_gain_values():
    assert W.proposed_gain(100, 50) == pytest.approx(2.0)
    assert W.proposed_gain(10, 10, gamma=1.0) == 1.0


@pytest.mark.parametrize("kwargs, name", [(dict(fan_in=0, fan_out=3), "fan_in"),
                                          (dict(fan_in=3, fan_out=-1), "fan_out"),
                                          (dict(fan_in=3, fan_out=3, gamma=0.0), "gamma")])
def test_proposed_gain_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        W.proposed_gain(**kwargs)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 12), st.integers(1, 12), st.integers(0, 1000))
def test_haar_cholesky_matches_qr(fan_out, fan_in, seed):
    a = W.haar_orthogonal(3, fan_out, fan_in, gen=generator(seed))
    b = qr_haar(3, fan_out, fan_in, gen=generator(seed))
    assert torch.allclose(a, b, atol=1e-10)


def test_haar_cholesky_falls_back_on_ill_conditioned_draws():
    # 2000 square 64 x 64 Gaussian draws include some too ill-conditioned for Cholesky QR
    q = W.haar_orthogonal(2000, 64, 64, gen=generator(2019))
    err = (q.transpose(-2, -1) @ q - torch.eye(64, dtype=q.dtype, device=q.device)).abs().amax()
    assert err < 1e-10


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 10), st.integers(1, 10), st.sampled_from(W.DIRECTIONS), st.integers(0, 99))
def test_directions_have_unit_rows(fan_out, fan_in, direction, seed):
    w = W.directions(4, fan_out, fan_in, direction, gen=generator(seed))
    assert w.shape == (4, fan_out, fan_in)
    assert torch.allclose(w.norm(dim=-1), torch.ones(4, fan_out, dtype=w.dtype, device=w.device))
    if direction == "orthogonal" and fan_out <= fan_in:
        eye = torch.eye(fan_out, dtype=w.dtype, device=w.device)
        assert torch.allclose(w @ w.transpose(-2, -1), eye.expand(4, -1, -1), atol=1e-10)


def test_directions_bad_direction():
    with pytest.raises(ValueError, match="direction"):
        W.directions(2, 3, 3, "he", gen=generator(0))


def test_unit_rows_and_errors():
    w = torch.tensor([[3.0, 4.0], [0.0, 2.0]], dtype=torch.float64)
    assert torch.allclose(W.unit_rows(w), torch.tensor([[0.6, 0.8], [0.0, 1.0]], dtype=w.dtype))
    with pytest.raises(ValueError, match="zero row"):
        W.unit_rows(torch.zeros(2, 2, dtype=torch.float64))
    with pytest.raises(ValueError, match="w"):
        W.unit_rows(torch.zeros(2, dtype=torch.float64))


def test_weight_normalized_gain_and_rows():
    init = W.weight_normalized("sphere")
    w = init(3, 8, 32, generator(1))
    assert torch.allclose(w.norm(dim=-1),
                          torch.full((3, 8), 2 * math.sqrt(2), dtype=w.dtype, device=w.device))
    w = W.weight_normalized("orthogonal", gain=1.0)(2, 5, 5, generator(1))
    assert torch.allclose(w.norm(dim=-1), torch.ones(2, 5, dtype=w.dtype, device=w.device))
    with pytest.raises(ValueError, match="rows"):
        W.weight_normalized("he")
    with pytest.raises(ValueError, match="gain"):
        W.weight_normalized("sphere", gain=-1.0)


def _explicit_resnet(x, ws):
    """The plain (unnormalized-state) forward pass, for comparison."""
    h = x
    hs = [h]
    for w1, w2 in ws:
        h = h + torch.relu(h @ w1.T) @ w2.T
        hs.append(h)
    return hs


def test_wn_resnet_matches_explicit_forward_and_autograd_backward():
    torch.manual_seed(0)
    x = torch.randn(3, 6, dtype=torch.float64).to(device())
    hidden = [4, 5, 3]
    gains1, gains2 = [1.3, 0.7, 1.1], [0.5, 0.9, 0.2]
    stats = W.wn_resnet(x, hidden, "orthogonal", n_nets=2, gen=generator(7), fc1_gain=gains1,
                        fc2_gain=gains2, backward=True)
    gen = generator(7)
    ws = []
    for n, g1, g2 in zip(hidden, gains1, gains2, strict=True):
        w1 = g1 * W.directions(2, n, 6, "orthogonal", gen=gen)
        w2 = g2 * W.directions(2, 6, n, "orthogonal", gen=gen)
        ws.append((w1, w2))
    error = torch.randn(2, 3, 6, generator=gen, device=gen.device, dtype=torch.float64)
    for net in range(2):
        xx = x.clone().requires_grad_(True)
        inputs = [xx]
        hs = _explicit_resnet(xx, [(a[net], b[net]) for a, b in ws])
        norms = torch.stack([h.norm(dim=-1) for h in hs])
        assert torch.allclose(stats.log_h[:, net], norms.log(), atol=1e-10)
        grads = torch.autograd.grad((hs[-1] * error[net]).sum(), [*inputs, *hs[1:-1]])
        grad_norms = [g.norm(dim=-1) for g in grads]
        assert torch.allclose(stats.log_grad_ratio[0, net],
                              (grad_norms[0] / error[net].norm(dim=-1)).log(), atol=1e-10)
        assert torch.allclose(stats.log_grad_ratio[1, net],
                              (grad_norms[1] / error[net].norm(dim=-1)).log(), atol=1e-10)
    f = torch.relu(x @ ws[0][0][0].T) @ ws[0][1][0].T
    cos = (x * f).sum(-1) / (x.norm(dim=-1) * f.norm(dim=-1))
    assert torch.allclose(stats.cos_f[0, 0], cos, atol=1e-10)


def test_wn_resnet_proposed_mean_square_growth():
    x = torch.randn(4, 40, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    stats = W.wn_resnet(x, [20] * 8, "sphere", n_nets=400, gen=generator(8))
    r2 = (2 * stats.log_h_ratio[-1]).exp().flatten()
    se = r2.std().item() / math.sqrt(r2.numel() / 4)  # inputs of one network are correlated
    assert abs(r2.mean().item() - (1 + 1 / 8) ** 8) < 5 * se
    with pytest.raises(ValueError, match="log_grad_ratio"):
        _ = stats.log_grad_ratio


def test_wn_resnet_bad_arguments():
    x = torch.ones(2, 4, dtype=torch.float64)
    gen = generator(0)
    with pytest.raises(ValueError, match="hidden"):
        W.wn_resnet(x, [], "sphere", n_nets=2, gen=gen)
    with pytest.raises(ValueError, match="fc2_gain"):
        W.wn_resnet(x, [3, 3], "sphere", n_nets=2, gen=gen, fc2_gain=[1.0])
    with pytest.raises(ValueError, match="fc1_gain"):
        W.wn_resnet(x, [3], "sphere", n_nets=2, gen=gen, fc1_gain="big")
    with pytest.raises(ValueError, match="direction"):
        W.wn_resnet(x, [3], "he", n_nets=2, gen=gen)
    with pytest.raises(TypeError, match="backward"):
        W.wn_resnet(x, [3], "sphere", n_nets=2, gen=gen, backward="yes")


def test_relu_mlp_with_weight_normalized_init_preserves_norm_in_mean():
    x = torch.randn(5, 30, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    s = relu_mlp(x, [20, 40, 25], W.weight_normalized("orthogonal"), n_nets=500,
                 gen=generator(9))
    r2 = (2 * s.log_h_ratio[-1]).exp()[:, 0]
    assert abs(r2.mean().item() - 1) < 5 * r2.std().item() / math.sqrt(r2.numel())


@pytest.mark.parametrize("scheme", W.SCHEMES)
def test_wn_resnet_model_schemes(scheme):
    data = torch.randn(64, 8, dtype=torch.float64,
                       generator=torch.Generator().manual_seed(3)).to(device())
    net = W.wn_resnet_model(scheme, d_in=8, width=16, d_out=3, blocks=4, gen=generator(10),
                            data=data)
    out = net(data)
    assert out.shape == (64, 3) and torch.isfinite(out).all()
    assert len(net.parameters()) == 3 * (2 + 2 * 4)
    assert all(p.requires_grad for p in net.parameters())
    like = dict(dtype=out.dtype, device=out.device)
    if scheme == "data_dependent":
        assert torch.allclose(out.mean(0), torch.zeros(3, **like), atol=1e-10)
        assert torch.allclose(out.std(0), torch.ones(3, **like), atol=1e-10)
    if scheme == "hanin":
        assert torch.allclose(net.blocks[1][1].g, torch.full((16,), 0.81, **like))
    if scheme == "proposed":
        assert torch.allclose(net.blocks[0][0].g, torch.full((16,), math.sqrt(2), **like))
        assert torch.allclose(net.blocks[0][1].g, torch.full((16,), 0.5, **like))
    if scheme == "pytorch":
        layer = net.blocks[0][0]
        assert torch.allclose(layer.g, layer.v.norm(dim=-1))


def test_wn_resnet_model_bad_arguments():
    with pytest.raises(ValueError, match="scheme"):
        W.wn_resnet_model("he", d_in=2, width=2, d_out=2, blocks=1, gen=generator(0))
    with pytest.raises(ValueError, match="data"):
        W.wn_resnet_model("data_dependent", d_in=2, width=2, d_out=2, blocks=1,
                          gen=generator(0))
    with pytest.raises(ValueError, match="blocks"):
        W.wn_resnet_model("proposed", d_in=2, width=2, d_out=2, blocks=0, gen=generator(0))
    with pytest.raises(ValueError, match="hanin_base"):
        W.wn_resnet_model("hanin", d_in=2, width=2, d_out=2, blocks=1, gen=generator(0),
                          hanin_base=1.5)


# --- the trainable weight-normalized MLP (Figure 2) -------------------------------------------


def _mlp_data(n: int = 64, d: int = 8) -> torch.Tensor:
    return torch.rand(n, d, dtype=torch.float64, generator=torch.Generator().manual_seed(4))


@pytest.mark.parametrize("scheme", W.MLP_SCHEMES)
def test_wn_mlp_model_schemes(scheme):
    data = _mlp_data()
    net = W.wn_mlp_model(scheme, d_in=8, widths=[16, 12, 12], d_out=3, gen=generator(11),
                         data=data, on=torch.device("cpu"))
    out = net(data)
    assert out.shape == (64, 3) and torch.isfinite(out).all() and net.depth == 3
    assert [lay.v.shape for lay in (*net.hidden, net.head)] == [(16, 8), (12, 16), (12, 12),
                                                                 (3, 12)]
    assert len(net.parameters()) == 3 * 4
    assert all(p.requires_grad and p.is_leaf and p.device.type == "cpu"
               for p in net.parameters())
    feats = net.features(data)
    assert len(feats) == 3 and all((f >= 0).all() for f in feats)
    h = data  # the fused forward pass is the composition of the WNLayer maps
    for lay, f in zip(net.hidden, feats):
        h = torch.relu(lay(h))
        assert torch.allclose(f, h, atol=1e-12)
    assert torch.allclose(out, net.head(h), atol=1e-12)
    if scheme == "data_dependent":
        pre = [net.hidden[0](data)] + [lay(f) for lay, f in zip(net.hidden[1:], feats)]
        for z in (*pre, out):
            assert torch.allclose(z.mean(0), torch.zeros_like(z[0]), atol=1e-10)
            assert torch.allclose(z.std(0), torch.ones_like(z[0]), atol=1e-10)
    if scheme == "proposed":
        for lay, (fan_out, fan_in) in zip(net.hidden, [(16, 8), (12, 16), (12, 12)]):
            assert torch.allclose(lay.g, torch.full((fan_out,), math.sqrt(2 * fan_in / fan_out),
                                                    dtype=out.dtype))
            assert torch.equal(lay.b, torch.zeros(fan_out, dtype=out.dtype))
        assert torch.allclose(net.head.g, torch.full((3,), 2.0, dtype=out.dtype))
        v = net.hidden[1].v  # 12 x 16: orthonormal rows
        assert torch.allclose(v @ v.T, torch.eye(12, dtype=v.dtype), atol=1e-12)
    if scheme == "pytorch":
        layer = net.hidden[1]
        assert torch.allclose(layer.g, layer.v.norm(dim=-1))
        assert layer.v.abs().max() <= 1 / math.sqrt(16) and layer.b.abs().max() <= 1 / 4


def test_wn_mlp_model_is_seeded_and_proposed_rows_are_haar():
    a = W.wn_mlp_model("proposed", d_in=6, widths=[9, 4], d_out=2, gen=generator(5))
    b = W.wn_mlp_model("proposed", d_in=6, widths=[9, 4], d_out=2, gen=generator(5))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    gen = generator(5)  # the same draws, orthogonalized by eit.sample.laws.haar_orthogonal
    for lay, (fan_out, fan_in) in zip((*a.hidden, a.head), [(9, 6), (4, 9), (2, 4)]):
        q = qr_haar(1, fan_out, fan_in, gen=gen)[0]
        assert torch.allclose(lay.v, q, atol=1e-12)


def test_wn_mlp_model_proposed_preserves_the_forward_norm_in_mean():
    x = _mlp_data(200, 40).to(device())
    ratios = []
    for seed in range(40):
        net = W.wn_mlp_model("proposed", d_in=40, widths=[40] * 6, d_out=10, gen=generator(seed))
        ratios.append(net.features(x)[-1].square().sum(-1) / x.square().sum(-1))
    r = torch.stack(ratios).mean(-1)  # one mean ratio per network
    assert abs(r.mean().item() - 1) < 4 * r.std().item() / math.sqrt(r.numel())


def test_wn_mlp_model_data_dependent_gains_exceed_the_proposed_ones():
    # Standardizing pre-activations makes g^2 = 1 / Var(v_hat . h) ~ 2 pi / (pi - 1) > 2 after a
    # ReLU layer: the backward pass grows by about pi / (pi - 1) per layer (the chapter's law).
    x = torch.randn(512, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    net = W.wn_mlp_model("data_dependent", d_in=64, widths=[128] * 6, d_out=10,
                         gen=generator(2), data=x)
    g2 = torch.cat([lay.g for lay in net.hidden[1:]]).square().mean().item()
    assert g2 == pytest.approx(2 * math.pi / (math.pi - 1), rel=0.1)


@pytest.mark.parametrize(("kwargs", "name", "error"), [
    ({"scheme": "he"}, "scheme", ValueError),
    ({"d_in": 0}, "d_in", ValueError),
    ({"d_out": -1}, "d_out", ValueError),
    ({"widths": []}, "widths", ValueError),
    ({"widths": [4, 0]}, r"widths\[1\]", ValueError),
    ({"scheme": "data_dependent", "data": None}, "data", ValueError),
    ({"scheme": "data_dependent", "data": torch.zeros(5, 3, dtype=torch.float64)}, "data",
     ValueError),
    ({"scheme": "data_dependent", "data": torch.zeros(1, 2, dtype=torch.float64)}, "data",
     ValueError),
    ({"on": "cpu"}, "on", TypeError),
    ({"gen": 3}, "gen", TypeError),
])
def test_wn_mlp_model_bad_arguments(kwargs, name, error):
    args = {"scheme": "proposed", "d_in": 2, "widths": [4], "d_out": 2,
            "gen": generator(0)} | kwargs
    scheme = args.pop("scheme")
    with pytest.raises(error, match=name):
        W.wn_mlp_model(scheme, **args)


def test_stage_resnet_one_stage_is_wn_resnet():
    x = torch.randn(3, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    for direction in W.DIRECTIONS:
        a = W.wn_stage_resnet(x, [6], [4], direction, n_nets=5, gen=generator(7), backward=True)
        b = W.wn_resnet(x, [6] * 4, direction, n_nets=5, gen=generator(7), backward=True)
        assert a.boundaries == (0, 4) and a.widths == (6,) * 5
        assert torch.allclose(a.log_h, b.log_h) and torch.allclose(a.log_grad, b.log_grad)


def test_stage_resnet_shapes_and_mean_square():
    gen = generator(3)
    x = torch.randn(2, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    r = W.wn_stage_resnet(x, [4, 8], [1, 2], "orthogonal", n_nets=4000, gen=gen, backward=True)
    assert r.log_h.shape == (4, 4000, 2) and r.log_grad.shape == (4, 4000, 2)
    assert r.boundaries == (0, 1, 3) and r.widths == (4, 4, 8, 8)
    # forward: exact mean square prod (1 + 1/B_k)^B_k; the projection preserves it
    fwd = (2 * r.log_h_ratio[-1]).exp().mean(-1)
    theory = 2.0 * 1.5**2
    assert abs(float(fwd.mean()) - theory) < 5 * float(fwd.std()) / math.sqrt(4000)
    assert torch.allclose(r.log_grad_ratio[-1].cpu(), torch.zeros(4000, 2, dtype=torch.float64))


@pytest.mark.parametrize("kwargs, name", [
    (dict(widths=[4, 8], blocks=[1]), "widths and blocks"),
    (dict(widths=[4], blocks=[0]), "blocks"),
    (dict(widths=[4], blocks=[1], gammas=[0.0]), "gammas"),
    (dict(widths=[4], blocks=[1], gammas=[1.0, 2.0]), "gammas"),
    (dict(widths=[4], blocks=[1], direction="gaussian"), "direction")])
def test_stage_resnet_bad_arguments(kwargs, name):
    args = dict(direction="sphere") | kwargs
    with pytest.raises(ValueError, match=name):
        W.wn_stage_resnet(torch.ones(2, 4), args.pop("widths"), args.pop("blocks"),
                          args.pop("direction"), n_nets=2, gen=generator(0), **args)


def test_stage_resnet_needs_backward_for_gradients():
    r = W.wn_stage_resnet(torch.ones(1, 3), [3], [1], "sphere", n_nets=2, gen=generator(0))
    with pytest.raises(ValueError, match="backward"):
        _ = r.log_grad_ratio
