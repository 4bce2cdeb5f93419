"""Argument checks shared by the library: every error names the argument."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

__all__ = ["positive_int", "positive_float", "in_interval", "widths", "tensor",
           "available_memory", "memory", "scales", "finite_real", "per_layer", "per_network",
           "nonzero_vector", "nonnegative_int", "nonnegative_float", "probability", "choice",
           "generator", "array", "real_sequence", "labels", "torch_device"]


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
    for bound, b in (("lo", lo), ("hi", hi)):      # the bounds may be infinite (a half-line)
        if isinstance(b, bool) or not isinstance(b, (int, float)):
            raise TypeError(f"{bound} (a bound of {name}) must be a real number, got "
                            f"{type(b).__name__}")
        if math.isnan(b):
            raise ValueError(f"{bound} (a bound of {name}) must not be NaN")
    if lo > hi:
        raise ValueError(f"lo must be <= hi (the interval of {name}), got lo = {lo!r}, "
                         f"hi = {hi!r}")
    _flag("closed_hi", closed_hi)
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
    allowed = _ndims(ndim)
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
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
    where = torch_device("where", where)
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
    if isinstance(n_bytes, bool) or not isinstance(n_bytes, (int, float)):
        raise TypeError(f"{name}: the size of the allocation must be a number of bytes, got "
                        f"{type(n_bytes).__name__}")
    if n_bytes < 0:
        raise ValueError(f"{name}: the size of the allocation must be >= 0 bytes, got {n_bytes!r}")
    fraction = finite_real("fraction", fraction)
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must lie in (0, 1], got {fraction!r}")
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
    _flag("allow_empty", allow_empty)
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
    length = nonnegative_int("length", length)
    _flag("allow_longer", allow_longer)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [positive_float(name, value)] * length
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) and not (
            isinstance(value, torch.Tensor) and value.ndim == 1):
        raise ValueError(f"{name} must be a positive number or a sequence of them, got {value!r}")
    values = list(value)
    if len(values) < length or (len(values) > length and not allow_longer):
        need = f"at least {length}" if allow_longer else f"{length}"
        raise ValueError(f"{name} must have {need} entries (one per layer: length = {length}), "
                         f"got {len(values)}")
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
    _flag("square", square)
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


# --- added for the property tests of every public function (issue 25) ------------------------

def nonnegative_int(name: str, value) -> int:
    """An int >= 0 (an index, a seed, a number of steps that may be zero), not a bool.

    Examples
    --------
    >>> nonnegative_int("seed", 0)
    0
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return value


def nonnegative_float(name: str, value) -> float:
    """A finite real number >= 0, returned as float.

    Examples
    --------
    >>> nonnegative_float("eta", 0)
    0.0
    """
    value = finite_real(name, value)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return value


def probability(name: str, value, *, open_ends: bool = False) -> float:
    """A real number in [0, 1] (in (0, 1) with ``open_ends``), returned as float.

    Examples
    --------
    >>> probability("alpha", 0.05)
    0.05
    """
    _flag("open_ends", open_ends)
    value = finite_real(name, value)
    if not (0 < value < 1 if open_ends else 0 <= value <= 1):
        ends = "(0, 1)" if open_ends else "[0, 1]"
        raise ValueError(f"{name} must lie in {ends}, got {value!r}")
    return value


def choice(name: str, value, options) -> str:
    """One of ``options`` (strings), else an error listing them.

    Examples
    --------
    >>> choice("kind", "fan_in", ("fan_in", "fan_out"))
    'fan_in'
    """
    if isinstance(options, (str, bytes)) or not isinstance(options, (Sequence, set, frozenset)) \
            or not options or not all(isinstance(o, str) for o in options):
        raise TypeError(f"options (the choices of {name}) must be a non-empty collection of "
                        f"strings, got {options!r}")
    options = tuple(options)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {options}, got {type(value).__name__}")
    if value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


def generator(name: str, value, *, optional: bool = True) -> torch.Generator | None:
    """A ``torch.Generator`` (or ``None`` where ``optional``).

    Examples
    --------
    >>> generator("gen", None) is None
    True
    """
    _flag("optional", optional)
    if value is None and optional:
        return None
    if not isinstance(value, torch.Generator):
        raise TypeError(f"{name} must be a torch.Generator, got {type(value).__name__}")
    return value


def array(name: str, value, *, ndim: int | tuple[int, ...] | None = None,
          finite: bool = True, min_size: int = 1) -> torch.Tensor | object:
    """A real array, a torch tensor or anything NumPy reads as one (a list, an ndarray).

    Checked: a real (not complex, not string or object) dtype, the number of dimensions,
    at least ``min_size`` entries, and (``finite=True``) no inf or NaN. Returned unchanged
    (a tensor stays on its device; the finiteness check is the one synchronization).

    Examples
    --------
    >>> array("x", [1.0, 2.0])
    [1.0, 2.0]
    """
    import numpy as np

    allowed = None if ndim is None else _ndims(ndim)
    _flag("finite", finite)
    min_size = nonnegative_int("min_size", min_size)
    if isinstance(value, torch.Tensor):
        if value.is_complex() or value.dtype == torch.bool:
            raise TypeError(f"{name} must be a real array, got dtype {value.dtype}")
        shape, size = tuple(value.shape), value.numel()
        bad = finite and value.is_floating_point() and size > 0 \
            and not bool(torch.isfinite(value).all())
    else:
        if value is None or isinstance(value, (str, bytes, dict)):
            raise TypeError(f"{name} must be a real array, got {type(value).__name__}")
        try:
            arr = np.asarray(value)
        except (ValueError, TypeError) as e:
            raise ValueError(f"{name} must be a rectangular real array: {e}") from None
        if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer)
                                     or np.issubdtype(arr.dtype, np.floating)):
            raise TypeError(f"{name} must be a real array, got dtype {arr.dtype}")
        shape, size = arr.shape, arr.size
        bad = finite and size > 0 and not bool(np.isfinite(arr).all())
    if allowed is not None:
        if len(shape) not in allowed:
            raise ValueError(f"{name} must have {' or '.join(map(str, allowed))} dimensions, "
                             f"got shape {shape}")
    if size < min_size:
        raise ValueError(f"{name} must have at least {min_size} entries, got {size}")
    if bad:
        raise ValueError(f"{name} contains inf or NaN")
    return value


def real_sequence(name: str, value, *, min_len: int = 1, lo: float | None = None,
                  positive: bool = False) -> list[float]:
    """A sequence of finite real numbers (not a string), each >= ``lo`` (> 0 if ``positive``).

    Examples
    --------
    >>> real_sequence("cos", [0.5, -0.2])
    [0.5, -0.2]
    """
    min_len = nonnegative_int("min_len", min_len)
    if lo is not None:
        lo = finite_real("lo", lo)
    _flag("positive", positive)
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) and not (
            isinstance(value, torch.Tensor) and value.ndim == 1):
        raise TypeError(f"{name} must be a sequence of numbers, got {type(value).__name__}")
    if len(value) < min_len:
        raise ValueError(f"{name} must have at least {min_len} entries, got {len(value)}")
    out = []
    for i, x in enumerate(value):
        x = float(x) if isinstance(x, torch.Tensor) else x
        x = finite_real(f"{name}[{i}]", x)
        if positive and x <= 0 or lo is not None and x < lo:
            need = "> 0" if positive else f">= {lo}"
            raise ValueError(f"{name}[{i}] must be {need}, got {x!r}")
        out.append(x)
    return out


def labels(name: str, value, *, shape: tuple[int, ...] | None = None,
           n_classes: int | None = None) -> torch.Tensor:
    """Integer class labels: a non-empty integer tensor, each label in ``[0, n_classes)``.

    Checked: an integer dtype (not bool, not floating point), the ``shape`` (default: one
    dimension), at least one label, and no label below 0 (the library's -1 sentinel
    included) or at ``n_classes`` and above. The range check reads one bool on the host (a
    synchronization on an accelerator); the labels stay on their device.

    Parameters
    ----------
    name : str
        The argument's name, for the error messages.
    value : torch.Tensor
        The labels.
    shape : tuple of int, optional
        The expected shape (one label per sample); default: any one-dimensional shape.
    n_classes : int, optional
        The number of classes; default: labels need only be >= 0.

    Returns
    -------
    torch.Tensor
        ``value`` itself.

    Raises
    ------
    TypeError
        ``value`` is not an integer tensor.
    ValueError
        Another shape, no labels, or a label out of range.

    Examples
    --------
    >>> labels("y", torch.tensor([0, 2, 1]), n_classes=3).tolist()
    [0, 2, 1]
    """
    if n_classes is not None:
        n_classes = positive_int("n_classes", n_classes)
    if shape is not None:
        if not isinstance(shape, (tuple, list, torch.Size)) or any(
                isinstance(k, bool) or not isinstance(k, int) or k < 0 for k in shape):
            raise TypeError(f"shape (of {name}) must be a tuple of sizes, got {shape!r}")
        shape = tuple(shape)
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a tensor of integer labels, got {type(value).__name__}")
    if value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer labels, got dtype {value.dtype}")
    if shape is None and value.ndim != 1 or shape is not None and tuple(value.shape) != shape:
        want = "one dimension" if shape is None else f"shape {tuple(shape)}"
        raise ValueError(f"{name} must have {want} (one label per sample), got shape "
                         f"{tuple(value.shape)}")
    if value.numel() == 0:
        raise ValueError(f"{name} must hold at least one label")
    bad = value < 0 if n_classes is None else (value < 0) | (value >= n_classes)
    if bool(bad.any()):
        top = "" if n_classes is None else f", {n_classes}"
        raise ValueError(f"{name} must hold labels in [0{top}), got {int(value.min())} to "
                         f"{int(value.max())} (-1 is the library's 'none' sentinel, never a "
                         "label)")
    return value


def torch_device(name: str, value, *, optional: bool = True) -> torch.device | None:
    """A device this PyTorch can use (a ``torch.device`` or its name), or ``None``.

    Examples
    --------
    >>> torch_device("device", "cpu")
    device(type='cpu')
    """
    _flag("optional", optional)
    if value is None and optional:
        return None
    if isinstance(value, str):
        try:
            value = torch.device(value)
        except RuntimeError:
            raise ValueError(f"{name} must name a device (cpu, cuda, cuda:N), got "
                             f"{value!r}") from None
    elif not isinstance(value, torch.device):
        raise TypeError(f"{name} must be a torch.device or a device name, got "
                        f"{type(value).__name__}")
    if value.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"{name} is {value}, but this PyTorch sees no CUDA device")
        if value.index is not None and value.index >= torch.cuda.device_count():
            raise ValueError(f"{name} is {value}, but there are only "
                             f"{torch.cuda.device_count()} CUDA devices")
    return value


def _flag(name: str, value) -> bool:
    """A bool option (a literal True or False, not a truthy object)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value


def _ndims(ndim) -> tuple[int, ...]:
    """``ndim`` (an int >= 0 or a non-empty tuple of them) as a tuple."""
    allowed = (ndim,) if isinstance(ndim, int) and not isinstance(ndim, bool) else ndim
    if not isinstance(allowed, tuple) or not allowed or any(
            isinstance(k, bool) or not isinstance(k, int) or k < 0 for k in allowed):
        raise TypeError(f"ndim must be an int >= 0 or a tuple of them, got {ndim!r}")
    return allowed
