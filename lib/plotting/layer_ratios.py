"""Per-layer ratio figures: the layout of Arpit & Bengio (2019), Figures 1-4.

One panel per initialization scheme; in each, one curve per width: the mean over the inputs
of a per-layer ratio (||h^l||/||x||, or a gradient ratio) with error bars of one standard
deviation over the inputs, as the paper draws them; theory curves dashed; an optional
overlay of paper-scale results (mean line and a band of one standard deviation).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from . import _np, subplots, theory

__all__ = ["ratio_panels"]


def ratio_panels(runs: Mapping, *, ylabel: str, curves: Mapping | None = None,
                 paper: Mapping | None = None, log_panels: Sequence[str] = ()):
    """Draw the panels and return ``(fig, axes)``.

    Parameters
    ----------
    runs : mapping
        ``{scheme: {width: ratios}}``, ratios of shape ``(L, N)`` (layer, input): one network
        per width, as in the paper's figures.
    ylabel : str
        The label of the y axes.
    curves : mapping, optional
        ``{scheme: [(label, y), ...]}``: theory curves of length L, dashed.
    paper : mapping, optional
        ``{scheme: {width: (mean, sd)}}``: per-layer paper-scale results, drawn as a line and
        a band of one standard deviation.
    log_panels : sequence of str
        The schemes whose panel has a logarithmic y axis.

    Examples
    --------
    >>> import numpy as np
    >>> fig, axes = ratio_panels({"He": {10: np.ones((3, 4))}}, ylabel="ratio")
    >>> len(axes)
    1
    """
    fig, axes = subplots(ncols=len(runs))
    axes = np.atleast_1d(axes)
    for ax, (scheme, by_width) in zip(axes, runs.items()):
        for width, r in by_width.items():
            r = _np(r)
            layers = np.arange(1, r.shape[0] + 1)
            ax.errorbar(layers, r.mean(-1), yerr=r.std(-1, ddof=1), fmt="o-", ms=3,
                        capsize=2, label=f"width {width}")
        for width, (mean, sd) in (paper or {}).get(scheme, {}).items():
            mean, sd = _np(mean), _np(sd)
            layers = np.arange(1, mean.shape[0] + 1)
            line, = ax.plot(layers, mean, color="tab:green", lw=1.2,
                            label=f"width {width}, paper scale")
            ax.fill_between(layers, mean - sd, mean + sd, color=line.get_color(), alpha=0.15,
                            lw=0)
        for label, y in (curves or {}).get(scheme, []):
            theory(ax, np.arange(1, len(y) + 1), y, label=label)
        ax.set(title=scheme, xlabel="layer l", yscale="log" if scheme in log_panels
               else "linear")
    axes[0].set_ylabel(ylabel)
    handles, labels = {}, []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in handles:
                handles[lab] = h
                labels.append(lab)
    fig.legend([handles[k] for k in labels], labels, loc="outside lower center",
               ncols=min(4, len(labels)), fontsize=8)
    return fig, axes
