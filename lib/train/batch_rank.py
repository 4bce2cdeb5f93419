"""Are random batches of real data non-degenerate? The rank of their Gram matrices.

Meterez et al. (2024, Appendix E, Table E1) draw random batches of ``n`` images from a data set
and report whether the ``n x n`` Gram matrix of each batch has full rank, computed with
``torch.linalg.matrix_rank``. :func:`random_batch_ranks` does the same on any data matrix;
:func:`random_batches` draws the batches and :func:`gram_ranks` measures them, so that the
same batches can also be measured by :func:`batch_ranks`: the rank of a batch itself, from its
singular values (the Gram matrix squares them, and in single precision its rank is a numerical
rank at a relative precision of about ``sqrt(n eps)``).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from ..core import validate as v
from ..core.scaling import rescaled

__all__ = ["BatchRanks", "batch_ranks", "gram_ranks", "random_batch_ranks", "random_batches"]


def random_batches(data: torch.Tensor, batch_size: int, n_batches: int, *,
                   gen: torch.Generator) -> torch.Tensor:
    """Random batches of distinct rows of ``data``, as Table E1 draws them.

    Each batch is ``batch_size`` distinct rows (the first entries of one
    ``torch.randperm`` of the rows, drawn on the generator's device), batch after batch.

    Parameters
    ----------
    data : torch.Tensor
        Shape ``(N, p)``: ``N`` samples of ``p`` features.
    batch_size : int
        Samples per batch, at most ``N``.
    n_batches : int
        Number of batches.
    gen : torch.Generator
        Generator of the batches.

    Returns
    -------
    torch.Tensor
        Shape ``(n_batches, batch_size, p)``, on the device and in the dtype of ``data``.

    References
    ----------
    Meterez et al. (2024), Appendix E, Table E1.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> random_batches(torch.eye(4, dtype=torch.float64), 3, 2, gen=generator(0)).shape
    torch.Size([2, 3, 4])
    """
    data = v.tensor("data", data, ndim=2)
    batch_size = v.positive_int("batch_size", batch_size)
    n_batches = v.positive_int("n_batches", n_batches)
    gen = v.generator("gen", gen, optional=False)
    if batch_size > data.shape[0]:
        raise ValueError(f"batch_size must be at most the number of samples in data "
                         f"({data.shape[0]}), got {batch_size}")
    idx = torch.stack([torch.randperm(data.shape[0], generator=gen,
                                      device=gen.device)[:batch_size]
                       for _ in range(n_batches)])
    return data[idx.to(data.device)]


def gram_ranks(batches: torch.Tensor) -> torch.Tensor:
    """Table E1's measurement: ``torch.linalg.matrix_rank`` of each Gram matrix ``B B^T``.

    Computed in the dtype of ``batches`` with ``matrix_rank``'s default tolerance
    ``sigma_max(B B^T) n eps``: since ``sigma_i(B B^T) = sigma_i(B)^2``, a singular value of
    ``B`` counts only above ``sigma_max(B) sqrt(n eps)`` (about ``8e-3 sigma_max`` for
    ``n = 512`` in single precision, the PyTorch default).

    Parameters
    ----------
    batches : torch.Tensor
        Shape ``(n_batches, n, p)`` (:func:`random_batches`).

    Returns
    -------
    torch.Tensor
        Integer ranks, shape ``(n_batches,)``; ``n`` means the Gram matrix has full rank.

    References
    ----------
    Meterez et al. (2024), Appendix E, Table E1.

    Examples
    --------
    >>> gram_ranks(torch.eye(3, 4, dtype=torch.float64)[None])
    tensor([3])
    """
    batches = v.tensor("batches", batches, ndim=3)
    # a batch of any finite scale: an exact power-of-two rescaling (the rank is unchanged)
    # keeps its Gram matrix from overflowing or underflowing
    batches = rescaled(batches, 1)[0]
    return torch.linalg.matrix_rank(batches @ batches.transpose(-2, -1))


class BatchRanks(NamedTuple):
    """The ranks of batches from their own singular values (:func:`batch_ranks`)."""

    ranks: torch.Tensor      #: (n_batches,) integer ranks
    ratio: torch.Tensor      #: (n_batches,) sigma_min / sigma_max (0 for a zero batch)
    margin: torch.Tensor     #: (n_batches,) decades from the threshold to the nearest sigma_i


def batch_ranks(batches: torch.Tensor) -> BatchRanks:
    """Ranks of batches ``B`` themselves, from their singular values, with each decision's margin.

    A singular value counts when it exceeds ``sigma_max(B) max(n, p) eps`` (the default rule
    of ``torch.linalg.matrix_rank``, in the dtype of ``batches``). ``margin`` is the distance,
    in decades, from that threshold to the nearest singular value: a rank with a margin of a
    few decades is not decided by rounding.

    Parameters
    ----------
    batches : torch.Tensor
        Shape ``(n_batches, n, p)`` (:func:`random_batches`).

    Returns
    -------
    BatchRanks
        ``ranks``, ``ratio`` (``sigma_min / sigma_max`` over the ``min(n, p)`` singular values)
        and ``margin``, each of shape ``(n_batches,)``. A zero batch has rank 0, ratio 0 and an
        infinite margin.

    References
    ----------
    Meterez et al. (2024), Appendix E, Table E1.

    Examples
    --------
    >>> r = batch_ranks(torch.diag(torch.tensor([1.0, 1e-4], dtype=torch.float64))[None])
    >>> r.ranks, r.ratio
    (tensor([2]), tensor([0.0001], dtype=torch.float64))
    """
    batches = v.tensor("batches", batches, ndim=3)
    sv = torch.linalg.svdvals(batches)                      # (n_batches, min(n, p)), descending
    top = sv[:, :1]
    rel_tol = max(batches.shape[1:]) * torch.finfo(sv.dtype).eps
    relative = torch.where(top > 0, sv / top.clamp_min(torch.finfo(sv.dtype).tiny), 0.0)
    margin = (relative / rel_tol).log10().abs().amin(dim=-1)
    return BatchRanks(ranks=(relative > rel_tol).sum(dim=-1), ratio=relative[:, -1],
                      margin=margin)


def random_batch_ranks(data: torch.Tensor, batch_size: int, n_batches: int, *,
                       gen: torch.Generator) -> torch.Tensor:
    """Ranks of the Gram matrices ``B B^T`` of random batches ``B`` of rows of ``data``:
    :func:`gram_ranks` of :func:`random_batches` (whose parameters these are).

    Returns
    -------
    torch.Tensor
        Integer ranks, shape ``(n_batches,)``; ``batch_size`` means the batch is
        non-degenerate.

    References
    ----------
    Meterez et al. (2024), Appendix E, Table E1.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> random_batch_ranks(torch.eye(4, dtype=torch.float64), 3, 2, gen=generator(0))
    tensor([3, 3])
    """
    return gram_ranks(random_batches(data, batch_size, n_batches, gen=gen))
