"""Mean-square laws of networks whose layers multiply the mean square by known factors.

When every layer (or residual block) multiplies the conditional mean square of the signal by
a factor that does not depend on its input, the tower property makes the law of the network
the running product of the factors: from the input forward, from the output backward. The
products are taken exactly (SymPy or :class:`fractions.Fraction` factors stay exact).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import reduce
from operator import mul

from .symbolic import _expr

__all__ = ["cumulative_law"]


def cumulative_law(factors: Sequence, *, backward: bool = False) -> list:
    """Running products of per-layer factors, in the row order of the layers.

    Parameters
    ----------
    factors : sequence
        ``[f_1, ..., f_L]``, the factor of each layer (numbers or SymPy expressions).
    backward : bool
        False: ``[f_1, f_1 f_2, ..., f_1 ... f_L]``, the mean square after each layer
        relative to the input. True: ``[f_1 ... f_L, f_2 ... f_L, ..., f_L]``, the mean
        square before each layer relative to the output (a gradient).

    Returns
    -------
    list
        L products, of the type of the factors.

    Raises
    ------
    ValueError
        If ``factors`` is empty, a factor is negative, NaN or infinite, or a product of
        floats overflows.
    TypeError
        If ``factors`` is not a sequence of numbers or SymPy expressions, or ``backward``
        is not a bool.

    References
    ----------
    Arpit, Campos & Bengio (2019), Figure 1: ``E||h^l||^2/||x||^2`` of a weight-normalized
    MLP (factor ``g^2 m/(2n)`` per layer) and ResNet (``1 + 1/B`` per block).

    Examples
    --------
    >>> from fractions import Fraction
    >>> cumulative_law([2, 3, 4])
    [2, 6, 24]
    >>> cumulative_law([Fraction(1, 2)] * 3, backward=True)
    [Fraction(1, 8), Fraction(1, 4), Fraction(1, 2)]
    """
    if isinstance(factors, str | bytes) or not isinstance(factors, Sequence):
        raise TypeError(f"factors must be a sequence, got {type(factors).__name__}")
    if len(factors) == 0:
        raise ValueError("factors must not be empty")
    if not isinstance(backward, bool):
        raise TypeError(f"backward must be a bool, got {type(backward).__name__}")
    f = [_expr(f"factors[{i}]", x, lo=0) for i, x in enumerate(factors)]
    if backward:
        out = [reduce(mul, f[i:]) for i in range(len(f))]
    else:
        out = [reduce(mul, f[: i + 1]) for i in range(len(f))]
    if any(isinstance(p, float) and not math.isfinite(p) for p in out):
        raise ValueError("factors: a running product overflows float64; give exact factors "
                         "(Fraction, SymPy) or fewer layers")
    return out
