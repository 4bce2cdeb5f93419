"""Reference gradients by automatic differentiation, to check the identities the engines use.

The engines never differentiate: they compute the weight-gradient norms of a layer from the
identity ``||dl/dW^l||_F = ||dl/da^l|| ||h^(l-1)||`` (Arpit & Bengio 2019, eq. 9). This module
differentiates a real network with PyTorch's autograd, one input at a time, so that a chapter
can measure that identity instead of assuming it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..core import validate as v

__all__ = ["relu_mlp_grad_norms"]


def relu_mlp_grad_norms(weights: Sequence[torch.Tensor], x: torch.Tensor,
                        labels: Sequence[int]) -> tuple[torch.Tensor, ...]:
    """Per-layer gradient norms of a bias-free ReLU MLP with a softmax cross-entropy head.

    The network is ``a^l = W^l h^(l-1)``, ``h^l = ReLU(a^l)`` for every weight but the last,
    and the logits ``W^L h^(L-1)``; the loss is the cross-entropy of ``softmax(logits)`` with
    the label. Each input is differentiated alone (its own backward pass).

    Parameters
    ----------
    weights : sequence of torch.Tensor
        ``(n_l, n_(l-1))`` matrices, the last one the linear head (at least two).
    x : torch.Tensor
        ``(N, n_0)`` inputs.
    labels : sequence of int
        N class labels.

    Returns
    -------
    grad_w, grad_a, h_in : torch.Tensor
        Each ``(N, L-1)``, for the hidden layers l = 1..L-1: ``||dl/dW^l||_F`` (autograd),
        ``||dl/da^l||`` (autograd) and ``||h^(l-1)||``.

    References
    ----------
    Arpit & Bengio (2019), eqs. (8)-(9).

    Examples
    --------
    >>> w = [torch.eye(2, dtype=torch.float64), torch.ones(2, 2, dtype=torch.float64)]
    >>> gw, ga, h = relu_mlp_grad_norms(w, torch.tensor([[1.0, 2.0]], dtype=torch.float64),
    ...                                 [0])
    >>> gw.shape, bool(torch.allclose(gw, ga * h))
    (torch.Size([1, 1]), True)
    """
    if isinstance(weights, torch.Tensor) or len(weights) < 2:
        raise ValueError("weights must be a sequence of at least two matrices")
    ws = [v.tensor(f"weights[{i}]", w_, ndim=2).detach().clone().requires_grad_()
          for i, w_ in enumerate(weights)]
    x = v.tensor("x", x, ndim=2)
    labels = [int(y) for y in labels]
    if len(labels) != x.shape[0]:
        raise ValueError(f"labels must have one entry per input ({x.shape[0]}), got "
                         f"{len(labels)}")
    out = []
    for x_i, y_i in zip(x, labels, strict=True):
        acts, h = [], x_i
        for w_ in ws[:-1]:
            acts.append((h, w_ @ h))
            acts[-1][1].retain_grad()
            h = acts[-1][1].relu()
        logits = (ws[-1] @ h)[None]
        target = torch.tensor([y_i], device=logits.device)  # the device of the logits it meets
        torch.nn.functional.cross_entropy(logits, target).backward()
        out.append([(w_.grad.norm(), a.grad.norm(), h_in.norm())
                    for (h_in, a), w_ in zip(acts, ws, strict=False)])
        for w_ in ws:
            w_.grad = None
    return tuple(torch.stack([torch.stack([row[l][j] for l in range(len(row))])
                              for row in out]).detach() for j in range(3))
