"""Monte Carlo estimates with standard errors, proportions, and the arithmetic between them.

An :class:`Estimate` is a number measured from independent random samples: its value, its
standard error, the sample count and the degrees of freedom of its error (``n - 1`` for a
sample mean, ``None`` when the normal law is exact enough, as for a bootstrap from thousands of
samples). Estimates combine by the usual error propagation (independent errors; first order in
the delta method), so that a chapter never propagates standard errors by hand. A
:class:`Proportion` is a count ``k`` out of ``n`` with an exact (Clopper-Pearson) interval.
A :class:`Statistic` is a number that depends on the random draws but has no standard error of
its own (a test statistic, a correlation coefficient): it is shown, never compared.

Every estimate also remembers the notebook cell in which it was made (IPython's execution
count), so that a check can verify that its criterion was declared *before* the measurement
(DESIGN.md section 3a).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy import stats as _st

from ..core import validate as v
from ..core.provenance import execution_count

__all__ = ["Estimate", "Proportion", "Statistic", "mean", "batch_mean", "log_mean", "median",
           "mean_se", "proportion", "significant", "fisher_exact", "kendall_tau",
           "kendall_detectable", "mann_whitney_detectable", "positive", "execution_count",
           "proportion_of", "paired_difference", "from_summary", "frequency_estimate",
           "mann_whitney", "significant_exceedances"]


def _real(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_complex():
            value = value.item()
        else:
            raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if math.isnan(value):
        raise ValueError(f"{name} is NaN")
    return value


def _count(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def significant(value: float, se: float, digits: int = 2) -> str:
    """``value`` rounded to the decimal place of the ``digits``-th significant digit of ``se``.

    Only converged digits are printed: an estimate 1.23456 with standard error 0.0123 prints
    as ``1.235`` (two significant digits of the error).

    Examples
    --------
    >>> significant(1.23456, 0.0123)
    '1.235'
    >>> significant(1234.5, 56.0)
    '1234'
    """
    value, se = _real("value", value), _real("se", se)
    if not math.isfinite(value):
        raise ValueError(f"value must be finite, got {value}")
    if not math.isfinite(se) or se < 0:
        raise ValueError(f"se must be finite and >= 0, got {se}")
    digits = _count("digits", digits, 1)
    if se == 0:
        return f"{value:.6g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(se)))
    return f"{value:.{decimals}f}"


@dataclass(frozen=True)
class Estimate:
    """A Monte Carlo estimate: ``value`` with standard error ``se`` from ``n`` samples.

    Parameters
    ----------
    value : float
        The estimate (finite).
    se : float
        Its standard error (finite, >= 0).
    n : int
        The number of independent samples it rests on (>= 1).
    df : float or None
        Degrees of freedom of the standard error (>= 1): ``n - 1`` for a sample mean, so that
        tests use Student's t; None for the normal law.

    An estimate with ``se = 0`` (one sample, constant samples, a median of tied data) can be
    shown in a table, but the checks of :mod:`eit.verdicts.checks` refuse it as evidence.

    Examples
    --------
    >>> e = Estimate(1.02, 0.01, 100, df=99)
    >>> str(e)
    '1.020 ± 0.010'
    >>> round((e - Estimate(1.0, 0.01, 100, df=99)).se, 6)
    0.014142
    """

    value: float
    se: float
    n: int
    df: float | None = None
    made_in: int | None = field(default_factory=execution_count, compare=False, repr=False)

    def __post_init__(self):
        value, se = _real("value", self.value), _real("se", self.se)
        if not math.isfinite(value):
            raise ValueError(f"value must be finite, got {value}")
        if not math.isfinite(se) or se < 0:
            raise ValueError(f"se must be finite and >= 0, got {se}")
        n = _count("n", self.n, 1)
        if self.df is not None:
            df = _real("df", self.df)
            if not df >= 1 or not math.isfinite(df):
                raise ValueError(f"df must be finite and >= 1 (or None), got {self.df}")
            object.__setattr__(self, "df", df)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "se", se)
        object.__setattr__(self, "n", n)

    def __str__(self) -> str:
        return f"{significant(self.value, self.se)} ± {significant(self.se, self.se)}"

    def z(self, theory: float) -> float:
        """Standardized distance (value - theory) / se; inf when se = 0 and they differ."""
        theory = _real("theory", theory)
        diff = self.value - theory
        if self.se == 0:
            return 0.0 if diff == 0 else math.copysign(math.inf, diff)
        return diff / self.se

    def critical(self, alpha: float, sides: int = 2) -> float:
        """The critical value of the t (or normal) law at level ``alpha``, one or two sided."""
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
        if sides not in (1, 2):
            raise ValueError(f"sides must be 1 or 2, got {sides}")
        q = 1 - alpha / sides
        c = float(_st.norm.ppf(q) if self.df is None else _st.t.ppf(q, self.df))
        if not (math.isfinite(c) and c > 0):
            raise ValueError(f"alpha={alpha} with df={self.df} has no finite critical value")
        return c

    def interval(self, alpha: float, sides: int = 2) -> tuple[float, float]:
        """Confidence interval at level 1 - alpha (t quantiles when ``df`` is set)."""
        half = self.critical(alpha, sides) * self.se
        return self.value - half, self.value + half

    # -- arithmetic with independent errors ------------------------------------------------
    def _combine(self, other: Estimate, value: float, da: float, db: float) -> Estimate:
        a, b = abs(da) * self.se, abs(db) * other.se
        try:
            va, vb = a**2, b**2
            se = math.sqrt(va + vb)
            _welch_df(va, self.df, vb, other.df)
        except OverflowError:                 # extreme scales: the same, without squares
            se = math.hypot(a, b)
            if not math.isfinite(se):
                raise ValueError("se of the combined estimate overflows the floating-point "
                                 "range") from None
            # Welch-Satterthwaite is scale-free: weights relative to se**2 never overflow
            va, vb = ((a / se) ** 2, (b / se) ** 2) if se > 0 else (0.0, 0.0)
        return Estimate(value, se, min(self.n, other.n), _welch_df(va, self.df, vb, other.df))

    def __add__(self, other) -> Estimate:
        if isinstance(other, Estimate):
            return self._combine(other, self.value + other.value, 1.0, 1.0)
        return Estimate(self.value + _real("other", other), self.se, self.n, self.df)

    __radd__ = __add__

    def __neg__(self) -> Estimate:
        return Estimate(-self.value, self.se, self.n, self.df)

    def __sub__(self, other) -> Estimate:
        return self + (-other)

    def __rsub__(self, other) -> Estimate:
        return (-self) + other

    def __mul__(self, other) -> Estimate:
        if isinstance(other, Estimate):
            return self._combine(other, self.value * other.value, other.value, self.value)
        c = _real("factor", other)
        return Estimate(self.value * c, self.se * abs(c), self.n, self.df)

    __rmul__ = __mul__

    def __truediv__(self, other) -> Estimate:
        if isinstance(other, Estimate):
            if other.value == 0:
                raise ZeroDivisionError("division by an estimate whose value is 0")
            q = self.value / other.value
            return self._combine(other, q, 1 / other.value, -q / other.value)
        c = _real("divisor", other)
        if c == 0:
            raise ZeroDivisionError("division of an estimate by 0")
        return Estimate(self.value / c, self.se / abs(c), self.n, self.df)

    def log(self) -> Estimate:
        """log of a positive estimate by the delta method (se / value)."""
        if self.value <= 0:
            raise ValueError(f"log of a non-positive estimate {self.value}")
        return Estimate(math.log(self.value), self.se / self.value, self.n, self.df)

    def exp(self) -> Estimate:
        """exp of an estimate by the delta method (se * exp(value))."""
        e = math.exp(self.value)
        return Estimate(e, self.se * e, self.n, self.df)


def _welch_df(va: float, dfa: float | None, vb: float, dfb: float | None) -> float | None:
    """Welch-Satterthwaite degrees of freedom of a sum of independent errors."""
    if dfa is None and dfb is None:
        return None
    num = (va + vb) ** 2
    den = (va**2 / dfa if dfa else 0.0) + (vb**2 / dfb if dfb else 0.0)
    if den == 0 or num == 0:
        return dfa if dfb is None else dfb if dfa is None else min(dfa, dfb)
    return num / den


@dataclass(frozen=True)
class Statistic:
    """A number computed from random draws that has no standard error of its own.

    Test statistics, correlation coefficients and fitted slopes are shown in tables and
    verdicts as Statistics: the regression test compares the decisions they feed, never
    their digits.
    """

    value: float
    digits: int = 3
    made_in: int | None = field(default_factory=execution_count, compare=False, repr=False)

    def __post_init__(self):
        value = _real("value", self.value)
        if not math.isfinite(value):
            raise ValueError(f"value must be finite, got {value}")
        object.__setattr__(self, "value", value)
        _count("digits", self.digits, 1)

    def __str__(self) -> str:
        return f"{self.value:.{self.digits}g}"


def _array(name: str, samples) -> np.ndarray:
    if isinstance(samples, torch.Tensor):
        if samples.is_complex():
            raise TypeError(f"{name} must be real, got a complex tensor")
        samples = samples.detach().cpu().numpy()
    arr = np.asarray(samples)
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real, got complex values")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size < 2:
        raise ValueError(f"{name} needs at least 2 samples for a standard error, got {arr.size}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains inf or NaN")
    return arr


def _power_of_two(top: float) -> float:
    """A power of 2 in ``(top / 2, top]`` for ``top > 0`` (1 for 0): dividing by it is exact."""
    return 1.0 if top == 0 else math.ldexp(1.0, math.frexp(top)[1] - 1)


def _mean_sd(arr: np.ndarray) -> tuple[float, float]:
    """Mean and sample sd (ddof 1) of a finite array, on the scale of max |arr|.

    Dividing by a power of 2 is exact, so that the result is the plain one wherever that
    is representable; at extreme scales the squares neither overflow nor underflow to 0.
    """
    c = _power_of_two(float(np.abs(arr).max()))
    z = arr / c
    with np.errstate(over="ignore", invalid="ignore"):
        return float(z.mean()) * c, float(z.std(ddof=1)) * c


def mean(samples) -> Estimate:
    """Sample mean of independent samples, with standard error s/sqrt(n) and df = n - 1.

    Examples
    --------
    >>> e = mean([1.0, 2.0, 3.0, 4.0])
    >>> (e.value, round(e.se, 4), e.n, e.df)
    (2.5, 0.6455, 4, 3.0)
    """
    arr = _array("samples", samples)
    m, sd = _mean_sd(arr)
    se = sd / math.sqrt(arr.size)
    if not (math.isfinite(m) and math.isfinite(se)):
        raise ValueError("samples are too large for a mean and its standard error in floating "
                         "point (they overflow); rescale them (e.g. take logs)")
    return Estimate(m, se, arr.size, df=arr.size - 1)


def log_mean(samples) -> Estimate:
    """Mean of log(samples) for positive, heavy-tailed samples (a log-scale estimator).

    The mean of the logarithm is a robust summary of a positive quantity whose sample mean is
    dominated by rare large values (products of many random factors).
    """
    arr = _array("samples", samples)
    if (arr <= 0).any():
        raise ValueError("samples must be > 0 for a log-scale mean")
    return mean(np.log(arr))


def batch_mean(samples, batches: int) -> Estimate:
    """Mean of independent samples from ``batches`` equal batch means (df = batches - 1).

    The same estimate as :func:`mean`, with its standard error computed from the batch
    means: points of one verdict drawn with different sample sizes then share their degrees
    of freedom (and so their critical value). The number of samples must be a multiple of
    ``batches``.

    Examples
    --------
    >>> e = batch_mean([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 3)
    >>> (e.value, e.n, e.df)
    (3.5, 3, 2.0)
    """
    arr = _array("samples", samples)
    batches = _count("batches", batches, 2)
    if arr.size % batches:
        raise ValueError(f"the number of samples ({arr.size}) must be a multiple of "
                         f"batches={batches}")
    with np.errstate(over="ignore", invalid="ignore"):
        means = arr.reshape(batches, -1).mean(1)
    if not np.isfinite(means).all():
        raise ValueError("samples are too large for batch means in floating point (they "
                         "overflow); rescale them (e.g. take logs)")
    return mean(means)


def median(samples, *, n_boot: int = 2000, seed: int = 0) -> Estimate:
    """Sample median with a bootstrap standard error (a robust estimator for heavy tails).

    The resampling uses its own fixed generator (``seed``), so the estimate is a deterministic
    function of the samples.
    """
    arr = _array("samples", samples)
    n_boot = _count("n_boot", n_boot, 100)
    seed = _count("seed", seed, 0)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, arr.size, size=(n_boot, arr.size))
    with np.errstate(over="ignore", invalid="ignore"):
        boot = np.median(arr[idx], axis=1)
        m, se = float(np.median(arr)), _mean_sd(boot)[1]
    if not (math.isfinite(m) and math.isfinite(se)):
        raise ValueError("samples are too large for a median and its bootstrap error in "
                         "floating point; rescale them (e.g. take logs)")
    return Estimate(m, se, arr.size)


def mean_se(samples: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and standard error along ``dim`` (error bars of many points at once)."""
    if not isinstance(samples, torch.Tensor):
        raise TypeError(f"samples must be a torch.Tensor, got {type(samples).__name__}")
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    if not -samples.ndim <= dim < samples.ndim:
        raise ValueError(f"dim must lie in [{-samples.ndim}, {samples.ndim}) for samples of "
                         f"shape {tuple(samples.shape)}, got {dim}")
    if samples.is_complex() or not samples.is_floating_point():
        raise TypeError(f"samples must be a real floating-point tensor, got {samples.dtype}")
    if not torch.isfinite(samples).all():
        raise ValueError("samples contains inf or NaN")
    n = samples.shape[dim]
    if n < 2:
        raise ValueError(f"samples needs at least 2 entries along dim {dim}, got {n}")
    # on the scale of max |samples| along dim, a power of 2 (exact): at extreme scales the
    # squares of the deviations neither overflow nor underflow to 0
    top = samples.abs().amax(dim, keepdim=True)
    c = torch.ldexp(torch.ones_like(top), torch.frexp(top).exponent - 1)
    c = torch.where(top > 0, c, torch.ones_like(top))
    z = samples / c
    c = c.squeeze(dim)
    m, se = z.mean(dim) * c, z.std(dim) * c / math.sqrt(n)
    if not bool(torch.isfinite(m).all() & torch.isfinite(se).all()):
        raise ValueError("samples are too large for a mean and its standard error in "
                         "floating point (they overflow); rescale them (e.g. take logs)")
    return m, se


@dataclass(frozen=True)
class Proportion:
    """An estimated probability k/n with an exact (Clopper-Pearson) confidence interval.

    Parameters
    ----------
    successes : int
        k, in [0, trials].
    trials : int
        n >= 1.
    confidence : float
        Of the interval ``(lo, hi)``, in (0, 1).
    lo, hi : float, optional
        The Clopper-Pearson interval; computed when not given (and checked when given).

    Examples
    --------
    >>> p = Proportion(3, 10)
    >>> p.value, round(p.hi, 4)
    (0.3, 0.6525)
    """

    successes: int
    trials: int
    confidence: float = 0.95
    lo: float | None = None
    hi: float | None = None
    made_in: int | None = field(default_factory=execution_count, compare=False, repr=False)

    def __post_init__(self):
        trials = _count("trials", self.trials, 1)
        successes = _count("successes", self.successes, 0)
        if successes > trials:
            raise ValueError(f"successes must lie in [0, trials={trials}], got {successes}")
        confidence = _real("confidence", self.confidence)
        if not 0 < confidence < 1:
            raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
        lo, hi = _clopper_pearson(successes, trials, (1 - confidence) / 2)
        for name, given, want in (("lo", self.lo, lo), ("hi", self.hi, hi)):
            if given is not None and not math.isclose(_real(name, given), want, rel_tol=1e-9,
                                                      abs_tol=1e-12):
                raise ValueError(f"{name} must be the Clopper-Pearson end {want!r} of "
                                 f"{successes}/{trials} at confidence {confidence}, got "
                                 f"{given!r}")
        for name, value in (("successes", successes), ("trials", trials),
                            ("confidence", confidence), ("lo", lo), ("hi", hi)):
            object.__setattr__(self, name, value)

    @property
    def value(self) -> float:
        return self.successes / self.trials

    def __str__(self) -> str:
        pct = round(100 * self.confidence)
        return (f"{self.successes}/{self.trials} = {self.value:.3g} "
                f"({pct}% CI [{self.lo:.3g}, {self.hi:.3g}])")

    def bounds(self, alpha: float, sides: int = 2) -> tuple[float, float]:
        """Clopper-Pearson interval at level 1 - alpha (one-sided ends when sides = 1)."""
        alpha = _real("alpha", alpha)
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
        if sides not in (1, 2):
            raise ValueError(f"sides must be 1 or 2, got {sides}")
        return _clopper_pearson(self.successes, self.trials, alpha / sides)


def _clopper_pearson(k: int, n: int, tail: float) -> tuple[float, float]:
    lo = 0.0 if k == 0 else float(_st.beta.ppf(tail, k, n - k + 1))
    hi = 1.0 if k == n else float(_st.beta.ppf(1 - tail, k + 1, n - k))
    return lo, hi


def proportion(successes: int, trials: int, confidence: float = 0.95) -> Proportion:
    """Clopper-Pearson interval for a binomial proportion.

    Examples
    --------
    >>> p = proportion(0, 4000)
    >>> round(p.hi, 6)
    0.000922
    """
    return Proportion(successes, trials, confidence)


def fisher_exact(a: Proportion, b: Proportion, alternative: str = "two-sided") -> float:
    """p-value of Fisher's exact test that two proportions share one probability.

    ``alternative='greater'`` tests p_a > p_b, ``'less'`` tests p_a < p_b.
    """
    for name, p in (("a", a), ("b", b)):
        if not isinstance(p, Proportion):
            raise TypeError(f"{name} must be a Proportion, got {type(p).__name__}")
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be 'two-sided', 'greater' or 'less', got "
                         f"{alternative!r}")
    table = [[a.successes, a.trials - a.successes], [b.successes, b.trials - b.successes]]
    return float(_st.fisher_exact(table, alternative=alternative).pvalue)


def kendall_tau(x, y) -> tuple[Statistic, float]:
    """Kendall's tau-b between paired samples and its two-sided p-value (SciPy)."""
    xa, ya = _array("x", x), _array("y", y)
    if xa.shape != ya.shape:
        raise ValueError(f"x and y must have the same length, got {xa.size} and {ya.size}")
    res = _st.kendalltau(xa, ya)
    if not math.isfinite(res.statistic):
        raise ValueError("kendall_tau is undefined: x or y is constant")
    return Statistic(float(res.statistic)), float(res.pvalue)


def positive(*estimates: Estimate, alpha: float) -> tuple[float, float]:
    """One-sided t-test that every estimate is > 0: p-value and smallest detectable effect.

    Parameters
    ----------
    *estimates : Estimate
        One or more estimates that must all be detected as positive.
    alpha : float
        The level of the test (the criterion's), in (0, 1).

    Returns
    -------
    p_value : float
        The largest one-sided p-value (all must be detected).
    detectable : float
        The largest ``t_{1-alpha, df} * se``: a true effect of this size is detected with
        probability 1/2 (the smallest effect this sample size resolves).

    Examples
    --------
    >>> p, d = positive(Estimate(0.3, 0.1, 50, df=49), alpha=0.001)
    >>> round(p, 4), round(d, 3)
    (0.0021, 0.327)
    """
    if not estimates:
        raise ValueError("estimates must not be empty")
    for i, e in enumerate(estimates):
        if not isinstance(e, Estimate):
            raise TypeError(f"estimates[{i}] must be an Estimate, got {type(e).__name__}")
        if not e.se > 0:
            raise ValueError(f"estimates[{i}] must have a positive standard error, got {e.se}")
    if not (isinstance(alpha, float) and 0 < alpha < 1):
        raise ValueError(f"alpha must be a float in (0, 1), got {alpha!r}")
    p = max(float(_st.t.sf(e.value / e.se, e.df) if e.df is not None
                  else _st.norm.sf(e.value / e.se)) for e in estimates)
    return p, max(e.critical(alpha, sides=1) * e.se for e in estimates)


def kendall_detectable(n: int, alpha: float) -> float:
    """Smallest Kendall tau that a one-sided test on ``n`` pairs detects with probability 1/2.

    Under independence tau has mean 0 and variance ``2(2n + 5) / (9n(n - 1))`` (no ties);
    the detectable tau is the normal critical value times that standard deviation.

    Examples
    --------
    >>> round(kendall_detectable(100, 0.01), 3)
    0.158
    """
    n = _count("n", n, 2)
    if not (isinstance(alpha, float) and 0 < alpha < 1):
        raise ValueError(f"alpha must be a float in (0, 1), got {alpha!r}")
    return float(_st.norm.ppf(1 - alpha) * math.sqrt(2 * (2 * n + 5) / (9 * n * (n - 1))))


def mann_whitney_detectable(n1: int, n2: int, alpha: float) -> float:
    """Smallest excess of P(X > Y) over 1/2 that a one-sided Mann-Whitney test detects.

    Under the null U has mean ``n1 n2 / 2`` and variance ``n1 n2 (n1 + n2 + 1) / 12`` (no
    ties); U / (n1 n2) estimates P(X > Y), so the detectable excess is the normal critical
    value times ``sqrt((n1 + n2 + 1) / (12 n1 n2))``.

    Examples
    --------
    >>> round(mann_whitney_detectable(20, 20, 0.01), 3)
    0.215
    """
    n1, n2 = _count("n1", n1, 1), _count("n2", n2, 1)
    if not (isinstance(alpha, float) and 0 < alpha < 1):
        raise ValueError(f"alpha must be a float in (0, 1), got {alpha!r}")
    return float(_st.norm.ppf(1 - alpha) * math.sqrt((n1 + n2 + 1) / (12 * n1 * n2)))


def proportion_of(mask, confidence: float = 0.95) -> Proportion:
    """The proportion of true entries of a boolean array, with its Clopper-Pearson interval.

    ``mask`` holds one entry per trial (any shape; a tensor, an array or a list of bools):
    ``proportion_of(ratios < 1)`` is :func:`~eit.verdicts.stats.proportion` of the number of
    violations among all trials.

    Examples
    --------
    >>> p = proportion_of(torch.tensor([True, False, False, True]))
    >>> p.successes, p.trials
    (2, 4)
    """
    if isinstance(mask, torch.Tensor):
        mask = mask.detach().cpu().numpy()
    arr = np.asarray(mask)
    if arr.dtype != bool:
        raise TypeError(f"mask must hold booleans, got dtype {arr.dtype}")
    if arr.size == 0:
        raise ValueError("mask must hold at least one trial")
    return proportion(int(arr.sum()), int(arr.size), confidence)


def paired_difference(a: Iterable[float], b: Iterable[float]) -> Estimate:
    """The mean of ``a[i] - b[i]`` over the pairs both have, with its standard error.

    ``a`` and ``b`` are one value per seed, in seed order, for two configurations that share
    each seed's randomness (initial weights, mini-batches); when one has fewer seeds, the
    pairs are its seeds. The standard error is that of the differences (Student's t with
    pairs - 1 degrees of freedom in the one-sided tests of :mod:`eit.verdicts.checks`).

    Examples
    --------
    >>> d = paired_difference([0.9, 0.8, 0.7], [0.5, 0.6])
    >>> round(d.value, 6), d.n
    (0.3, 2)
    """
    a, b = _values("a", a), _values("b", b)
    n = min(len(a), len(b))
    if n < 2:
        raise ValueError(f"a and b must both hold at least 2 values (pairs, for a standard "
                         f"error), got {len(a)} and {len(b)}")
    with np.errstate(over="ignore", invalid="ignore"):
        d = a[:n] - b[:n]
    if not np.isfinite(d).all():
        raise ValueError("a and b are too large for their differences in floating point (they "
                         "overflow); rescale them")
    return mean(d)


def from_summary(means, sds, n: int) -> list[Estimate]:
    """One :class:`Estimate` per point from its mean and sample sd over ``n`` draws.

    Parameters
    ----------
    means, sds : array_like
        One-dimensional, of equal length: the sample means and standard deviations (n - 1).
    n : int
        The number of independent draws behind every point (at least 2).

    Returns
    -------
    list of Estimate
        ``Estimate(mean, sd / sqrt(n), n, df=n - 1)`` per point.

    References
    ----------
    Arpit & Bengio (2019), Figures 1-2 at the paper's size (stored means and sds).

    Examples
    --------
    >>> [e.se for e in from_summary([1.0, 2.0], [0.5, 1.0], 4)]
    [0.25, 0.5]
    """
    m, s = _values("means", means), _values("sds", sds)
    if m.shape != s.shape:
        raise ValueError(f"means and sds must be one-dimensional of equal length, got "
                         f"shapes {m.shape} and {s.shape}")
    if not (np.isfinite(m).all() and np.isfinite(s).all()) or (s < 0).any():
        raise ValueError("means and sds must be finite, sds non-negative")
    n = v.positive_int("n", n)
    if n < 2:
        raise ValueError(f"n must be at least 2, got {n}")
    return [Estimate(float(m_), float(s_) / math.sqrt(n), n, df=n - 1)
            for m_, s_ in zip(m, s, strict=True)]


def frequency_estimate(frequency: Proportion, probability: float) -> Estimate:
    """The frequency as an :class:`Estimate` with the binomial standard error at ``probability``.

    Parameters
    ----------
    frequency : Proportion
        k events in n trials (:func:`eit.verdicts.stats.proportion`).
    probability : float
        The probability p of the event under the law being tested, in [0, 1].

    Returns
    -------
    Estimate
        ``k/n`` with standard error ``sqrt(p (1 - p) / n)``, n samples, normal quantiles
        (``df=None``).

    References
    ----------
    Arpit & Bengio (2019), Lemmas 2 and 4: tail frequencies of one layer against the exact
    binomial mixture of chi-squared laws.

    Examples
    --------
    >>> from eit.verdicts.stats import proportion
    >>> e = frequency_estimate(proportion(30, 1000), 0.025)
    >>> e.value, round(e.se, 6), e.n, e.df
    (0.03, 0.004937, 1000, None)
    """
    if not isinstance(frequency, Proportion):
        raise TypeError(f"frequency must be a Proportion, got {type(frequency).__name__}")
    p = v.in_interval("probability", probability, 0.0, 1.0, closed_hi=True)
    return Estimate(frequency.value, math.sqrt(p * (1 - p) / frequency.trials),
                    frequency.trials)


def _sample(name: str, values) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    v.array(name, values)
    return np.asarray(values, dtype=float).ravel()


def _values(name: str, values) -> np.ndarray:
    """A one-dimensional array of finite real numbers (a list, an array, a tensor, or any
    iterable of numbers), as float64."""
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    elif not isinstance(values, (np.ndarray, Sequence, str, bytes)) and isinstance(
            values, Iterable):
        values = list(values)
    v.array(name, values, ndim=1, min_size=0)
    return np.asarray(values, dtype=float)


def mann_whitney(x, y, alternative: str = "greater") -> tuple[Statistic, float]:
    """The Mann-Whitney U test of two independent samples.

    Parameters
    ----------
    x, y : array_like
        The two samples (n1 and n2 values).
    alternative : str
        ``'greater'`` (x tends to exceed y), ``'less'`` or ``'two-sided'``.

    Returns
    -------
    statistic : Statistic
        ``U / (n1 n2)``, with U the statistic of ``x``: an estimate of
        ``P(X > Y) + P(X = Y) / 2``.
    p_value : float
        Of the test in the direction of ``alternative``; 1 when every value of ``x`` and
        ``y`` is tied (the statistic is then 1/2: no evidence either way, never a detection).

    References
    ----------
    Mann & Whitney (1947); used for Figure 5 of Arpit & Bengio (2019) (epochs spent at the
    initial loss).

    Examples
    --------
    >>> u, p = mann_whitney([3, 4, 5], [1, 2, 2])
    >>> u.value, round(p, 3)
    (1.0, 0.038)
    """
    if alternative not in ("greater", "less", "two-sided"):
        raise ValueError(f"alternative must be 'greater', 'less' or 'two-sided', got "
                         f"{alternative!r}")
    a, b = _sample("x", x), _sample("y", y)
    both = np.concatenate([a, b])
    if both.min() == both.max():     # all tied: no evidence either way, never a detection
        return Statistic(0.5), 1.0
    res = _st.mannwhitneyu(a, b, alternative=alternative)
    return Statistic(float(res.statistic) / (a.size * b.size)), float(res.pvalue)


def significant_exceedances(estimates: Sequence[Estimate], bounds: Sequence[float], *,
                            side: str, alpha: float = 0.001) -> Proportion:
    """The estimates significantly ``above`` (or ``below``) their bounds, as a count.

    Estimate ``i`` counts when ``(value_i - bound_i) / se_i``, signed towards ``side``,
    exceeds the one-sided critical value of its t (or normal) law at level ``alpha / k``
    (``k`` estimates: Bonferroni), so that the count is 0 with probability at least
    ``1 - alpha`` when every true value is on the allowed side.

    Parameters
    ----------
    estimates : sequence of Estimate
        The ``k`` estimates (``k >= 1``).
    bounds : sequence of float
        One finite bound per estimate.
    side : {"above", "below"}
        Which side of the bound counts as beyond it.
    alpha : float
        Family-wise level, in (0, 1).

    Returns
    -------
    Proportion
        The number of estimates beyond their bounds out of ``k``.

    References
    ----------
    Meterez et al. (2024), Theorem 3 and Corollary 4 (bounds per batch ``X``, tested on
    conditional means over rotations); Bonferroni correction (DESIGN.md section 3a).

    Examples
    --------
    >>> ests = [Estimate(1.0, 0.01, 100, df=99), Estimate(2.0, 0.01, 100, df=99)]
    >>> significant_exceedances(ests, [1.5, 1.5], side="above").successes
    1
    >>> significant_exceedances(ests, [1.5, 1.5], side="below").successes
    1
    """
    for name, value in (("estimates", estimates), ("bounds", bounds)):
        if isinstance(value, (str, bytes, Estimate)) or not isinstance(value, Sequence):
            raise TypeError(f"{name} must be a sequence, got {type(value).__name__}")
    estimates, bounds = list(estimates), list(bounds)
    if not estimates:
        raise ValueError("estimates must not be empty")
    for i, e in enumerate(estimates):
        if not isinstance(e, Estimate):
            raise TypeError(f"estimates[{i}] must be an Estimate, got {type(e).__name__}")
    if len(bounds) != len(estimates):
        raise ValueError(f"bounds must have one entry per estimate ({len(estimates)}), "
                         f"got {len(bounds)}")
    bounds = [v.finite_real(f"bounds[{i}]", b) for i, b in enumerate(bounds)]
    if side not in ("above", "below"):
        raise ValueError(f"side must be 'above' or 'below', got {side!r}")
    alpha = v.in_interval("alpha", alpha, 0.0, 1.0)
    if alpha == 0:
        raise ValueError("alpha must lie in (0, 1), got 0")
    for i, e in enumerate(estimates):
        if not e.se > 0:
            raise ValueError(f"estimates[{i}] has standard error 0: it cannot be tested")
    k = len(estimates)
    sign = 1 if side == "above" else -1
    far = [(e.value - b) / e.se * sign > e.critical(alpha / k, sides=1)
           for e, b in zip(estimates, bounds, strict=True)]
    return proportion(sum(far), k)
