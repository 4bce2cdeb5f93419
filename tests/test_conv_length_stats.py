"""The statistics of convolutional ReLU nets added to eit.exact.conv_lengths (length ratio,
one-layer second moment, the depth sweep of the paper-scale path), checked against the former
chapter code of Hanin & Rolnick's Figure 4."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from eit.core.seeds import generator
from eit.exact import conv_lengths
from eit.sample import convnets
from eit.sample.laws import he, lecun

IMAGE = torch.linspace(0.1, 1.0, 3 * 6 * 6, dtype=torch.float64).reshape(3, 6, 6)


def _run(chans, n_nets=200, seed=0, init=None):
    return convnets.conv_relu_lengths(IMAGE, chans, init or he(), n_nets=n_nets,
                                      gen=generator(seed))


def test_length_ratio_is_the_chapters_expression():
    chans = [2, 2, 2]
    sq, _ = _run(chans)
    assert torch.equal(conv_lengths.length_ratio(sq, [3] + chans), sq[-1] / sq[0] * 3 / 2)


def test_length_ratio_has_the_exact_mean_with_circular_padding():
    sq, _ = convnets.conv_relu_lengths(IMAGE, [16], he(), n_nets=4000, gen=generator(1),
                                       padding="circular")
    r = conv_lengths.length_ratio(sq, [3, 16])
    se = r.std() / len(r) ** 0.5
    assert abs(r.mean() - 1) < 5 * se


def test_one_layer_second_moment_is_the_chapters_rho():
    chans = [1] * 5
    sq, win = _run(chans, n_nets=300)
    growth = torch.tensor([1.0] * len(chans), dtype=torch.float64, device=sq.device)
    growth[0] = chans[0] / 3
    steps = sq[1:] / (growth.unsqueeze(-1) * win[:-1])
    steps = steps[torch.isfinite(steps)]
    old = (steps.square().mean() / steps.mean() ** 2).item()
    assert conv_lengths.one_layer_second_moment(sq, win, [3] + chans) == old


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0.01, 10.0), min_size=2, max_size=20))
def test_one_layer_second_moment_is_at_least_one(values):
    sq = torch.tensor([[1.0] * len(values), values], dtype=torch.float64)
    win = torch.ones_like(sq)
    assert conv_lengths.one_layer_second_moment(sq, win, [1, 1]) >= 1 - 1e-12


def test_depth_sweep_is_the_chapters_paper_scale_loop():
    inits = {"He": (he(), 1.0), "LeCun": (lecun(), 0.5)}
    depths = [2, 3]

    def channels(d):
        return [max(1, d // 2)] * d

    out = conv_lengths.depth_sweep(IMAGE, inits, depths, channels, n_nets=7,
                                   gen=generator(4))
    gen = generator(4)
    for i, (init, kappa) in enumerate(inits.values()):
        for k, d in enumerate(depths):
            sq, win = convnets.conv_relu_lengths(IMAGE, channels(d), init, n_nets=7, gen=gen)
            log_len = torch.log(sq[-1] / sq[0] * 3 / channels(d)[-1]).cpu().numpy()
            fac = conv_lengths.one_layer_factors(sq, win, [3] + channels(d), kappa=kappa)
            assert np.array_equal(out["log_length"][i, k], log_len)
            assert np.array_equal(out["factor"][i, k], fac.cpu().numpy())


def test_bad_input():
    sq, win = _run([2, 2])
    with pytest.raises(ValueError, match="sq"):
        conv_lengths.length_ratio(sq, [3, 2])
    with pytest.raises(ValueError, match="channels"):
        conv_lengths.length_ratio(sq, [])
    with pytest.raises(ValueError, match="survived"):
        conv_lengths.one_layer_second_moment(torch.zeros(2, 3, dtype=torch.float64),
                                             torch.zeros(2, 3, dtype=torch.float64), [1, 1])
    with pytest.raises(TypeError, match="inits"):
        conv_lengths.depth_sweep(IMAGE, [he()], [2], lambda d: [1] * d, n_nets=2,
                                 gen=generator(0))
    with pytest.raises(ValueError, match="n_nets"):
        conv_lengths.depth_sweep(IMAGE, {"He": (he(), 1.0)}, [2], lambda d: [1] * d,
                                 n_nets=0, gen=generator(0))
