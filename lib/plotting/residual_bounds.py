"""Residual networks with blocks scaled by 1/B: the output norm against the number of blocks.

One panel on log-log axes: the bounds ``(1 -+ 1/B)^(2B)`` of eq. (228) and their limits
``e^(+-2)`` (eq. 32) in red, the exact infinite-width recursion
(:func:`eit.exact.residual_limit.infinite_width_ratio`) dashed for each input, and the
measured mean squared ratios of finite-width networks as points with ±2 SE error bars.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from ..core import validate as v
from ..exact.residual_limit import infinite_width_ratio
from ..verdicts.stats import Estimate
from .series import panels

__all__ = ["residual_bounds_figure"]


def residual_bounds_figure(blocks: Sequence[int], cos_x1: Sequence[float],
                           measured: Mapping[str, Sequence[Sequence]], *,
                           max_blocks: int = 64):
    """Draw the figure; returns ``(fig, axes)``.

    Parameters
    ----------
    blocks : sequence of int
        The numbers of blocks B that were measured.
    cos_x1 : sequence of float
        cos(x, 1) of each input, in [-1, 1] (at most three: markers o, s, ^).
    measured : mapping str -> sequence of sequences of Estimate
        Block type -> for each input, one estimate of ``E||f(x)||^2/||x||^2`` per B. The
        first type is drawn with full markers, the second with open ones.
    max_blocks : int
        The theory curves run over B = 1..max_blocks.

    References
    ----------
    Arpit & Bengio (2019), Appendix A, Theorem 5, eqs. (228) and (32).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from eit.verdicts.stats import Estimate
    >>> est = [[Estimate(1.3, 0.01, 10)] * 2]
    >>> fig, axes = residual_bounds_figure([1, 2], [0.0], {"plain": est}, max_blocks=4)
    >>> len(axes)
    1
    """
    blocks = v.widths("blocks", blocks)
    cos_x1 = v.real_sequence("cos_x1", cos_x1, lo=-1.0)
    if len(cos_x1) > 3 or any(c > 1 for c in cos_x1):
        raise ValueError(f"cos_x1 takes one to three cosines in [-1, 1], got {cos_x1}")
    if not isinstance(measured, Mapping):
        raise TypeError(f"measured must be a mapping of block type -> estimates, got "
                        f"{type(measured).__name__}")
    if not 1 <= len(measured) <= 2:
        raise ValueError(f"measured must hold one or two block types, got {len(measured)}")
    for name, per_input in measured.items():
        where = f"measured[{name!r}]"
        if isinstance(per_input, (str, bytes, Mapping)) or not isinstance(per_input, Sequence):
            raise TypeError(f"{where} must be a sequence (one per input of cos_x1) of sequences "
                            f"of Estimate, got {type(per_input).__name__}")
        if len(per_input) != len(cos_x1):
            raise ValueError(f"{where} must have one sequence per input of cos_x1 "
                             f"({len(cos_x1)}), got {len(per_input)}")
        for i, ests in enumerate(per_input):
            if isinstance(ests, (str, bytes, Mapping)) or not isinstance(ests, Sequence) \
                    or not all(isinstance(e, Estimate) for e in ests):
                raise TypeError(f"{where}[{i}] must be a sequence of Estimate, got {ests!r}")
            if len(ests) != len(blocks):
                raise ValueError(f"{where}[{i}] must have one estimate per entry of blocks "
                                 f"({len(blocks)}), got {len(ests)}")
    max_blocks = v.positive_int("max_blocks", max_blocks)
    if max_blocks < 2:
        raise ValueError(f"max_blocks must be >= 2 (the theory curves), got {max_blocks}")
    bb, red = np.arange(1, max_blocks + 1), {"color": "tab:red"}
    series = [("theory", "eq. (228) bounds", bb, (1 + 1 / bb) ** (2 * bb), red),
              ("theory", None, bb[1:], (1 - 1 / bb[1:]) ** (2 * bb[1:]), red),
              ("theory", "e^±2 (eq. 32)", [1, max_blocks], [math.e**2] * 2,
               {**red, "ls": ":"}),
              ("theory", None, [1, max_blocks], [math.e**-2] * 2, {**red, "ls": ":"})]
    for i, (sg, marker) in enumerate(zip(cos_x1, "os^")):
        series.append(("theory", "infinite-width recursion" if i == 0 else None, bb,
                       [infinite_width_ratio(int(b), sg) for b in bb]))
        series += [("measured", f"{name}, cos(x, 1) = {sg:+.0f}", blocks, est[i],
                    {"marker": marker, "fillstyle": fill})
                   for (name, est), fill in zip(measured.items(), ("full", "none"))]
    return panels(series, xlabel="number of blocks $B$", xscale="log", yscale="log",
                  ylabel=r"$\Vert f(x)\Vert^2/\Vert x\Vert^2$ (dimensionless)", ylim=(1e-2, 10))
