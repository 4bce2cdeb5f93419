"""The norm distortion of one random ReLU layer: its tail and its size against the width.

Two figures of Arpit & Bengio (2019), drawn from the exact one-layer law
(:mod:`eit.exact.one_layer`: ``||v||^2/||u||^2 = (2/m) chi^2_K``, ``K ~ Bin(m, 1/2)``) and the
Chernoff bounds of Lemmas 2 and 4 (:mod:`eit.exact.chernoff`), with measurements on top:

* :func:`tail_figure`: ``P(| ||v||^2/||u||^2 - 1 | > eps)`` against the width m: the exact
  probability, the bound of eq. (5), the optimal bound of the same Chernoff form, and the
  measured frequencies with their Clopper-Pearson intervals;
* :func:`distortion_figure`: Figure 6, the distortion ``|1 - ||h||/||x|| |`` (eq. 35)
  against the width: measured mean and 95% quantile against the exact law, and the eps of
  Lemma 2 at a failure probability delta on the squared-norm and the norm scale.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import torch

from ..core import validate as v
from ..exact import chernoff
from ..exact import one_layer as law
from ..verdicts import stats
from . import _np
from .series import panels

__all__ = ["tail_figure", "distortion_figure"]


def _two(name: str, value: Mapping) -> list:
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a mapping, got {type(value).__name__}")
    if not 1 <= len(value) <= 2:
        raise ValueError(f"{name} must be a mapping with one or two entries, got {len(value)}")
    return list(value.items())


def _positive(name: str, values, n: int) -> np.ndarray:
    """One finite value > 0 per width (a log axis would silently drop the others)."""
    arr = _np(values, name, ndim=1)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have one value per width ({n}), got shape {arr.shape}")
    if (arr <= 0).any():
        raise ValueError(f"{name} must be > 0 (a log axis cannot show 0), got {arr.tolist()}")
    return arr


def tail_figure(eps: float, widths: Sequence[int],
                measured: Mapping[str, Sequence[stats.Proportion]], *,
                grid: tuple[int, int] = (4, 4096)):
    """The failure probability of one layer against its width; returns ``(fig, axes)``.

    Parameters
    ----------
    eps : float
        The distortion of the squared norm, in (0, 1).
    widths : sequence of int
        The measured widths m.
    measured : mapping str -> sequence of Proportion
        Label -> one frequency per width (one or two layers: the first drawn slightly left
        of its width with round markers, the second slightly right with squares).
    grid : (int, int)
        The range of widths of the theory curves.

    References
    ----------
    Arpit & Bengio (2019), Lemmas 2 and 4, eqs. (5) and (11).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> p = [stats.proportion(30, 1000), stats.proportion(3, 1000)]
    >>> fig, axes = tail_figure(0.3, [100, 200], {"measured": p}, grid=(50, 400))
    >>> len(axes)
    1
    """
    eps = v.probability("eps", eps, open_ends=True)
    widths = v.widths("widths", widths)
    items = _two("measured", measured)
    for label, counts in items:
        if isinstance(counts, (str, bytes, Mapping)) or not isinstance(counts, Sequence) \
                or not all(isinstance(p, stats.Proportion) for p in counts):
            raise TypeError(f"measured[{label!r}] must be a sequence of Proportion, got "
                            f"{counts!r}")
        if len(counts) != len(widths):
            raise ValueError(f"measured[{label!r}] must have one frequency per entry of widths "
                             f"({len(widths)}), got {len(counts)}")
    grid = v.widths("grid", grid)
    if len(grid) != 2 or not grid[0] < grid[1]:
        raise ValueError(f"grid must be two widths (lo, hi) with lo < hi, got {grid}")
    ms = np.unique(np.geomspace(*grid, 60).astype(int))
    series = [
        ("theory", "exact probability", ms, [law.relu_layer_tail(int(k), eps) for k in ms]),
        ("theory", "Lemma 2 bound, eq. (5)", ms,
         [min(1, chernoff.failure_bound(k, eps)) for k in ms], {"color": "tab:red"}),
        ("theory", "optimal Chernoff bound", ms,
         [min(1, chernoff.optimal_bound(k, eps)) for k in ms], {"color": "tab:orange"})]
    for (label, counts), shift, style in zip(items, (1 / 1.06, 1.06), ({}, {"fmt": "s"})):
        series.append(("counts", label, np.array(widths) * shift, counts, style))
    return panels(series, xlabel="fan-out $m$ (units)", xscale="log", yscale="log",
                  ylabel=rf"$P(|\Vert v\Vert^2/\Vert u\Vert^2 - 1| > {eps})$", ylim=(1e-6, 2))


def distortion_figure(widths: Sequence[int], delta: float,
                      distortion: Mapping[str, torch.Tensor],
                      stored: Mapping[str, np.ndarray] | None = None, *,
                      titles: Mapping[str, str] | None = None):
    """Figure 6: the distortion of one layer against its width; returns ``(fig, axes)``.

    Parameters
    ----------
    widths : sequence of int
        The widths m.
    delta : float
        The failure probability at which Lemma 2's eps is drawn (and the quantile
        ``1 - delta`` of the distortion).
    distortion : mapping str -> torch.Tensor
        Layer -> ``|1 - ||h||/||x|| |`` of shape ``(len(widths), samples)``; one panel per
        entry (one or two).
    stored : mapping str -> numpy.ndarray, optional
        Layer -> ``(len(widths), 2)`` means and standard errors of a stored run (the paper's
        scale), drawn as green diamonds.
    titles : mapping str -> str, optional
        Layer -> panel title (default: the layer's key).

    References
    ----------
    Arpit & Bengio (2019), Appendix B, Figure 6 and eq. (35).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> d = torch.rand(2, 50, dtype=torch.float64) / 10
    >>> fig, axes = distortion_figure([500, 1000], 0.05, {"ReLU layer": d})
    >>> len(axes)
    1
    """
    widths = v.widths("widths", widths)
    delta = v.probability("delta", delta, open_ends=True)
    items = _two("distortion", distortion)
    checked = {}
    for key, d in items:
        where = f"distortion[{key!r}]"
        d = v.tensor(where, d, ndim=2)
        if d.shape[0] != len(widths) or d.shape[1] < 2:
            raise ValueError(f"{where} must have shape (len(widths), samples) = "
                             f"({len(widths)}, >= 2), got {tuple(d.shape)}")
        if bool((d < 0).any()):
            raise ValueError(f"{where} must be >= 0 (a distortion |1 - ||h||/||x|| |)")
        try:
            means = [stats.mean(row) for row in d]
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
        checked[key] = (_positive(f"{where} (its means)", [m.value for m in means], len(widths)),
                        means,
                        _positive(f"{where} (its {1 - delta:g} quantiles)",
                                  d.quantile(1 - delta, dim=-1), len(widths)))
    if stored is not None:
        if not isinstance(stored, Mapping):
            raise TypeError(f"stored must be a mapping of layer -> array, got "
                            f"{type(stored).__name__}")
        for key, _ in items:
            if key not in stored:
                raise ValueError(f"stored has no entry for the layer {key!r}")
            arr = _np(stored[key], f"stored[{key!r}]", ndim=2)
            if arr.shape != (len(widths), 2):
                raise ValueError(f"stored[{key!r}] must have shape (len(widths), 2) = "
                                 f"({len(widths)}, 2), got {arr.shape}")
            _positive(f"stored[{key!r}] (its means)", arr[:, 0], len(widths))
            if (arr[:, 1] < 0).any():
                raise ValueError(f"stored[{key!r}]: its standard errors must be >= 0")
    if titles is not None:
        if not isinstance(titles, Mapping):
            raise TypeError(f"titles must be a mapping of layer -> title, got "
                            f"{type(titles).__name__}")
        for key, _ in items:
            if not isinstance(titles.get(key), str):
                raise ValueError(f"titles must give a title (str) for the layer {key!r}, got "
                                 f"{titles.get(key)!r}")
    eps_lemma = [chernoff.eps_at(m, delta) for m in widths]
    red, gray = {"color": "tab:red"}, {"color": "tab:gray"}
    theory = [("theory", "Lemma ε (squared norm)", widths, eps_lemma, red),
              ("theory", "Lemma ε (norm scale)", widths,
               [1 - math.sqrt(1 - x) for x in eps_lemma], {**red, "ls": ":"}),
              ("theory", "exact 95% quantile", widths,
               [law.relu_layer_distortion_quantile(m, 1 - delta) for m in widths], gray),
              ("theory", "exact mean", widths,
               [law.relu_layer_mean_distortion(m) for m in widths])]
    content = {}
    for key, _ in items:
        title = key if titles is None else titles[key]
        _, means, quantiles = checked[key]
        content[title] = theory + [
            ("measured", "measured mean", widths, means),
            ("points", "measured 95% quantile", widths, quantiles, None,
             {"marker": "x", **gray})]
        if stored is not None:
            content[title].append(("points", "mean, paper scale", widths,
                                   *np.asarray(stored[key], dtype=float).T,
                                   {"marker": "D", "color": "tab:green"}))
    return panels(content, xlabel="width $m$ (units)",
                  ylabel=r"distortion $\epsilon$ (dimensionless)", yscale="log")
