"""Argument checks shared by the library: every error names the argument."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

__all__ = ["positive_int", "positive_float", "in_interval", "widths", "tensor",
           "available_memory", "memory", "scales", "finite_real", "per_layer", "per_network",
           "nonzero_vector"]


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


# --- added for the engines (issue 15/17): shared by eit.sample and eit.exact ------------------

class AllocationTooLarge(MemoryError):
    """A computation would allocate more memory than the machine has available."""


def available_memory(where: torch.device | str | None = None) -> int:
    """Bytes that can be allocated now on ``where`` (default: the compute device).

    On CUDA the free device memory (``torch.cuda.mem_get_info``); on the CPU the kernel's
    ``MemAvailable`` (``/proc/meminfo``), else the available physical pages.

    Examples
    --------
    >>> available_memory("cpu") > 0
    True
    """
    if where is None:
        from .device import device
        where = device()
    where = torch.device(where)
    if where.type == "cuda":
        free, _ = torch.cuda.mem_get_info(where)
        return int(free)
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import os
    return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def memory(name: str, n_bytes: float, *, where: torch.device | str | None = None,
           fraction: float = 0.5) -> int:
    """Check that an allocation of ``n_bytes`` fits in ``fraction`` of the available memory.

    ``name`` names the arguments that set the size (it appears in the error). Returns the
    size in bytes.

    Raises
    ------
    AllocationTooLarge
        If ``n_bytes`` exceeds ``fraction * available_memory(where)``.

    Examples
    --------
    >>> memory("n_nets", 8 * 1000)
    8000
    """
    limit = fraction * available_memory(where)
    if not math.isfinite(n_bytes) or n_bytes > limit:
        raise AllocationTooLarge(
            f"{name}: this call needs {n_bytes / 2**30:.3g} GiB at once, more than "
            f"{fraction:g} of the {limit / fraction / 2**30:.3g} GiB available; use fewer "
            "networks, inputs or units per call (or a chunked loop over calls)")
    return int(n_bytes)


def scales(name: str, value, *, allow_empty: bool = False) -> list[float]:
    """A sequence of finite non-negative numbers (residual scales eta_l, variances...).

    Examples
    --------
    >>> scales("etas", [0.5, 0, 2])
    [0.5, 0.0, 2.0]
    """
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or (
            len(value) == 0 and not allow_empty):
        raise ValueError(f"{name} must be a non-empty sequence of numbers, got {value!r}")
    out = []
    for i, x in enumerate(value):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) \
                or x < 0:
            raise ValueError(f"{name}[{i}] must be a finite number >= 0, got {x!r}")
        out.append(float(x))
    return out


def finite_real(name: str, value) -> float:
    """A finite real number (int or float, not bool), returned as float.

    Examples
    --------
    >>> finite_real("t", 2)
    2.0
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return float(value)


def per_layer(name: str, value, length: int, *, allow_longer: bool = False) -> list[float]:
    """One finite positive number per layer: a number is repeated ``length`` times, a sequence
    must have ``length`` entries (at least ``length`` with ``allow_longer``; the first are used).

    Examples
    --------
    >>> per_layer("gains", 0.5, 3)
    [0.5, 0.5, 0.5]
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [positive_float(name, value)] * length
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) and not (
            isinstance(value, torch.Tensor) and value.ndim == 1):
        raise ValueError(f"{name} must be a positive number or a sequence of them, got {value!r}")
    values = list(value)
    if len(values) < length or (len(values) > length and not allow_longer):
        need = f"at least {length}" if allow_longer else f"{length}"
        raise ValueError(f"{name} must have {need} entries (one per layer), got {len(values)}")
    return [positive_float(f"{name}[{i}]", float(x) if isinstance(x, torch.Tensor) else x)
            for i, x in enumerate(values[:length])]


def per_network(name: str, value, n_nets: int, *, square: bool = False) -> torch.Tensor:
    """One ``(d, n)`` matrix per network: a shared ``(d, n)`` batch, or ``(n_nets, d, n)``.

    The batches of the batch-normalized chains (features x inputs, the paper's d x n) are
    given once for all networks or once per network; a shared batch is expanded (a view, no
    copy) to the leading dimension ``n_nets``.

    Parameters
    ----------
    name : str
        The argument's name, for the error messages.
    value : torch.Tensor
        ``(d, n)`` or ``(n_nets, d, n)``, finite, floating point.
    n_nets : int
        The number of networks.
    square : bool
        Require square matrices (n = d).

    Returns
    -------
    torch.Tensor
        ``(n_nets, d, n)``, on the device and with the dtype of ``value``.

    Raises
    ------
    TypeError
        ``value`` is not a floating-point tensor.
    ValueError
        Wrong number of dimensions, a leading dimension other than ``n_nets``, non-square
        matrices with ``square=True``, or an inf or NaN.

    References
    ----------
    Meterez et al. (2024), eqs. (3)-(4) (the batch X of a chain).

    Examples
    --------
    >>> per_network("x0", torch.ones(2, 3), 4).shape
    torch.Size([4, 2, 3])
    """
    n_nets = positive_int("n_nets", n_nets)
    value = tensor(name, value, ndim=(2, 3))
    if square and value.shape[-1] != value.shape[-2]:
        raise ValueError(f"{name} must be a batch of square matrices (..., d, d), got shape "
                         f"{tuple(value.shape)}")
    if value.ndim == 2:
        value = value.expand(n_nets, *value.shape)
    if value.shape[0] != n_nets:
        shape = "d, d" if square else "d, n"
        raise ValueError(f"{name} must have shape ({shape}) or (n_nets, {shape}) = ({n_nets}, "
                         f"{shape}), got {tuple(value.shape)}")
    return value


def nonzero_vector(name: str, value) -> torch.Tensor:
    """A finite floating-point vector ``(n,)`` with at least one non-zero entry.

    The input of a norm ratio ``||f(u)||^2 / ||u||^2``, undefined at ``u = 0``.

    Parameters
    ----------
    name : str
        The argument's name, for the error messages.
    value : torch.Tensor
        ``(n,)``.

    Returns
    -------
    torch.Tensor
        ``value`` itself.

    Raises
    ------
    TypeError
        ``value`` is not a floating-point tensor.
    ValueError
        ``value`` is not one-dimensional, contains an inf or NaN, or is zero.

    References
    ----------
    Arpit & Bengio (2019), Theorem 4; Arpit, Campos & Bengio (2019), Theorems 1-2 (the
    norm ratios of one layer).

    Examples
    --------
    >>> nonzero_vector("u", torch.ones(3)).shape
    torch.Size([3])
    """
    value = tensor(name, value, ndim=1)
    if not bool((value != 0).any()):
        raise ValueError(f"{name} must be a non-zero vector")
    return value
