"""Stacked weight-normalized networks (eit.models.wn_stacked): the same maps, batched."""

from __future__ import annotations

import pytest
import torch

from eit.core.device import DTYPE, device
from eit.core.seeds import generator
from eit.models.wn_init import wn_mlp_model, wn_resnet_model
from eit.models.wn_stacked import stack


@pytest.mark.parametrize("scheme", ["proposed", "pytorch", "data_dependent", "hanin"])
def test_stacked_resnets_reproduce_each_network(scheme):
    x = torch.rand(7, 6, dtype=DTYPE, generator=torch.Generator().manual_seed(0)).to(device())
    nets = [wn_resnet_model(scheme, d_in=6, width=5, d_out=3, blocks=3, gen=generator(s),
                            data=x) for s in range(3)]
    batched = stack(nets)
    out = batched(x)
    for s, net in enumerate(nets):
        assert torch.allclose(out[s], net(x).detach(), atol=1e-12)
    assert len(batched.features(x)) == 4


def test_stacked_mlps_gradients_are_per_network():
    x = torch.rand(4, 3, dtype=DTYPE, generator=torch.Generator().manual_seed(1)).to(device())
    y = torch.tensor([0, 1, 1, 0], device=device())
    nets = [wn_mlp_model("proposed", d_in=3, widths=[4, 4], d_out=2, gen=generator(s))
            for s in range(2)]
    batched = stack(nets)
    logits = batched(x)
    loss = sum(torch.nn.functional.cross_entropy(logits[s], y) for s in range(2))
    grads = torch.autograd.grad(loss, batched.parameters())
    ref = torch.autograd.grad(torch.nn.functional.cross_entropy(nets[1](x), y),
                              nets[1].parameters())
    for g, r in zip(grads, ref, strict=True):
        assert torch.allclose(g[1], r, atol=1e-12)


def test_mixed_or_empty_stacks_are_refused():
    with pytest.raises(ValueError, match="empty"):
        stack([])
    mlp = wn_mlp_model("proposed", d_in=3, widths=[4], d_out=2, gen=generator(0))
    deeper = wn_mlp_model("proposed", d_in=3, widths=[4, 4], d_out=2, gen=generator(0))
    with pytest.raises(ValueError, match="depth"):
        stack([mlp, deeper])
    with pytest.raises(TypeError, match="dtype"):
        stack([mlp], dtype=torch.int64)


def test_a_single_precision_stack_keeps_the_map():
    nets = [wn_mlp_model("proposed", d_in=3, widths=[4], d_out=2, gen=generator(s))
            for s in range(2)]
    x = torch.ones(5, 3, dtype=DTYPE, device=device())
    batched = stack(nets, dtype=torch.float32)
    assert all(p.dtype == torch.float32 for p in batched.parameters())
    assert torch.allclose(batched(x.float())[1].double(), nets[1](x), atol=1e-5)
