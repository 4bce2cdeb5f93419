"""Device, dtype and the scale switch (the generators are :mod:`eit.core.seeds`'s job).

Random numbers are drawn by the compute device's own generator (:mod:`eit.core.seeds`) at
every scale: the regression test compares Monte Carlo results statistically, so a GPU need not
reproduce the CPU's streams (DESIGN.md section 3). The scale switch ``EIT_SCALE`` selects the
default sizes (every chapter in about 45 s on 2 cores) or the papers' own sizes.
"""

from __future__ import annotations

import operator
import os
from typing import Literal

import torch

Scale = Literal["default", "paper", "smoke"]
SCALES = ("default", "paper", "smoke")

#: Computations that feed a printed number run in float64 (DESIGN.md section 3).
DTYPE = torch.float64


if os.environ.get("EIT_DEVICE", "").strip() == "sim":  # before any backward pass (see guard)
    from . import guard as _guard

    _guard.register()


def scale() -> Scale:
    """The scale switch, read from the environment variable ``EIT_SCALE``.

    ``default``: every chapter in about 45 s on 2 cores; ``paper``: the papers' own sizes;
    ``smoke``: the paper-scale code path at tiny sizes (the test command runs it, so that the
    paper-scale path cannot rot).
    """
    value = os.environ.get("EIT_SCALE", "default")
    if value not in SCALES:
        raise ValueError(f"EIT_SCALE must be one of {SCALES}, got {value!r}")
    return value  # type: ignore[return-value]


def at_scale(default, paper, smoke=None):
    """``default``, ``paper`` or ``smoke`` (default: ``default``) according to :func:`scale`.

    Examples
    --------
    >>> import os
    >>> os.environ["EIT_SCALE"] = "default"
    >>> at_scale(1000, 20000, smoke=10)
    1000
    """
    now = scale()
    if now == "paper":
        return paper
    if now == "smoke":
        return default if smoke is None else smoke
    return default


def paper_path() -> bool:
    """Whether the paper-scale code path runs (at paper scale, and in smoke mode)."""
    return scale() in ("paper", "smoke")


def device() -> torch.device:
    """The compute device: CUDA when present, else CPU (override with ``EIT_DEVICE``).

    ``EIT_DEVICE=sim`` selects the simulated device of :mod:`eit.core.guard` (it computes on
    the CPU and fails where CUDA would fail on mixed devices); any other value must name a
    device that this PyTorch can use (``cpu``, ``cuda``, ``cuda:1``).
    """
    forced = os.environ.get("EIT_DEVICE", "").strip()
    if forced == "sim":
        from . import guard

        return guard.enable()
    if forced:
        try:
            dev = torch.device(forced)
        except RuntimeError as err:
            raise ValueError(f"EIT_DEVICE must name a device (cpu, cuda, cuda:N or sim), got "
                             f"{forced!r}") from err
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"EIT_DEVICE={forced!r}, but this PyTorch sees no CUDA device")
        return dev
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _gen(gen) -> torch.Generator:
    if not isinstance(gen, torch.Generator):
        raise TypeError("gen must be a torch.Generator (use eit.generator(seed)), got "
                        f"{type(gen).__name__}")
    return gen


def _float_dtype(dtype) -> torch.dtype:
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")
    return dtype


def _shape(shape: tuple) -> tuple[int, ...]:
    """The sizes of a draw: ints >= 0 (or one tuple of them, as ``torch.randn`` takes)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
        shape = tuple(shape[0])
    out = []
    for i, n in enumerate(shape):
        try:
            size = None if isinstance(n, bool) else operator.index(n)   # ints, NumPy ints
        except TypeError:
            size = None
        if size is None:
            raise TypeError(f"shape[{i}] must be an int, got {n!r}")
        if size < 0:
            raise ValueError(f"shape[{i}] must be >= 0, got {size}")
        out.append(size)
    return tuple(out)


def randn(*shape: int, gen: torch.Generator, dtype: torch.dtype = DTYPE) -> torch.Tensor:
    """Standard normal samples drawn on ``gen``'s device, returned on :func:`device`.

    No ``shape`` draws one sample (a tensor of zero dimensions).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> randn(2, 3, gen=generator(0)).shape, randn(gen=generator(0)).shape
    (torch.Size([2, 3]), torch.Size([]))
    """
    shape, gen, dtype = _shape(shape), _gen(gen), _float_dtype(dtype)
    return torch.randn(shape, generator=gen, device=gen.device, dtype=dtype).to(device())


def rand(*shape: int, gen: torch.Generator, dtype: torch.dtype = DTYPE) -> torch.Tensor:
    """Uniform(0, 1) samples drawn on ``gen``'s device, returned on :func:`device`.

    No ``shape`` draws one sample (a tensor of zero dimensions).
    """
    shape, gen, dtype = _shape(shape), _gen(gen), _float_dtype(dtype)
    return torch.rand(shape, generator=gen, device=gen.device, dtype=dtype).to(device())


def description() -> str:
    """A one-line description of the compute device (volatile: never print it in a chapter)."""
    dev = device()
    if dev.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(dev)}"
    if dev.type != "cpu":
        return (f"{dev.type} (simulated on the CPU: {os.cpu_count()} cores, torch "
                f"{torch.__version__})")
    return f"cpu: {os.cpu_count()} cores, torch {torch.__version__}"


__all__ = ["DTYPE", "SCALES", "Scale", "scale", "at_scale", "paper_path", "device", "randn",
           "rand", "description"]
