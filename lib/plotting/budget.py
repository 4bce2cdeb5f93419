"""The budget of BN Jacobians in depth: its expected sum, and measured over bound.

The figure of the Jacobian budget (Meterez et al. 2024, Appendix D): on the left the expected
sum of the BN Jacobians' log-norms over the first L layers against L, per width, from a far
input (solid) and a near-isometry input (dashed); on the right the measured Lemma D.6
(circles) and Lemma D.3 (triangles) sums over their explicit bounds near isometry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from . import plt, subplots
from .curves import mean_band

__all__ = ["budget_panels"]


def budget_panels(depths: Sequence[int], runs: Mapping, over_d6: Mapping,
                  over_d3: Mapping):
    """Draw the budget figure; returns ``(fig, axes)``.

    Parameters
    ----------
    depths : sequence of int
        The depths L of the budgets' rows (``d3`` is ``(len(depths), n_nets)``).
    runs : mapping (width, input) -> Budget
        :class:`eit.models.jacobian_budget.Budget` per width and input (``"far"`` and
        ``"near"``).
    over_d6, over_d3 : mapping (width, input, j) -> Estimate
        Measured over bound of Lemmas D.6 and D.3 (only the ``"near"`` input is drawn).

    References
    ----------
    Meterez et al. (2024), Lemmas D.3 and D.6.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import torch
    >>> from eit.models.jacobian_budget import Budget
    >>> from eit.verdicts.stats import Estimate
    >>> b = Budget(1.0, torch.zeros(3), torch.ones(2, 3), torch.rand(2, 3))
    >>> over = {(2, "near", j): Estimate(0.5, 0.1, 3) for j in range(2)}
    >>> fig, axes = budget_panels([1, 4], {(2, "far"): b, (2, "near"): b}, over, over)
    >>> len(axes)
    2
    """
    if not isinstance(runs, Mapping) or not runs:
        raise ValueError("runs must be a non-empty mapping (width, input) -> Budget")
    widths = sorted({n for n, _ in runs})
    fig, axes = subplots(ncols=2)
    colors = plt.cm.viridis(np.linspace(0, 0.9, len(widths)))
    for n, c in zip(widths, colors):
        for name, style in (("far", "-"), ("near", "--")):
            mean_band(axes[0], depths, runs[n, name].d3, dim=1, color=c, linestyle=style,
                      label=f"d = {n}" if name == "far" else None)
        for over, marker in ((over_d6, "o"), (over_d3, "^")):
            axes[1].plot(depths, [over[n, "near", j].value for j in range(len(depths))],
                         color=c, marker=marker, ms=4, linestyle=":")
    axes[0].set(xscale="log", yscale="symlog", xlabel="depth L (layers)",
                ylabel="E Σₖ log‖J_BN(Hᵏ)‖ (nats)")
    axes[0].legend(fontsize=7)
    axes[1].axhline(1.0, color="black", linewidth=1)
    axes[1].set(xscale="log", yscale="log", xlabel="depth L (layers)",
                ylabel="measured / bound (near isometry)")
    return fig, axes
