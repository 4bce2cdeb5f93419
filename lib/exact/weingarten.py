"""Orthogonal Weingarten calculus from first principles (Collins & Śniady 2006).

For a Haar-distributed ``W`` in O(d) and index sequences ``i = (i_1..i_2k)``,
``j = (j_1..j_2k)``,

    E[W_{i_1 j_1} ... W_{i_2k j_2k}] = sum_{p, q in M_2k} Delta_p(i) Delta_q(j) Wg(p, q; d),

(Meterez et al. 2024, Appendix B, eq. 36), where ``M_2k`` is the set of the (2k-1)!! pair
partitions of {0, ..., 2k-1}, ``Delta_p(i) = 1`` when ``i`` is constant on every pair of ``p``
(else 0), and ``Wg = G^{-1}`` is the inverse of the Gram matrix ``G[p, q] = d^{loops(p, q)}``;
``loops(p, q)`` is the number of connected components (loops) of the graph whose edges are
the pairs of ``p`` and of ``q``. ``Wg(p, q)`` depends only on the *coset type* of (p, q): the
partition of k given by the half-lengths of the loops (the paper writes ``Wg^O([1, 1])`` and
``Wg^O([2])`` for k = 2).

Everything is exact and symbolic in ``d`` (SymPy rational functions). The inverse is computed
by solving the Gram system reduced to coset types (one unknown per partition of k), which is
exact and fast for k <= 5; :func:`weingarten_matrix` expands it to the full matrix so that
``G Wg = I`` can be checked. The Gram matrix is invertible for every integer d >= k; integer
``d < k`` is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import sympy as sp
import torch
from sympy.utilities.iterables import partitions

from ..core import validate as v

#: The dimension symbol used internally (results are substituted into the caller's ``d``).
D = sp.Symbol("d", positive=True)

PairPartition = tuple[tuple[int, int], ...]
_MAX_K = 6


def _k(k) -> int:
    k = v.positive_int("k", k)
    if k > _MAX_K:
        raise ValueError(f"k must be <= {_MAX_K} (there are (2k-1)!! pair partitions), got {k}")
    return k


@cache
def _pairings(points: tuple[int, ...]) -> tuple[PairPartition, ...]:
    if not points:
        return ((),)
    first, rest = points[0], points[1:]
    out = []
    for idx, partner in enumerate(rest):
        remaining = rest[:idx] + rest[idx + 1:]
        for tail in _pairings(remaining):
            out.append(((first, partner),) + tail)
    return tuple(out)


def pair_partitions(k: int) -> list[PairPartition]:
    """All (2k-1)!! pair partitions of {0, ..., 2k-1}, each a sorted tuple of sorted pairs.

    Examples
    --------
    >>> len(pair_partitions(3))
    15
    """
    return list(_pairings(tuple(range(2 * _k(k)))))


def _point(x) -> int | None:
    """``x`` as a point label (an int, not a bool), else None."""
    return None if isinstance(x, bool) or not isinstance(x, int) else x


def _pairing(name: str, p) -> PairPartition:
    """A pair partition of {0, ..., 2k-1} (pairs of ints), sorted; else a named error."""
    if isinstance(p, (str, bytes)) or not isinstance(p, Sequence):
        raise ValueError(f"{name} must be a pair partition (a sequence of pairs of ints), got "
                         f"{type(p).__name__}")
    pairs = []
    for pair in p:
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2 \
                or any(_point(x) is None for x in pair):
            raise ValueError(f"{name} must be a sequence of pairs of ints, got {p!r}")
        pairs.append(tuple(sorted(pair)))
    points = sorted(x for pair in pairs for x in pair)
    if not pairs or points != list(range(2 * len(pairs))):
        raise ValueError(f"{name} must be a pair partition of {{0, ..., 2k-1}}, got {p!r}")
    return tuple(sorted(pairs))  # type: ignore[return-value]


def _loop_lengths(p: PairPartition, q: PairPartition, names: tuple[str, str] = ("p", "q")
                  ) -> tuple[int, ...]:
    p, q = _pairing(names[0], p), _pairing(names[1], q)
    if len(p) != len(q):
        raise ValueError(f"{names[0]} and {names[1]} must partition the same set, got sizes "
                         f"{2 * len(p)} and {2 * len(q)}")
    mate_p = {a: b for a, b in p} | {b: a for a, b in p}
    mate_q = {a: b for a, b in q} | {b: a for a, b in q}
    seen: set[int] = set()
    sizes = []
    for start in range(2 * len(p)):
        if start in seen:
            continue
        size, x, use_p = 0, start, True
        while True:  # alternate p-edges and q-edges around the loop
            seen.add(x)
            size += 1
            x = mate_p[x] if use_p else mate_q[x]
            use_p = not use_p
            if x == start and use_p:
                break
        sizes.append(size)
    return tuple(sorted(sizes, reverse=True))


def _labels(name: str, seq) -> list[int]:
    """A non-empty sequence of index labels (ints, not bools); else a named error."""
    if isinstance(seq, (str, bytes)) or not isinstance(seq, Sequence):
        raise ValueError(f"{name} must be a sequence of int labels, got {type(seq).__name__}")
    if len(seq) == 0:
        raise ValueError(f"{name} must be a non-empty sequence of indices, got {seq!r}")
    if any(_point(t) is None for t in seq):
        raise ValueError(f"{name} must hold int labels (equal labels: equal indices), got "
                         f"{list(seq)!r}")
    return list(seq)


def _degree(names: str, n: int) -> int:
    """k for a monomial of even degree n = 2k, refused (naming ``names``) beyond k = 6."""
    if n // 2 > _MAX_K:
        raise ValueError(f"{names} must have length <= {2 * _MAX_K} (degree 2k with k <= "
                         f"{_MAX_K}: there are (2k-1)!! pair partitions), got {n}")
    return _k(n // 2)


def loop_lengths(p: PairPartition, q: PairPartition) -> tuple[int, ...]:
    """Numbers of points in each loop of the graph p ∪ q (each even), largest first.

    Examples
    --------
    >>> loop_lengths(((0, 1), (2, 3)), ((0, 2), (1, 3)))
    (4,)
    """
    return _loop_lengths(p, q)


def loops(p: PairPartition, q: PairPartition) -> int:
    """Number of loops of p ∪ q: the exponent of d in the Gram matrix entry G[p, q].

    Examples
    --------
    >>> loops(((0, 1), (2, 3)), ((0, 1), (2, 3)))
    2
    """
    return len(loop_lengths(p, q))


def coset_type(p: PairPartition, q: PairPartition) -> tuple[int, ...]:
    """Coset type of (p, q): the partition of k formed by the half-lengths of the loops.

    Examples
    --------
    >>> coset_type(((0, 1), (2, 3)), ((0, 2), (1, 3)))
    (2,)
    """
    return tuple(n // 2 for n in loop_lengths(p, q))


def _dimension(d) -> sp.Expr:
    """d: a positive int, or a SymPy expression (a positive integer if it is a number)."""
    if isinstance(d, bool):
        raise TypeError("d must be a positive int or a SymPy expression, got bool")
    if isinstance(d, int):
        return sp.Integer(v.positive_int("d", d))
    if not isinstance(d, sp.Expr):
        raise TypeError(f"d must be a positive int or a SymPy expression, got "
                        f"{type(d).__name__}")
    if d.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        raise ValueError(f"d must be finite, got {d}")
    if d.is_number and not (d.is_Integer and d > 0):
        raise ValueError(f"d must be a positive integer (the dimension of O(d)), got {d}")
    if d.is_positive is False:
        raise ValueError(f"d must be positive, got {d}")
    return d


def _check_invertible(k: int, d: sp.Expr) -> None:
    if d.is_number and d < k:
        raise ValueError(f"d must be >= k = {k} for the Gram matrix to be invertible, got {d}")


def gram_matrix(k: int, d=D) -> sp.Matrix:
    """The Gram matrix G[p, q] = d^{loops(p, q)} over :func:`pair_partitions` (k).

    Examples
    --------
    >>> gram_matrix(1)
    Matrix([[d]])
    """
    k, d = _k(k), _dimension(d)
    ps = pair_partitions(k)
    return sp.Matrix(len(ps), len(ps), lambda a, b: d ** loops(ps[a], ps[b]))


@cache
def _wg_by_type(k: int) -> dict[tuple[int, ...], sp.Expr]:
    """Solve G w = e_{identity} row by row, reduced to one unknown per coset type."""
    ps = pair_partitions(k)
    base = ps[0]  # {0,1}{2,3}...: the identity pairing
    by_type: dict[tuple[int, ...], list[PairPartition]] = {}
    for q in ps:
        by_type.setdefault(coset_type(base, q), []).append(q)
    types = sorted(by_type, reverse=True)
    xs = sp.symbols(f"x0:{len(types)}")
    rows = []
    for nu in types:
        rep = by_type[nu][0]
        lhs = sum(sum(D ** loops(rep, q) for q in by_type[mu]) * xs[m]
                  for m, mu in enumerate(types))
        rhs = 1 if rep == base else 0
        rows.append(sp.Eq(lhs, rhs))
    sol = sp.solve(rows, xs, dict=True)[0]
    return {mu: sp.factor(sp.cancel(sol[xs[m]])) for m, mu in enumerate(types)}


def weingarten_coset(mu: Sequence[int], d=D) -> sp.Expr:
    """Wg^O(mu; d) for a coset type ``mu`` (a partition of k), e.g. (1, 1) or (2,).

    Examples
    --------
    >>> weingarten_coset((1,), 3)
    1/3
    """
    if (not isinstance(mu, Sequence) or isinstance(mu, str) or not mu
            or not all(isinstance(m, int) and not isinstance(m, bool) and m > 0 for m in mu)):
        raise ValueError(f"mu must be a non-empty partition (positive ints), got {mu!r}")
    if sum(mu) > _MAX_K:
        raise ValueError(f"mu must be a partition of k <= {_MAX_K}, got {mu!r} (k = {sum(mu)})")
    k = _k(sum(mu))
    d = _dimension(d)
    _check_invertible(k, d)
    table = _wg_by_type(k)
    return sp.factor(table[tuple(sorted(mu, reverse=True))].subs(D, d))


def weingarten_o(sigma: PairPartition, tau: PairPartition, d=D) -> sp.Expr:
    """The orthogonal Weingarten function Wg(sigma, tau; d) = (G^{-1})[sigma, tau].

    Examples
    --------
    >>> weingarten_o(((0, 1),), ((0, 1),), 4)
    1/4
    """
    lengths = _loop_lengths(sigma, tau, ("sigma", "tau"))
    if len(sigma) > _MAX_K:
        raise ValueError(f"sigma and tau must pair at most {2 * _MAX_K} points, got "
                         f"{2 * len(sigma)}")
    return weingarten_coset(tuple(n // 2 for n in lengths), d)


def weingarten_matrix(k: int, d=D) -> sp.Matrix:
    """The full matrix Wg = G^{-1} over :func:`pair_partitions` (k).

    Examples
    --------
    >>> weingarten_matrix(1, 2)
    Matrix([[1/2]])
    """
    k, d = _k(k), _dimension(d)
    _check_invertible(k, d)
    ps = pair_partitions(k)
    table = {mu: w.subs(D, d) for mu, w in _wg_by_type(k).items()}
    return sp.Matrix(len(ps), len(ps), lambda a, b: table[coset_type(ps[a], ps[b])])


def delta(p: PairPartition, indices: Sequence) -> int:
    """Delta_p(indices): 1 if ``indices`` agree on every pair of ``p``, else 0.

    Examples
    --------
    >>> delta(((0, 1), (2, 3)), [5, 5, 7, 7])
    1
    """
    p = _pairing("p", p)
    indices = _labels("indices", indices)
    if len(indices) != 2 * len(p):
        raise ValueError(f"indices must have length {2 * len(p)}, got {len(indices)}")
    return int(all(indices[a] == indices[b] for a, b in p))


def haar_moment(indices_i: Sequence, indices_j: Sequence, d=D) -> sp.Expr:
    """E[prod_s W_{i_s j_s}] for W Haar on O(d), exactly (eq. 36); symbolic in ``d``.

    Indices are int labels: equal labels mean equal indices, distinct labels distinct ones
    (for symbolic d any ints; for an integer d, ints in [0, d)). Odd degree gives 0.

    Examples
    --------
    >>> haar_moment([0, 0], [0, 0], 3)
    1/3
    """
    indices_i, indices_j = _labels("indices_i", indices_i), _labels("indices_j", indices_j)
    if len(indices_i) != len(indices_j):
        raise ValueError(f"indices_i and indices_j must have equal lengths, got "
                         f"{len(indices_i)} and {len(indices_j)}")
    d = _dimension(d)
    if d.is_number:
        for name, seq in (("indices_i", indices_i), ("indices_j", indices_j)):
            if not all(0 <= t < d for t in seq):
                raise ValueError(f"{name} must be ints in [0, d) = [0, {d}), got {seq!r}")
    if len(indices_i) % 2:
        return sp.Integer(0)
    k = _degree("indices_i and indices_j", len(indices_i))
    _check_invertible(k, d)
    table = _wg_by_type(k)
    total = sum((table[mu] for _, _, mu in contributing_pairs(indices_i, indices_j)),
                sp.Integer(0))
    return sp.factor(sp.cancel(total.subs(D, d)))


def monomial_samples(w: torch.Tensor, indices_i: Sequence[int],
                     indices_j: Sequence[int]) -> torch.Tensor:
    """prod_s W_{i_s j_s} for each matrix of a stack ``w`` (n, d, d): Monte Carlo samples.

    Examples
    --------
    >>> monomial_samples(torch.eye(2, dtype=torch.float64).unsqueeze(0), [0, 1], [0, 1])
    tensor([1.], dtype=torch.float64)
    """
    w = v.tensor("w", w, ndim=3)
    indices_i, indices_j = _labels("indices_i", indices_i), _labels("indices_j", indices_j)
    if len(indices_i) != len(indices_j):
        raise ValueError(f"indices_i and indices_j must be non-empty and of equal lengths, got "
                         f"{len(indices_i)} and {len(indices_j)}")
    for name, seq, size in (("indices_i", indices_i, w.shape[1]),
                            ("indices_j", indices_j, w.shape[2])):
        if not all(0 <= t < size for t in seq):
            raise ValueError(f"{name} must be ints in [0, {size}), got {list(seq)!r}")
    out = w[:, indices_i, indices_j].prod(dim=-1)
    if not bool(torch.isfinite(out).all()):
        raise ValueError(f"w is too large: a product of {len(indices_i)} of its entries "
                         f"overflows {w.dtype}")
    return out


def _monomials(name: str, monomials, d: int) -> list[tuple[list[int], list[int]]]:
    """A non-empty list of (indices_i, indices_j): equal-length int labels in [0, d)."""
    if isinstance(monomials, (str, bytes)) or not isinstance(monomials, Sequence):
        raise ValueError(f"{name} must be a list of (indices_i, indices_j), got "
                         f"{type(monomials).__name__}")
    if not monomials:
        raise ValueError(f"{name} must be a non-empty list of (indices_i, indices_j)")
    out = []
    for m, mono in enumerate(monomials):
        if isinstance(mono, (str, bytes)) or not isinstance(mono, Sequence) or len(mono) != 2:
            raise ValueError(f"{name}[{m}] must be a pair (indices_i, indices_j), got {mono!r}")
        ii, jj = (_labels(f"{name}[{m}][{s}]", seq) for s, seq in enumerate(mono))
        if len(ii) != len(jj):
            raise ValueError(f"{name}[{m}] must have indices_i and indices_j of equal lengths, "
                             f"got {len(ii)} and {len(jj)}")
        if not all(0 <= t < d for t in ii + jj):
            raise ValueError(f"{name}[{m}] must hold ints in [0, d) = [0, {d}), got {mono!r}")
        out.append((ii, jj))
    return out


def haar_monomial_samples(monomials: Sequence[tuple[Sequence[int], Sequence[int]]], d: int,
                          n_samples: int, *, gen: torch.Generator,
                          chunk: int = 20_000) -> torch.Tensor:
    """Monte Carlo samples of several monomials of one Haar matrix W in O(d).

    ``monomials`` is a list of (indices_i, indices_j); returns (len(monomials), n_samples):
    column s holds the monomials of the s-th matrix (drawn with
    :func:`eit.sample.laws.haar_orthogonal`, ``chunk`` matrices at a time to bound memory).

    Raises
    ------
    eit.core.validate.AllocationTooLarge
        If the result or one chunk does not fit in memory.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> haar_monomial_samples([([0, 0], [0, 0])], 3, 5, gen=generator(0)).shape
    torch.Size([1, 5])
    """
    d = v.positive_int("d", d)
    n_samples = v.positive_int("n_samples", n_samples)
    chunk = v.positive_int("chunk", chunk)
    gen = v.generator("gen", gen, optional=False)
    monomials = _monomials("monomials", monomials, d)
    v.memory("n_samples", 8.0 * n_samples * len(monomials))      # the result
    v.memory("chunk", 8.0 * 3 * min(chunk, n_samples) * d * d)      # one chunk of matrices
    from ..sample.laws import haar_orthogonal

    parts = []
    done = 0
    while done < n_samples:
        m = min(chunk, n_samples - done)
        w = haar_orthogonal(m, d, d, gen=gen)
        parts.append(torch.stack([monomial_samples(w, ii, jj) for ii, jj in monomials]))
        done += m
    return torch.cat(parts, dim=1)


__all__ = ["D", "PairPartition", "pair_partitions", "loop_lengths", "loops", "coset_type",
           "gram_matrix", "weingarten_coset", "weingarten_o", "weingarten_matrix", "delta",
           "haar_moment", "monomial_samples", "haar_monomial_samples", "coset_types",
           "contributing_pairs"]


def coset_types(k: int) -> list[tuple[int, ...]]:
    """Every coset type of pair partitions of 2k points: the partitions of k.

    Parts in decreasing order, the partitions in reverse lexicographic order (``(k,)`` first,
    ``(1,) * k`` last), as SymPy's ``partitions`` generates them.

    References
    ----------
    Collins & Matsumoto (2009), Section 7 (the Weingarten function tabulated by coset type);
    Meterez et al. (2024), Appendix B.

    Examples
    --------
    >>> coset_types(3)
    [(3,), (2, 1), (1, 1, 1)]
    """
    k = _k(k)
    types = [tuple(sorted((a for a, m in p.items() for _ in range(m)), reverse=True))
             for p in partitions(k)]
    return sorted(types, reverse=True)


def contributing_pairs(indices_i: Sequence, indices_j: Sequence
                       ) -> list[tuple[PairPartition, PairPartition, tuple[int, ...]]]:
    """The terms of eq. (36) that survive: pairs ``(p, q)`` with ``Delta_p(i) Delta_q(j) = 1``.

    Parameters
    ----------
    indices_i, indices_j : sequence
        Index labels of the rows and columns of a monomial of even degree ``2k`` (equal
        labels: equal indices).

    Returns
    -------
    list of (p, q, coset type)
        ``p`` over the pair partitions with ``Delta_p(i) = 1`` (outer loop, in the order of
        :func:`pair_partitions`), ``q`` those with ``Delta_q(j) = 1``, and
        :func:`coset_type` ``(p, q)``; the moment is the sum of ``Wg`` over these types.

    References
    ----------
    Meterez et al. (2024), Appendix B, eqs. (36)-(40).

    Examples
    --------
    >>> [mu for *_, mu in contributing_pairs((0, 0, 1, 1), (0, 0, 0, 0))]
    [(1, 1), (2,), (2,)]
    """
    indices_i, indices_j = _labels("indices_i", indices_i), _labels("indices_j", indices_j)
    if len(indices_i) != len(indices_j) or len(indices_i) % 2:
        raise ValueError(f"indices_i and indices_j must have one even length, got "
                         f"{len(indices_i)} and {len(indices_j)}")
    ps = pair_partitions(_degree("indices_i and indices_j", len(indices_i)))
    left = [p for p in ps if delta(p, indices_i)]
    right = [q for q in ps if delta(q, indices_j)]
    return [(p, q, coset_type(p, q)) for p in left for q in right]
