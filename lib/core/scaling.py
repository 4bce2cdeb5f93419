"""Exact power-of-two rescaling, so that norms of finite vectors of any scale stay in float64.

The squared norm of a float64 vector overflows once its entries pass about 2^511 (1e154) and
loses digits to subnormals below about 2^-511 (1e-154); the length of the vector itself is
representable well beyond both. :func:`rescaled` multiplies each vector by 2^-e, e the
binary exponent of its largest entry, *only* where that exponent lies outside
[-:data:`SAFE_EXPONENT`, :data:`SAFE_EXPONENT`]: a multiplication by a power of two is exact,
so ``log ||x|| = log ||x 2^-e|| + e log 2`` holds to rounding, and vectors of ordinary scale
are left bit for bit as they are (e = 0).
"""

from __future__ import annotations

import math

import torch

__all__ = ["LOG2", "SAFE_EXPONENT", "rescaled"]

#: log 2 in float64.
LOG2 = math.log(2.0)
#: Vectors whose largest entry has a binary exponent within +-SAFE_EXPONENT are not rescaled:
#: their squared norms stay normal float64 numbers for up to 2^200 entries.
SAFE_EXPONENT = 400


def rescaled(x: torch.Tensor, start_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x * 2^-e, e)`` per vector, the vectors being ``x`` flattened from ``start_dim``.

    Parameters
    ----------
    x : torch.Tensor
        Floating point; the dimensions before ``start_dim`` index the vectors.
    start_dim : int
        The first feature dimension.

    Returns
    -------
    (torch.Tensor, torch.Tensor)
        The rescaled ``x`` (same shape) and the integer exponents ``e`` (shape
        ``x.shape[:start_dim]``, on ``x``'s device): the binary exponent of the vector's
        largest absolute entry where it lies outside +-:data:`SAFE_EXPONENT`, else 0 (zero,
        infinite and NaN vectors included, which stay as they are).

    Raises
    ------
    TypeError
        ``x`` is not a floating-point tensor, or ``start_dim`` not an int.
    ValueError
        ``start_dim`` is not a dimension of ``x`` (``0 <= start_dim < x.ndim``).

    Examples
    --------
    >>> import math
    >>> x = torch.tensor([[3e-170, 4e-170], [3.0, 4.0]], dtype=torch.float64)
    >>> y, e = rescaled(x, 1)
    >>> e.tolist(), float(x[0].norm()), float(x[1].norm())    # the first norm underflows
    ([-562, 0], 0.0, 5.0)
    >>> log_norm = torch.log(y[0].norm()) + e[0].double() * LOG2
    >>> abs(float(log_norm) / math.log(5e-170) - 1) < 1e-15
    True
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError(f"x must be a floating-point tensor, got "
                        f"{getattr(x, 'dtype', type(x).__name__)}")
    if isinstance(start_dim, bool) or not isinstance(start_dim, int):
        raise TypeError(f"start_dim must be an int, got {type(start_dim).__name__}")
    if not 0 <= start_dim < x.ndim:
        raise ValueError(f"start_dim must be a dimension of x, in [0, {x.ndim}) for x of shape "
                         f"{tuple(x.shape)}, got {start_dim}")
    flat = x.flatten(start_dim)
    if flat.shape[-1] == 0:                          # empty vectors: nothing to rescale
        return x, torch.zeros(x.shape[:start_dim], dtype=torch.int32, device=x.device)
    top = flat.abs().amax(dim=-1)
    e = torch.frexp(top).exponent
    e = torch.where(torch.isfinite(top) & (e.abs() > SAFE_EXPONENT), e, torch.zeros_like(e))
    shape = (*e.shape, *([1] * (x.ndim - e.ndim)))
    half = (-e).div(2, rounding_mode="floor").reshape(shape)   # 2^-e in two exact factors,
    rest = (-e).reshape(shape) - half                          # each within float64's range
    return torch.ldexp(torch.ldexp(x, half.to(x.dtype)), rest.to(x.dtype)), e
