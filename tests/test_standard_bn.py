"""Tests for eit.models.standard_bn: standard BN, the feature gap, plain and residual nets."""

from __future__ import annotations

import math

import pytest
import torch

from eit.core.device import DTYPE, randn
from eit.core.seeds import generator
from eit.models import standard_bn as sbn
from eit.models.bn_chain import square_weights
from eit.sample.laws import gaussian, haar_orthogonal
from eit.sample.layers import Residual


def _layer(x, w, activation, gain, residual):
    """One layer: act(gain * BN(W X)), plus X when residual (the former sbn.layer)."""
    out = activation(gain * sbn.bn_standard(w @ x))
    return x + out if residual else out


# ------------------------------------------- the hand-written loops the engine replaced

def _gaps_reference(x0, depths, n_nets, gen, activation, gain, weights, residual):
    """The former loop of sbn.representation_gaps."""
    x = x0.expand(n_nets, *x0.shape)
    out = torch.empty(len(depths), n_nets, dtype=DTYPE, device=x0.device)
    for ell in range(1, max(depths) + 1):
        x = _layer(x, square_weights(weights, n_nets, x.shape[1], gen=gen), activation, gain,
                   residual)
        for row, depth in enumerate(depths):
            if depth == ell:
                out[row] = sbn.feature_gap(x)
    return out


def _grads_reference(x0, depths, n_nets, gen, activation, gain, weights, residual):
    """The former layer-by-layer autograd backward of sbn.first_layer_grad_lognorms."""
    d, n = x0.shape
    ws, xs = [], [x0.expand(n_nets, d, n)]
    for _ in range(max(depths)):
        ws.append(square_weights(weights, n_nets, d, gen=gen))
        xs.append(_layer(xs[-1], ws[-1], activation, gain, residual))
    r = randn(n_nets, d, n, gen=gen)
    r = r / r.flatten(1).norm(dim=1).view(-1, 1, 1)
    out = torch.empty(len(depths), n_nets, dtype=DTYPE, device=x0.device)
    for row, depth in enumerate(depths):
        g, log_scale = r, torch.zeros(n_nets, dtype=DTYPE, device=x0.device)
        for ell in range(depth - 1, -1, -1):
            first = ell == 0
            xin = xs[ell].detach().requires_grad_(not first)
            w = ws[ell].detach().requires_grad_(first)
            y = _layer(xin, w, activation, gain, residual)
            (g,) = torch.autograd.grad(y, w if first else xin, g)
            norm = g.flatten(1).norm(dim=1)
            log_scale = log_scale + torch.log(norm)
            g = g / norm.view(-1, 1, 1)
        out[row] = log_scale
    return out


CASES = [("orthogonal", False, torch.tanh, 1.0), ("gaussian", True, torch.sin, 1.3),
         ("orthogonal", True, lambda h: h, 0.7), ("gaussian", False, torch.tanh, 0.5)]


@pytest.mark.parametrize(("weights", "residual", "act", "gain"), CASES)
def test_engine_is_the_former_loops_on_the_same_weights(weights, residual, act, gain):
    x0 = randn(4, 6, gen=generator(20))
    kw = dict(activation=act, gain=gain, weights=weights, residual=residual)
    depths = [1, 3, 12]
    gaps = sbn.representation_gaps(x0, depths, n_nets=5, gen=generator(21), **kw)
    want = _gaps_reference(x0, depths, 5, generator(21), act, gain, weights, residual)
    assert gaps.shape == (3, 5) and torch.allclose(gaps, want, rtol=1e-9, atol=1e-12)
    grads = sbn.first_layer_grad_lognorms(x0, depths, n_nets=5, gen=generator(22), **kw)
    want = _grads_reference(x0, depths, 5, generator(22), act, gain, weights, residual)
    assert grads.shape == (3, 5) and torch.allclose(grads, want, rtol=1e-9, atol=1e-12)


def test_the_description_is_the_shaped_network_with_identity_shortcuts():
    plain = sbn.standard_bn_net(5, 3, activation=torch.tanh, gain=0.5)
    res = sbn.standard_bn_net(5, 3, activation=torch.tanh, gain=0.5, residual=True)
    assert plain.depth == res.depth == 3
    assert all(isinstance(e, Residual) and e.scale == 1.0 and e.shortcut is None
               for e in res.layers)
    kinds = [type(leaf).__name__ for leaf in plain.layers[0].leaves()]
    assert kinds == ["Dense", "BatchNorm", "Scale", "Activation"]
    bn = plain.layers[0].leaves()[1]
    assert bn.centered and bn.standard


def test_standard_bn_centres_and_scales_every_feature():
    y = sbn.bn_standard(randn(2, 4, 7, gen=generator(0)))
    assert torch.allclose(y.mean(-1), torch.zeros(2, 4, dtype=DTYPE, device=y.device), atol=1e-12)
    assert torch.allclose(y.square().mean(-1), torch.ones(2, 4, dtype=DTYPE, device=y.device))


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
    r = randn(n_nets, d, n, gen=gen)
    r = r / r.flatten(1).norm(dim=1).view(-1, 1, 1)
    w0 = ws[0].clone().requires_grad_(True)
    x = _layer(x0.expand(n_nets, d, n), w0, torch.tanh, 1.0, residual)
    for w in ws[1:]:
        x = _layer(x, w, torch.tanh, 1.0, residual)
    (g,) = torch.autograd.grad((r * x).sum(), w0)
    assert got.shape == (1, n_nets)
    assert torch.allclose(got[0], torch.log(g.flatten(1).norm(dim=1)), rtol=1e-9)


def test_identity_networks_orthogonalize_their_features():
    x0 = randn(4, 5, gen=generator(6))
    gaps = sbn.representation_gaps(x0, [1, 200], n_nets=3, gen=generator(7),
                                   activation=lambda h: h)
    assert gaps.shape == (2, 3) and bool((gaps[1] < 1e-8).all())


@pytest.mark.parametrize(("call", "name"), [
    (lambda: sbn.representation_gaps(torch.ones(2, 3, dtype=DTYPE), [1], n_nets=1,
                                     gen=generator(0), activation=torch.tanh), "undefined"),
    (lambda: sbn.first_layer_grad_lognorms(randn(2, 3, gen=generator(0)), [1], n_nets=1,
                                           gen=generator(0), activation=3), "activation"),
    (lambda: sbn.representation_gaps(randn(2, 3, gen=generator(0)), [1], n_nets=1,
                                     gen=generator(0), activation=torch.tanh, gain=0), "gain"),
    (lambda: sbn.representation_gaps(randn(2, 3, gen=generator(0)), [1], n_nets=1,
                                     gen=generator(0), activation=torch.tanh,
                                     weights="sparse"), "weights"),
    (lambda: sbn.first_layer_grad_lognorms(randn(2, 3, gen=generator(0)), [1], n_nets=1,
                                           gen=generator(0), activation=torch.tanh,
                                           residual=1), "residual"),
    (lambda: sbn.representation_gaps(randn(2, 3, gen=generator(0)), [0, 2], n_nets=1,
                                     gen=generator(0), activation=torch.tanh), "depths"),
    (lambda: sbn.standard_bn_net(3, 0, activation=torch.tanh), "depth"),
    (lambda: sbn.standard_bn_net(0, 2, activation=torch.tanh), "d"),
    (lambda: sbn.standard_bn_net(3, 2, activation="tanh"), "activation"),
])
def test_bad_arguments_are_named(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()
