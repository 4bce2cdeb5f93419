"""Argument checks shared by the library: every error names the argument."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch


def positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def positive_float(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return float(value)


def in_interval(name: str, value, lo: float, hi: float, *, closed_hi: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    ok = lo <= value <= hi if closed_hi else lo <= value < hi
    if not ok:
        bracket = "]" if closed_hi else ")"
        raise ValueError(f"{name} must lie in [{lo}, {hi}{bracket}, got {value!r}")
    return float(value)


def widths(name: str, value) -> list[int]:
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) == 0:
        raise ValueError(f"{name} must be a non-empty sequence of positive ints, got {value!r}")
    return [positive_int(f"{name}[{i}]", w) for i, w in enumerate(value)]


def tensor(name: str, value, *, ndim: int | tuple[int, ...]) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    allowed = (ndim,) if isinstance(ndim, int) else ndim
    if value.ndim not in allowed:
        raise ValueError(f"{name} must have {' or '.join(map(str, allowed))} dimensions, "
                         f"got shape {tuple(value.shape)}")
    if not torch.is_floating_point(value):
        raise TypeError(f"{name} must be a floating-point tensor, got {value.dtype}")
    if not torch.isfinite(value).all():
        raise ValueError(f"{name} contains inf or NaN")
    return value
