"""Device, dtype, seeds and the scale switch.

At the default scale every random number is drawn from a seeded *CPU* generator and then
moved to the compute device, so that a chapter produces the same numbers on a laptop and on
a CUDA machine (DESIGN.md section 3). At paper scale (``EIT_SCALE=paper``) random numbers are
drawn by the device's own generator, which is faster and not regression-tested.
"""

from __future__ import annotations

import os
from typing import Literal

import torch

Scale = Literal["default", "paper"]

#: Computations that feed a printed number run in float64 (DESIGN.md section 3).
DTYPE = torch.float64


def scale() -> Scale:
    """The scale switch, read from the environment variable ``EIT_SCALE``."""
    value = os.environ.get("EIT_SCALE", "default")
    if value not in ("default", "paper"):
        raise ValueError(f"EIT_SCALE must be 'default' or 'paper', got {value!r}")
    return value  # type: ignore[return-value]


def at_scale(default, paper):
    """Return ``default`` or ``paper`` according to :func:`scale`."""
    return paper if scale() == "paper" else default


def device() -> torch.device:
    """The compute device: CUDA when present, else CPU (override with ``EIT_DEVICE``)."""
    forced = os.environ.get("EIT_DEVICE")
    if forced:
        return torch.device(forced)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def generator(seed: int) -> torch.Generator:
    """A seeded generator: on the CPU at the default scale, on the device at paper scale."""
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    where = device() if scale() == "paper" else torch.device("cpu")
    gen = torch.Generator(device=where)
    gen.manual_seed(seed)
    return gen


def randn(*shape: int, gen: torch.Generator, dtype: torch.dtype = DTYPE) -> torch.Tensor:
    """Standard normal samples drawn on ``gen``'s device, returned on :func:`device`."""
    return torch.randn(*shape, generator=gen, device=gen.device, dtype=dtype).to(device())


def rand(*shape: int, gen: torch.Generator, dtype: torch.dtype = DTYPE) -> torch.Tensor:
    """Uniform(0, 1) samples drawn on ``gen``'s device, returned on :func:`device`."""
    return torch.rand(*shape, generator=gen, device=gen.device, dtype=dtype).to(device())


def description() -> str:
    """A one-line description of the compute device (volatile: never print it in a chapter)."""
    dev = device()
    if dev.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(dev)}"
    return f"cpu: {os.cpu_count()} cores, torch {torch.__version__}"
