"""How the loss gradient grows on its way back through a network at initialization.

For a network with hidden states ``h^1, ..., h^L`` (``net.features(x)``) and a head
(``net.head(h^L)``), the backward pass multiplies the squared norm of the loss gradient
``||dl/dh^l||^2`` by a factor per layer; a critical initialization keeps it at 1, the
data-dependent initialization of Salimans & Kingma at about ``pi / (pi - 1)`` (Arpit, Campos &
Bengio 2019, Section 5.1, as derived in the book).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import _checks

__all__ = ["hidden_gradient_growth"]


def hidden_gradient_growth(net, x: torch.Tensor, y: torch.Tensor) -> float:
    """The mean over layers of ``||dl/dh^l||^2 / ||dl/dh^{l+1}||^2`` on one batch.

    Parameters
    ----------
    net : network
        ``net.features(x)`` returns the list of hidden states ``h^1..h^L`` (each ``(B, w)``,
        at least 2) and ``net.head(h^L)`` the logits ``(B, C)``, e.g.
        :class:`eit.models.wn_init.WNMLP`.
    x : torch.Tensor
        ``(B, d_in)`` inputs.
    y : torch.Tensor
        ``(B,)`` integer labels; the loss ``l`` is the mean cross-entropy of the batch.

    Returns
    -------
    float
        The per-layer growth factor of the squared gradient norm, averaged over the
        ``L - 1`` pairs of consecutive hidden layers (1: critical).

    Raises
    ------
    TypeError
        ``net`` has no ``features`` and ``head``, ``x`` is not a floating-point tensor, ``y``
        not integer labels.
    ValueError
        Fewer than two hidden layers, a gradient of norm 0 (or one that over- or underflows),
        ``x`` and ``y`` of different lengths, an inf or NaN in ``x``, a label outside
        ``[0, C)``.

    References
    ----------
    Arpit, Campos & Bengio (2019), Section 5.1 and Theorem 2 (the backward pass of a
    weight-normalized ReLU network).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> from eit.models.wn_init import wn_mlp_model
    >>> net = wn_mlp_model("proposed", d_in=8, widths=[64] * 4, d_out=3, gen=generator(0))
    >>> x = torch.randn(32, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    >>> growth = hidden_gradient_growth(net, x, torch.arange(32) % 3)
    >>> 0.5 < growth < 2.0
    True
    """
    if not (hasattr(net, "features") and hasattr(net, "head")):
        raise TypeError(f"net must have features() and head(), got {type(net).__name__}")
    x, y = _checks.samples(x, y)
    params = list(net.parameters()) if hasattr(net, "parameters") else []
    if params:                                    # the samples meet the weights
        x, y = x.to(params[0].device), y.to(params[0].device)
    hidden = list(net.features(x))
    if len(hidden) < 2:
        raise ValueError(f"net must have at least 2 hidden layers, got {len(hidden)}")
    logits = net.head(hidden[-1])
    _checks.classes(y, logits)
    loss = F.cross_entropy(logits, y)
    sq = torch.stack([g.square().sum() for g in torch.autograd.grad(loss, hidden)])
    if not bool(((sq > 0) & torch.isfinite(sq)).all()):
        raise ValueError("a hidden gradient of the loss at these inputs x has norm 0 (or its "
                         "square over- or underflows): the ratio is undefined")
    return (sq[:-1] / sq[1:]).mean().item()
