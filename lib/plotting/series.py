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

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ..core import validate as v
from ..verdicts.stats import Estimate, Proportion
from . import _np, measured, subplots, theory

__all__ = ["panels", "draw"]


#: the kinds of series (the first entry of each tuple) and how many arrays follow ``x``
KINDS = {"theory": (1,), "measured": (1,), "points": (1, 2), "counts": (1,), "band": (2,),
         "range": (2,)}


def _split(series: tuple) -> tuple[tuple, dict]:
    if series and isinstance(series[-1], Mapping):
        return series[:-1], dict(series[-1])
    return series, {}


def _records(name: str, value, cls, n: int) -> list:
    """``n`` records of type ``cls`` (Estimate or Proportion), one per value of x."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a sequence of {cls.__name__}, got "
                        f"{type(value).__name__}")
    out = list(value)
    for i, r in enumerate(out):
        if not isinstance(r, cls):
            raise TypeError(f"{name}[{i}] must be {cls.__name__}, got {type(r).__name__}")
    if len(out) != n:
        raise ValueError(f"{name} must have one entry per value of x ({n}), got {len(out)}")
    return out


def _values(name: str, value, n: int) -> np.ndarray:
    """A finite one-dimensional array with one value per value of x."""
    arr = _np(value, name, ndim=1)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have one value per value of x ({n}), got shape "
                         f"{arr.shape}")
    return arr


def _checked(name: str, series) -> list[tuple]:
    """The series of one panel, checked (every error names ``name`` and the series' index):
    ``(kind, label, x, data, kw)`` with finite arrays and lists of records."""
    if isinstance(series, (str, bytes, Mapping)) or not isinstance(series, Iterable):
        raise TypeError(f"{name} must be a sequence of series tuples, got "
                        f"{type(series).__name__}")
    out = []
    for i, s in enumerate(series):
        where = f"{name}[{i}]"
        if not isinstance(s, (tuple, list)):
            raise TypeError(f"{where} must be a tuple (kind, label, x, ...), got "
                            f"{type(s).__name__}")
        (kind, label, *rest), kw = _split(tuple(s)) if len(s) >= 2 else ((None, None), {})
        if not isinstance(kind, str) or kind not in KINDS:
            raise ValueError(f"{where}: unknown series kind {kind!r}, not one of "
                             f"{tuple(KINDS)}")
        if len(rest) - 1 not in KINDS[kind]:
            raise ValueError(f"{where}: a {kind!r} series has x and "
                             f"{' or '.join(map(str, KINDS[kind]))} arrays, got "
                             f"{len(rest)} entries after its label")
        x = _np(rest[0], f"{where} x", ndim=1)
        n = len(x)
        if kind == "measured":
            data = [_records(f"{where} estimates", rest[1], Estimate, n)]
        elif kind == "counts":
            data = [_records(f"{where} proportions", rest[1], Proportion, n)]
        else:
            data = [None if (kind == "points" and j == 2 and a is None)
                    else _values(f"{where} {'data' if j == 1 else 'second array'}", a, n)
                    for j, a in enumerate(rest[1:], start=1)]
            if kind == "band" and (data[1] < 0).any():
                raise ValueError(f"{where}: the half-width of a band must be >= 0")
            if kind == "points" and len(data) == 2 and data[1] is not None \
                    and (data[1] < 0).any():
                raise ValueError(f"{where}: the standard errors must be >= 0")
        out.append((kind, label, x, data, kw))
    return out


def _draw(ax, series: list[tuple]) -> None:
    """Draw checked series (:func:`_checked`)."""
    for kind, label, x, data, kw in series:
        if kind == "theory":
            theory(ax, x, data[0], label=label, **kw)
        elif kind == "measured":
            est = data[0]
            measured(ax, x, [e.value for e in est], [e.se for e in est], label=label, **kw)
        elif kind == "points":
            measured(ax, x, data[0], data[1] if len(data) > 1 else None, label=label, **kw)
        elif kind == "counts":
            pos = [(xi, p) for xi, p in zip(x, data[0]) if p.successes > 0]
            if pos:
                y = np.array([p.value for _, p in pos])
                err = np.array([[p.value - p.lo, p.hi - p.value] for _, p in pos]).T
                style = {"fmt": "o", "ms": 4, "capsize": 2, **kw}
                ax.errorbar([xi for xi, _ in pos], y, yerr=err, label=label, **style)
        elif kind == "band":
            mean, half = data
            line, = ax.plot(x, mean, label=label, **kw)
            ax.fill_between(x, mean - half, mean + half, color=line.get_color(), alpha=0.25,
                            lw=0)
        else:                                                   # "range"
            ax.fill_between(x, data[0], data[1], label=label,
                            **{"alpha": 0.15, "lw": 0, **kw})


def draw(ax, series: Sequence[tuple]) -> None:
    """Draw the series (see the module docstring) on one axis.

    Every series is checked before anything is drawn: a known kind, the right number of
    arrays, finite values (Matplotlib would leave a silent gap at a NaN), one value per x.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> draw(ax, [("theory", "t", [1, 2], [1, 1]), ("points", "p", [1, 2], [1, 2], None)])
    """
    _draw(ax, _checked("series", series))


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
    if isinstance(content, Mapping):
        items = [(title, _checked(f"content[{title!r}]", series))
                 for title, series in content.items()]
    elif isinstance(content, (str, bytes)) or not isinstance(content, Iterable):
        raise TypeError(f"content must be a mapping of title -> series or a sequence of series, "
                        f"got {type(content).__name__}")
    else:
        items = [("", _checked("content", content))]
    if not items:
        raise ValueError("content must hold at least one panel")
    legend_cols = v.positive_int("legend_cols", legend_cols)
    if not isinstance(sharey, bool):
        raise TypeError(f"sharey must be a bool, got {type(sharey).__name__}")
    fig, axes = subplots(ncols=len(items), sharey=sharey and len(items) > 1)
    axes = np.atleast_1d(axes)
    for ax, (title, series) in zip(axes, items):
        _draw(ax, series)
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
