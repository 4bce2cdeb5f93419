"""Monte Carlo moments of Haar-orthogonal matrices, pooled over relabelings of the indices.

A monomial ``prod_s W_{i_s j_s}`` of a Haar matrix ``W`` in ``O(d)`` has the same expectation
under every relabeling of its row indices and of its column indices that keeps distinct labels
distinct (the Haar measure is invariant under permutations of rows and of columns). Averaging
one matrix's monomial over the ``d^2`` cyclic shifts ``i -> i + s``, ``j -> j + u`` (mod d)
therefore gives an unbiased estimate with a much smaller variance than the single monomial:
each matrix contributes one pooled sample, and pooled samples of independent matrices are
independent, so their sample mean carries an honest standard error.

The exact values come from the orthogonal Weingarten calculus (:mod:`eit.exact.weingarten`);
this module only samples.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..core import validate as v

__all__ = ["pooled_monomial_samples"]


def _labels(name: str, seq, d: int) -> list[int]:
    if isinstance(seq, (str, bytes)) or not isinstance(seq, Sequence) or not seq:
        raise ValueError(f"{name} must be a non-empty sequence of ints, got {seq!r}")
    if not all(isinstance(t, int) and not isinstance(t, bool) and 0 <= t < d for t in seq):
        raise ValueError(f"{name} must hold ints in [0, d) = [0, {d}), got {list(seq)!r}")
    return list(seq)


def pooled_monomial_samples(monomials: Sequence[tuple[Sequence[int], Sequence[int]]], d: int,
                            n_samples: int, *, gen: torch.Generator,
                            chunk: int = 20_000) -> torch.Tensor:
    """Pooled Monte Carlo samples of monomials of Haar-orthogonal matrices.

    Parameters
    ----------
    monomials : sequence of (indices_i, indices_j)
        Each monomial ``prod_s W_{i_s j_s}``: row labels and column labels, ints in [0, d),
        of equal lengths.
    d : int
        The dimension of the group O(d).
    n_samples : int
        Independent Haar matrices.
    gen : torch.Generator
        The random generator (:func:`eit.core.seeds.generator`).
    chunk : int
        Matrices drawn at a time (bounds the memory).

    Returns
    -------
    torch.Tensor
        Shape ``(len(monomials), n_samples)``: entry ``[m, s]`` is monomial ``m`` of matrix
        ``s`` averaged over the ``d^2`` cyclic shifts of its row and column labels. Its mean
        over ``s`` is an unbiased estimate of the monomial's expectation.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> x = pooled_monomial_samples([((0, 0), (0, 0))], 4, 10, gen=generator(0))
    >>> tuple(x.shape), bool(torch.allclose(x, torch.full_like(x, 0.25)))
    ((1, 10), True)

    (For ``W_{00}^2`` the pooled sample is the mean of all squared entries, ``1/d`` exactly.)
    """
    from .laws import haar_orthogonal

    d = v.positive_int("d", d)
    n_samples = v.positive_int("n_samples", n_samples)
    chunk = v.positive_int("chunk", chunk)
    v.generator("gen", gen, optional=False)
    if isinstance(monomials, (str, bytes)) or not isinstance(monomials, Sequence) or not monomials:
        raise ValueError("monomials must be a non-empty list of (indices_i, indices_j)")
    pairs = []
    for m, mono in enumerate(monomials):
        if not (isinstance(mono, Sequence) and len(mono) == 2):
            raise ValueError(f"monomials[{m}] must be a pair (indices_i, indices_j)")
        ii = _labels(f"monomials[{m}][0]", mono[0], d)
        jj = _labels(f"monomials[{m}][1]", mono[1], d)
        if len(ii) != len(jj):
            raise ValueError(f"monomials[{m}]: indices_i and indices_j must have equal lengths")
        pairs.append(list(zip(ii, jj, strict=True)))
    parts, done = [], 0
    while done < n_samples:
        m = min(chunk, n_samples - done)
        w = haar_orthogonal(m, d, d, gen=gen)
        tiled = w.repeat(1, 2, 2)           # tiled[:, i + s, j + u] = W[(i + s) % d, (j + u) % d]
        rows = []
        for factors in pairs:
            prod = tiled[:, factors[0][0]:factors[0][0] + d, factors[0][1]:factors[0][1] + d]
            for i, j in factors[1:]:
                prod = prod * tiled[:, i:i + d, j:j + d]
            rows.append(prod.mean(dim=(1, 2)))
        parts.append(torch.stack(rows))
        done += m
    return torch.cat(parts, dim=1)
