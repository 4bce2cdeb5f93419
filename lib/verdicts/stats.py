"""Monte Carlo estimates with standard errors, and proportions with confidence intervals."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy import stats as _st


def _array(name: str, samples) -> np.ndarray:
    if isinstance(samples, torch.Tensor):
        samples = samples.detach().cpu().numpy()
    arr = np.asarray(samples, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size < 2:
        raise ValueError(f"{name} needs at least 2 samples for a standard error, got {arr.size}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains inf or NaN")
    return arr


def significant(value: float, se: float, digits: int = 2) -> str:
    """Format ``value`` to the decimal place of the ``digits``-th significant digit of ``se``."""
    if not math.isfinite(value):
        return str(value)
    if se <= 0 or not math.isfinite(se):
        return f"{value:.6g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(se)))
    return f"{value:.{decimals}f}"


@dataclass(frozen=True)
class Estimate:
    """A Monte Carlo mean with its standard error from ``n`` independent samples."""

    value: float
    se: float
    n: int

    def __str__(self) -> str:
        return f"{significant(self.value, self.se)} ± {significant(self.se, self.se)}"

    def z(self, theory: float) -> float:
        """Standardized distance from ``theory`` (inf when se = 0 and they differ)."""
        diff = self.value - theory
        if self.se == 0:
            return 0.0 if diff == 0 else math.inf
        return diff / self.se


def mean(samples) -> Estimate:
    """Sample mean and its standard error s/sqrt(n) of independent samples."""
    arr = _array("samples", samples)
    return Estimate(float(arr.mean()), float(arr.std(ddof=1) / math.sqrt(arr.size)), arr.size)


def mean_se(samples: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and standard error along ``dim`` (for error bars of many points at once)."""
    if not isinstance(samples, torch.Tensor):
        raise TypeError(f"samples must be a torch.Tensor, got {type(samples).__name__}")
    n = samples.shape[dim]
    if n < 2:
        raise ValueError(f"samples needs at least 2 entries along dim {dim}, got {n}")
    return samples.mean(dim), samples.std(dim) / math.sqrt(n)


@dataclass(frozen=True)
class Proportion:
    """An estimated probability k/n with an exact (Clopper-Pearson) confidence interval."""

    successes: int
    trials: int
    confidence: float
    lo: float
    hi: float

    @property
    def value(self) -> float:
        return self.successes / self.trials

    def __str__(self) -> str:
        pct = round(100 * self.confidence)
        return (f"{self.successes}/{self.trials} = {self.value:.4g} "
                f"({pct}% CI [{self.lo:.3g}, {self.hi:.3g}])")


def proportion(successes: int, trials: int, confidence: float = 0.95) -> Proportion:
    """Clopper-Pearson interval for a binomial proportion."""
    for name, val in (("successes", successes), ("trials", trials)):
        if isinstance(val, bool) or not isinstance(val, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(val).__name__}")
    successes, trials = int(successes), int(trials)
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must lie in [0, trials={trials}], got {successes}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    alpha = 1 - confidence
    lo = 0.0 if successes == 0 else float(_st.beta.ppf(alpha / 2, successes,
                                                        trials - successes + 1))
    hi = 1.0 if successes == trials else float(_st.beta.ppf(1 - alpha / 2, successes + 1,
                                                             trials - successes))
    return Proportion(successes, trials, confidence, lo, hi)
