"""Tests for eit.models.bn_chain: the linear BN chain's gaps, BN Jacobians and hitting times."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from eit.core.device import DTYPE, randn
from eit.core.seeds import generator
from eit.models import bn_chain as bc
from eit.sample.laws import haar_orthogonal


def _gap_eig(x: torch.Tensor) -> torch.Tensor:
    lam = torch.linalg.eigvalsh(x.transpose(-2, -1) @ x)
    return torch.log(lam.mean(-1)) - torch.log(lam).mean(-1)


@given(st.integers(0, 10_000), st.integers(2, 6))
@settings(max_examples=25, deadline=None)
def test_gap_from_the_determinant_matches_the_eigenvalue_form(seed, d):
    x = randn(3, d, d, gen=generator(seed))
    assert torch.allclose(bc.isometry_gap_det(x), _gap_eig(x), rtol=1e-9, atol=1e-12)


def test_gap_is_zero_on_orthogonal_and_infinite_on_singular_batches():
    q = haar_orthogonal(2, 4, 4, gen=generator(1))
    assert float(bc.isometry_gap_det(q).abs().max()) < 1e-13
    x = randn(3, 3, gen=generator(2))
    # det = 0 exactly: a zero row. (An exact repeat x[2] = x[1] is singular too, but LU's
    # rounding decides whether its last pivot is 0 or ~1e-18: one LAPACK kernel gave a gap
    # of 27.7, so the test would be decided by rounding.)
    x[2] = 0
    assert math.isinf(float(bc.isometry_gap_det(x)))


def test_bn_jacobian_lognorm_is_the_operator_norm_of_the_jacobian():
    gen = generator(3)
    for d in (2, 3, 5):
        h = randn(d, d, gen=gen)
        jac = torch.autograd.functional.jacobian(lambda z: bc.bn_rows(z)[0], h)
        op = torch.linalg.matrix_norm(jac.reshape(d * d, d * d), ord=2)
        assert abs(float(torch.log(op) - bc.bn_jacobian_lognorm(h))) < 1e-10


# ------------------------------------------- the hand-written loops the engine replaced

def _run_chain_reference(x0, depth, n_nets, gen, weights="orthogonal"):
    """The former loop of bc.run_chain: X_{l+1} = BN(W_l X_l), one layer at a time."""
    x = x0.expand(n_nets, *x0.shape[-2:]) if x0.ndim == 2 else x0
    gaps, jac = [bc.isometry_gap_det(x)], []
    for _ in range(depth):
        x, norms = bc.bn_rows(bc.square_weights(weights, n_nets, x.shape[-1], gen=gen) @ x)
        jac.append(-torch.log(norms.amin(dim=-1)))
        gaps.append(bc.isometry_gap_det(x))
    return torch.stack(gaps), torch.stack(jac)        # (depth + 1, n_nets), (depth, n_nets)


def _grad_op_reference(x0, depths, n_nets, gen):
    """The former hand-written backward pass of bc.first_layer_grad_op_lognorm."""
    d = x0.shape[-1]
    ws, xs, norms = [], [x0.expand(n_nets, d, d)], []
    for _ in range(max(depths)):
        ws.append(haar_orthogonal(n_nets, d, d, gen=gen))
        y, r = bc.bn_rows(ws[-1] @ xs[-1])
        xs.append(y)
        norms.append(r)
    readout = randn(n_nets, d, d, gen=gen)
    readout = readout / readout.flatten(1).norm(dim=1).view(-1, 1, 1)
    out = torch.empty(len(depths), n_nets, dtype=DTYPE, device=x0.device)
    for row, depth in enumerate(depths):
        g, log_scale = readout, torch.zeros(n_nets, dtype=DTYPE, device=x0.device)
        for ell in range(depth - 1, -1, -1):
            y = xs[ell + 1]
            gh = (g - y * (g * y).sum(dim=-1, keepdim=True)) / norms[ell].unsqueeze(-1)
            if ell == 0:
                grad_w = gh @ xs[0].transpose(-2, -1)
                out[row] = log_scale + torch.log(torch.linalg.matrix_norm(grad_w, ord=2))
                break
            g = ws[ell].transpose(-2, -1) @ gh
            scale = g.flatten(1).norm(dim=1)
            log_scale = log_scale + torch.log(scale)
            g = g / scale.view(-1, 1, 1)
    return out


@pytest.mark.parametrize("per_network", [False, True])
def test_chain_on_the_engine_is_the_former_loop_on_the_same_weights(per_network):
    d, n_nets = 4, 6
    x0 = randn(n_nets, d, d, gen=generator(13)) if per_network else \
        3.0 * randn(d, d, gen=generator(13))                 # not a BN output: used as given
    chain = bc.run_chain(x0, 12, n_nets=n_nets, gen=generator(14))
    gaps, jac = _run_chain_reference(x0, 12, n_nets, generator(14))
    assert torch.allclose(chain.gaps, gaps, rtol=1e-10, atol=1e-13)
    assert torch.allclose(chain.jac, jac, rtol=1e-10, atol=1e-13)
    assert chain.gaps.shape == (13, n_nets) and chain.jac.shape == (12, n_nets)
    assert torch.allclose(chain.gaps[0], bc.isometry_gap_det(x0).expand(n_nets),
                          rtol=1e-12, atol=1e-14)


def test_gaussian_chain_on_the_engine_is_the_former_loop_on_the_same_weights():
    x0 = bc.with_isometry_gap(3, [0.5])[0]
    chain = bc.run_chain(x0, 4, n_nets=5, gen=generator(15), weights="gaussian")
    gaps, jac = _run_chain_reference(x0, 4, 5, generator(15), "gaussian")
    assert torch.allclose(chain.gaps, gaps, rtol=1e-8)      # near-singular draws: det is
    assert torch.allclose(chain.jac, jac, rtol=1e-10, atol=1e-13)   # ill-conditioned


def test_first_layer_op_gradient_on_the_engine_is_the_former_backward():
    x0 = bc.with_isometry_gap(4, [1.0])[0]
    got = bc.first_layer_grad_op_lognorm(x0, [1, 2, 9], n_nets=5, gen=generator(16))
    want = _grad_op_reference(x0, [1, 2, 9], 5, generator(16))
    assert got.shape == (3, 5) and torch.allclose(got, want, rtol=1e-10, atol=1e-12)


def test_depth_one_closed_forms():
    """One layer: phi(BN(W X)) and -log min_i ||(W X)_i.|| from the weight alone."""
    x0 = randn(3, 3, gen=generator(17))
    chain = bc.run_chain(x0, 1, n_nets=4, gen=generator(18))
    w = haar_orthogonal(4, 3, 3, gen=generator(18))          # the engine's draw
    assert torch.allclose(chain.jac[0], bc.bn_jacobian_lognorm(w @ x0), rtol=1e-12)
    assert torch.allclose(chain.gaps[1], bc.isometry_gap_det(bc.bn_rows(w @ x0)[0]),
                          rtol=1e-10, atol=1e-14)


def test_batch_of_state_recovers_the_batch_up_to_one_factor():
    x = randn(2, 5, 3, gen=generator(19))
    r = x.norm(dim=-1)
    got = bc.batch_of_state(x / r.unsqueeze(-1), r.log())
    assert torch.allclose(got * r.amax(dim=1).view(-1, 1, 1), x, rtol=1e-13)
    zero = bc.batch_of_state(torch.zeros(1, 2, 3, dtype=DTYPE),
                             torch.full((1, 2), -math.inf, dtype=DTYPE))
    assert torch.equal(zero, torch.zeros(1, 2, 3, dtype=DTYPE))


def test_chain_gaps_never_increase_and_jacobian_terms_are_non_negative():
    x0 = bc.bn_rows(randn(4, 4, gen=generator(4)))[0]
    chain = bc.run_chain(x0, 30, n_nets=20, gen=generator(5))
    assert chain.depth == 30
    assert bool((chain.gaps[1:] <= chain.gaps[:-1] * (1 + 1e-9) + 1e-14).all())
    assert bool((chain.jac >= -1e-12).all())


def test_hitting_time_and_tail_sums_by_hand():
    gaps = torch.tensor([[3.0, 2.0, 0.5, 0.1], [0.2, 0.1, 0.05, 0.01]], dtype=DTYPE).T
    s = bc.hitting_time(gaps, 1.0)                    # gaps: (layers, networks)
    assert s.tolist() == [2, 0]
    values = torch.arange(8, dtype=DTYPE).view(2, 4).T        # network i, layer l: 4 i + l
    sums = bc.tail_sums(values, s, [1, 3])            # (ends, networks)
    assert sums.tolist() == [[0.0, 5.0], [3.0, 5.0 + 6.0 + 7.0]]
    with pytest.raises(ValueError, match="never reach"):
        bc.hitting_time(gaps, 0.001)
    with pytest.raises(ValueError, match="ends"):
        bc.tail_sums(values, s, [4])


def test_batches_with_a_prescribed_gap_are_bn_outputs():
    targets = [0.01, 0.3, 2.0]
    x = bc.with_isometry_gap(5, targets, gen=generator(6))
    assert torch.allclose(bc.isometry_gap_det(x),
                          torch.tensor(targets, dtype=DTYPE, device=x.device), rtol=1e-9)
    assert torch.allclose(x.norm(dim=-1), torch.ones(3, 5, dtype=DTYPE, device=x.device))


def test_one_step_never_increases_the_gap():
    x = bc.with_isometry_gap(4, [0.05, 1.0], gen=generator(7))
    dec = bc.one_step_decrease(x, 50, gen=generator(8))
    assert dec.shape == (2, 50) and float(dec.min()) > -1e-12


def test_first_layer_gradient_matches_autograd():
    d, depth, n_nets = 3, 4, 2
    x0 = bc.bn_rows(randn(d, d, gen=generator(9)))[0]
    got = bc.first_layer_grad_op_lognorm(x0, [depth], n_nets=n_nets, gen=generator(10))
    gen = generator(10)                              # the same draws, in the same order
    ws = [haar_orthogonal(n_nets, d, d, gen=gen) for _ in range(depth)]
    r = randn(n_nets, d, d, gen=gen)
    r = r / r.flatten(1).norm(dim=1).view(-1, 1, 1)
    w0 = ws[0].clone().requires_grad_(True)
    x = bc.bn_rows(w0 @ x0)[0]
    for w in ws[1:]:
        x = bc.bn_rows(w @ x)[0]
    (g,) = torch.autograd.grad((r * x).sum(), w0)
    want = torch.log(torch.linalg.matrix_norm(g, ord=2))
    assert got.shape == (1, n_nets)
    assert torch.allclose(got[0], want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(("call", "name"), [
    (lambda: bc.isometry_gap_det(torch.ones(2, 3, dtype=DTYPE)), "x"),
    (lambda: bc.run_chain(torch.eye(2, dtype=DTYPE), 0, n_nets=1, gen=generator(0)), "depth"),
    (lambda: bc.run_chain(torch.eye(2, dtype=DTYPE), 2, n_nets=1, gen=generator(0),
                          weights="uniform"), "weights"),
    (lambda: bc.run_chain(torch.ones(2, 3, dtype=DTYPE), 2, n_nets=1, gen=generator(0)), "x0"),
    (lambda: bc.run_chain(torch.eye(2, dtype=DTYPE), 2, n_nets=0, gen=generator(0)), "n_nets"),
    (lambda: bc.first_layer_grad_op_lognorm(torch.eye(2, dtype=DTYPE), [0], n_nets=1,
                                            gen=generator(0)), "depths"),
    (lambda: bc.first_layer_grad_op_lognorm(torch.eye(2, dtype=DTYPE), [1], n_nets=1,
                                            gen=3), "gen"),
    (lambda: bc.with_isometry_gap(1, [0.1], gen=generator(0)), "d"),
    (lambda: bc.with_isometry_gap(3, [-0.1], gen=generator(0)), "targets"),
    (lambda: bc.hitting_time(torch.ones(3, dtype=DTYPE), 1.0), "gaps"),
    (lambda: bc.bn_rows(torch.zeros(2, 2, dtype=DTYPE)), "zero row"),
])
def test_bad_arguments_are_named(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()


def test_square_weights_are_haar_or_gaussian_of_variance_one_over_d():
    q = bc.square_weights("orthogonal", 3, 4, gen=generator(11))
    eye = torch.eye(4, dtype=DTYPE, device=q.device).expand(3, 4, 4)
    assert q.shape == (3, 4, 4) and torch.allclose(q @ q.transpose(-2, -1), eye, atol=1e-12)
    assert torch.equal(q, haar_orthogonal(3, 4, 4, gen=generator(11)))
    g = bc.square_weights("gaussian", 400, 5, gen=generator(12))
    assert abs(float(g.var()) * 5 - 1.0) < 0.05
    with pytest.raises(ValueError, match="weights"):
        bc.square_weights("uniform", 1, 2, gen=generator(0))
