"""The five width profiles of Hanin & Rolnick (2018), section 3.3 and Figure 3.

Types (i)-(iii) use the same multiset of widths (half 30, half 10) in three orders, type (iv)
has constant width 15 (the same sum of reciprocals, ``1/30 + 1/10 = 2/15``) and type (v)
constant width 20 (a smaller sum).
"""

from __future__ import annotations

from fractions import Fraction

from ..core import validate as v

__all__ = ["FIGURE_3_TYPES", "figure_3_widths", "reciprocal_sum"]

#: The five architectures of section 3.3, in the paper's order.
FIGURE_3_TYPES = ("(i) alternating 30/10", "(ii) 30 then 10", "(iii) 10 then 30",
                  "(iv) constant 15", "(v) constant 20")


def figure_3_widths(kind: str, depth: int) -> list[int]:
    """The hidden widths ``[n_1, ..., n_d]`` of one of :data:`FIGURE_3_TYPES` at even depth.

    Examples
    --------
    >>> figure_3_widths("(iii) 10 then 30", 4)
    [10, 10, 30, 30]
    """
    depth = v.positive_int("depth", depth)
    if depth % 2:
        raise ValueError(f"depth must be even (types i-iii pair the widths), got {depth}")
    half = depth // 2
    profiles = {FIGURE_3_TYPES[0]: [30, 10] * half,
                FIGURE_3_TYPES[1]: [30] * half + [10] * half,
                FIGURE_3_TYPES[2]: [10] * half + [30] * half,
                FIGURE_3_TYPES[3]: [15] * depth,
                FIGURE_3_TYPES[4]: [20] * depth}
    if kind not in profiles:
        raise ValueError(f"kind must be one of {FIGURE_3_TYPES}, got {kind!r}")
    return profiles[kind]


def reciprocal_sum(widths) -> Fraction:
    """``sum_j 1/n_j`` exactly.

    Examples
    --------
    >>> reciprocal_sum([30, 10]) == reciprocal_sum([15, 15])
    True
    """
    return sum((Fraction(1, n) for n in v.widths("widths", widths)), Fraction(0))
