"""Tests for eit.sample.heads (softmax cross-entropy loss head)."""

import pytest
import torch

from eit.core.seeds import generator
from eit.sample import heads, relu_mlp
from eit.sample.laws import he


def _head(n_nets=2, width=5, n=4, classes=3, seed=0):
    gen = generator(seed)
    y = heads.random_labels(n, classes, gen=gen)
    return heads.softmax_cross_entropy(n_nets, width, y, classes, gen=gen), gen


def test_random_labels_range():
    y = heads.random_labels(1000, 7, gen=generator(1))
    assert y.dtype == torch.long and int(y.min()) >= 0 and int(y.max()) <= 6
    assert len(set(y.tolist())) == 7


def test_gradient_matches_autograd():
    head, gen = _head()
    h = torch.randn(2, 4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    h = h.to(head.weight.device).requires_grad_(True)
    head.loss(h).sum().backward()
    assert torch.allclose(head(h.detach()), h.grad)


def test_grad_logits_sums_to_zero():
    head, _ = _head()
    h = torch.rand(2, 4, 5, dtype=torch.float64).to(head.weight.device)
    assert torch.allclose(head.grad_logits(h).sum(-1),
                          torch.zeros(2, 4, dtype=torch.float64, device=h.device))


def test_head_in_relu_mlp():
    gen = generator(4)
    x = torch.randn(6, 8, dtype=torch.float64)
    y = heads.random_labels(6, 3, gen=gen)
    head = heads.softmax_cross_entropy(2, 16, y, 3, gen=gen)
    stats = relu_mlp(x, [16, 16], he("fan_out"), n_nets=2, gen=gen, delta=head)
    assert stats.log_delta.shape == (2, 2, 6)


def test_bad_args():
    gen = generator(0)
    with pytest.raises(ValueError, match="n_classes"):
        heads.random_labels(3, 0, gen=gen)
    with pytest.raises(TypeError, match="labels"):
        heads.softmax_cross_entropy(1, 2, torch.zeros(3), 2, gen=gen)
    with pytest.raises(ValueError, match="labels"):
        heads.softmax_cross_entropy(1, 2, torch.tensor([0, 5]), 2, gen=gen)
    with pytest.raises(ValueError, match="variance"):
        heads.softmax_cross_entropy(1, 2, torch.tensor([0, 1]), 2, gen=gen, variance=-1.0)
    head, _ = _head()
    with pytest.raises(ValueError, match="h must have shape"):
        head(torch.zeros(2, 4, 6, dtype=torch.float64))
