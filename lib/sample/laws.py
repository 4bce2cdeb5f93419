"""Batched weight initializers.

Every sampler returns a stack of independent matrices of shape ``(n_nets, fan_out, fan_in)``,
so that one call initializes one layer of ``n_nets`` independent networks. Layers act as
``a = W h`` with ``W`` of shape ``(fan_out, fan_in)``: fan-in is the input width.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import torch

from ..core import validate as v
from ..core.device import DTYPE, rand, randn

Mode = Literal["fan_in", "fan_out", "fan_avg"]
Distribution = Literal["normal", "uniform", "truncated_normal"]
#: An initializer: ``init(n_nets, fan_out, fan_in, gen) -> (n_nets, fan_out, fan_in)``.
Initializer = Callable[[int, int, int, torch.Generator], torch.Tensor]


def _shape(n_nets: int, fan_out: int, fan_in: int) -> tuple[int, int, int]:
    return (v.positive_int("n_nets", n_nets), v.positive_int("fan_out", fan_out),
            v.positive_int("fan_in", fan_in))


def gaussian(n_nets: int, fan_out: int, fan_in: int, variance: float, *,
             gen: torch.Generator, dtype: torch.dtype = DTYPE) -> torch.Tensor:
    """Entries i.i.d. N(0, variance)."""
    shape = _shape(n_nets, fan_out, fan_in)
    std = math.sqrt(v.positive_float("variance", variance))
    return std * randn(*shape, gen=gen, dtype=dtype)


def uniform(n_nets: int, fan_out: int, fan_in: int, variance: float, *,
            gen: torch.Generator, dtype: torch.dtype = DTYPE) -> torch.Tensor:
    """Entries i.i.d. U(-a, a) with a = sqrt(3 variance), so that Var = variance."""
    shape = _shape(n_nets, fan_out, fan_in)
    a = math.sqrt(3.0 * v.positive_float("variance", variance))
    return a * (2.0 * rand(*shape, gen=gen, dtype=dtype) - 1.0)


def truncated_normal_variance(std: float, bound: float = 2.0) -> float:
    """Variance of N(0, std^2) truncated to [-bound*std, bound*std] (a property of the law)."""
    std = v.positive_float("std", std)
    b = v.positive_float("bound", bound)
    phi = math.exp(-b * b / 2) / math.sqrt(2 * math.pi)
    mass = math.erf(b / math.sqrt(2))
    return std * std * (1.0 - 2.0 * b * phi / mass)


def truncated_normal(n_nets: int, fan_out: int, fan_in: int, std: float, *,
                     gen: torch.Generator, bound: float = 2.0,
                     dtype: torch.dtype = DTYPE) -> torch.Tensor:
    """Entries i.i.d. N(0, std^2) conditioned on |x| <= bound*std (inverse-CDF sampling).

    ``std`` is the scale of the *underlying* normal, as in ``torch.nn.init.trunc_normal_``;
    the variance of the result is :func:`truncated_normal_variance` (smaller than std^2).
    """
    shape = _shape(n_nets, fan_out, fan_in)
    std = v.positive_float("std", std)
    b = v.positive_float("bound", bound)
    lo = 0.5 * (1.0 + math.erf(-b / math.sqrt(2)))
    u = lo + (1.0 - 2.0 * lo) * rand(*shape, gen=gen, dtype=dtype)
    return std * torch.special.ndtri(u).clamp_(-b, b)


def centered_exponential(n_nets: int, fan_out: int, fan_in: int, variance: float, *,
                         gen: torch.Generator, dtype: torch.dtype = DTYPE) -> torch.Tensor:
    """Entries i.i.d. sqrt(variance) (E - 1), E ~ Exp(1): mean 0, skewness 2 (not symmetric)."""
    shape = _shape(n_nets, fan_out, fan_in)
    std = math.sqrt(v.positive_float("variance", variance))
    return std * (-torch.log1p(-rand(*shape, gen=gen, dtype=dtype)) - 1.0)


def haar_orthogonal(n_nets: int, fan_out: int, fan_in: int, *, gen: torch.Generator,
                    gain: float = 1.0, dtype: torch.dtype = DTYPE) -> torch.Tensor:
    """Haar-distributed (semi-)orthogonal matrices times ``gain``.

    QR of a Gaussian matrix with the sign correction R_ii > 0 (Mezzadri 2007). With
    fan_out <= fan_in the rows are orthonormal, otherwise the columns are.
    """
    n_nets, fan_out, fan_in = _shape(n_nets, fan_out, fan_in)
    gain = v.positive_float("gain", gain)
    tall = fan_out >= fan_in
    rows, cols = (fan_out, fan_in) if tall else (fan_in, fan_out)
    q, r = torch.linalg.qr(randn(n_nets, rows, cols, gen=gen, dtype=dtype))
    q = q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1)).unsqueeze(-2)
    return gain * (q if tall else q.transpose(-2, -1))


def sphere_rows(n_nets: int, fan_out: int, fan_in: int, *, gen: torch.Generator,
                radius: float = 1.0, dtype: torch.dtype = DTYPE) -> torch.Tensor:
    """Rows i.i.d. uniform on the sphere of the given radius in R^fan_in (weight normalization)."""
    shape = _shape(n_nets, fan_out, fan_in)
    radius = v.positive_float("radius", radius)
    w = randn(*shape, gen=gen, dtype=dtype)
    return radius * w / w.norm(dim=-1, keepdim=True)


_NUMERATOR = {"he": 2.0, "lecun": 1.0, "glorot": 1.0}


def scheme_variance(scheme: str, fan_in: int, fan_out: int, mode: Mode | None = None) -> float:
    """Target variance of a named scheme.

    He: 2/fan, LeCun: 1/fan, Glorot: 2/(fan_in + fan_out) (= 1/fan_avg). ``mode`` picks the
    fan for He and LeCun (default fan_in; Arpit & Bengio 2019 use He with fan_out).
    """
    if scheme not in _NUMERATOR:
        raise ValueError(f"scheme must be one of {sorted(_NUMERATOR)}, got {scheme!r}")
    fan_in, fan_out = v.positive_int("fan_in", fan_in), v.positive_int("fan_out", fan_out)
    if scheme == "glorot":
        if mode not in (None, "fan_avg"):
            raise ValueError(f"mode for glorot must be 'fan_avg', got {mode!r}")
        return 2.0 / (fan_in + fan_out)
    mode = mode or "fan_in"
    fans = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}
    if mode not in fans:
        raise ValueError(f"mode must be one of {sorted(fans)}, got {mode!r}")
    return _NUMERATOR[scheme] / fans[mode]


def named(scheme: str, *, mode: Mode | None = None, distribution: Distribution = "normal",
          gain: float = 1.0) -> Initializer:
    """An :data:`Initializer` for He, LeCun or Glorot, times ``gain`` in standard deviation.

    ``distribution='truncated_normal'`` follows PyTorch and Keras: the underlying normal has
    the scheme's variance and is truncated at two standard deviations, so the realized
    variance is smaller (about 0.774 of it).
    """
    scheme_variance(scheme, 1, 1, mode)  # validates scheme and mode now, not at first call
    gain = v.positive_float("gain", gain)
    if distribution not in ("normal", "uniform", "truncated_normal"):
        raise ValueError("distribution must be 'normal', 'uniform' or 'truncated_normal', "
                         f"got {distribution!r}")

    def init(n_nets: int, fan_out: int, fan_in: int, gen: torch.Generator) -> torch.Tensor:
        var = gain**2 * scheme_variance(scheme, fan_in, fan_out, mode)
        if distribution == "normal":
            return gaussian(n_nets, fan_out, fan_in, var, gen=gen)
        if distribution == "uniform":
            return uniform(n_nets, fan_out, fan_in, var, gen=gen)
        return truncated_normal(n_nets, fan_out, fan_in, math.sqrt(var), gen=gen)

    init.__name__ = f"{scheme}_{mode or 'default'}_{distribution}"
    return init


def he(mode: Mode = "fan_in", distribution: Distribution = "normal") -> Initializer:
    """He et al. (2015): variance 2/fan."""
    return named("he", mode=mode, distribution=distribution)


def lecun(mode: Mode = "fan_in", distribution: Distribution = "normal") -> Initializer:
    """LeCun: variance 1/fan."""
    return named("lecun", mode=mode, distribution=distribution)


def glorot(distribution: Distribution = "normal") -> Initializer:
    """Glorot & Bengio (2010): variance 2/(fan_in + fan_out)."""
    return named("glorot", distribution=distribution)


def gaussian_variance(rule: Callable[[int, int], float]) -> Initializer:
    """An :data:`Initializer` with Gaussian entries of variance ``rule(fan_in, fan_out)``."""

    def init(n_nets: int, fan_out: int, fan_in: int, gen: torch.Generator) -> torch.Tensor:
        return gaussian(n_nets, fan_out, fan_in, rule(fan_in, fan_out), gen=gen)

    return init
