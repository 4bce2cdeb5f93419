"""The budget of BN Jacobians along the linear BN chain, measured term by term.

Appendix D of Meterez et al. (2024) bounds the gradient of the linear BN network through a
*budget*: the sum of the log-norms of the layers' BN Jacobians (the orthogonal weights add
nothing, Lemma D.12), split at the first layer ``S`` where the isometry gap falls below
``1/(16d)`` (eq. 96): a first phase of expected length ``E[S]`` (Lemma D.5) and a second
phase whose sum of ``sqrt(d phi)`` decays geometrically (Lemma D.6); Lemma D.3 adds them.
This module measures those terms along the chains of :mod:`eit.models.bn_chain` for many
networks at once and compares them with the explicit bounds of :mod:`eit.exact.bn_budget`:

* :func:`measure`: one input's :class:`Budget` (``phi(X^0)``, ``S``, the Lemma D.6 and
  Lemma D.3 sums at several depths, per network);
* :func:`over_bounds`: the measured terms divided by their bounds, one estimate per depth;
* :func:`to_arrays`, :func:`from_arrays`: the stored form of a paper-scale run;
* :func:`lemma_d12_gap`: Lemma D.12's identity checked by autograd on one random layer.

References
----------
A. Meterez et al., "Towards training without depth limits: batch normalization without
gradient explosion", ICLR 2024, Lemmas D.3, D.5, D.6 and D.12.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import torch

from ..core import validate as v
from ..core.device import randn
from ..exact import bn_budget as bb
from ..sample.laws import haar_orthogonal
from ..verdicts import stats
from . import bn_chain as bc
from .batchnorm import _ints

__all__ = ["Budget", "PARTS", "measure", "over_bounds", "to_arrays", "from_arrays",
           "lemma_d12_gap"]

#: the parts of a :class:`Budget`, in order (the suffixes of the stored arrays' names)
PARTS = ("phi0", "S", "d6", "d3")


class Budget(NamedTuple):
    """The budget terms of one input batch over ``n_nets`` networks.

    Attributes
    ----------
    phi0 : float
        The isometry gap ``phi(X^0)`` of the input.
    S : torch.Tensor
        ``(n_nets,)`` float64: the first layer whose gap is at most ``1/(16d)`` (eq. 96).
    d6 : torch.Tensor
        ``(len(depths), n_nets)``: ``sum_{l=S+1}^{L} sqrt(d phi(X^l))`` (Lemma D.6), row j at
        depth ``L = depths[j]``.
    d3 : torch.Tensor
        ``(len(depths), n_nets)``: ``sum_{k=1}^{L} log ||J_BN(H^k)||`` (Lemma D.3).
    """

    phi0: float
    S: torch.Tensor
    d6: torch.Tensor
    d3: torch.Tensor


def measure(x0: torch.Tensor, depths: Sequence[int], *, n_nets: int,
            gen: torch.Generator) -> Budget:
    """The budget terms along ``n_nets`` chains from one square input batch ``x0`` (d, d).

    The chain runs to ``max(depths) + 1`` layers, plus, for an input above the threshold
    ``1/(16d)``, ``3 (d + 2) log(16 d phi0)`` layers so that every network reaches the
    threshold (three times the near-isometry time to cover the factor ``16 d phi0``).

    Parameters
    ----------
    x0 : torch.Tensor
        One BN output batch, shape (d, d), d >= 2, non-singular (phi0 finite).
    depths : sequence of int
        The depths L at which the sums are taken (positive).
    n_nets : int
        The number of independent networks (Haar-orthogonal weights).
    gen : torch.Generator
        The random generator.

    Returns
    -------
    Budget

    References
    ----------
    Meterez et al. (2024), eq. (96) and Lemmas D.3, D.5, D.6.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> x0 = bc.with_isometry_gap(4, [1.0])[0]
    >>> b = measure(x0, [1, 4], n_nets=3, gen=generator(0))
    >>> round(b.phi0, 9), tuple(b.S.shape), tuple(b.d6.shape), tuple(b.d3.shape)
    (1.0, (3,), (2, 3), (2, 3))
    """
    x0 = v.tensor("x0", x0, ndim=2)
    if x0.shape[0] != x0.shape[1] or x0.shape[0] < 2:
        raise ValueError(f"x0 must be a square batch (d, d) with d >= 2, got {tuple(x0.shape)}")
    if bool((x0 == 0).all()):
        raise ValueError("x0 must not be zero (phi0 = 0/0)")
    d = x0.shape[-1]
    depths = _ints("depths", depths)
    n_nets = v.positive_int("n_nets", n_nets)
    thr = bb.threshold(d)
    phi0 = float(bc.isometry_gap_det(x0))
    if not math.isfinite(phi0):
        raise ValueError("x0 must be non-singular (phi0 = +inf: the chain never reaches the "
                         "threshold)")
    extra = int(3 * (d + 2) * math.log(16 * d * phi0)) if phi0 > thr else 0
    chain = bc.run_chain(x0, max(depths) + 1 + extra, n_nets=n_nets, gen=gen)
    start = bc.hitting_time(chain.gaps, thr)
    d6 = bc.tail_sums(torch.sqrt(d * chain.gaps.clamp_min(0)), start, depths)
    d3 = torch.stack([chain.jac[1:L + 1].sum(dim=0) for L in depths])
    return Budget(phi0, start.double(), d6, d3)


def over_bounds(budget: Budget, d: int, depths: Sequence[int]
                ) -> tuple[list[stats.Estimate], list[stats.Estimate]]:
    """The measured Lemma D.6 and Lemma D.3 sums over their explicit bounds, per depth.

    Parameters
    ----------
    budget : Budget
        From :func:`measure` (or :func:`from_arrays`) with these ``depths``.
    d : int
        The width.
    depths : sequence of int
        The depths of the budget's rows (``budget.d6[j]`` is at ``depths[j]``).

    Returns
    -------
    d6, d3 : list of Estimate
        ``mean / bound`` at each depth: :func:`eit.exact.bn_budget.lemma_d6` and
        :func:`eit.exact.bn_budget.lemma_d3` at the input's ``phi0``.

    References
    ----------
    Meterez et al. (2024), Lemma D.6 and eqs. (102), (104).

    Examples
    --------
    >>> b = Budget(1.0, torch.zeros(2), torch.ones(1, 2), torch.ones(1, 2))
    >>> d6, d3 = over_bounds(b, 2, [1])
    >>> round(d6[0].value * bb.lemma_d6(2, 1.0, 1), 12)
    1.0
    """
    if not isinstance(budget, Budget):
        raise TypeError(f"budget must be a Budget, got {type(budget).__name__}")
    d = v.positive_int("d", d)
    depths = _ints("depths", depths)
    v.positive_float("budget.phi0", budget.phi0)
    d6, d3 = v.tensor("budget.d6", budget.d6, ndim=2), v.tensor("budget.d3", budget.d3, ndim=2)
    if d6.shape != d3.shape:
        raise ValueError(f"budget.d6 and budget.d3 must have one shape (len(depths), n_nets), "
                         f"got {tuple(d6.shape)} and {tuple(d3.shape)}")
    if budget.d6.shape[0] != len(depths):
        raise ValueError(f"depths must name the budget's {budget.d6.shape[0]} rows, got "
                         f"{depths}")
    d6 = [stats.mean(budget.d6[j]) / bb.lemma_d6(d, budget.phi0, L)
          for j, L in enumerate(depths)]
    d3 = [stats.mean(budget.d3[j]) / bb.lemma_d3(d, budget.phi0, L)
          for j, L in enumerate(depths)]
    return d6, d3


def to_arrays(runs: Mapping[tuple[int, str], Budget], dims: Sequence[int]
              ) -> dict[str, np.ndarray]:
    """The budgets of the widths ``dims`` as named arrays ``d<width>_<input>_<part>``.

    The stored layout of ``d6`` and ``d3`` is ``(n_nets, len(depths))``, the networks first
    (the layout of the files already in ``data/``, whose sha256 is recorded): they are
    transposed here from the :class:`Budget`'s ``(len(depths), n_nets)``, and back by
    :func:`from_arrays`.

    Examples
    --------
    >>> b = Budget(0.5, torch.zeros(2), torch.ones(1, 2), torch.ones(1, 2))
    >>> arrays = to_arrays({(2, "far"): b}, [2])
    >>> sorted(arrays), arrays["d2_far_d6"].shape
    (['d2_far_S', 'd2_far_d3', 'd2_far_d6', 'd2_far_phi0'], (2, 1))
    """
    if not isinstance(runs, Mapping):
        raise TypeError(f"runs must be a mapping (width, input name) -> Budget, got "
                        f"{type(runs).__name__}")
    for key, budget in runs.items():
        if not (isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], int)
                and isinstance(key[1], str) and "_" not in key[1]):
            raise ValueError(f"runs must be keyed by (width, input name without '_'), got "
                             f"{key!r}")
        if not isinstance(budget, Budget):
            raise TypeError(f"runs[{key!r}] must be a Budget, got {type(budget).__name__}")
    # no widths (a run that stores none: the default scale) -> no arrays
    dims = [] if isinstance(dims, (list, tuple)) and len(dims) == 0 else _ints("dims", dims)

    def stored(part: str, x) -> np.ndarray:   # the results leave the device here, once
        x = x.detach().cpu() if isinstance(x, torch.Tensor) else x
        if part in ("d6", "d3"):        # stored (n_nets, len(depths)), C-ordered as in data/
            return np.ascontiguousarray(x.T)
        return np.asarray(x)

    return {f"d{n}_{name}_{part}": stored(part, budget[i])
            for (n, name), budget in runs.items() if n in dims
            for i, part in enumerate(PARTS)}


def from_arrays(arrays: Mapping[str, np.ndarray], provenance: dict,
                depths: Sequence[int]) -> dict[tuple[int, str], Budget]:
    """The budgets of a stored run (:func:`to_arrays`), at the requested ``depths``.

    ``provenance["meta"]`` names the stored widths (``"dims"``) and depths (``"depths"``);
    every requested depth must be among the stored ones. The stored ``d6`` and ``d3`` are
    ``(n_nets, len(stored depths))`` (see :func:`to_arrays`); the budgets returned have the
    :class:`Budget`'s ``(len(depths), n_nets)``.

    Examples
    --------
    >>> b = Budget(0.5, torch.zeros(2), torch.ones(3, 2), torch.ones(3, 2))
    >>> meta = {"meta": {"dims": [2], "depths": [1, 4, 16]}}
    >>> got = from_arrays(to_arrays({(2, "far"): b}, [2]), meta, [4])
    >>> got[2, "far"].phi0, tuple(got[2, "far"].d6.shape)
    (0.5, (1, 2))
    """
    if not isinstance(arrays, Mapping):
        raise TypeError(f"arrays must be a mapping of names to arrays, got "
                        f"{type(arrays).__name__}")
    meta = provenance.get("meta") if isinstance(provenance, Mapping) else None
    if not isinstance(meta, Mapping) or not all(
            isinstance(meta.get(key), Sequence) and not isinstance(meta.get(key), str)
            for key in ("dims", "depths")):
        raise ValueError(f"provenance must hold meta with the stored 'dims' and 'depths', got "
                         f"{provenance!r:.80}")
    depths = _ints("depths", depths)
    stored = list(meta["depths"])
    missing = [L for L in depths if L not in stored]
    if missing:
        raise ValueError(f"depths {missing} are not stored (stored: {stored})")
    cols = [stored.index(L) for L in depths]
    runs = {}
    for n in meta["dims"]:
        names = sorted({k.split("_")[1] for k in arrays
                        if isinstance(k, str) and k.startswith(f"d{n}_")})
        for name in names:
            keys = [f"d{n}_{name}_{p}" for p in PARTS]
            if not all(isinstance(arrays.get(k), np.ndarray) for k in keys):
                raise ValueError(f"arrays must hold the NumPy arrays {keys}")
            a = {p: torch.from_numpy(arrays[k]) for p, k in zip(PARTS, keys, strict=True)}
            # stored (n_nets, len(stored depths)); the Budget is (len(depths), n_nets)
            runs[n, name] = Budget(float(a["phi0"]), a["S"], a["d6"][:, cols].T,
                                   a["d3"][:, cols].T)
    return runs


def lemma_d12_gap(d: int, *, gen: torch.Generator) -> float:
    """``|log ||dX^(l+1)/dX^l|| - log ||J_BN(H^l)|||`` for one random layer of width d.

    The input is the BN output of a Gaussian (d, d) matrix, the weight Haar-orthogonal; the
    layer's full Jacobian is autograd's, its operator norm from the singular values. Lemma
    D.12 (with equality, by the Kronecker structure ``W ⊗ I``) makes the gap zero up to
    rounding.

    References
    ----------
    Meterez et al. (2024), Lemma D.12, eq. (160).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> lemma_d12_gap(3, gen=generator(0)) < 1e-10
    True
    """
    d = v.positive_int("d", d)
    if d < 2:
        raise ValueError("d must be >= 2 (a BN row of one entry has a zero Jacobian)")
    gen = v.generator("gen", gen, optional=False)
    x = bc.bn_rows(randn(d, d, gen=gen))[0]
    w = haar_orthogonal(1, d, d, gen=gen)[0]
    jac = torch.autograd.functional.jacobian(lambda z: bc.bn_rows(w @ z)[0], x)
    op = torch.linalg.matrix_norm(jac.reshape(d * d, d * d), ord=2)
    return abs(float(torch.log(op) - bc.bn_jacobian_lognorm(w @ x)))
