"""Figure scaffolding for Monte Carlo curves: means with error bars, survival functions.

Every function draws on a given Matplotlib axis in the book's style (:mod:`eit.plotting`) and
refuses infinite or NaN values (plot log-norms instead).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import torch

from ..core import validate as v
from ..verdicts.stats import Proportion, mean_se
from . import _np, subplots

__all__ = ["mean_band", "survival", "runs", "mean_shaded", "mean_band_above", "log_axis_at",
           "proportion_bars", "proportion_panels", "annotated_grid"]


def _runs_dim(dim) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"dim must be 0 or 1 (an int), got {type(dim).__name__}")
    if dim not in (0, 1):
        raise ValueError(f"dim must be 0 or 1, got {dim!r}")
    return dim


def _mean_se(samples, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error over the runs (axis ``dim``) of a runs x points array."""
    dim = _runs_dim(dim)
    s = _np(samples, "samples")
    if s.ndim != 2:
        raise ValueError(f"samples must be two-dimensional (runs x points), got {s.shape}")
    s = np.moveaxis(s, dim, 0)
    n = s.shape[0]
    if n < 2:
        raise ValueError("samples needs at least 2 runs for an error bar or a band")
    with np.errstate(over="ignore", invalid="ignore"):
        mean, se = s.mean(axis=0), s.std(axis=0, ddof=1) / math.sqrt(n)
    if not (np.isfinite(mean).all() and np.isfinite(se).all()):
        raise ValueError("samples are too large for a mean and a standard error in floating "
                         "point (they overflow); rescale them (e.g. take logs)")
    return mean, se


def _points(x, n: int, what: str) -> np.ndarray:
    """``x``: one finite value per point (``n`` of them, the points of ``what``)."""
    x = _np(x, "x", ndim=1)
    if x.shape != (n,):
        raise ValueError(f"x must have one value per point of {what} ({n}), got shape "
                         f"{x.shape}")
    return x


def _floor(floor) -> float | None:
    return None if floor is None else v.finite_real("floor", floor)


def mean_band(ax, x, samples, *, dim: int = 0, floor: float | None = None, **kw):
    """The mean of ``samples`` along ``dim`` (the independent runs) with ±2 SE error bars.

    ``samples`` has one entry per x along the other dimension. With ``floor`` the means are
    clipped below at it (for log axes). Other keywords go to ``ax.errorbar``.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> _ = mean_band(ax, [1, 2], torch.tensor([[1.0, 2.0], [3.0, 4.0]]), label="runs")
    """
    floor = _floor(floor)
    m, se = _mean_se(samples, dim)
    x = _points(x, len(m), "samples")
    if floor is not None:
        m = np.maximum(m, floor)
    style = {"marker": "o", "ms": 3, "capsize": 2, **kw}
    return ax.errorbar(x, m, yerr=2 * se, **style)


def survival(ax, samples, **kw):
    """The empirical survival function ``P(X >= x)`` of one-dimensional ``samples``."""
    s = np.sort(_np(samples, "samples").ravel())
    if s.size == 0:
        raise ValueError("samples must not be empty")
    return ax.plot(s, 1.0 - np.arange(s.size) / s.size, **kw)


def runs(ax, x, samples, *, label: str | None = None, floor: float | None = None, **kw):
    """Every run of ``samples`` (points x runs) as its own line, labelled once.

    Shows the spread of a few runs (training curves) where a mean would hide it. With
    ``floor`` the values are clipped below at it (for log axes). Other keywords go to
    ``ax.plot``. Returns the lines.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> len(runs(ax, [1, 2], torch.tensor([[1.0, 2.0], [3.0, 0.0]]), floor=0.5, label="r"))
    2
    """
    floor = _floor(floor)
    s = _np(samples, "samples")
    if s.ndim != 2:
        raise ValueError(f"samples must be two-dimensional (points x runs), got {s.shape}")
    x = _points(x, s.shape[0], "samples")
    if floor is not None:
        s = np.maximum(s, floor)
    lines = []
    for k in range(s.shape[1]):
        lines += ax.plot(x, s[:, k], label=label if k == 0 else None, **kw)
    return lines


def mean_shaded(ax, x, samples, *, dim: int = 0, alpha: float = 0.25, **kw):
    """Plot the mean of ``samples`` over ``dim`` (the runs) with a shaded ±2 SE band.

    Parameters
    ----------
    ax : matplotlib Axes
    x : array_like
        One value per point.
    samples : array_like or torch.Tensor
        Two-dimensional: runs along ``dim``, points along the other axis.
    dim : int
        The axis of the runs.
    alpha : float
        Opacity of the band.
    **kw
        To ``ax.plot`` (``color`` and ``label`` among them); the band takes the line's color.

    Returns
    -------
    list of Line2D
        What ``ax.plot`` returned.

    References
    ----------
    Arpit & Bengio (2019), Figure 5 (training loss against epoch, over seeds).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> _ = mean_shaded(ax, [1, 2], [[1.0, 2.0], [3.0, 4.0]], label="runs")
    """
    alpha = v.probability("alpha", alpha)
    mean, se = _mean_se(samples, dim)
    x = _points(x, len(mean), "samples")
    lines = ax.plot(x, mean, **kw)
    ax.fill_between(x, mean - 2 * se, mean + 2 * se, color=lines[0].get_color(),
                    alpha=alpha, lw=0)
    return lines


def mean_band_above(ax, samples: torch.Tensor, *, floor: float, label: str | None,
                    color=None, band_floor: float = 1e-16, alpha: float = 0.2, dim: int = 0
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw the mean of ``samples`` over the runs (along ``dim``) against the point index,
    with a ±2 SE band, at the points where the mean exceeds ``floor``.

    Parameters
    ----------
    ax : matplotlib axis
    samples : torch.Tensor
        ``(runs, points)`` (``dim=0``) or ``(points, runs)`` (``dim=1``, the axis order of
        per-layer tables), at least 2 runs.
    floor : float
        Points whose mean is at most ``floor`` are left out (a log axis below it shows
        rounding).
    label : str or None
        The legend label of the line.
    color : optional
        The colour of the line and of its band.
    band_floor : float
        The band's lower edge is clipped at it (a log axis cannot show values <= 0).
    alpha : float
        Opacity of the band.
    dim : int
        The axis of the runs, 0 or 1.

    Returns
    -------
    (x, mean) : tuple of torch.Tensor
        The indices drawn, and the mean at *every* point ``(points,)``.

    References
    ----------
    Meterez et al. (2024), Figure 1 (the isometry gap in depth).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> s = torch.tensor([[1.0, 0.1, 1e-20], [1.0, 0.2, 1e-20]], dtype=torch.float64)
    >>> x, m = mean_band_above(ax, s, floor=1e-13, label="gap")
    >>> x.tolist()
    [0, 1]
    """
    dim = _runs_dim(dim)
    if not isinstance(samples, torch.Tensor):
        raise TypeError(f"samples must be a torch.Tensor, got {type(samples).__name__}")
    if samples.ndim != 2 or samples.shape[dim] < 2:
        raise ValueError("samples must be a tensor (runs, points) or (points, runs) with at "
                         f"least 2 runs along dim, got shape {tuple(samples.shape)}")
    floor = v.positive_float("floor", floor)
    band_floor = v.positive_float("band_floor", band_floor)
    alpha = v.probability("alpha", alpha)
    m, se = mean_se(samples, dim=dim)
    if not bool(torch.isfinite(se).all()):
        raise ValueError("samples are too large for a standard error in floating point (they "
                         "overflow); rescale them (e.g. take logs)")
    keep = m > floor
    x = torch.arange(len(m))[keep]
    ax.plot(x, m[keep], color=color, label=label)
    ax.fill_between(x, (m - 2 * se).clamp_min(band_floor)[keep], (m + 2 * se)[keep],
                    color=color, alpha=alpha)
    return x, m


def log_axis_at(ax, values: Sequence[float], *, axis: str = "x") -> None:
    """Make ``axis`` logarithmic with one tick, in plain numbers, at each of ``values``.

    The measured depths or widths (4, 16, 64) label the axis instead of powers of ten, and the
    minor ticks are turned off.

    References
    ----------
    Arpit, Campos & Bengio (2019), Figure 2 and Table 2 (quantities against depth).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> log_axis_at(ax, [4, 16, 64])
    >>> [t.get_text() for t in ax.get_xticklabels()]
    ['4', '16', '64']
    """
    axis = v.choice("axis", axis, ("x", "y"))
    if isinstance(values, np.ndarray):
        values = values.tolist()
    values = v.real_sequence("values", values, positive=True)
    getattr(ax, f"set_{axis}scale")("log")
    getattr(ax, f"set_{axis}ticks")(values, [f"{t:g}" for t in values])
    ax.minorticks_off()


def proportion_bars(ax, x, props: Sequence[Proportion], **kw):
    """Fractions ``props`` at ``x`` with their Clopper-Pearson intervals, joined by a line.

    Keywords go to ``ax.errorbar`` (``color``, ``marker``, ``label``, ...).

    References
    ----------
    Arpit, Campos & Bengio (2019), Figure 4 (the percentage of runs that do not diverge).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> from eit.verdicts.stats import proportion
    >>> fig, ax = plt.subplots()
    >>> _ = proportion_bars(ax, [1, 2], [proportion(0, 8), proportion(8, 8)], marker="o")
    """
    props = _proportions("props", props)
    x = _np(x, "x")
    if x.shape != (len(props),):
        raise ValueError(f"x must have one value per proportion of props ({len(props)}), got "
                         f"shape {x.shape}")
    p = np.array([q.value for q in props])
    err = np.array([[q.value - q.lo for q in props], [q.hi - q.value for q in props]])
    style = {"capsize": 2, "ms": 4, "elinewidth": 0.9, "linewidth": 1.2, **kw}
    return ax.errorbar(x, p, yerr=err, **style)


def proportion_panels(panels: Mapping[str, Sequence[tuple]], *, xlabel: str, ylabel: str,
                      spread: float = 0.0, **axes_kw):
    """One panel per entry of ``panels`` (title -> series), fractions with their intervals.

    Each series is ``(label, x, proportions)`` or ``(label, x, proportions, kw)``, drawn by
    :func:`proportion_bars`. On a log x axis the series of a panel are spread apart for
    legibility: series ``i`` of ``k`` is drawn at ``x * 10**(spread * (i - (k - 1) / 2))``.
    ``axes_kw`` (``xscale``, ...) apply to every panel; the panels share the y axis.
    Returns ``(fig, axes)``.

    References
    ----------
    Arpit, Campos & Bengio (2019), Figures 2 (right) and 4: the runs that do not diverge
    against the learning rate.

    Examples
    --------
    >>> from eit.verdicts.stats import proportion
    >>> fig, axes = proportion_panels({"a": [("s", [1e-2, 1e-1], [proportion(2, 4)] * 2)]},
    ...                               xlabel="rate", ylabel="fraction", xscale="log")
    >>> len(axes)
    1
    """
    if not isinstance(panels, Mapping):
        raise TypeError(f"panels must be a mapping of title -> series, got "
                        f"{type(panels).__name__}")
    if not panels:
        raise ValueError("panels must hold at least one panel")
    spread = v.finite_real("spread", spread)
    checked = {}
    for title, series in panels.items():
        name = f"panels[{title!r}]"
        if isinstance(series, (str, bytes)) or not isinstance(series, Sequence):
            raise TypeError(f"{name} must be a sequence of series, got {type(series).__name__}")
        rows = []
        for i, s in enumerate(series):
            if not isinstance(s, (tuple, list)) or len(s) not in (3, 4) or (
                    len(s) == 4 and not isinstance(s[3], Mapping)):
                raise TypeError(f"{name}[{i}] must be (label, x, proportions) or (label, x, "
                                f"proportions, kw), got {s!r}")
            props = _proportions(f"{name}[{i}] proportions", s[2])
            x = _np(s[1], f"{name}[{i}] x", ndim=1)
            if x.shape != (len(props),):
                raise ValueError(f"{name}[{i}]: x must have one value per proportion "
                                 f"({len(props)}), got shape {x.shape}")
            rows.append((s[0], x, props, dict(s[3]) if len(s) == 4 else {}))
        checked[title] = rows
    fig, axes = subplots(ncols=len(panels), sharey=True)
    axes = np.atleast_1d(axes)
    for ax, (title, series) in zip(axes, checked.items()):
        for i, (label, x, props, kw) in enumerate(series):
            shift = 10 ** (spread * (i - (len(series) - 1) / 2))
            proportion_bars(ax, x * shift, props, label=label, **kw)
        ax.set(xlabel=xlabel, title=title, **axes_kw)
    axes[0].set_ylabel(ylabel)
    return fig, axes


def annotated_grid(ax, values, *, xticklabels: Sequence, yticklabels: Sequence, marks=None,
                   digits: int = 2, dark_below: float = 0.6, **kw):
    """A heat map of ``values`` (rows x columns) with each cell's value written in it.

    Rows run along the y axis (``yticklabels``, bottom to top), columns along the x axis
    (``xticklabels``). Cells where ``marks`` (a boolean array of the same shape) is true get
    a ``*`` after their value. Text is white on cells below ``dark_below`` (in the units of
    ``values``) and black elsewhere. Other keywords go to ``ax.imshow`` (``cmap``, ``vmin``,
    ``vmax``); returns the image, for a colour bar.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> im = annotated_grid(ax, [[0.5, 1.0]], xticklabels=["a", "b"], yticklabels=["r"],
    ...                     marks=[[False, True]])
    >>> [t.get_text() for t in ax.texts]
    ['0.50', '1.00*']
    """
    grid = _np(values, "values")
    if grid.ndim != 2:
        raise ValueError(f"values must be two-dimensional (rows x columns), got {grid.shape}")
    for name, labels in (("xticklabels", xticklabels), ("yticklabels", yticklabels)):
        if isinstance(labels, (str, bytes)) or not isinstance(labels, (Sequence, np.ndarray)):
            raise TypeError(f"{name} must be a sequence of labels, got {type(labels).__name__}")
    if (len(yticklabels), len(xticklabels)) != grid.shape:
        raise ValueError(f"{len(yticklabels)} yticklabels and {len(xticklabels)} "
                         f"xticklabels do not match values of shape {grid.shape}")
    m = np.zeros(grid.shape, dtype=bool) if marks is None else _marks(marks)
    if m.shape != grid.shape:
        raise ValueError(f"marks must have the shape of values {grid.shape}, got {m.shape}")
    digits = v.nonnegative_int("digits", digits)
    dark_below = v.finite_real("dark_below", dark_below)
    style = {"origin": "lower", "cmap": "viridis", "aspect": "auto", **kw}
    im = ax.imshow(grid, **style)
    for i, j in np.ndindex(*grid.shape):
        ax.text(j, i, f"{grid[i, j]:.{digits}f}" + ("*" if m[i, j] else ""), ha="center",
                va="center", fontsize=8, color="white" if grid[i, j] < dark_below else "black")
    ax.set_xticks(range(grid.shape[1]), [str(x) for x in xticklabels])
    ax.set_yticks(range(grid.shape[0]), [str(y) for y in yticklabels])
    ax.grid(False)
    return im


def _marks(marks) -> np.ndarray:
    """A boolean array (NumPy, a tensor or nested lists of bools)."""
    if isinstance(marks, torch.Tensor):
        marks = marks.detach().cpu().numpy()
    if isinstance(marks, (str, bytes, dict)):
        raise TypeError(f"marks must be a boolean array, got {type(marks).__name__}")
    m = np.asarray(marks)
    if m.dtype != bool:
        raise TypeError(f"marks must be a boolean array, got dtype {m.dtype}")
    return m


def _proportions(name: str, props) -> list[Proportion]:
    """A sequence of :class:`~eit.verdicts.stats.Proportion`, checked."""
    if isinstance(props, (str, bytes, Mapping)) or not isinstance(props, Iterable):
        raise TypeError(f"{name} must be a sequence of Proportion, got {type(props).__name__}")
    for i, q in enumerate(props):
        if not isinstance(q, Proportion):
            raise TypeError(f"{name}[{i}] must be a Proportion, got {type(q).__name__}")
    return list(props)
