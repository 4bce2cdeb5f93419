"""Per-layer profiles of the norm ratios of Figures 1-2 (Arpit & Bengio 2019) from the exact law.

For one input and Gaussian weights the pair (||h^l||, ||dl/da^l||) has an exact law that
:func:`eit.exact.chains.norm_chain` samples in O(L) per draw, without weight matrices; this
module summarizes those draws as the figures do: the mean and standard deviation over inputs
(independent draws) of ``||h^l|| / ||x||`` and ``||dl/dW^l||_F / (||delta|| ||x||)`` at every
layer, at the paper's widths and numbers of inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ..core import validate as v
from .chains import norm_chain
from .norm_product import variances

__all__ = ["ratio_profiles"]

_QUANTITIES = (("h", "log_h_ratio"), ("g", "log_grad_w_ratio"))


def ratio_profiles(scheme: str, n0: int, widths: Sequence[int], depth: int, *, draws: int,
                   gen: torch.Generator) -> dict[str, np.ndarray]:
    """Mean and sd over ``draws`` inputs of the layer ratios of Figures 1 and 2, per width.

    Parameters
    ----------
    scheme : str
        A weight-variance scheme of :func:`eit.exact.norm_product.variances` (``'He'``, the
        paper's fan-out form, or ``'Glorot'``).
    n0 : int
        The input dimension.
    widths : sequence of int
        The hidden widths, one network shape ``[w] * depth`` each.
    depth : int
        The number of layers L.
    draws : int
        Independent draws (inputs) per width.
    gen : torch.Generator
        Drawn in this order: for the forward ratios, one chain per width; then for the
        gradient ratios, one chain per width (``delta='random'``: independent of the net).

    Returns
    -------
    dict of str to numpy.ndarray
        ``'h_mean'``, ``'h_sd'`` (``||h^l||/||x||``) and ``'g_mean'``, ``'g_sd'``
        (``||dl/dW^l||_F/(||delta|| ||x||)``), each ``(len(widths), depth)``, l = 1..L; the
        sd is the sample standard deviation (n - 1).

    References
    ----------
    Arpit & Bengio (2019), Figures 1-2 (width 4060, 2000 inputs).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> p = ratio_profiles("He", 5, [20, 40], 3, draws=10, gen=generator(0))
    >>> sorted(p), p["h_mean"].shape
    (['g_mean', 'g_sd', 'h_mean', 'h_sd'], (2, 3))
    """
    scheme = v.choice("scheme", scheme, ("He", "Glorot"))
    widths = v.widths("widths", widths)
    depth, draws = v.positive_int("depth", depth), v.positive_int("draws", draws)
    n0 = v.positive_int("n0", n0)
    if draws < 2:
        raise ValueError(f"draws must be at least 2 for a standard deviation, got {draws}")
    v.generator("gen", gen, optional=False)
    out = {}
    for q, stat in _QUANTITIES:
        r = [getattr(norm_chain(n0, [w] * depth,
                                [float(s_) for s_ in variances(scheme, n0, w, depth)],
                                n_nets=draws, gen=gen, delta="random"),
                     stat)[-depth:, :, 0].exp() for w in widths]
        # the results leave the device once, at the end (NumPy arrays for the data store)
        out[f"{q}_mean"] = torch.stack([r_.mean(-1) for r_ in r]).cpu().numpy()
        out[f"{q}_sd"] = torch.stack([r_.std(-1) for r_ in r]).cpu().numpy()
    return out
