"""Initializers: shapes, variances, Haar orthogonality and invariance, errors naming arguments."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sst

from eit.core.seeds import generator
from eit.sample import laws as I

dims = st.integers(min_value=1, max_value=12)


@settings(max_examples=25, deadline=None)
@given(n_nets=st.integers(1, 4), fan_out=dims, fan_in=dims, seed=st.integers(0, 2**31))
def test_haar_samples_are_semi_orthogonal(n_nets, fan_out, fan_in, seed):
    q = I.haar_orthogonal(n_nets, fan_out, fan_in, gen=generator(seed))
    assert q.shape == (n_nets, fan_out, fan_in)
    gram = q @ q.transpose(-2, -1) if fan_out <= fan_in else q.transpose(-2, -1) @ q
    eye = torch.eye(min(fan_out, fan_in), dtype=q.dtype, device=q.device)
    assert torch.allclose(gram, eye, atol=1e-10)


def test_haar_is_invariant_under_a_fixed_rotation():
    """Q and O Q have the same law: compare the law of one entry (KS test) and of the trace."""
    d, n = 6, 20000
    o = I.haar_orthogonal(1, d, d, gen=generator(1))[0]
    q = I.haar_orthogonal(n, d, d, gen=generator(2))
    rotated = o @ q
    for stat in (lambda m: m[:, 0, 0], lambda m: torch.diagonal(m, dim1=-2, dim2=-1).sum(-1)):
        assert sst.ks_2samp(stat(q).cpu().numpy(), stat(rotated).cpu().numpy()).pvalue > 1e-3
    # and the entries have the Haar second moment 1/d
    assert abs(q[:, 2, 3].square().mean().item() - 1 / d) < 4 * math.sqrt(2 / d**2 / n) * 2


def test_haar_is_not_the_unsigned_qr():
    """Without the sign correction, diag(R) > 0 biases the diagonal; with it E[Q_11] = 0."""
    q = I.haar_orthogonal(20000, 3, 3, gen=generator(3))
    assert abs(q[:, 0, 0].mean().item()) < 4 * math.sqrt(1 / 3 / 20000)


@pytest.mark.parametrize("sampler", [I.gaussian, I.uniform, I.centered_exponential])
@pytest.mark.parametrize("variance", [0.01, 2.0])
def test_sample_variance_matches_requested(sampler, variance):
    w = sampler(50, 40, 30, variance, gen=generator(4)).flatten()
    n = w.numel()
    se = variance * math.sqrt(2 / n) * 3  # generous bound for kurtosis up to 9
    assert abs(w.var().item() - variance) < 4 * se
    assert abs(w.mean().item()) < 4 * math.sqrt(variance / n)


def test_truncated_normal_variance_and_support():
    std, bound = 0.7, 2.0
    w = I.truncated_normal(100, 50, 40, std, gen=generator(5), bound=bound).flatten()
    assert w.abs().max().item() <= bound * std
    target = I.truncated_normal_variance(std, bound)
    assert abs(target / std**2 - 0.7737413) < 1e-6  # the known factor at two std
    assert abs(w.var().item() - target) < 4 * target * math.sqrt(2 / w.numel()) * 2


def test_sphere_rows_have_unit_norm():
    w = I.sphere_rows(3, 7, 5, gen=generator(6), radius=2.0)
    assert torch.allclose(w.norm(dim=-1), torch.full((3, 7), 2.0, dtype=w.dtype, device=w.device))


def test_named_schemes_variances():
    assert I.scheme_variance("he", 10, 40) == 0.2
    assert I.scheme_variance("he", 10, 40, "fan_out") == 0.05
    assert I.scheme_variance("lecun", 10, 40) == 0.1
    assert I.scheme_variance("glorot", 10, 40) == 2 / 50
    w = I.he("fan_out")(200, 100, 50, generator(7))
    assert abs(w.var().item() - 0.02) < 0.02 * 0.02


def test_same_seed_same_weights():
    a = I.gaussian(2, 3, 4, 1.0, gen=generator(8))
    b = I.gaussian(2, 3, 4, 1.0, gen=generator(8))
    assert torch.equal(a, b)


@pytest.mark.parametrize(("call", "name"), [
    (lambda g: I.gaussian(0, 3, 3, 1.0, gen=g), "n_nets"),
    (lambda g: I.gaussian(2, -1, 3, 1.0, gen=g), "fan_out"),
    (lambda g: I.gaussian(2, 3, 2.5, 1.0, gen=g), "fan_in"),
    (lambda g: I.gaussian(2, 3, 3, -1.0, gen=g), "variance"),
    (lambda g: I.uniform(2, 3, 3, float("nan"), gen=g), "variance"),
    (lambda g: I.truncated_normal(2, 3, 3, 1.0, gen=g, bound=0), "bound"),
    (lambda g: I.haar_orthogonal(2, 3, 3, gen=g, gain=0), "gain"),
    (lambda g: I.sphere_rows(2, 3, 3, gen=g, radius=-2), "radius"),
    (lambda g: I.named("kaiming"), "scheme"),
    (lambda g: I.named("he", mode="fan_sideways"), "mode"),
    (lambda g: I.named("he", distribution="cauchy"), "distribution"),
    (lambda g: I.scheme_variance("glorot", 2, 3, "fan_in"), "mode"),
])
def test_bad_arguments_are_named(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call(generator(0))
