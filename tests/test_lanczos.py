"""Batched Lanczos for the Hessian's eigenvalue of largest magnitude (eit.train.lanczos)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from eit.core.device import DTYPE
from eit.core.seeds import generator
from eit.train.curvature import hessian_spectral_norm
from eit.train.lanczos import hessian_operator, lanczos_extreme


def test_known_spectra_with_either_sign():
    g = torch.Generator().manual_seed(0)
    mats = []
    for sign in (1.0, -1.0):
        q, _ = torch.linalg.qr(torch.randn(40, 40, dtype=DTYPE, generator=g))
        eig = torch.linspace(0.1, 1.0, 40, dtype=DTYPE)
        eig[-1] = 3.0 * sign
        mats.append(q @ torch.diag(eig) @ q.T)
    a = torch.stack(mats)
    out = lanczos_extreme(lambda x: torch.einsum("bij,bj->bi", a, x), 2, 40, gen=generator(1),
                          rtol=1e-8, device=a.device)
    assert np.allclose(out.eigenvalue, [3.0, -3.0], rtol=1e-6) and out.converged.all()
    assert (out.steps < 40).all()


def test_hessian_operator_matches_power_iteration_per_network():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 5, 3, dtype=DTYPE, generator=g)
    target = torch.randn(2, 5, dtype=DTYPE, generator=g)

    def losses(w):
        return ((torch.tanh(torch.einsum("snd,sd->sn", x, w)) - target) ** 2).sum(1)

    w = torch.randn(2, 3, dtype=DTYPE, generator=g).requires_grad_(True)
    op = hessian_operator(losses(w).sum(), [w])
    out = lanczos_extreme(op, 2, 3, gen=generator(2), rtol=1e-10, device=w.device)
    for s in range(2):
        ws = w[s].detach().clone().requires_grad_(True)
        ref = hessian_spectral_norm(
            lambda ws=ws, s=s: ((torch.tanh(x[s].detach() @ ws) - target[s]) ** 2).sum(),
            [ws], gen=generator(3), max_iter=2000, rtol=1e-12)
        assert np.isclose(out.value[s], ref.value, rtol=1e-6)


@pytest.mark.parametrize(("kw", "name"), [({"batch": 0}, "batch"), ({"max_steps": 0},
                                                                      "max_steps"),
                                          ({"rtol": -1.0}, "rtol")])
def test_bad_arguments_are_named(kw, name):
    args = {"batch": 1, "dim": 2, "gen": generator(0), **kw}
    with pytest.raises(ValueError, match=name):
        lanczos_extreme(lambda x: x, **args)


# -- issue 25: a non-symmetric operator is refused, never given an eigenvalue ----------------------
def test_a_non_symmetric_operator_is_refused():
    nilpotent = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]], dtype=DTYPE)
    with pytest.raises(ValueError, match="operator is not symmetric"):
        lanczos_extreme(lambda x: x @ nilpotent.T, 2, 3, gen=generator(0),
                        device=nilpotent.device)
    g = torch.Generator().manual_seed(1)
    m = torch.randn(3, 30, 30, dtype=DTYPE, generator=g)
    a = m + m.transpose(1, 2)
    a[2] = m[2]                                              # one row of the batch only
    with pytest.raises(ValueError, match="row 2"):
        lanczos_extreme(lambda x: torch.einsum("bij,bj->bi", a, x), 3, 30, gen=generator(0),
                        device=a.device, max_steps=30, rtol=1e-12)


def test_symmetric_operators_in_single_precision_pass_the_check():
    g = torch.Generator().manual_seed(2)
    m = torch.randn(2, 60, 60, dtype=torch.float32, generator=g)
    a = m + m.transpose(1, 2)
    out = lanczos_extreme(lambda x: torch.einsum("bij,bj->bi", a, x), 2, 60, gen=generator(0),
                          device=a.device, dtype=torch.float32, max_steps=60, rtol=1e-4)
    ref = torch.linalg.eigvalsh(a.double()).abs().amax(1).numpy()
    assert np.allclose(out.value, ref, rtol=1e-3)
