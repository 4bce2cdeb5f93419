"""Are random batches of real data non-degenerate? The rank of their Gram matrices.

Meterez et al. (2024, Appendix E, Table E1) draw random batches of ``n`` images from a data set
and report whether the ``n x n`` Gram matrix of each batch has full rank, computed with
``torch.linalg.matrix_rank``. :func:`random_batch_ranks` does the same on any data matrix.
"""

from __future__ import annotations

import torch

from ..core import validate as v
from ..core.scaling import rescaled

__all__ = ["random_batch_ranks"]


def random_batch_ranks(data: torch.Tensor, batch_size: int, n_batches: int, *,
                       gen: torch.Generator) -> torch.Tensor:
    """Ranks of the Gram matrices ``B B^T`` of random batches ``B`` of rows of ``data``.

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
    # a batch of any finite scale: an exact power-of-two rescaling (the rank is unchanged)
    # keeps its Gram matrix from overflowing or underflowing
    batches = rescaled(data[idx.to(data.device)], 1)[0]       # (n_batches, n, p)
    return torch.linalg.matrix_rank(batches @ batches.transpose(-2, -1))
