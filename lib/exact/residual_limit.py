"""The infinite-width limit of residual ReLU networks with scaled blocks (Arpit & Bengio 2019,
Appendix A; this book's derivation).

In an infinitely wide block ``F(h) = ReLU(W g)`` with ``||g|| = ||h||`` and W ~ N(0, 2/n), the
law of large numbers makes the cosine between h and F(h) deterministic: only the mean
component ``s = <h, 1>/sqrt(n)`` of the state matters, and with ``r = ||h||`` and
``c = sqrt(2) E ReLU(Z) = 1/sqrt(pi)`` one block with scale gamma maps

    s -> s + gamma c r,    r^2 -> (1 + gamma^2) r^2 + 2 gamma c r s.

With gamma = 1/B and B -> infinity this is r' = c s, s' = c r on [0, 1], so that
``||f(x)||^2/||x||^2 -> (cosh c + sigma sinh c)^2``, sigma = cos(x, 1).

References
----------
Arpit & Bengio (2019), Theorem 5, eqs. (219)-(232).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction

from ..core import validate as v

__all__ = ["MEAN_GAIN", "infinite_width_ratio", "limit_ratio", "eq228_bounds",
           "eq228_margin"]

#: c = sqrt(2) E[ReLU(Z)] = 1/sqrt(pi): the mean a wide ReLU block adds per unit of norm.
MEAN_GAIN = 1 / math.sqrt(math.pi)


def infinite_width_ratio(blocks: int, cos_x1: float, gamma: float | None = None) -> float:
    """||h^B||^2/||x||^2 of the infinite-width recursion, ``gamma = 1/B`` by default.

    Examples
    --------
    >>> round(infinite_width_ratio(1, 0.0), 6)
    2.0
    >>> round(infinite_width_ratio(4096, 1.0), 3) == round(limit_ratio(1.0), 3)
    True
    """
    blocks = v.positive_int("blocks", blocks)
    cos_x1 = v.in_interval("cos_x1", cos_x1, -1.0, 1.0, closed_hi=True)
    g = 1.0 / blocks if gamma is None else v.positive_float("gamma", gamma)
    r, s = 1.0, cos_x1
    try:
        for _ in range(blocks):
            r, s = (math.sqrt((1 + g**2) * r**2 + 2 * g * MEAN_GAIN * r * s),
                    s + g * MEAN_GAIN * r)
        out = r**2
    except OverflowError:
        out = math.inf
    if not math.isfinite(out):
        raise ValueError(f"gamma={gamma!r} with blocks={blocks}: the ratio overflows float64")
    return out


def limit_ratio(cos_x1: float) -> float:
    """The B -> infinity limit (cosh c + sigma sinh c)^2, c = 1/sqrt(pi).

    Examples
    --------
    >>> round(limit_ratio(-1.0), 4), round(limit_ratio(1.0), 4)
    (0.3236, 3.0906)
    """
    cos_x1 = v.in_interval("cos_x1", cos_x1, -1.0, 1.0, closed_hi=True)
    return (math.cosh(MEAN_GAIN) + cos_x1 * math.sinh(MEAN_GAIN)) ** 2


def eq228_bounds(blocks: int) -> tuple[float, float]:
    """The bounds ``((1 - 1/B)^(2B), (1 + 1/B)^(2B))`` of eq. (228), correctly rounded.

    The theorem's bounds on ``||h^B||^2/||x||^2`` for infinitely wide blocks with
    ``gamma = 1/B``: each block changes the squared norm by a factor between
    ``(1 - gamma)^2`` and ``(1 + gamma)^2`` (Cauchy-Schwarz, eq. 223). Computed in exact
    rational arithmetic, then rounded once to the nearest float.

    References
    ----------
    Arpit & Bengio (2019), Theorem 5, eqs. (223) and (228).

    Examples
    --------
    >>> eq228_bounds(1)
    (0.0, 4.0)
    >>> eq228_bounds(2)
    (0.0625, 5.0625)
    """
    blocks = v.positive_int("blocks", blocks)
    step = Fraction(1, blocks)
    return float((1 - step) ** (2 * blocks)), float((1 + step) ** (2 * blocks))


def eq228_margin(blocks: Iterable[int], cos_x1: Iterable[float]) -> float:
    """The closest distance of the infinite-width recursion to the bounds of eq. (228).

    The minimum, over every number of blocks B in ``blocks`` and every cos(x, 1) in
    ``cos_x1``, of the distance of :func:`infinite_width_ratio` (``gamma = 1/B``) to the
    nearer of the two bounds :func:`eq228_bounds`; negative if the recursion leaves them.

    References
    ----------
    Arpit & Bengio (2019), Theorem 5, eq. (228).

    Examples
    --------
    >>> round(eq228_margin([1], [0.0]), 12)
    2.0
    """
    for name, value in (("blocks", blocks), ("cos_x1", cos_x1)):
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise TypeError(f"{name} must be an iterable of numbers, got {type(value).__name__}")
    blocks, cos_x1 = list(blocks), list(cos_x1)
    if not blocks or not cos_x1:
        raise ValueError("blocks and cos_x1 must not be empty")
    slack = []
    for b in blocks:
        lo, hi = eq228_bounds(b)
        for sg in cos_x1:
            ratio = infinite_width_ratio(b, sg)
            slack.append(min(ratio - lo, hi - ratio))
    return min(slack)
