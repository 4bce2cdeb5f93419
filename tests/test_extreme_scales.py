"""Finite inputs of any scale (issue 25, item 7) and two smaller items of item 8.

Every quantity below is invariant to the input's scale (the ratios) or shifts by exactly
log(scale) (the log-norms of positively homogeneous networks), so the same draws at scale 1
are the reference. Before the fix: log_h = -inf at 1e-170 (the squared norm underflowed), a
FloatingPointError or +inf at 1e300, NaN from one_layer at 1e154 and ratios off by 2.9% at
1e-161 (subnormal squares).
"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import eit.sample
from eit.core.device import device
from eit.core.scaling import SAFE_EXPONENT, rescaled
from eit.core.seeds import generator
from eit.exact.chains import gaussian_relu_mlp, norm_chain
from eit.exact.engine import chi2, log_chi2
from eit.exact.engine import trace as exact_trace
from eit.sample import one_layer, relu_mlp
from eit.sample.laws import he

SCALES = [1e-320, 1e-300, 1e-170, 1e-161, 1e154, 1e200, 1e300]
X = torch.tensor([[0.3, -1.2, 2.0, 0.7], [1.0, 0.5, -0.25, 2.0]], dtype=torch.float64)


def _close(a: torch.Tensor, b: torch.Tensor, tol: float) -> bool:
    """|a - b| <= tol, elementwise (a log-norm near 690 carries rounding of about 1e-13)."""
    return bool(((a - b).abs() <= tol).all())


#: Subnormal inputs (1e-320) keep only 3 or 4 significant digits of their own.
def _tol(scale: float, ordinary: float) -> float:
    return 1e-3 if scale < 1e-307 else ordinary


@pytest.mark.parametrize("scale", SCALES)
def test_relu_mlp_log_norms_shift_by_the_log_of_the_scale(scale):
    x = X.to(device())
    ref = relu_mlp(x, [8, 8], he(), n_nets=3, gen=generator(0), delta="random")
    got = relu_mlp(x * scale, [8, 8], he(), n_nets=3, gen=generator(0), delta="random")
    # x * scale is rounded (subnormal at 1e-320): compare with the log of its own norm
    shift = torch.log((x * scale).abs().amax(-1) / x.abs().amax(-1))
    assert bool(torch.isfinite(got.log_h).all())
    assert _close(got.log_h - shift, ref.log_h, _tol(scale, 1e-12))
    assert _close(got.log_grad_w_ratio, ref.log_grad_w_ratio, _tol(scale, 1e-12))


@pytest.mark.parametrize("scale", SCALES[1:])
def test_exact_engines_shift_by_the_log_of_the_scale(scale):
    x = X[:1].to(device())
    net = gaussian_relu_mlp([8, 8], [0.25, 0.25])
    for method in ("norm", "conditional"):
        ref = exact_trace(net, x, n_nets=3, gen=generator(0), method=method)
        got = exact_trace(net, x * scale, n_nets=3, gen=generator(0), method=method)
        assert bool(torch.isfinite(got.log_h).all()), method
        assert _close(got.log_h - math.log(scale), ref.log_h, 1e-12), method


@pytest.mark.parametrize("scale", SCALES)
def test_one_layer_ratio_is_scale_free(scale):
    u = torch.tensor([[0.3, -1.2, 2.0], [1.0, 2.0, 3.0]], dtype=torch.float64)
    for mask in ("relu", "bernoulli"):
        ref = one_layer(u, 16, n_nets=4, gen=generator(0), mask=mask)
        got = one_layer(u * scale, 16, n_nets=4, gen=generator(0), mask=mask)
        assert bool(torch.isfinite(got).all()), mask
        assert _close(got, ref, _tol(scale, 1e-14)), mask


def test_ordinary_scales_are_left_bit_for_bit():
    """The committed chapters' values: no rescaling within +-2^SAFE_EXPONENT."""
    x = X / 4                                      # largest entries 0.5: exponent 0
    for k in (-SAFE_EXPONENT, SAFE_EXPONENT):
        y, e = rescaled(x * 2.0 ** k, 1)
        assert e.tolist() == [0, 0]
        assert torch.equal(y, x * 2.0 ** k)
    y, e = rescaled(x * 2.0 ** (SAFE_EXPONENT + 1), 1)
    assert e.tolist() == [SAFE_EXPONENT + 1] * 2 and torch.equal(y, x)


@settings(max_examples=60, deadline=None)
@given(st.floats(min_value=-1070, max_value=1020))
def test_rescaled_is_exact_and_keeps_norms_finite(log2_scale):
    x = X * 2.0 ** log2_scale
    if not bool((x != 0).any(-1).all()):
        return                                   # underflowed to 0: nothing to rescale
    y, e = rescaled(x, 1)
    assert bool(torch.isfinite(y.norm(dim=-1)).all()) and bool((y.norm(dim=-1) > 0).all())
    assert torch.equal(torch.ldexp(torch.ldexp(y, (e // 2).double()[:, None]),
                                   (e - e // 2).double()[:, None]), x)


def test_non_finite_vectors_are_left_as_they_are():
    x = torch.tensor([[math.inf, 1.0], [math.nan, 1.0], [0.0, 0.0]], dtype=torch.float64)
    y, e = rescaled(x, 1)
    assert e.tolist() == [0, 0, 0] and torch.equal(y[[0, 2]], x[[0, 2]])


def test_chi2_of_nan_degrees_of_freedom_is_nan_not_zero():
    dof = torch.tensor([math.nan, 0.0, -1.0, 3.0], dtype=torch.float64)
    out = chi2(dof, generator(0))
    assert math.isnan(float(out[0])) and out[1:3].tolist() == [0.0, 0.0] and float(out[3]) > 0
    assert math.isnan(float(log_chi2(dof[:1], generator(0))[0]))


def test_eit_sample_mlp_is_the_function_its_all_lists():
    """``eit.sample.mlp`` was hidden by the submodule of the same name."""
    assert callable(eit.sample.mlp) and eit.sample.mlp.__module__ == "eit.sample.layers"
    assert eit.sample.mlp([4]).widths(3) == (3, 4)


def test_norm_chain_still_starts_at_norm_one():
    t = norm_chain(5, [6, 6], [1 / 3, 1 / 3], n_nets=4, gen=generator(0))
    assert t.log_h[0].eq(0).all()


def _digits():
    from eit.train.sgd import digits
    return digits(seed=0)


@pytest.mark.parametrize("field, value, message", [
    ("x_train", math.nan, "x_train holds NaN"), ("x_test", math.inf, "x_test holds NaN"),
    ("y_train", -1, r"y_train must hold labels in \[0, 10\)"),
    ("y_test", 10, r"y_test must hold labels in \[0, 10\)")])
def test_training_refuses_nan_pixels_and_sentinel_labels(field, value, message):
    """Issue 25 item 8: NaN pixels were reported as a divergence, label -1 reached the loss."""
    import dataclasses

    from eit.models.wn_init import wn_mlp_model
    from eit.models.wn_stacked import stack
    from eit.train.batched import train
    data = _digits()
    bad = getattr(data, field).clone()
    bad.view(-1)[0] = value
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(data, **{field: bad})
    object.__setattr__(data, field, bad)          # changed in place after construction
    nets = stack([wn_mlp_model("proposed", d_in=64, widths=[4], d_out=10, gen=generator(0))])
    with pytest.raises(ValueError, match=message):
        train(nets, data, lr=0.1, epochs=1, batch_size=64, gens=generator(1))


@pytest.mark.parametrize("fraction", [0.0, 1e-5, 0.99999])
def test_a_split_with_an_empty_set_is_refused(fraction):
    from eit.train.sgd import digits
    with pytest.raises(ValueError, match="test_fraction"):
        digits(seed=0, test_fraction=fraction)
