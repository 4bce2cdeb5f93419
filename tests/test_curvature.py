"""Tests for eit.train.curvature: Hessian-vector products, spectral norm by power iteration."""

import pytest
import torch

from eit.core.seeds import generator
from eit.train import curvature as C


def _quadratic(matrix):
    x = torch.zeros(matrix.shape[0], dtype=torch.float64, requires_grad=True)
    return x, (lambda: 0.5 * x @ matrix @ x + x.sum())


def test_hvp_of_quadratic_is_matrix_product():
    a = torch.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=torch.float64)
    x, loss_fn = _quadratic(a)
    vec = [torch.tensor([1.0, -1.0], dtype=torch.float64)]
    hv = C.hessian_vector_product(loss_fn(), [x], vec)
    assert torch.allclose(hv[0], a @ vec[0])


@pytest.mark.parametrize("eigs", [[5.0, 1.0, -2.0, 0.5], [1.0, -7.0, 3.0]])
def test_spectral_norm_of_known_spectrum(eigs):
    gen = torch.Generator().manual_seed(0)
    q, _ = torch.linalg.qr(torch.randn(len(eigs), len(eigs), generator=gen, dtype=torch.float64))
    a = q @ torch.diag(torch.tensor(eigs, dtype=torch.float64)) @ q.T
    x, loss_fn = _quadratic(a)
    out = C.hessian_spectral_norm(loss_fn, [x], gen=generator(1), max_iter=500, rtol=1e-10)
    assert out.converged
    assert out.value == pytest.approx(max(abs(e) for e in eigs), rel=1e-8)
    assert out.eigenvalue == pytest.approx(max(eigs, key=abs), rel=1e-8)


def test_spectral_norm_over_several_parameter_tensors():
    a = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([0.5], dtype=torch.float64, requires_grad=True)
    # Hessian of (a1 a2 b)^2 / 2 + 3 a1^2 at this point, compared with the dense Hessian.
    loss_fn = lambda: 0.5 * (a[0] * a[1] * b[0]) ** 2 + 3 * a[0] ** 2  # noqa: E731
    dense = torch.autograd.functional.hessian(
        lambda aa, bb: 0.5 * (aa[0] * aa[1] * bb[0]) ** 2 + 3 * aa[0] ** 2, (a, b))
    h = torch.cat([torch.cat([dense[0][0], dense[0][1]], 1),
                   torch.cat([dense[1][0], dense[1][1]], 1)], 0)
    out = C.hessian_spectral_norm(loss_fn, [a, b], gen=generator(2), max_iter=1000, rtol=1e-12)
    assert out.value == pytest.approx(torch.linalg.eigvalsh(h).abs().max().item(), rel=1e-6)


def test_not_converged_is_reported():
    a = torch.diag(torch.tensor([1.0, 0.999, 0.5], dtype=torch.float64))
    x, loss_fn = _quadratic(a)
    out = C.hessian_spectral_norm(loss_fn, [x], gen=generator(3), max_iter=2, rtol=1e-12)
    assert not out.converged and out.iterations == 2


def test_bad_arguments():
    x, loss_fn = _quadratic(torch.eye(2, dtype=torch.float64))
    with pytest.raises(TypeError, match="loss_fn"):
        C.hessian_spectral_norm(3, [x], gen=generator(0))
    with pytest.raises(ValueError, match="params"):
        C.hessian_spectral_norm(loss_fn, [], gen=generator(0))
    with pytest.raises(ValueError, match="params"):
        C.hessian_spectral_norm(loss_fn, [torch.zeros(2)], gen=generator(0))
    with pytest.raises(ValueError, match="max_iter"):
        C.hessian_spectral_norm(loss_fn, [x], gen=generator(0), max_iter=0)
    with pytest.raises(ValueError, match="rtol"):
        C.hessian_spectral_norm(loss_fn, [x], gen=generator(0), rtol=0.0)
    with pytest.raises(ValueError, match="scalar"):
        C.hessian_spectral_norm(lambda: x * 2, [x], gen=generator(0))


# -- issue 25: a NaN loss never becomes a spectral norm --------------------------------------
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_non_finite_loss_is_an_error(bad):
    x = torch.ones(3, dtype=torch.float64, requires_grad=True)
    with pytest.raises(ValueError, match="loss"):
        C.hessian_spectral_norm(lambda: (x**2).sum() * bad, [x], gen=generator(0))


def test_a_non_finite_hessian_is_an_error():
    x = torch.ones(2, dtype=torch.float64, requires_grad=True)
    # finite loss, infinite curvature: d^2/dx^2 sqrt(x - 1) at x = 1
    with pytest.raises(FloatingPointError, match="loss_fn"):
        C.hessian_spectral_norm(lambda: torch.sqrt((x - 1).abs() + 0.0).sum(), [x],
                                gen=generator(0))
