"""Tests for eit.models.standard_bn: standard BN, the feature gap, plain and residual nets."""

from __future__ import annotations

import math

import pytest
import torch

from eit.core.device import DTYPE, randn
from eit.core.seeds import generator
from eit.models import standard_bn as sbn
from eit.sample.laws import gaussian, haar_orthogonal


def test_standard_bn_centres_and_scales_every_feature():
    y = sbn.bn_standard(randn(2, 4, 7, gen=generator(0)))
    assert torch.allclose(y.mean(-1), torch.zeros(2, 4, dtype=DTYPE), atol=1e-12)
    assert torch.allclose(y.square().mean(-1), torch.ones(2, 4, dtype=DTYPE))


def test_feature_gap_is_zero_for_orthogonal_rows_and_scale_invariant():
    q = haar_orthogonal(1, 3, 5, gen=generator(1))[0]
    assert abs(float(sbn.feature_gap(2.5 * q))) < 1e-13
    x = randn(3, 5, gen=generator(2))
    assert math.isclose(float(sbn.feature_gap(x)), float(sbn.feature_gap(7 * x)), rel_tol=1e-10)
    assert math.isinf(float(sbn.feature_gap(randn(4, 3, gen=generator(3)))))   # n < d


@pytest.mark.parametrize(("weights", "residual"), [("orthogonal", False), ("gaussian", True)])
def test_first_layer_gradient_matches_autograd(weights, residual):
    d, n, depth, n_nets = 3, 4, 3, 2
    x0 = randn(d, n, gen=generator(4))
    got = sbn.first_layer_grad_lognorms(x0, [depth], n_nets=n_nets, gen=generator(5),
                                        activation=torch.tanh, weights=weights,
                                        residual=residual)
    gen = generator(5)
    draw = ((lambda: haar_orthogonal(n_nets, d, d, gen=gen)) if weights == "orthogonal"
            else (lambda: gaussian(n_nets, d, d, 1.0 / d, gen=gen)))
    ws = [draw() for _ in range(depth)]
    r = torch.randn(n_nets, d, n, generator=gen, dtype=DTYPE)
    r = r / r.flatten(1).norm(dim=1).view(-1, 1, 1)
    w0 = ws[0].clone().requires_grad_(True)
    x = sbn.layer(x0.expand(n_nets, d, n), w0, torch.tanh, 1.0, residual)
    for w in ws[1:]:
        x = sbn.layer(x, w, torch.tanh, 1.0, residual)
    (g,) = torch.autograd.grad((r * x).sum(), w0)
    assert torch.allclose(got[:, 0], torch.log(g.flatten(1).norm(dim=1)), rtol=1e-9)


def test_identity_networks_orthogonalize_their_features():
    x0 = randn(4, 5, gen=generator(6))
    gaps = sbn.representation_gaps(x0, [1, 200], n_nets=3, gen=generator(7),
                                   activation=lambda h: h)
    assert gaps.shape == (3, 2) and bool((gaps[:, 1] < 1e-8).all())


@pytest.mark.parametrize(("call", "name"), [
    (lambda: sbn.representation_gaps(torch.ones(2, 3, dtype=DTYPE), [1], n_nets=1,
                                     gen=generator(0), activation=torch.tanh), "constant"),
    (lambda: sbn.first_layer_grad_lognorms(randn(2, 3, gen=generator(0)), [1], n_nets=1,
                                           gen=generator(0), activation=3), "activation"),
    (lambda: sbn.representation_gaps(randn(2, 3, gen=generator(0)), [1], n_nets=1,
                                     gen=generator(0), activation=torch.tanh, gain=0), "gain"),
    (lambda: sbn.representation_gaps(randn(2, 3, gen=generator(0)), [1], n_nets=1,
                                     gen=generator(0), activation=torch.tanh,
                                     weights="sparse"), "weights"),
])
def test_bad_arguments_are_named(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()
