"""One figure style for the whole book, and the plots every chapter draws."""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.lines as mlines
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib import cbook

STYLE = {
    "figure.figsize": (6.4, 3.8),
    "figure.dpi": 110,
    "savefig.dpi": 110,
    "font.size": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "lines.linewidth": 1.6,
}
THEORY = {"color": "black", "linestyle": "--", "linewidth": 1.4}


__all__ = ["STYLE", "THEORY", "use_style", "measured", "theory", "subplots"]


def use_style() -> None:
    """Apply the book style; in a notebook, figures are PNGs at twice the pixels of their
    displayed size (``retina``: sharp on high-density screens and when a phone zooms)."""
    mpl.rcParams.update(STYLE)
    if "inline" in mpl.get_backend():
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("retina")


def _np(a, name: str = "data", *, ndim: int | tuple[int, ...] | None = None) -> np.ndarray:
    """``a`` as a float64 NumPy array (a tensor is copied to the host), checked: real, with
    ``ndim`` dimensions where given, without inf or NaN (Matplotlib would silently leave a
    gap); every error names ``name``."""
    if isinstance(a, torch.Tensor):
        if a.is_complex():
            raise TypeError(f"{name} must be a real array, got dtype {a.dtype}")
        a = a.detach().cpu().double().numpy()
    elif a is None or isinstance(a, (str, bytes, dict)) or np.iscomplexobj(a):
        raise TypeError(f"{name} must be a real array, got {type(a).__name__}")
    try:
        arr = np.asarray(a, dtype=float)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} must be a rectangular real array: {e}") from None
    if ndim is not None and arr.ndim not in ((ndim,) if isinstance(ndim, int) else ndim):
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name}: refusing to plot inf or NaN (track log-norms instead)")
    return arr


def measured(ax, x, y, se=None, *, label: str, **kw):
    """Measurement with ±2 SE error bars (95%)."""
    x, y = _np(x, "x"), _np(y, "y")
    style = {"marker": "o", "linestyle": "none", "ms": 4, **kw}
    if se is None:
        return ax.plot(x, y, label=label, **style)
    return ax.errorbar(x, y, yerr=2 * _np(se, "se"), capsize=2, label=label, **style)


def theory(ax, x, y, *, label: str, **kw):
    """A theory curve, drawn dashed in black unless told otherwise."""
    # aliases ("ls", "lw", "c") given by a chapter override the defaults' full names
    style = {**THEORY, **cbook.normalize_kwargs(kw, mlines.Line2D)}
    return ax.plot(_np(x, "x"), _np(y, "y"), label=label, **style)


def subplots(ncols: int = 1, nrows: int = 1, **kw):
    use_style()
    width, height = STYLE["figure.figsize"]
    kw.setdefault("figsize", (width * (1 if ncols == 1 else 0.62 * ncols), height * nrows))
    return plt.subplots(nrows, ncols, layout="constrained", **kw)
