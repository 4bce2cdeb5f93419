"""Tests for eit.models.repeated_batch: BN networks on batches with exact repeated samples."""

from __future__ import annotations

import pytest
import torch
from scipy import stats

from eit.core.device import DTYPE, device
from eit.core.seeds import generator
from eit.models import batchnorm as bnm
from eit.models.repeated_batch import (
    compact_batch,
    expand_batch,
    first_layer_grad_lognorm_repeated,
)
from eit.sample.laws import haar_orthogonal


def test_bn_of_the_full_batch_is_the_compact_one_expanded():
    gen = generator(3)
    x = torch.randn(5, 3, generator=torch.Generator().manual_seed(0), dtype=DTYPE).to(device())
    copies = [2, 1, 3]
    full, y = expand_batch(x, copies), compact_batch(x, copies)
    m = torch.tensor(copies, dtype=DTYPE, device=x.device)
    for _ in range(4):  # X_l = Y_l diag(m)^{-1/2} E, layer after layer
        w = haar_orthogonal(1, 5, 5, gen=gen)[0]
        full, y = bnm.bn(w @ full), bnm.bn(w @ y)
        assert torch.allclose(full, expand_batch(y / m.sqrt(), copies), atol=1e-12)


def test_same_law_as_the_full_batch_at_small_depth():
    # at depth 2 the copies of the full batch stay copies to rounding, so both compute the
    # same network; the compact one must have the same law (two-sample KS test)
    x = torch.randn(4, 2, generator=torch.Generator().manual_seed(1), dtype=DTYPE)
    copies = [2, 2]
    full = bnm.first_layer_grad_lognorm(expand_batch(x, copies), [2], n_nets=3000,
                                        gen=generator(4))[0]
    rep = first_layer_grad_lognorm_repeated(x, copies, [2], n_nets=3000,
                                            gen=generator(5))[0]
    assert stats.ks_2samp(full.cpu().numpy(), rep.cpu().numpy()).pvalue > 1e-3


def test_no_repetition_is_the_plain_network():
    x = torch.eye(3, dtype=DTYPE) + 0.2
    a = first_layer_grad_lognorm_repeated(x, [1, 1, 1], [1, 2], n_nets=4, gen=generator(2))
    b = bnm.first_layer_grad_lognorm(x, [1, 2], n_nets=4, gen=generator(2))
    assert a.shape == (2, 4) and torch.equal(a, b)    # (len(depths), n_nets)


@pytest.mark.parametrize("copies", [[], [1], [1, 0], [1, 2, 3], "ab"])
def test_bad_copies_are_named(copies):
    with pytest.raises(ValueError, match="copies"):
        compact_batch(torch.ones(3, 2, dtype=DTYPE), copies)
