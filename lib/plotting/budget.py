"""The budget of BN Jacobians in depth: its expected sum, and measured over bound.

The figure of the Jacobian budget (Meterez et al. 2024, Appendix D): on the left the expected
sum of the BN Jacobians' log-norms over the first L layers against L, per width, from a far
input (solid) and a near-isometry input (dashed); on the right the measured Lemma D.6
(circles) and Lemma D.3 (triangles) sums over their explicit bounds near isometry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..core import validate as v
from ..verdicts.stats import Estimate
from . import _np, plt, subplots
from .curves import _mean_se, mean_band

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
    depths = v.widths("depths", depths)
    if not isinstance(runs, Mapping):
        raise TypeError(f"runs must be a mapping (width, input) -> Budget, got "
                        f"{type(runs).__name__}")
    if not runs:
        raise ValueError("runs must be a non-empty mapping (width, input) -> Budget")
    if not all(isinstance(k, tuple) and len(k) == 2 for k in runs):
        raise ValueError(f"runs must be keyed by (width, input), got keys {list(runs)}")
    widths = sorted({n for n, _ in runs})
    d3 = {}
    for n in widths:
        for name in ("far", "near"):
            where = f"runs[{n!r}, {name!r}]"
            if (n, name) not in runs:
                raise ValueError(f"runs has no entry {where} (each width needs 'far' and "
                                 "'near')")
            d3[n, name] = _np(getattr(runs[n, name], "d3", None), f"{where}.d3", ndim=2)
            if d3[n, name].shape[0] != len(depths) or d3[n, name].shape[1] < 2:
                raise ValueError(f"{where}.d3 must have shape (len(depths), n_nets) = "
                                 f"({len(depths)}, >= 2), got {d3[n, name].shape}")
            try:
                _mean_se(d3[n, name], 1)
            except ValueError as e:
                raise ValueError(f"{where}.d3: {e}") from None
    over = {}
    for label, values in (("over_d6", over_d6), ("over_d3", over_d3)):
        if not isinstance(values, Mapping):
            raise TypeError(f"{label} must be a mapping (width, input, j) -> Estimate, got "
                            f"{type(values).__name__}")
        for n in widths:
            for j in range(len(depths)):
                e = values.get((n, "near", j))
                if not isinstance(e, Estimate):
                    raise ValueError(f"{label}[{n!r}, 'near', {j}] must be an Estimate, got "
                                     f"{e!r}")
            over[label, n] = [values[n, "near", j].value for j in range(len(depths))]
    fig, axes = subplots(ncols=2)
    colors = plt.cm.viridis(np.linspace(0, 0.9, len(widths)))
    for n, c in zip(widths, colors):
        for name, style in (("far", "-"), ("near", "--")):
            mean_band(axes[0], depths, d3[n, name], dim=1, color=c, linestyle=style,
                      label=f"d = {n}" if name == "far" else None)
        for label, marker in (("over_d6", "o"), ("over_d3", "^")):
            axes[1].plot(depths, over[label, n], color=c, marker=marker, ms=4, linestyle=":")
    axes[0].set(xscale="log", yscale="symlog", xlabel="depth $L$ (layers)",
                ylabel=r"$\mathbb{E}\sum_k \log\Vert J_{\mathrm{BN}}(H^k)\Vert$ (nats)")
    axes[0].legend(fontsize=7)
    axes[1].axhline(1.0, color="black", linewidth=1)
    axes[1].set(xscale="log", yscale="log", xlabel="depth $L$ (layers)",
                ylabel="measured / bound (near isometry)")
    return fig, axes
