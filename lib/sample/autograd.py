"""Reference gradients by automatic differentiation, to check the identities the engines use.

The engines never differentiate: they compute the weight-gradient norms of a layer from the
identity ``||dl/dW^l||_F = ||dl/da^l|| ||h^(l-1)||`` (Arpit & Bengio 2019, eq. 9). This module
differentiates a real network with PyTorch's autograd, one input at a time, so that a chapter
can measure that identity instead of assuming it.
"""

from __future__ import annotations

import numbers
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

    Raises
    ------
    TypeError, ValueError
        On bad arguments, naming them (matrices that do not chain, labels outside the rows of
        the last matrix), or where the activations or gradients overflow float64.

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
    if isinstance(weights, (torch.Tensor, str, bytes)) or not isinstance(weights, Sequence):
        raise TypeError(f"weights must be a sequence of matrices, got {type(weights).__name__}")
    if len(weights) < 2:
        raise ValueError("weights must be a sequence of at least two matrices")
    ws = [v.tensor(f"weights[{i}]", w_, ndim=2).detach().clone().requires_grad_()
          for i, w_ in enumerate(weights)]
    x = v.tensor("x", x, ndim=2)
    fan_in = x.shape[1]
    for i, w_ in enumerate(ws):
        if w_.shape[1] != fan_in:
            raise ValueError(f"weights[{i}] must have {fan_in} columns (the width before it), "
                             f"got shape {tuple(w_.shape)}")
        fan_in = w_.shape[0]
    labels = _labels(labels, ws[-1].shape[0])
    if len(labels) != x.shape[0]:
        raise ValueError(f"labels must have one entry per input (row of x: {x.shape[0]}), "
                         f"got {len(labels)}")
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
    result = tuple(torch.stack([torch.stack([row[l][j] for l in range(len(row))])
                                for row in out]).detach() for j in range(3))
    if not all(bool(torch.isfinite(r).all()) for r in result):
        raise ValueError("weights, x: the activations or gradients overflow float64 (the "
                         "softmax head is not scale invariant: rescale the weights or inputs)")
    return result


def _labels(labels, n_classes: int) -> list[int]:
    """Class labels: ints (or integer 0-d tensors) in [0, n_classes), else an error naming them."""
    if isinstance(labels, torch.Tensor):
        if labels.ndim != 1:
            raise TypeError(f"labels must be a sequence of ints, got a tensor of shape "
                            f"{tuple(labels.shape)}")
    elif isinstance(labels, (str, bytes)) or not isinstance(labels, Sequence):
        raise TypeError(f"labels must be a sequence of ints, got {type(labels).__name__}")
    out = []
    for i, y in enumerate(labels):
        if isinstance(y, torch.Tensor) and y.ndim == 0 and not (
                y.is_floating_point() or y.is_complex() or y.dtype == torch.bool):
            y = int(y)
        if isinstance(y, bool) or not isinstance(y, numbers.Integral):
            raise TypeError(f"labels[{i}] must be an int, got {y!r}")
        if not 0 <= y < n_classes:
            raise ValueError(f"labels[{i}] must lie in [0, {n_classes}) (the rows of the last "
                             f"weight matrix), got {y!r}")
        out.append(int(y))
    return out
