"""Device, dtype and the scale switch.

Random numbers are drawn by the compute device's own generator (:mod:`eit.core.seeds`) at
every scale: the regression test compares Monte Carlo results statistically, so a GPU need not
reproduce the CPU's streams (DESIGN.md section 3). The scale switch ``EIT_SCALE`` selects the
default sizes (every chapter in about 45 s on 2 cores) or the papers' own sizes.
"""

from __future__ import annotations

import os
from typing import Literal

import torch

Scale = Literal["default", "paper", "smoke"]
SCALES = ("default", "paper", "smoke")

#: Computations that feed a printed number run in float64 (DESIGN.md section 3).
DTYPE = torch.float64


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
    """The compute device: CUDA when present, else CPU (override with ``EIT_DEVICE``)."""
    forced = os.environ.get("EIT_DEVICE")
    if forced:
        return torch.device(forced)
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


def randn(*shape: int, gen: torch.Generator, dtype: torch.dtype = DTYPE) -> torch.Tensor:
    """Standard normal samples drawn on ``gen``'s device, returned on :func:`device`."""
    gen, dtype = _gen(gen), _float_dtype(dtype)
    return torch.randn(*shape, generator=gen, device=gen.device, dtype=dtype).to(device())


def rand(*shape: int, gen: torch.Generator, dtype: torch.dtype = DTYPE) -> torch.Tensor:
    """Uniform(0, 1) samples drawn on ``gen``'s device, returned on :func:`device`."""
    gen, dtype = _gen(gen), _float_dtype(dtype)
    return torch.rand(*shape, generator=gen, device=gen.device, dtype=dtype).to(device())


def description() -> str:
    """A one-line description of the compute device (volatile: never print it in a chapter)."""
    dev = device()
    if dev.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(dev)}"
    return f"cpu: {os.cpu_count()} cores, torch {torch.__version__}"


# the seeded generator lives in eit.core.seeds; chapters import it from here or from eit
from .seeds import generator  # noqa: E402

__all__ = ["DTYPE", "SCALES", "Scale", "scale", "at_scale", "paper_path", "device", "randn",
           "rand", "description", "generator"]
