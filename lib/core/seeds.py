"""Seeds: every random stream of the book starts here.

A chapter names its seeds (``generator(2019)``); the environment variable ``EIT_SEED``
(default 0) shifts all of them at once, so that the whole book can be re-run on an
independent set of random streams (``./book seeds``): a verdict that changes with the seed
rests on too few samples (DESIGN.md section 3). With ``EIT_SEED`` unset or 0 a seed is used
as given.

Generators live on the compute device (:func:`eit.core.device.device`), so that a GPU draws
its own random numbers at every scale; the regression test compares Monte Carlo results
statistically, so the streams need not be equal across devices.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
import torch

from . import provenance
from .device import device

__all__ = ["seed_offset", "derive", "generator", "numpy_rng"]


def seed_offset() -> int:
    """The book-wide seed shift, read from ``EIT_SEED`` (a non-negative integer; default 0)."""
    raw = os.environ.get("EIT_SEED", "0").strip() or "0"
    if not raw.isdigit():
        raise ValueError(f"EIT_SEED must be a non-negative integer, got {raw!r}")
    return int(raw)


def derive(seed: int) -> int:
    """The seed actually used for ``seed``: itself at offset 0, else a hash of both.

    Examples
    --------
    >>> import os
    >>> os.environ.pop("EIT_SEED", None) and None
    >>> derive(2019)
    2019
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    offset = seed_offset()
    if offset == 0:
        return int(seed)
    digest = hashlib.sha256(f"eit-seed:{int(seed)}:{offset}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def generator(seed: int) -> torch.Generator:
    """A torch generator on the compute device, seeded with :func:`derive` of ``seed``.

    On the simulated device of :mod:`eit.core.guard` (``EIT_DEVICE=sim``) it is a
    :class:`~eit.core.guard.SimGenerator`, which draws the CPU's streams.
    """
    where = device()
    if where.type in ("cpu", "cuda"):
        gen = torch.Generator(device=where)
    else:
        from .guard import SimGenerator

        gen = SimGenerator()
    gen.manual_seed(derive(seed))
    return provenance.register(gen)


def numpy_rng(seed: int) -> np.random.Generator:
    """A NumPy generator seeded with :func:`derive` of ``seed`` (for SciPy and NumPy code)."""
    return provenance.register(np.random.default_rng(derive(seed)))
