"""Figures declared as lists of series: theory curves against measurements, in the book style.

A chapter states *what* a panel shows, one tuple per series, and :func:`panels` draws it:

* ``("theory", label, x, y)``: a dashed theory curve (black unless ``color`` is given);
* ``("measured", label, x, estimates)``: points with ±2 SE error bars, from a list of
  :class:`~eit.verdicts.stats.Estimate` (or ``(x, values, se)`` arrays via ``"points"``);
* ``("points", label, x, y, se)``: points from arrays, ``se`` may be None;
* ``("counts", label, x, proportions)``: frequencies with their Clopper-Pearson intervals,
  points with no count left out (they cannot be drawn on a log axis);
* ``("band", label, x, mean, halfwidth)``: a line with a shaded band.
* ``("range", label, x, lo, hi)``: a shaded region between two curves (exact bounds).

Every tuple may end with a dict of matplotlib keyword arguments. The legend goes below the
panels, where it covers no data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from . import _np, measured, subplots, theory

__all__ = ["panels", "draw"]


def _split(series: tuple) -> tuple[tuple, dict]:
    if series and isinstance(series[-1], Mapping):
        return series[:-1], dict(series[-1])
    return series, {}


def draw(ax, series: Sequence[tuple]) -> None:
    """Draw the series (see the module docstring) on one axis."""
    for s in series:
        (kind, label, x, *rest), kw = _split(tuple(s))
        if kind == "theory":
            theory(ax, x, rest[0], label=label, **kw)
        elif kind == "measured":
            est = list(rest[0])
            measured(ax, x, [e.value for e in est], [e.se for e in est], label=label, **kw)
        elif kind == "points":
            measured(ax, x, rest[0], rest[1] if len(rest) > 1 else None, label=label, **kw)
        elif kind == "counts":
            pos = [(xi, p) for xi, p in zip(_np(x), rest[0]) if p.successes > 0]
            if pos:
                y = np.array([p.value for _, p in pos])
                err = np.array([[p.value - p.lo, p.hi - p.value] for _, p in pos]).T
                style = {"fmt": "o", "ms": 4, "capsize": 2, **kw}
                ax.errorbar([xi for xi, _ in pos], y, yerr=err, label=label, **style)
        elif kind == "band":
            x, mean, half = _np(x), _np(rest[0]), _np(rest[1])
            line, = ax.plot(x, mean, label=label, **kw)
            ax.fill_between(x, mean - half, mean + half, color=line.get_color(), alpha=0.25,
                            lw=0)
        elif kind == "range":
            ax.fill_between(_np(x), _np(rest[0]), _np(rest[1]), label=label,
                            **{"alpha": 0.15, "lw": 0, **kw})
        else:
            raise ValueError(f"unknown series kind {kind!r}")


def panels(content: Mapping[str, Sequence[tuple]] | Sequence[tuple], *, xlabel: str,
           ylabel: str, legend_cols: int = 3, sharey: bool = True, **axes_kw):
    """One panel per entry of ``content`` (title -> series), or one panel for a list.

    ``axes_kw`` (``xscale``, ``yscale``, ``ylim``, ...) apply to every panel. Returns
    ``(fig, axes)``.

    Examples
    --------
    >>> fig, axes = panels({"a": [("theory", "t", [1, 2], [1, 1])]}, xlabel="x", ylabel="y")
    >>> len(axes)
    1
    """
    items = (list(content.items()) if isinstance(content, Mapping)
             else [("", list(content))])
    fig, axes = subplots(ncols=len(items), sharey=sharey and len(items) > 1)
    axes = np.atleast_1d(axes)
    for ax, (title, series) in zip(axes, items):
        draw(ax, series)
        ax.set(xlabel=xlabel, title=title, **axes_kw)
    axes[0].set_ylabel(ylabel)
    seen: dict = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    if seen:
        fig.legend(list(seen.values()), list(seen), loc="outside lower center",
                   ncols=min(legend_cols, len(seen)), fontsize=8)
    return fig, axes
