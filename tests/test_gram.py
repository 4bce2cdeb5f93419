"""Exact Gram-chain and norm-chain samplers against the explicit-weights path (KS tests)."""

import pytest
import torch
from scipy import stats as sst

from eit.core.seeds import generator
from eit.exact import chains as gram
from eit.sample import laws as I
from eit.sample import mlps as P

WIDTHS = [48, 32, 64, 40]
VARS = [2 / 48, 1.5 / 32, 2 / 64, 2.5 / 40]


def explicit(x, n_nets, seed, delta=None):
    rule = dict(zip(WIDTHS, VARS))  # widths are distinct, so fan_out names the layer
    init = I.gaussian_variance(lambda fan_in, fan_out: rule[fan_out])
    return P.relu_mlp(x, WIDTHS, init, n_nets=n_nets, gen=generator(seed), delta=delta)


def test_norm_chain_matches_explicit_forward_and_backward():
    x = torch.zeros(1, 24, dtype=torch.float64)
    x[0, 3] = 1.0
    ex = explicit(x, 6000, 1, delta="random")
    ch = gram.norm_chain(24, WIDTHS, VARS, n_nets=6000, gen=generator(2), delta="random")
    for l in range(1, len(WIDTHS) + 1):
        assert sst.ks_2samp(ex.log_h[l, :, 0].cpu(), ch.log_h[l, :, 0].cpu()).pvalue > 1e-3, l
    for l in range(len(WIDTHS)):
        for a, b in ((ex.log_delta, ch.log_delta), (ex.log_grad_w, ch.log_grad_w)):
            assert sst.ks_2samp(a[l, :, 0].cpu(), b[l, :, 0].cpu()).pvalue > 1e-3, l


def test_gram_chain_matches_explicit_forward():
    x = torch.randn(4, 24, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    ex = explicit(x, 4000, 4)
    gc = gram.gram_chain(x, WIDTHS, VARS, n_nets=4000, gen=generator(5))
    assert torch.allclose(gc.log_h[0], ex.log_h[0])
    for k in range(4):
        assert sst.ks_2samp(ex.log_h[-1, :, k].cpu(), gc.log_h[-1, :, k].cpu()).pvalue > 1e-3, k
    # a joint statistic of the inputs (they share the weights): the sum of their log-norms
    assert sst.ks_2samp(ex.log_h[-1].sum(-1).cpu(), gc.log_h[-1].sum(-1).cpu()).pvalue > 1e-3


def test_norm_chain_is_finite_at_depth_1000_in_any_regime():
    for s2 in (0.5 / 50, 2 / 50, 8 / 50):
        ch = gram.norm_chain(10, [50] * 1000, [s2] * 1000, n_nets=20, gen=generator(6),
                             delta="random")
        assert torch.isfinite(ch.log_h).all() and torch.isfinite(ch.log_delta).all()


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"widths": [4, -1]}, r"widths\[1\]"),
    ({"variances": [1.0]}, "variances"),
    ({"variances": [1.0, 0.0]}, r"variances\[1\]"),
    ({"n_nets": 0}, "n_nets"),
    ({"delta": "loss"}, "delta"),
])
def test_norm_chain_bad_arguments(kwargs, name):
    args = {"n0": 3, "widths": [4, 4], "variances": [0.5, 0.5], "n_nets": 2,
            "gen": generator(0), **kwargs}
    n0, widths, variances = args.pop("n0"), args.pop("widths"), args.pop("variances")
    with pytest.raises((ValueError, TypeError), match=name):
        gram.norm_chain(n0, widths, variances, **args)


def test_gram_chain_bad_arguments():
    with pytest.raises(ValueError, match="x"):
        gram.gram_chain(torch.zeros(3, dtype=torch.float64), [4], [0.5], n_nets=2,
                        gen=generator(0))
    with pytest.raises(ValueError, match="variances"):
        gram.gram_chain(torch.ones(2, 3, dtype=torch.float64), [4], [], n_nets=2,
                        gen=generator(0))


def test_gram_chain_with_more_inputs_than_dimensions():
    """A singular input Gram matrix (N > n_0) takes the eigendecomposition root."""
    x = torch.randn(6, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    ex = explicit(x, 3000, 8)
    gc = gram.gram_chain(x, WIDTHS, VARS, n_nets=3000, gen=generator(9))
    for k in range(6):
        assert sst.ks_2samp(ex.log_h[-1, :, k].cpu(), gc.log_h[-1, :, k].cpu()).pvalue > 1e-3, k
