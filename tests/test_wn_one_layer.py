"""One weight-normalized layer (eit.models.wn_one_layer): ratios, conv patches, validation."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from eit.core.device import DTYPE as D  # before eit.core.seeds (circular import)
from eit.core.seeds import generator
from eit.models.wn_one_layer import (
    backward_ratios,
    conv_forward_ratios,
    forward_ratios,
    patch_coverage,
)
from eit.sample.laws import directions


@pytest.mark.parametrize("direction", ["sphere", "orthogonal"])
@pytest.mark.parametrize("m", [3, 8, 20])
def test_forward_ratios_relu_below_linear_and_mean(direction, m):
    u = torch.randn(2, 8, dtype=D, generator=torch.Generator().manual_seed(1))
    relu, lin = forward_ratios(u, m, direction, n_nets=1500, gen=generator(3), chunk=5000)
    assert relu.shape == (1500, 2) and bool((relu <= lin + 1e-12).all())
    # E relu = m / (2n), E linear = m / n (Theorem 1 and the remark after Theorem 2)
    for x, theory in ((relu, m / 16), (lin, m / 8)):
        mean, se = x.mean().item(), x.std().item() / math.sqrt(x.numel())
        assert abs(mean - theory) < 6 * se + 1e-12


def test_square_orthogonal_layer_is_an_isometry():
    _, lin = forward_ratios(torch.ones(6, dtype=D), 6, "orthogonal", n_nets=5, gen=generator(0))
    assert torch.allclose(lin.cpu(), torch.ones(5, dtype=D), atol=1e-12)
    _, unmasked = backward_ratios(torch.ones(4, dtype=D), 6, "orthogonal", n_nets=5,
                                  gen=generator(0))
    assert torch.allclose(unmasked.cpu(), torch.ones(5, dtype=D), atol=1e-12)


def test_chunks_do_not_change_the_stream_law():
    u = torch.ones(5, dtype=D)
    a = forward_ratios(u, 4, "sphere", n_nets=10, gen=generator(7), chunk=20)[0]
    b = forward_ratios(u, 4, "sphere", n_nets=10, gen=generator(7), chunk=20)[0]
    assert torch.equal(a, b)


def test_backward_ratios_mask_halves_the_mean():
    masked, unmasked = backward_ratios(torch.ones(4, dtype=D), 9, "sphere", n_nets=20000,
                                       gen=generator(2))
    assert bool((masked <= unmasked + 1e-12).all())
    assert abs(masked.mean().item() - 0.5) < 0.02 and abs(unmasked.mean().item() - 1) < 0.02


@pytest.mark.parametrize("padding", ["circular", "zeros"])
def test_conv_ratios_match_a_direct_convolution(padding):
    h = torch.randn(2, 5, 6, dtype=D, generator=torch.Generator().manual_seed(0))
    r = conv_forward_ratios(h, 3, 3, "sphere", n_nets=2, gen=generator(4), padding=padding)
    w = directions(2, 3, 18, "sphere", gen=generator(4)).reshape(2, 3, 2, 3, 3).cpu()
    for i in range(2):
        mode = "circular" if padding == "circular" else "zeros"
        conv = torch.nn.Conv2d(2, 3, 3, padding=1, padding_mode=mode, bias=False).double()
        conv.weight.data = w[i]
        out = F.relu(conv(h.unsqueeze(0))).detach()
        assert math.isclose(float(out.square().sum() / h.square().sum()), float(r[i]),
                            rel_tol=1e-10)


def test_patch_coverage_counts_windows():
    h = torch.ones(3, 8, 8, dtype=D)
    assert patch_coverage(h, 3, "circular") == 1.0
    assert math.isclose(patch_coverage(h, 3, "zeros"), (22 / 24) ** 2)
    assert math.isclose(patch_coverage(h, 1, "zeros"), 1.0)


@pytest.mark.parametrize(("call", "name"), [
    (lambda: forward_ratios(torch.zeros(3, dtype=D), 2, "sphere", n_nets=1, gen=generator(0)),
     "u"),
    (lambda: forward_ratios(torch.ones(3, dtype=D), 2, "cube", n_nets=1, gen=generator(0)),
     "direction"),
    (lambda: backward_ratios(torch.ones(3, dtype=D), 0, "sphere", n_nets=1, gen=generator(0)),
     "n"),
    (lambda: conv_forward_ratios(torch.ones(1, 4, 4, dtype=D), 2, 2, "sphere", n_nets=1,
                                 gen=generator(0)), "k"),
    (lambda: patch_coverage(torch.ones(1, 4, 4, dtype=D), 3, "reflect"), "padding"),
])
def test_bad_arguments_are_named(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()


def test_backward_ratios_batch_of_vectors():
    u = torch.eye(3, dtype=D)[:2]
    masked, unmasked = backward_ratios(u, 4, "orthogonal", n_nets=6, gen=generator(1))
    assert masked.shape == (6, 2) and torch.allclose(unmasked.cpu(), torch.ones(6, 2, dtype=D))
