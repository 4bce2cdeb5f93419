"""How the isometry gap of the linear BN chain decays in depth: inputs, ratios, monotonicity.

Along ``X_{l+1} = BN(W_l X_l)`` (Meterez et al. 2024, eqs. 3-4) the gap ``phi(X_l)``
(:func:`eit.models.batchnorm.isometry_gap`) never increases and, near isometry, each layer
multiplies its conditional mean by ``d/(d+2)``. This module holds what a chapter needs to
measure that:

* :func:`alternating_diagonal`: a near-isometric batch whose gap is exactly a given value;
* :func:`mean_ratio_after`: per network, the mean one-step ratio ``phi_{l+1}/phi_l`` over a
  fixed number of layers after the gap first falls below a threshold;
* :func:`non_increasing_steps`: the fraction of steps along which the gap does not increase.

The gaps are tables ``(depth + 1, n_nets)`` (layer first, then the networks, the axis order
of the engines' traces), as :func:`eit.models.batchnorm.isometry_gaps_in_depth` returns them.

References
----------
A. Meterez et al., "Towards training without depth limits: batch normalization without
gradient explosion", ICLR 2024, Theorem 1, Lemma B.1, Figure 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from ..core import validate as v
from ..core.device import DTYPE
from ..verdicts.stats import Proportion, proportion

__all__ = ["alternating_diagonal", "mean_ratio_after", "non_increasing_steps"]


def alternating_diagonal(d: int, phi: float) -> torch.Tensor:
    """The batch ``diag(s)`` with ``s_i^2 = 1 + delta, 1 - delta, ...`` and gap exactly ``phi``.

    ``phi = -log(1 - delta^2) / 2``, so ``delta = sqrt(1 - exp(-2 phi))``. The rows have the
    unit mean square of a BN output.

    Parameters
    ----------
    d : int
        The width and batch size, even.
    phi : float
        The isometry gap, ``> 0``, small enough that ``1 - delta`` is not 0 in float64
        (about ``phi < 18``; a larger gap raises).

    Returns
    -------
    torch.Tensor
        ``(d, d)``, float64.

    Examples
    --------
    >>> from eit.models.batchnorm import isometry_gap
    >>> round(float(isometry_gap(alternating_diagonal(4, 0.01))), 12)
    0.01
    """
    d = v.positive_int("d", d)
    if d % 2:
        raise ValueError(f"d must be even, got {d}")
    phi = v.positive_float("phi", phi)
    # 1 - exp(-2 phi) by expm1 where the subtraction cancels (phi < 1e-4); the direct form
    # elsewhere keeps the batches of the committed chapters bit for bit
    delta = math.sqrt(-math.expm1(-2 * phi) if phi < 1e-4 else 1 - math.exp(-2 * phi))
    if 1 - delta <= 0:
        raise ValueError(f"phi is too large for float64 (1 - delta rounds to 0, a singular "
                         f"batch): got {phi!r}")
    s2 = torch.tensor([1 + delta, 1 - delta] * (d // 2), dtype=DTYPE)
    return torch.diag(s2.sqrt())


def mean_ratio_after(gaps: torch.Tensor, threshold: float, steps: int) -> torch.Tensor:
    """Per network, the mean of ``phi_{l+1}/phi_l`` over ``steps`` layers from the first
    layer where ``phi < threshold``.

    A fixed number of layers per network matters: averaging over all layers inside a window
    of gaps would weight the ratios by the time a network spends there.

    Parameters
    ----------
    gaps : torch.Tensor
        ``(depth + 1, n_nets)``: ``phi(X_l)``, l = 0..depth
        (:func:`eit.models.batchnorm.isometry_gaps_in_depth`).
    threshold : float
        The gap below which the ratios are taken; every network must start above it.
    steps : int
        The number of ratios per network.

    Returns
    -------
    torch.Tensor
        ``(n_nets,)``.

    Raises
    ------
    ValueError
        A network starts below ``threshold``, or the chain is too short to hold ``steps``
        layers after it falls below.

    Examples
    --------
    >>> g = torch.tensor([[1.0, 0.5, 0.25, 0.125, 0.0625]], dtype=torch.float64).T
    >>> mean_ratio_after(g, 0.3, 2).tolist()
    [0.5]
    """
    g = v.tensor("gaps", gaps, ndim=2).T        # one row per network: (n_nets, depth + 1)
    threshold = v.positive_float("threshold", threshold)
    steps = v.positive_int("steps", steps)
    entry = (g < threshold).double().argmax(dim=1)
    if not bool((g[:, 0] >= threshold).all() and (entry + steps < g.shape[1]).all()):
        raise ValueError(f"gaps: the chain is too short (or starts below threshold = "
                         f"{threshold}) to observe steps = {steps} layers after the gap falls "
                         "below it")
    window = (entry.view(-1, 1) + torch.arange(steps, device=g.device)).clamp_max(g.shape[1] - 2)
    return (g[:, 1:] / g[:, :-1]).gather(1, window).mean(dim=1)


def non_increasing_steps(gaps: Sequence[torch.Tensor], *, rtol: float = 1e-9,
                         atol: float = 1e-15) -> Proportion:
    """The fraction of steps ``l -> l+1`` of all networks with ``phi_{l+1} <= phi_l``
    (up to ``rtol * phi_l + atol``, the rounding of the gap), over several runs, each a table
    of finite gaps ``(depth + 1, n_nets)`` with at least one step (depth >= 1).

    Examples
    --------
    >>> g = torch.tensor([[1.0], [0.5], [0.6]], dtype=torch.float64)
    >>> non_increasing_steps([g]).successes
    1
    """
    if isinstance(gaps, (str, bytes, torch.Tensor)) or not isinstance(gaps, Sequence):
        raise TypeError(f"gaps must be a sequence of tensors (depth + 1, n_nets), got "
                        f"{type(gaps).__name__}")
    gaps = [v.tensor(f"gaps[{i}]", g, ndim=2) for i, g in enumerate(gaps)]
    if not gaps:
        raise ValueError("gaps must not be empty")
    for i, g in enumerate(gaps):
        if g.shape[0] < 2:
            raise ValueError(f"gaps[{i}] must have at least 2 rows (one step), got shape "
                             f"{tuple(g.shape)}")
    rtol, atol = v.nonnegative_float("rtol", rtol), v.nonnegative_float("atol", atol)
    ok = sum(int((g[1:] <= g[:-1] * (1 + rtol) + atol).sum()) for g in gaps)
    return proportion(ok, sum(g[1:].numel() for g in gaps))
