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

from ..exact import chernoff
from ..exact import one_layer as law
from ..verdicts import stats
from .series import panels

__all__ = ["tail_figure", "distortion_figure"]


def _two(name: str, value: Mapping) -> list:
    if not isinstance(value, Mapping) or not 1 <= len(value) <= 2:
        raise ValueError(f"{name} must be a mapping with one or two entries")
    return list(value.items())


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
    items = _two("measured", measured)
    ms = np.unique(np.geomspace(*grid, 60).astype(int))
    series = [
        ("theory", "exact probability", ms, [law.relu_layer_tail(int(k), eps) for k in ms]),
        ("theory", "Lemma 2 bound, eq. (5)", ms,
         [min(1, chernoff.failure_bound(k, eps)) for k in ms], {"color": "tab:red"}),
        ("theory", "optimal Chernoff bound", ms,
         [min(1, chernoff.optimal_bound(k, eps)) for k in ms], {"color": "tab:orange"})]
    for (label, counts), shift, style in zip(items, (1 / 1.06, 1.06), ({}, {"fmt": "s"})):
        series.append(("counts", label, np.array(widths) * shift, counts, style))
    return panels(series, xlabel="fan-out m (units)", xscale="log", yscale="log",
                  ylabel=f"P(| ||v||²/||u||² − 1 | > {eps})", ylim=(1e-6, 2))


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
    items = _two("distortion", distortion)
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
    for key, d in items:
        title = key if titles is None else titles[key]
        means = [stats.mean(row) for row in d]
        content[title] = theory + [
            ("measured", "measured mean", widths, means),
            ("points", "measured 95% quantile", widths, d.quantile(1 - delta, dim=-1), None,
             {"marker": "x", **gray})]
        if stored is not None:
            content[title].append(("points", "mean, paper scale", widths, *stored[key].T,
                                   {"marker": "D", "color": "tab:green"}))
    return panels(content, xlabel="width m (units)",
                  ylabel="distortion ε (dimensionless)", yscale="log")
