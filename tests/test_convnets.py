"""Tests for eit.sample.convnets (purely convolutional ReLU nets, Figure 4)."""

import pytest
import torch
import torch.nn.functional as F

from eit.core.seeds import generator
from eit.sample import convnets
from eit.sample.laws import he


def test_matches_explicit_conv():
    img = torch.randn(2, 6, 5, dtype=torch.float64)
    sq, win = convnets.conv_relu_lengths(img, [3, 4], he(), n_nets=2, gen=generator(0))
    assert sq.shape == win.shape == (3, 2)
    gen = generator(0)
    init = he()
    x = img.to(sq.device).unsqueeze(0).expand(2, -1, -1, -1)
    c_in = 2
    for c_out in (3, 4):
        w = init(2, c_out, c_in * 9, gen).reshape(2, c_out, c_in, 3, 3)
        x = torch.stack([F.conv2d(x[k:k + 1], w[k], padding=1)[0] for k in range(2)]).clamp_min(0)
        c_in = c_out
    assert torch.allclose(sq[-1], x.square().flatten(1).sum(-1))


def test_circular_mean_profile_is_kappa_power():
    img = torch.rand(3, 4, 4, dtype=torch.float64)
    prof = convnets.mean_profile(img, [6, 6], kappa=0.5, padding="circular")
    expected = img.square().sum() * torch.tensor([1.0, 0.5 * 2, 0.25 * 2], dtype=torch.float64)
    assert torch.allclose(prof.cpu(), expected)


def test_zero_padding_loses_mass():
    img = torch.ones(1, 4, 4, dtype=torch.float64)
    prof = convnets.mean_profile(img, [1], padding="zeros")
    # interior pixels keep 1, edges 6/9, corners 4/9: (4 + 8 * 6/9 + 4 * 4/9) / 16
    assert torch.isclose(prof[1], torch.tensor(4 + 8 * 6 / 9 + 4 * 4 / 9, dtype=torch.float64))


def test_mean_agrees_with_profile():
    img = torch.rand(1, 5, 5, dtype=torch.float64)
    sq, _ = convnets.conv_relu_lengths(img, [4, 4], he(), n_nets=20000, gen=generator(1))
    prof = convnets.mean_profile(img, [4, 4])
    assert abs(sq[-1].mean().item() / prof[-1].item() - 1) < 0.05


def test_bad_args():
    img = torch.rand(1, 5, 5, dtype=torch.float64)
    with pytest.raises(ValueError, match="kernel"):
        convnets.conv_relu_lengths(img, [2], he(), n_nets=1, gen=generator(0), kernel=2)
    with pytest.raises(ValueError, match="padding"):
        convnets.mean_profile(img, [2], padding="reflect")
    with pytest.raises(ValueError, match="image"):
        convnets.mean_profile(torch.rand(5, 5, dtype=torch.float64), [2])
    with pytest.raises(TypeError, match="init"):
        convnets.conv_relu_lengths(img, [2], None, n_nets=1, gen=generator(0))
    with pytest.raises(ValueError, match="channels"):
        convnets.conv_relu_lengths(img, [], he(), n_nets=1, gen=generator(0))
