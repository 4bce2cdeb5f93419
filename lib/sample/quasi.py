"""Fixed test instances: arrays that look Gaussian but are a fixed function of their index.

A check that compares a Monte Carlo average with a formula evaluated on *one* instance (a
gradient at given weights, a risk at a given target) records the formula's values as the
theory, and the seed-invariance run (``./book seeds``) compares theory values exactly. The
instance must then be the same under every seed, while the Monte Carlo samples are drawn from
the seeded generators. :func:`quasi_normal` gives such an instance without a random stream:
entry ``j`` (counting from 1 in C order) is ``Phi^{-1}(frac(j^2 alpha + offset))`` with
``alpha`` the fractional part of the golden ratio (a quadratic Weyl sequence, equidistributed
in [0, 1) and without the lattice structure of the linear one), mapped through the standard
normal quantile function.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.special import ndtri

from ..core.validate import positive_int

__all__ = ["quasi_uniform", "quasi_normal"]

#: The fractional part of the golden ratio, the most irrational rotation number.
ALPHA = (math.sqrt(5.0) - 1.0) / 2.0
_EDGE = 1e-12


def _shape(shape) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if not shape:
        raise ValueError("shape must have at least one dimension")
    return tuple(positive_int(f"shape[{i}]", s) for i, s in enumerate(shape))


def _offset(offset) -> float:
    if isinstance(offset, bool) or not isinstance(offset, (int, float)):
        raise TypeError(f"offset must be a real number, got {type(offset).__name__}")
    if not math.isfinite(offset):
        raise ValueError(f"offset must be finite, got {offset!r}")
    return float(offset)


def quasi_uniform(*shape: int, offset: float = 0.0) -> np.ndarray:
    """Entries ``frac(j^2 alpha + offset)``, j = 1, 2, ... in C order, in (0, 1).

    Parameters
    ----------
    *shape : int
        The shape of the array (or one tuple).
    offset : float
        Shifts the sequence; different offsets give different instances.

    Returns
    -------
    numpy.ndarray
        float64 array of the given shape, entries clipped to [1e-12, 1 - 1e-12].

    Examples
    --------
    >>> u = quasi_uniform(2, 3)
    >>> u.shape, bool(((u > 0) & (u < 1)).all())
    ((2, 3), True)
    >>> bool((quasi_uniform(2, 3) == u).all())     # a fixed function of the index
    True
    """
    shape, offset = _shape(shape), _offset(offset)
    j = np.arange(1, math.prod(shape) + 1, dtype=np.float64)
    u = np.mod(np.mod(j * j * ALPHA, 1.0) + offset, 1.0)
    return np.clip(u, _EDGE, 1.0 - _EDGE).reshape(shape)


def quasi_normal(*shape: int, offset: float = 0.0,
                 dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """A fixed array whose entries are distributed like independent standard normals.

    ``Phi^{-1}`` of :func:`quasi_uniform`: the empirical distribution of the entries tends to
    N(0, 1), but the array is the same on every machine and under every seed (it uses no
    random stream). Use it for a *fixed instance* of a check, never as Monte Carlo samples.

    Examples
    --------
    >>> z = quasi_normal(200, 200)
    >>> round(float(z.mean()), 1), round(float(z.std()), 1)
    (0.0, 1.0)
    """
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")
    return torch.from_numpy(ndtri(quasi_uniform(*shape, offset=offset))).to(dtype)
