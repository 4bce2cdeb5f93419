"""BN networks on a batch with repeated samples, with the repetition exact by construction.

Meterez et al. (2024, Figure 2) show that gradients explode when the input batch repeats
samples. Computed on the full batch, the copies of a sample stay copies only as long as the
floating-point operations on them stay bit-identical, which depends on the matrix-multiply
kernel: through hundreds of layers the copies drift apart on one machine and not on another,
and the measured growth changes with them. This module computes the network of the full batch
exactly from its distinct samples instead.

BN (eq. 4) normalizes each row over the batch. If the batch is ``X = Y M`` with
``Y = D diag(sqrt(m))`` (``D`` the ``k`` distinct samples, ``m`` their multiplicities) and
``M = diag(m)^{-1/2} E`` (``E`` the ``k x n`` selection of copies; ``M M^T = I_k``), then the
rows of ``W X`` and ``W Y`` have equal norms, so ``BN(W X) = BN(W Y) M``: every layer maps
``X_l = Y_l M`` and the copies are copies by construction. The read-out loss
``<R, X_L> = <R M^T, Y_L>``: with ``R = G / ||G||_F`` for a Gaussian ``G`` (d x n),
``G M^T`` is a Gaussian d x k matrix and ``||G||^2 = ||G M^T||^2 + chi^2_{d(n-k)}``
independently, so the full network's gradient is the compact network's gradient for a unit
read-out, times the independent factor ``sqrt(B)``, ``B ~ Beta(dk/2, d(n-k)/2)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..core import validate as v
from ..core.device import DTYPE, randn
from . import batchnorm as bnm

__all__ = ["compact_batch", "expand_batch", "first_layer_grad_lognorm_repeated"]


def _multiplicities(copies, k: int) -> torch.Tensor:
    if isinstance(copies, (str, bytes)) or not isinstance(copies, Sequence) or not copies:
        raise ValueError(f"copies must be a non-empty sequence of ints, got {copies!r}")
    if len(copies) != k:
        raise ValueError(f"copies must have one entry per distinct sample ({k}), got "
                         f"{len(copies)}")
    for i, c in enumerate(copies):
        v.positive_int(f"copies[{i}]", c)
    return torch.tensor([float(c) for c in copies], dtype=DTYPE)


def compact_batch(x_distinct: torch.Tensor, copies: Sequence[int]) -> torch.Tensor:
    """``Y = D diag(sqrt(m))`` (d x k): the batch whose BN network carries the full one.

    Examples
    --------
    >>> compact_batch(torch.eye(2, dtype=torch.float64), [1, 4])
    tensor([[1., 0.],
            [0., 2.]], dtype=torch.float64)
    """
    x = v.tensor("x_distinct", x_distinct, ndim=2)
    return x.to(DTYPE) * _multiplicities(copies, x.shape[1]).to(x.device).sqrt()


def expand_batch(x_distinct: torch.Tensor, copies: Sequence[int]) -> torch.Tensor:
    """The full batch (d x n): sample j of ``x_distinct`` repeated ``copies[j]`` times, the
    copies next to each other.

    Examples
    --------
    >>> expand_batch(torch.tensor([[1.0, 2.0]]), [2, 1])
    tensor([[1., 1., 2.]])
    """
    x = v.tensor("x_distinct", x_distinct, ndim=2)
    m = _multiplicities(copies, x.shape[1]).long()
    return x.repeat_interleave(m.to(x.device), dim=1)


def first_layer_grad_lognorm_repeated(x_distinct: torch.Tensor, copies: Sequence[int],
                                      depths: Sequence[int], *, n_nets: int,
                                      gen: torch.Generator,
                                      weights: bnm.Weights = "orthogonal") -> torch.Tensor:
    """log ||dL/dW_0||_F of the BN network X_{l+1} = BN(W_l X_l) on the batch with repeated
    samples, exactly (see the module docstring), for each depth L in ``depths``.

    Parameters
    ----------
    x_distinct : torch.Tensor
        The distinct samples, (d, k).
    copies : sequence of int
        How many times each distinct sample appears in the batch (n = sum of copies).
    depths : sequence of int
        Depths L (the first L layers of one deep network per ``n_nets``).
    n_nets : int
        Independent networks.
    gen : torch.Generator
        The random generator.
    weights : str
        ``'orthogonal'`` (Haar) or ``'gaussian'``.

    Raises
    ------
    ValueError
        ``x_distinct`` has rank below 2 (a zero or rank-one batch: the gradient is exactly 0),
        or a bad argument.

    Returns
    -------
    torch.Tensor
        ``(len(depths), n_nets)`` (row j is depth ``depths[j]``): the same law as
        :func:`eit.models.batchnorm.first_layer_grad_lognorm` on the full batch with exact
        copies and a Gaussian read-out of unit Frobenius norm.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> x = torch.eye(4, dtype=torch.float64)[:, :2] + 0.1
    >>> first_layer_grad_lognorm_repeated(x, [2, 2], [1, 3], n_nets=5,
    ...                                   gen=generator(0)).shape
    torch.Size([2, 5])
    """
    y0 = compact_batch(x_distinct, copies)
    if int(torch.linalg.matrix_rank(y0)) < 2:
        # X0 = a b^T: every row of W_0 X_0 is a multiple of b^T, which BN maps to +-b^T
        # whatever W_0: the gradient is 0 (log -inf), and rounding leaves only noise
        raise ValueError("x_distinct must have rank >= 2 (on a batch of rank <= 1 the first "
                         "layer's gradient is exactly 0)")
    d, k = y0.shape
    n = int(sum(copies))
    n_nets = v.positive_int("n_nets", n_nets)
    base = bnm.first_layer_grad_lognorm(y0, depths, n_nets=n_nets, gen=gen, weights=weights)
    if n == k:
        return base
    inside = randn(n_nets, d * k, gen=gen).square().sum(dim=1)
    outside = randn(n_nets, d * (n - k), gen=gen).square().sum(dim=1)
    offset = 0.5 * torch.log(inside / (inside + outside))
    return base + offset.to(device=base.device, dtype=base.dtype)      # the same per depth
