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


def _mapping(name: str, value, *, empty: bool = False) -> Mapping:
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a mapping, got {type(value).__name__}")
    if not value and not empty:
        raise ValueError(f"{name} must not be empty")
    return value


def _checked(runs, curves, paper, log_panels):
    """The arguments of :func:`ratio_panels`, checked (each error names its argument): per
    scheme and width the mean and sd over the inputs, the paper bands, the theory curves."""
    ratios = {}
    for scheme, by_width in _mapping("runs", runs).items():
        ratios[scheme] = {}
        for width, r in _mapping(f"runs[{scheme!r}]", by_width).items():
            r = _np(r, f"runs[{scheme!r}][{width!r}]", ndim=2)
            if r.shape[0] < 1 or r.shape[1] < 2:
                raise ValueError(f"runs[{scheme!r}][{width!r}] must be (layers, inputs) with "
                                 f"at least 2 inputs (a standard deviation), got {r.shape}")
            with np.errstate(over="ignore", invalid="ignore"):
                mean, sd = r.mean(-1), r.std(-1, ddof=1)
            if not (np.isfinite(mean).all() and np.isfinite(sd).all()):
                raise ValueError(f"runs[{scheme!r}][{width!r}] is too large for a mean and a "
                                 "standard deviation in floating point")
            ratios[scheme][width] = (mean, sd)
    bands = {}
    for scheme, by_width in _mapping("paper", paper or {}, empty=True).items():
        bands[scheme] = {}
        for width, pair in _mapping(f"paper[{scheme!r}]", by_width, empty=True).items():
            where = f"paper[{scheme!r}][{width!r}]"
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"{where} must be a pair (mean, sd), got {pair!r}")
            mean, sd = _np(pair[0], f"{where} mean", ndim=1), _np(pair[1], f"{where} sd", ndim=1)
            if mean.shape != sd.shape or (sd < 0).any():
                raise ValueError(f"{where}: sd must be >= 0 with the shape of mean "
                                 f"{mean.shape}, got {sd.shape}")
            bands[scheme][width] = (mean, sd)
    lines = {}
    for scheme, items in _mapping("curves", curves or {}, empty=True).items():
        where = f"curves[{scheme!r}]"
        if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
            raise TypeError(f"{where} must be a sequence of (label, y), got "
                            f"{type(items).__name__}")
        lines[scheme] = []
        for i, pair in enumerate(items):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"{where}[{i}] must be a pair (label, y), got {pair!r}")
            lines[scheme].append((pair[0], _np(pair[1], f"{where}[{i}] y", ndim=1)))
    if isinstance(log_panels, (str, bytes)) or not isinstance(log_panels, Sequence) \
            or not all(isinstance(p, str) for p in log_panels):
        raise TypeError(f"log_panels must be a sequence of scheme names (str), got "
                        f"{log_panels!r}")
    return ratios, bands, lines


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
        a band of one standard deviation, in the colour of the network of the same width in
        ``runs`` (grey if there is none).
    log_panels : sequence of str
        The schemes whose panel has a logarithmic y axis.

    Examples
    --------
    >>> import numpy as np
    >>> fig, axes = ratio_panels({"He": {10: np.ones((3, 4))}}, ylabel="ratio")
    >>> len(axes)
    1
    """
    ratios, bands, lines = _checked(runs, curves, paper, log_panels)
    fig, axes = subplots(ncols=len(runs))
    axes = np.atleast_1d(axes)
    for ax, scheme in zip(axes, runs):
        colors = {}                      # a band takes the colour of its width's network
        for width, (mean, sd) in ratios[scheme].items():
            layers = np.arange(1, mean.shape[0] + 1)
            bars = ax.errorbar(layers, mean, yerr=sd, fmt="o-", ms=3, capsize=2,
                               label=f"width {width}")
            colors[width] = bars.lines[0].get_color()
        for width, (mean, sd) in bands.get(scheme, {}).items():
            layers = np.arange(1, mean.shape[0] + 1)
            line, = ax.plot(layers, mean, color=colors.get(width, "tab:gray"), lw=1.2,
                            label=f"width {width}, paper scale")
            ax.fill_between(layers, mean - sd, mean + sd, color=line.get_color(), alpha=0.15,
                            lw=0)
        for label, y in lines.get(scheme, []):
            theory(ax, np.arange(1, len(y) + 1), y, label=label)
        ax.set(title=scheme, xlabel=r"layer $\ell$", yscale="log" if scheme in log_panels
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
