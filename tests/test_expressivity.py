"""Tests for eit.models.expressivity (Hardt & Ma 2017, Section 3, Appendix B)."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from eit.core.seeds import generator
from eit.models import expressivity as ex

F64 = torch.float64


def test_unit_sphere_norms():
    x = ex.unit_sphere(50, 7, gen=generator(0))
    assert torch.allclose(x.norm(dim=1), torch.ones(50, dtype=F64, device=x.device))


def test_min_sq_distance():
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], dtype=F64)
    assert ex.min_sq_distance(x) == pytest.approx(0.4)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 1000))
def test_lemma_b1_moves_S_and_fixes_rest(seed):
    g = generator(seed)
    alpha = ex.unit_sphere(40, 30, gen=g)
    S = torch.arange(5, 12)
    target = torch.randn(7, 30, generator=g, device=g.device, dtype=F64)
    rho_p = 0.2
    if not ex.lemma_b1_conditions(alpha, S, rho_p)["needed"]:
        return
    U, V, s = ex.lemma_b1(alpha, S, target, rho_p)
    out = alpha + ex.block(alpha, U, V, s)
    assert torch.allclose(out[S], target, atol=1e-12)
    rest = torch.ones(40, dtype=torch.bool)
    rest[S] = False
    assert torch.equal(out[rest], alpha[rest])


def test_conditions_printed_weaker_than_needed():
    rho_p = 0.1
    phi = 2 * torch.asin(torch.tensor(0.31 / (2 * 1.09**0.5), dtype=F64))
    a = 1.09**0.5 * torch.stack([torch.tensor([1.0, 0.0], dtype=F64),
                                torch.stack([torch.cos(phi), torch.sin(phi)])])
    c = ex.lemma_b1_conditions(a, [0], rho_p)
    assert c["norms"] and c["printed"] and not c["needed"] and not c["corrected"]


def test_build_fits_all_points():
    g = generator(1)
    n, d, r = 300, 100, 7
    x = ex.unit_sphere(n, d, gen=g)
    labels = torch.randint(0, r, (n,), generator=g, device=g.device)
    net = ex.build(x, labels, r, 150, 0.2, gen=g)
    _, y = ex.forward(net, x)
    assert torch.allclose(y, torch.eye(r, dtype=F64, device=y.device)[labels], atol=1e-12)
    assert net.ell == 2
    assert ex.parameter_count(net, d) == 150 * d + 2 * (2 * 150**2 + 150) + r * 150 + r * r + r


def test_skip_map_shapes():
    h = torch.ones(3, 4, dtype=F64)
    assert ex.skip_map(h, 2).shape == (3, 2) and ex.skip_map(h, 6).shape == (3, 6)


def test_k_for():
    assert ex.k_for(100, 1.0) == 47


def test_bad_arguments():
    g = generator(0)
    x = ex.unit_sphere(5, 3, gen=g)
    with pytest.raises(ValueError, match="n"):
        ex.unit_sphere(0, 3, gen=g)
    with pytest.raises(ValueError, match="rho_p"):
        ex.lemma_b1(x, [0], x[:1], 0.7)
    with pytest.raises(ValueError, match="S must"):
        ex.lemma_b1(x, [0, 1], x[:1], 0.1)
    with pytest.raises(ValueError, match="labels"):
        ex.build(x, [0, 1, 2, 3, 9], 3, 4, 0.1, gen=g)
    with pytest.raises(ValueError, match="x needs"):
        ex.min_sq_distance(x[:1])
    with pytest.raises(TypeError, match="net"):
        ex.forward("net", x)
    with pytest.raises(ValueError, match="rho must"):
        ex.k_for(10, 0.0)
    with pytest.raises(ValueError, match="c must"):
        ex.k_for(10, 0.5, c=-1)
    with pytest.raises(ValueError, match="project=False"):
        ex.build(x, [0, 1, 2, 0, 1], 3, 4, 0.1, gen=g, project=False)
    with pytest.raises(TypeError, match="project"):
        ex.build(x, [0, 1, 2, 0, 1], 3, 3, 0.1, gen=g, project="no")


def test_build_records_conditions():
    g = generator(2)
    x = ex.unit_sphere(60, 40, gen=g)
    labels = torch.randint(0, 3, (60,), generator=g, device=g.device)
    net = ex.build(x, labels, 3, 30, 0.2, gen=g)
    assert len(net.conditions) == net.ell + 1
    assert all(set(c) == {"norms", "printed", "corrected", "needed"} for c in net.conditions)


def test_lemma_b1_unmovable_point_gets_zero_column():
    alpha = torch.tensor([[0.5, 0.0], [0.0, 1.0]], dtype=F64)    # ||alpha_1||^2 = 0.25
    U, V, s = ex.lemma_b1(alpha, [0], torch.tensor([[3.0, 3.0]], dtype=F64), 0.1)
    assert torch.equal(V, torch.zeros_like(V))


def test_block_errors_small_where_corrected_hypotheses_hold():
    """Without projection, unit z in R^k: (a) holds exactly; where (b') holds, blocks are exact."""
    g = generator(3)
    k, n, r = 128, 300, 5
    z = ex.unit_sphere(n, k, gen=g)
    labels = torch.randint(0, r, (n,), generator=g, device=g.device)
    net = ex.build(z, labels, r, k, 0.2, gen=g, project=False)
    assert torch.equal(net.A0, torch.eye(k, dtype=F64, device=net.A0.device))
    assert len(net.block_errors) == net.ell + 1
    for c, err in zip(net.conditions, net.block_errors, strict=True):
        if c["norms"] and c["corrected"]:
            assert c["needed"] and err < 1e-12
    _, y = ex.forward(net, z)
    if all(c["norms"] and c["corrected"] for c in net.conditions):
        assert torch.allclose(y, torch.eye(r, dtype=F64, device=y.device)[labels], atol=1e-12)


def test_block_errors_detect_a_moved_outsider():
    """A point outside S close to a point of S is moved by accident: the block's error shows it."""
    g = generator(4)
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.995, 0.0998]], dtype=F64)
    x = x / x.norm(dim=1, keepdim=True)
    net = ex.build(x, [0, 1, 1], 2, 2, 0.2, gen=g, project=False)
    assert not net.conditions[0]["needed"] and net.block_errors[0] > 0.1
