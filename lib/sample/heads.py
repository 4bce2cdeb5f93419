"""Loss heads: the gradient of a loss with respect to the last hidden layer.

:func:`eit.sample.mlps.relu_mlp` accepts ``delta=loss_grad`` with ``loss_grad(h_L)`` returning
dloss/dh^L. A head here is such a callable. :class:`SoftmaxCrossEntropy` is the head of the
experiments of Arpit & Bengio (2019), section 5: a random linear layer ``V`` (one per network)
from the last hidden layer to ``n_classes`` logits, a softmax and the cross-entropy with
integer targets, so that dloss/dh^L = V^T (softmax(V h^L) - onehot(y)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..core import validate as v
from ..core.device import DTYPE, device, rand, randn


def random_labels(n_samples: int, n_classes: int, *, gen: torch.Generator) -> torch.Tensor:
    """``n_samples`` integer labels i.i.d. uniform on {0, ..., n_classes - 1}.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> random_labels(5, 3, gen=generator(0)).shape
    torch.Size([5])
    """
    n_samples = v.positive_int("n_samples", n_samples)
    n_classes = v.positive_int("n_classes", n_classes)
    u = rand(n_samples, gen=gen)
    return (u * n_classes).floor().clamp_max(n_classes - 1).long()


@dataclass(frozen=True)
class SoftmaxCrossEntropy:
    """Linear layer + softmax + cross-entropy on top of ``n_nets`` networks.

    ``weight`` has shape (n_nets, n_classes, width); ``labels`` shape (N,) shared by all
    networks. Calling the head on h^L of shape (n_nets, N, width) returns dloss/dh^L.

    Examples
    --------
    >>> head = SoftmaxCrossEntropy(torch.zeros(1, 3, 4, dtype=torch.float64), torch.tensor([0, 2]))
    >>> head(torch.ones(1, 2, 4, dtype=torch.float64)).shape
    torch.Size([1, 2, 4])
    """

    weight: torch.Tensor
    labels: torch.Tensor

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        return torch.matmul(h, self.weight.transpose(-2, -1))

    def _check(self, h: torch.Tensor) -> torch.Tensor:
        h = v.tensor("h", h, ndim=3)
        n_nets, _, width = self.weight.shape
        if h.shape[0] != n_nets or h.shape[-1] != width or h.shape[1] != self.labels.numel():
            raise ValueError(f"h must have shape ({n_nets}, {self.labels.numel()}, {width}), "
                             f"got {tuple(h.shape)}")
        return h

    def loss(self, h: torch.Tensor) -> torch.Tensor:
        """Cross-entropy per network and sample, shape (n_nets, N)."""
        logp = torch.log_softmax(self.logits(self._check(h)), dim=-1)
        idx = self.labels.view(1, -1, 1).expand(logp.shape[0], -1, 1)
        return -logp.gather(-1, idx).squeeze(-1)

    def grad_logits(self, h: torch.Tensor) -> torch.Tensor:
        """dloss/dlogits = softmax(V h) - onehot(y), shape (n_nets, N, n_classes)."""
        p = torch.softmax(self.logits(self._check(h)), dim=-1)
        onehot = torch.nn.functional.one_hot(self.labels, p.shape[-1]).to(p.dtype)
        return p - onehot

    def __call__(self, h: torch.Tensor) -> torch.Tensor:
        """dloss/dh^L = V^T (softmax(V h^L) - onehot(y))."""
        return torch.matmul(self.grad_logits(h), self.weight)


def softmax_cross_entropy(n_nets: int, width: int, labels: torch.Tensor, n_classes: int, *,
                          gen: torch.Generator, variance: float | None = None
                          ) -> SoftmaxCrossEntropy:
    """A :class:`SoftmaxCrossEntropy` head with V_ij i.i.d. N(0, variance), default 1/width.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> head = softmax_cross_entropy(2, 4, torch.tensor([0, 1]), 3, gen=generator(0))
    >>> tuple(head.weight.shape)
    (2, 3, 4)
    """
    n_nets, width = v.positive_int("n_nets", n_nets), v.positive_int("width", width)
    n_classes = v.positive_int("n_classes", n_classes)
    if not isinstance(labels, torch.Tensor) or labels.ndim != 1 or labels.dtype != torch.long:
        raise TypeError("labels must be a one-dimensional torch.long tensor")
    if labels.numel() == 0 or int(labels.min()) < 0 or int(labels.max()) >= n_classes:
        raise ValueError(f"labels must be non-empty and lie in [0, n_classes={n_classes})")
    var = 1.0 / width if variance is None else v.positive_float("variance", variance)
    w = math.sqrt(var) * randn(n_nets, n_classes, width, gen=gen, dtype=DTYPE)
    return SoftmaxCrossEntropy(w, labels.to(device()))


__all__ = ["random_labels", "SoftmaxCrossEntropy", "softmax_cross_entropy"]
