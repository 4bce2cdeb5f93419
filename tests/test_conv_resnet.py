"""Tests for eit.models.conv_resnet (all-convolutional ResNets, Hardt & Ma 2017, section 4)."""

import math

import pytest
import torch
import torch.nn.functional as F

from eit.core.device import DTYPE, device
from eit.core.seeds import generator
from eit.models import conv_resnet as cr
from eit.train.sgd import digits, sgd


def _cpu_net(init="small", **kw):
    kw = {"channels": 4, "blocks": 2, **kw}
    return cr.conv_resnet(init, gen=generator(0), on=torch.device("cpu"), **kw)


def test_shapes_and_parameters():
    net = _cpu_net(channels=[4, 8], blocks=[2, 1])
    x = torch.rand(5, 1, 8, 8, dtype=DTYPE)
    assert net(x).shape == (5, 10)
    assert net.features(x).shape == (5, 8, 4, 4)          # one stride-2 stage
    assert [s for *_, s in net.blocks] == [1, 1, 2]
    params = net.parameters()
    assert len(params) == 1 + 2 * 3 and all(p.requires_grad for p in params)
    assert net.head.shape == (8, 10) and not net.head.requires_grad
    assert all(p is not net.head for p in params)
    assert _cpu_net(train_head=True).parameters()[-1].requires_grad


def test_init_standard_deviations():
    assert cr.init_std("small", 3, 16) == pytest.approx(1 / 144)
    assert cr.init_std("standard", 3, 16) == pytest.approx(1 / 12)
    net = cr.conv_resnet("small", channels=64, blocks=3, gen=generator(1), on=torch.device("cpu"))
    w = torch.cat([c.detach().flatten() for pair in net.blocks for c in pair[:2]])
    assert w.std().item() == pytest.approx(1 / (9 * 64), rel=0.02)
    net = cr.conv_resnet("standard", channels=64, blocks=3, gen=generator(1),
                         on=torch.device("cpu"))
    w = torch.cat([c.detach().flatten() for pair in net.blocks for c in pair[:2]])
    assert w.std().item() == pytest.approx(1 / (3 * 8), rel=0.02)
    assert net.stem.detach().std().item() == pytest.approx(1 / 24, rel=0.2)
    assert cr.block_factor("standard", 3, 16) == pytest.approx(1.5)
    assert cr.block_factor("small", 3, 16) == pytest.approx(1 + 1 / (2 * 144**2))


def test_forward_matches_explicit_convolutions():
    net = _cpu_net(channels=[3, 5], blocks=[1, 1], padding="zeros", kernel=3)
    x = torch.rand(2, 1, 8, 8, dtype=DTYPE)
    h = F.conv2d(x, net.stem, padding=1)
    (a1, a2, _), (b1, b2, _) = net.blocks
    h = h + F.conv2d(F.conv2d(h, a1, padding=1).relu(), a2, padding=1)
    short = F.pad(F.avg_pool2d(h, 2), (0, 0, 0, 0, 0, 2))
    h = short + F.conv2d(F.conv2d(h, b1, padding=1, stride=2).relu(), b2, padding=1)
    assert torch.allclose(net(x), h.mean(dim=(-2, -1)) @ net.head)


def test_circular_padding_is_translation_equivariant():
    net = _cpu_net(channels=3, blocks=2)
    x = torch.rand(1, 1, 8, 8, dtype=DTYPE)
    shifted = torch.roll(x, shifts=(2, 3), dims=(-2, -1))
    assert torch.allclose(torch.roll(net.features(x), shifts=(2, 3), dims=(-2, -1)),
                          net.features(shifted))


def test_batched_norms_match_single_nets():
    x = torch.rand(3, 1, 6, 6, dtype=DTYPE).to(device())
    ratios = cr.forward_sq_norms(x, "standard", channels=3, blocks=2, n_nets=2, gen=generator(5))
    assert ratios.shape == (3, 2, 3)
    gen = generator(5)
    std = cr.init_std("standard", 3, 3)
    w = [std * torch.randn(2 * 3, c_in, 3, 3, generator=gen, device=gen.device, dtype=DTYPE)
         for c_in in (1, 3, 3, 3, 3)]

    def conv(h, k):
        return F.conv2d(F.pad(h, (1,) * 4, mode="circular"), k)

    for k in range(2):
        h = conv(x, w[0][3 * k:3 * k + 3])
        for b in range(2):
            c1, c2 = w[1 + 2 * b][3 * k:3 * k + 3], w[2 + 2 * b][3 * k:3 * k + 3]
            h = h + conv(conv(h, c1).relu(), c2)
        expect = h.square().flatten(1).sum(-1) / x.square().flatten(1).sum(-1)
        assert torch.allclose(ratios[-1, k], expect)


@pytest.mark.parametrize("init", cr.INITS)
def test_forward_law_at_init_statistically(init):
    """E[||x_B||^2 / ||x_0||^2] = block_factor^B exactly (circular padding): z-test, 5 SE."""
    x = torch.rand(4, 1, 6, 6, dtype=DTYPE)
    blocks, n_nets = 3, 1500
    r = cr.forward_sq_norms(x, init, channels=4, blocks=blocks, n_nets=n_nets, gen=generator(11))
    per_net = (r[-1] / r[0]).mean(-1)                     # average the images of each net
    theory = cr.block_factor(init, 3, 4) ** blocks
    se = per_net.std().item() / math.sqrt(n_nets)
    assert abs(per_net.mean().item() - theory) < 5 * se
    # the stem alone preserves the squared norm in expectation
    stem = r[0].mean(-1)
    assert abs(stem.mean().item() - 1) < 5 * stem.std().item() / math.sqrt(n_nets)


def test_small_init_separates_from_identity():
    """With small weights the law is 1 + B/(2 n^2), and it is resolved, not just 1."""
    x = torch.rand(4, 1, 6, 6, dtype=DTYPE)
    r = cr.forward_sq_norms(x, "small", channels=2, blocks=4, n_nets=4000, gen=generator(3))
    per_net = (r[-1] / r[0]).mean(-1)
    se = per_net.std().item() / math.sqrt(len(per_net))
    assert (per_net.mean().item() - 1) / se > 3


def test_last_layer_not_trained():
    data = digits(seed=0, images=True)
    net = _cpu_net(channels=4, blocks=1)
    head, stem = net.head.clone(), net.stem.detach().clone()
    run = sgd(net, net.parameters(), data, lr=0.05, epochs=1, batch_size=256,
              gen=torch.Generator().manual_seed(0))
    assert not run.diverged
    assert torch.equal(net.head, head) and not torch.equal(net.stem.detach(), stem)


def test_bad_args():
    gen = generator(0)
    with pytest.raises(ValueError, match="init"):
        cr.conv_resnet("he", channels=4, blocks=1, gen=gen)
    with pytest.raises(ValueError, match="kernel"):
        cr.conv_resnet("small", channels=4, blocks=1, gen=gen, kernel=2)
    with pytest.raises(ValueError, match="padding"):
        cr.conv_resnet("small", channels=4, blocks=1, gen=gen, padding="reflect")
    with pytest.raises(ValueError, match="channels"):
        cr.conv_resnet("small", channels=[], blocks=1, gen=gen)
    with pytest.raises(ValueError, match="blocks"):
        cr.conv_resnet("small", channels=[4, 8], blocks=[1], gen=gen)
    with pytest.raises(ValueError, match="head_std"):
        cr.conv_resnet("small", channels=4, blocks=1, gen=gen, head_std=0.0)
    with pytest.raises(TypeError, match="train_head"):
        cr.conv_resnet("small", channels=4, blocks=1, gen=gen, train_head=1)
    with pytest.raises(ValueError, match="channels"):
        cr.init_std("small", 3, 0)
    x = torch.rand(2, 1, 6, 6, dtype=DTYPE)
    with pytest.raises(ValueError, match="images"):
        cr.forward_sq_norms(x[0], "small", channels=2, blocks=1, n_nets=2, gen=gen)
    with pytest.raises(ValueError, match="blocks"):
        cr.forward_sq_norms(x, "small", channels=2, blocks=-1, n_nets=2, gen=gen)
    with pytest.raises(ValueError, match="n_nets"):
        cr.forward_sq_norms(x, "small", channels=2, blocks=1, n_nets=0, gen=gen)
    with pytest.raises(ValueError, match="non-zero"):
        cr.forward_sq_norms(torch.zeros(1, 1, 4, 4, dtype=DTYPE), "small", channels=2, blocks=1,
                            n_nets=2, gen=gen)


def test_standardize():
    data = cr.standardize(digits(seed=0, images=True))
    assert torch.allclose(data.x_train.mean(dim=(1, 2, 3)), torch.zeros(1, dtype=DTYPE), atol=1e-12)
    assert torch.allclose(data.x_test.std(dim=(1, 2, 3)), torch.ones(1, dtype=DTYPE))
    with pytest.raises(TypeError, match="data"):
        cr.standardize(torch.zeros(3))


def test_architecture_size_table1_and_small():
    # Table 1 of the paper: stem 3 -> 16, three stages of 9 blocks with 64, 128, 256 channels
    convs, weights = cr.architecture_size(in_channels=3, stem_channels=16, channels=(64, 128, 256),
                                          blocks=(9, 9, 9))
    def stage(c_in, c, b):
        return 9 * (c_in * c + c * c) + (b - 1) * 9 * 2 * c * c

    assert convs == 55
    assert weights == 9 * 3 * 16 + stage(16, 64, 9) + stage(64, 128, 9) + stage(128, 256, 9)
    assert weights == 13_538_736
    # agrees with the trained parameters of a drawn network (stem width = first stage width)
    net = cr.conv_resnet("small", channels=(4, 8), blocks=(2, 1), gen=generator(0))
    n = sum(p.numel() for p in net.parameters())
    assert cr.architecture_size(in_channels=1, stem_channels=4, channels=(4, 8),
                                blocks=(2, 1)) == (1 + 2 * 3, n)


def test_architecture_size_bad_args():
    with pytest.raises(ValueError, match="stem_channels"):
        cr.architecture_size(in_channels=3, stem_channels=0, channels=(4,), blocks=(1,))
    with pytest.raises(ValueError, match="blocks"):
        cr.architecture_size(in_channels=3, stem_channels=4, channels=(4, 8), blocks=(1,))
