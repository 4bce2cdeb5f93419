"""Stability of a statistical verdict: the chance that an independent re-run decides alike.

A verdict decided by a statistic near a threshold of its criterion is decided by chance: the
next seed, machine or device may give another outcome. This module computes, from a verdict
record alone (its stored estimates, standard errors and pre-registered criterion), the
probability that an independent re-run of the cell, with the same sample sizes, gives the
same outcome, and the distance of each estimate from the nearest decision threshold in
standard errors.

The law of the re-run. Every decision of :mod:`eit.verdicts.checks` compares estimates
``e_i`` (approximately normal, standard error ``s_i``) with thresholds that the criterion and
the sample size fix: an interval ``e_i +- c_i s_i`` against a theory value, a band or a
bound. Given the recorded ``e_i``, the true mean has the law ``N(e_i, s_i^2)`` (flat prior),
and a re-run's estimate, drawn around the true mean with the same standard error, has the
predictive law ``e'_i ~ N(e_i, 2 s_i^2)``, independently across points. One exception: an
agreement with an exact law (every interval must contain the theory) that was confirmed
asserts that the true means *are* the theory values; under that claim a re-run confirms with
the probability its intervals were built for, ``(1 - alpha/k)^k`` (at least ``1 - alpha``:
0.9999 at the exact-law default ``alpha = 1e-4``),
provided they stay narrower than the margin. Whether they do is itself random: the half-width
is a critical value times an estimated standard error, and two runs' standard errors differ
by a factor whose logarithm has the standard deviation ``1/sqrt(df)`` for normal data (a
lower bound for heavier tails), so each point stays narrower than its margin ``m`` with
probability ``Phi(log(m/h) sqrt(df))``; this enters every outcome that a margin decides (an
exact law confirmed, inconclusive, or corrected, and a refutation that a correction could
turn into a corrected outcome). Each outcome is an
event on the ``e'_i``: every point inside an interval ("all inside") or one point outside
("any outside"), so its probability is a product of normal probabilities of intervals. For
one point and one threshold at distance ``d`` standard errors the agreement probability is
``Phi(d / sqrt 2)``; it reaches :data:`STABLE` = 0.99 at ``d = 3.29``.

Counted failures against a probability bound (:func:`eit.verdicts.checks.bound`). A point
with ``k`` failures of ``n`` trials has, under the Jeffreys prior, the posterior
``Beta(k + 1/2, n - k + 1/2)`` for its failure probability, so a re-run's count ``k'`` has the
predictive law beta-binomial(``n, k + 1/2, n - k + 1/2``). The check's one-sided
Clopper-Pearson ends at level ``alpha/m`` (``m`` points) increase with ``k'``: the bound is
cleared for ``k' <= a`` and exceeded for ``k' >= c``, two cuts found by bisection with its own
:meth:`~eit.verdicts.stats.Proportion.bounds` (so they agree with it bit for bit). The
probability of each outcome is then an exact sum of the beta-binomial law, a product over
the independent points as above. The distance is that of ``k/n`` from the nearer cut
(``(a + 1/2)/n`` or ``(c - 1/2)/n``) in standard errors ``sqrt(p(1 - p)/n)`` (``p = k/n``;
the Jeffreys ``(k + 1/2)/(n + 1)`` at ``k = 0`` or ``n``); a count's law is skewed, so the
probability, not the distance, decides (5 of 600 against 0.05 is 4.3 standard errors from
its cut, and a re-run agrees with probability 0.986).

Two proportions in order (:func:`eit.verdicts.checks.order`, Fisher's exact test), by exact
enumeration: both re-run counts have the beta-binomial law above, independently; for each
count of the larger the one-sided p-values are monotone in the count of the smaller, so the
region where the test is significant (either way) is found by bisection, with the p-values
computed as SciPy's ``fisher_exact`` computes them, and its probability is summed. The
distance is that of the difference of the Jeffreys proportions, in its standard error, from
the normal critical values ``+-z_{alpha/m}`` (``m`` pairs).

Detections (:func:`eit.verdicts.checks.detects`, :func:`~eit.verdicts.checks.detects_positive`)
are decided by a one-sided p-value ``p`` against the level ``alpha``. On the normal scale
``z = Phi^-1(1 - p)`` (:func:`scipy.stats.norm.isf`, accurate at p = 1e-127) is the test
statistic, of unit standard error, and ``z_a = Phi^-1(1 - alpha)`` the threshold: the
re-run's ``z' ~ N(z, 2)`` as above, so the effect is detected again with probability
``Phi((z - z_a)/sqrt 2)`` (a confirmed record), missed again with its complement (an
inconclusive one), and the distance is ``|z - z_a|``: a detection at alpha = 0.001 is stable
for p <= 9e-11, at 0.01 for p <= 1e-8 (p = 0: probability 1, distance ``inf``). A
:func:`~eit.verdicts.checks.detects_positive` record of several estimates stores only the
largest p-value: the model is that of the weakest estimate (the others, with smaller p, are
more stable; for a confirmed record of several estimates near the level the probability is
an upper bound).
The same model serves t-tests, Kendall's tau and the Mann-Whitney U test (their statistics
are near normal); for a t-test of few degrees of freedom it is conservative (the p-value's
normal score varies less between runs than the model's unit: with 7 degrees of freedom
and noncentralities from -1 to 10, 0.80 predicted against 0.88 observed on average).

These probabilities are calibrated on average over true effects (the test
``tests/test_stability.py`` simulates pairs of runs of each check over a range of effects
and compares the predicted and the observed agreement rates); for one fixed true effect they
are estimates.

Records that no random draw decides return ``None`` from :func:`of_record`: exact and
consistency records (among them a probability bound >= 1 or one cleared by more than 100x).
Every other record that a check of :mod:`eit.verdicts.checks` writes is modelled.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy import stats as _st

from .records import CONFIRMED, CORRECTED, NOT_REPRODUCED, REFUTED
from .stats import Estimate, Proportion

__all__ = ["STABLE", "Stability", "of_record"]

#: A record is stable when a re-run gives its outcome with at least this probability.
STABLE = 0.99


@dataclass(frozen=True)
class Stability:
    """The re-run agreement of one record.

    Attributes
    ----------
    probability : float
        P(an independent re-run gives the recorded outcome), under the predictive law above.
    distance : float
        The smallest distance, in standard errors, of a recorded estimate from a decision
        threshold of its point (``inf`` when no threshold is finite).
    point : str
        The point at that distance.
    """

    probability: float
    distance: float
    point: str

    @property
    def stable(self) -> bool:
        return self.probability >= STABLE

    def record(self) -> dict:
        """As JSON: an infinite distance (no finite threshold, p = 0) is written as None."""
        distance = self.distance if math.isfinite(self.distance) else None
        return {"probability": self.probability, "distance": distance,
                "point": self.point, "stable": self.stable}


def _prob(lo: float, hi: float, e: float, s: float) -> float:
    """P(lo <= e' <= hi) for e' ~ N(e, 2 s^2)."""
    if hi < lo:
        return 0.0
    scale = math.sqrt(2.0) * s
    return float(_st.norm.cdf((hi - e) / scale) - _st.norm.cdf((lo - e) / scale))


class _Point:
    """One estimate with its thresholds; events are intervals of the re-run's estimate."""

    def __init__(self, name: str, e: float, s: float, thresholds: list[float]):
        self.name, self.e, self.s = name, e, s
        finite = [abs(e - t) / s for t in thresholds if math.isfinite(t)]
        self.distance = min(finite) if finite else math.inf

    def p(self, lo: float, hi: float) -> float:
        return _prob(lo, hi, self.e, self.s)


def _num(rec: Mapping, key: str, where: str = "record['values']") -> float:
    """A finite stored number."""
    if key not in rec:
        raise ValueError(f"{where}: an entry lacks {key!r}")
    x = rec[key]
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"{where}[{key!r}] must be a real number, got {type(x).__name__}")
    if not math.isfinite(x):
        raise ValueError(f"{where}[{key!r}] must be finite, got {x}")
    return float(x)


def _estimate(v: Mapping) -> Estimate:
    n, df = v.get("n"), v.get("df")
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"record['values']['n'] must be an int, got {type(n).__name__}")
    if df is not None:
        df = _num(v, "df")
    return Estimate(_num(v, "value"), _num(v, "se"), n, df)


def _margin(crit: Mapping, t: float) -> float:
    m = _num(crit, "margin", "record['criterion']")
    return m * abs(t) if crit.get("relative") else m


def _events(crit: Mapping, t: float, h: float) -> tuple[tuple[float, float], ...]:
    """(the confirming interval, the not-failing interval) of a re-run's e' for theory t,
    with the interval half-width h (see :func:`eit.verdicts.checks.agree`)."""
    if crit.get("exact_law"):                 # the interval must contain t
        return (t - h, t + h), (t - h, t + h)
    m = _margin(crit, t)                      # inside the band / not wholly outside it
    return (t - m + h, t + m - h), (t - m - h, t + m + h)


def _narrow(e: Estimate, h: float, m: float) -> float:
    """P(a re-run's half-width stays <= the margin ``m``), its half-width now ``h``.

    The half-width is the critical value times the standard error, and the standard error is
    itself estimated: for normal data ``se^2`` is ``sigma^2 chi2_df / df``, so ``log se`` has
    the standard deviation ``1/sqrt(2 df)``, and the ratio of two independent runs' standard
    errors ``1/sqrt(df)`` (``df`` of the estimate, else ``n - 1``). Heavier tails than the
    normal's make it vary more: the probability is then an upper bound.
    """
    df = e.df if e.df is not None else e.n - 1
    if df <= 0 or h == 0:
        return 1.0 if h <= m else 0.0
    return float(_st.norm.cdf(math.log(m / h) * math.sqrt(df)))


def _agreement(record: Mapping) -> Stability | None:
    crit, test = record["criterion"], record["test"]
    rows = [v for v in record["values"] if v.get("type") == "estimate" and "theory" in v]
    if not rows or len(rows) != test.get("family"):
        return None
    k, exact_law = len(rows), bool(crit.get("exact_law"))
    alpha = _num(crit, "alpha", "record['criterion']")
    pts, conf, keep, corr_conf = [], 1.0, 1.0, 1.0
    corr_pts = []          # distances to the corrected law's thresholds (a corrected outcome)
    joint = 1.0            # corrected confirmed and printed kept, on the same re-run
    narrow = corr_narrow = 1.0   # P(every re-run interval narrower than its margin)
    for v in rows:
        e = _estimate(v)
        if not e.se > 0:
            return None
        h, t = e.critical(alpha / k, sides=2) * e.se, _num(v, "theory")
        if exact_law:
            narrow *= _narrow(e, h, _margin(crit, t))
            if "corrected" in v:
                corr_narrow *= _narrow(e, h, _margin(crit, _num(v, "corrected")))
        (c_lo, c_hi), (k_lo, k_hi) = _events(crit, t, h)
        pt = _Point(v.get("name", ""), e.value, e.se, [c_lo, c_hi, k_lo, k_hi])
        pts.append(pt)
        conf *= pt.p(c_lo, c_hi)
        keep *= pt.p(k_lo, k_hi)
        if "corrected" in v:
            (a_lo, a_hi), _ = _events(crit, _num(v, "corrected"), h)
            # an exact corrected law is the claim confirmed: re-runs are drawn around it
            # with the run's own error; otherwise the predictive law around e_i
            centre, law_se = ((_num(v, "corrected"), e.se / math.sqrt(2.0)) if exact_law
                              else (e.value, e.se))
            corr_conf *= _prob(a_lo, a_hi, centre, law_se)
            corr_pts.append(_Point(v.get("name", ""), e.value, e.se, [a_lo, a_hi]))
            joint *= _prob(max(a_lo, k_lo), min(a_hi, k_hi), centre, law_se)
    outcome = record["outcome"]
    # a corrected outcome needs the printed law to fail and the corrected one to confirm
    corrected = ((corr_conf - joint) * corr_narrow
                 if any("corrected" in v for v in rows) else 0.0)
    if outcome == CORRECTED and any("corrected" in v for v in rows):
        p = corrected
    elif outcome == CONFIRMED and exact_law:
        # the claim confirmed is mu_i = t_i: under it each interval covers t_i with
        # probability 1 - alpha/k (the test's design), whatever the recorded e_i
        p = (1.0 - alpha / k) ** k * narrow
    elif outcome == CONFIRMED:
        p = conf
    elif outcome in (REFUTED, NOT_REPRODUCED):
        p = 1.0 - keep - corrected
    elif exact_law:                           # inconclusive: every interval held its
        p = (1.0 - alpha / k) ** k * (1.0 - narrow)   # theory (as above), one too wide
    else:                                     # inconclusive
        p = keep - conf
    # a corrected outcome is decided at the corrected law's thresholds: report those
    near = corr_pts if outcome == CORRECTED and corr_pts else pts
    worst = min(near, key=lambda q: q.distance)
    return Stability(min(1.0, max(0.0, p)), worst.distance, worst.name)


def _one_sided(record: Mapping, upper: bool) -> Stability | None:
    crit, test = record["criterion"], record["test"]
    rows = [v for v in record["values"] if v.get("type") == "estimate" and "bound" in v]
    if not rows or len(rows) != test.get("family"):
        return None
    k, alpha = len(rows), _num(crit, "alpha", "record['criterion']")
    pts, conf, keep = [], 1.0, 1.0
    for v in rows:
        e = _estimate(v)
        if not e.se > 0:
            return None
        h, b = e.critical(alpha / k, sides=1) * e.se, _num(v, "bound")
        if upper:                             # cleared: e' <= b - h; violated: e' > b + h
            c_lo, c_hi, k_lo, k_hi = -math.inf, b - h, -math.inf, b + h
        else:                                 # cleared: e' >= b + h; violated: e' < b - h
            c_lo, c_hi, k_lo, k_hi = b + h, math.inf, b - h, math.inf
        pt = _Point(v.get("name", ""), e.value, e.se, [b - h, b + h])
        pts.append(pt)
        conf *= pt.p(c_lo, c_hi)
        keep *= pt.p(k_lo, k_hi)
    return _decide(record["outcome"], conf, keep, pts)


def _upper_bound(record: Mapping) -> bool:
    """Whether a one-sided record bounds its estimates from above: its theory reads
    "$\\le$ b" ("<= b" in records written before the verdict text was typeset), not
    "$\\ge$ b"."""
    theory = str(record.get("theory", "")).lstrip()
    if theory.startswith(("<=", "$\\le$")):
        return True
    if theory.startswith((">=", "$\\ge$")):
        return False
    raise ValueError(f"record['theory'] must start with a bound's relation, got {theory!r}")


def _difference(x: Mapping, y: Mapping) -> Estimate:
    """larger - smaller for a pair of estimates, or an estimate and an exact number, as
    :func:`eit.verdicts.checks.order` forms it (Welch)."""
    if x.get("type") == "exact":
        return _num(x, "value") - _estimate(y)
    if y.get("type") == "exact":
        return _estimate(x) - _num(y, "value")
    return _estimate(x) - _estimate(y)


def _order(record: Mapping) -> Stability | None:
    crit, test = record["criterion"], record["test"]
    vals = record["values"]
    k = test.get("family")
    if isinstance(k, bool) or not isinstance(k, int) or not 0 < 2 * k <= len(vals):
        return None
    pairs = [(vals[2 * j], vals[2 * j + 1]) for j in range(k)]
    alpha = _num(crit, "alpha", "record['criterion']")
    pts, conf, keep = [], 1.0, 1.0
    for x, y in pairs:
        kinds = (x.get("type"), y.get("type"))
        if kinds == ("proportion", "proportion"):
            right, not_wrong, pt = _fisher(x, y, alpha / k)
            pts.append(pt)
            conf *= right
            keep *= not_wrong
            continue
        if "estimate" not in kinds or not set(kinds) <= {"estimate", "exact"}:
            return None
        d = _difference(x, y)
        if not d.se > 0:
            return None
        h = d.critical(alpha / k, sides=1) * d.se
        pt = _Point(x.get("name", ""), d.value, d.se, [h, -h])
        pts.append(pt)
        conf *= pt.p(h, math.inf)
        keep *= pt.p(-h, math.inf)
    return _decide(record["outcome"], conf, keep, pts)


# -- counts: Clopper-Pearson ends and Fisher's exact test --------------------------------------
class _Mark:
    """A point's name and its distance from the nearest decision threshold."""

    def __init__(self, name: str, distance: float):
        self.name, self.distance = name, distance


def _int(rec: Mapping, key: str, minimum: int, where: str = "record['values']") -> int:
    """A stored count."""
    if key not in rec:
        raise ValueError(f"{where}: an entry lacks {key!r}")
    x = rec[key]
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"{where}[{key!r}] must be an int, got {type(x).__name__}")
    if x < minimum:
        raise ValueError(f"{where}[{key!r}] must be >= {minimum}, got {x}")
    return x


def _counts(v: Mapping) -> tuple[int, int]:
    """(k, n) of a stored proportion."""
    n, k = _int(v, "n", 1), _int(v, "k", 0)
    if k > n:
        raise ValueError(f"record['values']: a proportion has k = {k} > n = {n}")
    return k, n


def _rerun_counts(k: int, n: int) -> np.ndarray:
    """The predictive law of a re-run's count, given ``k`` of ``n``: the pmf over 0..n of
    beta-binomial(n, k + 1/2, n - k + 1/2) (the Jeffreys posterior of the probability, then a
    binomial draw of the same size)."""
    return _st.betabinom.pmf(np.arange(n + 1), n, k + 0.5, n - k + 0.5)


def _count_se(k: int, n: int) -> float:
    """The standard error of k/n (of the Jeffreys estimate (k + 1/2)/(n + 1) at k = 0 or n)."""
    p = (k + 0.5) / (n + 1) if k in (0, n) else k / n
    return math.sqrt(p * (1 - p) / n)


@functools.lru_cache(maxsize=1024)
def _count_cuts(n: int, tail: float, b: float) -> tuple[int, int]:
    """``(a, c)``: a count ``k'`` of ``n`` has its one-sided Clopper-Pearson upper end (at
    ``tail``) at or below ``b`` iff ``k' <= a``, and its lower end above ``b`` iff ``k' >= c``.

    The ends are :meth:`eit.verdicts.stats.Proportion.bounds`, the check's own (so that the
    thresholds agree with :func:`eit.verdicts.checks.bound` bit for bit); both increase with
    ``k'``, so each cut is found by bisection (``a = -1``: no count clears the bound,
    ``c = n + 1``: none exceeds it).
    """
    def end(j: int, side: int) -> float:
        return Proportion(j, n).bounds(tail, sides=1)[side]

    lo, hi = -1, n + 1                        # upper(lo) <= b < upper(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if end(mid, 1) <= b else (lo, mid)
    a = lo
    lo, hi = -1, n + 1                        # lower(lo) <= b < lower(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if end(mid, 0) > b else (mid, hi)
    return a, hi


def _bound(record: Mapping) -> Stability | None:
    """A probability bound against counted failures (:func:`eit.verdicts.checks.bound`)."""
    crit, test = record["criterion"], record["test"]
    rows = [v for v in record["values"] if v.get("type") == "proportion" and "bound" in v]
    family = test.get("family")
    if not rows or len(rows) != family:
        return None
    tail = _num(crit, "alpha", "record['criterion']") / family
    marks, conf, keep = [], 1.0, 1.0
    for v in rows:
        k, n = _counts(v)
        b = _num(v, "bound")
        if not 0 <= b <= 1:
            raise ValueError(f"record['values']['bound'] must lie in [0, 1], got {b}")
        a, c = _count_cuts(n, tail, b)
        law = _rerun_counts(k, n)
        conf *= float(law[:a + 1].sum())      # every upper end <= its bound: k' <= a
        keep *= float(law[:c].sum())          # no lower end above it: k' < c
        cuts = ([(a + 0.5) / n] if 0 <= a < n else []) + ([(c - 0.5) / n] if 0 < c <= n else [])
        se = _count_se(k, n)
        marks.append(_Mark(v.get("name", ""),
                           min((abs(k / n - t) / se for t in cuts), default=math.inf)))
    return _decide(record["outcome"], conf, keep, marks)


def _fisher_p(kx: np.ndarray, ky: np.ndarray, nx: int, ny: int, greater) -> np.ndarray:
    """One-sided p-values of Fisher's exact test of the tables ``[[kx, nx - kx], [ky, ny -
    ky]]`` (of ``p_x > p_y`` where ``greater``, else of ``p_x < p_y``; a bool or an array),
    computed as SciPy's ``fisher_exact`` computes them (which
    :func:`eit.verdicts.stats.fisher_exact` calls), for arrays of counts."""
    fx, fy = nx - kx, ny - ky
    drawn = np.where(greater, fx, kx)         # greater: the second column's count of x
    p = _st.hypergeom.cdf(drawn, nx + ny, nx, np.where(greater, fx + fy, kx + ky))
    return np.where((kx + ky == 0) | (fx + fy == 0), 1.0, p)


def _fisher(x: Mapping, y: Mapping, a: float) -> tuple[float, float, _Mark]:
    """P(the pair is significantly in the claimed order), P(it is not significantly in the
    opposite order) on a re-run, and the pair's distance, for two proportions compared by
    Fisher's exact test at level ``a`` (:func:`eit.verdicts.checks.order`).

    Exact enumeration: the re-run's counts are independent beta-binomial (as for a bound);
    for each count ``kx'`` of the larger, the test is significant for ``ky' <= R(kx')`` and
    significant the other way for ``ky' >= W(kx')`` (the one-sided p-values are monotone in
    ``ky'``), cuts found by bisection over all ``kx'`` and both directions at once. Counts
    ``kx'`` of probability below 1e-18 of the mode are left out (their mass is below 1e-13).
    """
    (kx, nx), (ky, ny) = _counts(x), _counts(y)
    law_x, law_y = _rerun_counts(kx, nx), _rerun_counts(ky, ny)
    xs = np.flatnonzero(law_x >= 1e-18 * law_x.max())
    cum_y = np.concatenate([[0.0], np.cumsum(law_y)])     # cum_y[j + 1] = P(ky' <= j)
    both = np.concatenate([xs, xs])
    greater = np.arange(both.size) < xs.size
    lo, hi = np.full(both.size, -1), np.full(both.size, ny + 1)
    while True:
        open_ = np.flatnonzero(hi - lo > 1)
        if not open_.size:
            break
        mid = (lo[open_] + hi[open_]) // 2
        sig = _fisher_p(both[open_], mid, nx, ny, greater[open_]) < a
        # greater: significant for small ky' (lo stays significant); less: for large ky'
        up = sig == greater[open_]
        lo[open_] = np.where(up, mid, lo[open_])
        hi[open_] = np.where(up, hi[open_], mid)
    cuts = lo[:xs.size], hi[xs.size:]
    right = float(np.sum(law_x[xs] * cum_y[cuts[0] + 1]))
    not_wrong = float(np.sum(law_x[xs] * cum_y[cuts[1]]))
    px, py = (kx + 0.5) / (nx + 1), (ky + 0.5) / (ny + 1)
    z = (px - py) / math.sqrt(px * (1 - px) / nx + py * (1 - py) / ny)
    z_a = float(_st.norm.isf(a))
    return right, not_wrong, _Mark(x.get("name", ""), min(abs(z - z_a), abs(z + z_a)))


# -- detections: a p-value against the level ---------------------------------------------------
def _detection(record: Mapping) -> Stability:
    """An effect detected when its one-sided p-value is below alpha (:func:`checks.detects`)."""
    alpha = _num(record["criterion"], "alpha", "record['criterion']")
    p = _num(record["test"], "p", "record['test']")
    if not 0 <= p <= 1:
        raise ValueError(f"record['test']['p'] must lie in [0, 1], got {p}")
    if not 0 < alpha < 1:
        raise ValueError(f"record['criterion']['alpha'] must lie in (0, 1), got {alpha}")
    z, z_a = float(_st.norm.isf(p)), float(_st.norm.isf(alpha))
    x = (z - z_a) / math.sqrt(2.0)            # inf at p = 0, -inf at p = 1
    again = float(_st.norm.cdf(x) if record["outcome"] == CONFIRMED else _st.norm.sf(x))
    return Stability(again, abs(z - z_a), "p-value")


def _decide(outcome: str, conf: float, keep: float, pts: list[_Point]) -> Stability:
    p = {CONFIRMED: conf, REFUTED: 1.0 - keep, NOT_REPRODUCED: 1.0 - keep}.get(
        outcome, keep - conf)
    worst = min(pts, key=lambda q: q.distance)
    return Stability(min(1.0, max(0.0, p)), worst.distance, worst.name)


def of_record(record: Mapping) -> Stability | None:
    """The stability of a verdict record (a dict as stored in a chapter), or None.

    Parameters
    ----------
    record : mapping
        A verdict record (:class:`eit.verdicts.records.Verdict` as JSON).

    Returns
    -------
    Stability or None
        None for records that no random draw decides (exact, consistency) and for a record
        of an unknown statistic (no check writes one).

    Raises
    ------
    TypeError, ValueError
        A record that is not a dict, a test record whose criterion, test or values are not
        the types a check writes, or whose estimates, bounds or theory values are missing or
        not finite (a NaN is never read as a stable or unstable decision).

    Examples
    --------
    >>> rec = {"kind": "test", "outcome": "confirmed",
    ...        "criterion": {"criterion": "Inequality", "alpha": 0.01},
    ...        "test": {"statistic": "one-sided interval end", "family": 1},
    ...        "theory": ">= 0", "values": [{"type": "estimate", "value": 0.152,
    ...                                      "se": 0.022, "n": 384, "bound": 0.0}]}
    >>> s = of_record(rec)
    >>> round(s.distance, 2), round(s.probability, 4), s.stable
    (4.58, 0.9994, True)

    A detection at p = 1.6e-7 against alpha = 0.001 (z = 5.11, z_a = 3.09):

    >>> det = {"kind": "test", "outcome": "confirmed",
    ...        "criterion": {"criterion": "Detection", "alpha": 0.001},
    ...        "test": {"statistic": "one-sided t-test", "p": 1.6e-7, "threshold": 0.001}}
    >>> s = of_record(det)
    >>> round(s.distance, 2), round(s.probability, 3), s.stable
    (2.02, 0.924, False)
    """
    if not isinstance(record, Mapping):
        raise TypeError(f"record must be a verdict record (a dict), got {type(record).__name__}")
    if record.get("kind") != "test":
        return None
    for key in ("test", "criterion"):
        if not isinstance(record.get(key, {}), Mapping):
            raise TypeError(f"record[{key!r}] must be a dict, got "
                            f"{type(record[key]).__name__}")
    values = record.get("values", [])
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, (list, tuple)):
        raise TypeError(f"record['values'] must be a list of value records, got "
                        f"{type(values).__name__}")
    for i, v in enumerate(values):
        if not isinstance(v, Mapping):
            raise TypeError(f"record['values'][{i}] must be a value record (a dict), got "
                            f"{type(v).__name__}")
    crit = record.get("criterion") or {}
    statistic = (record.get("test") or {}).get("statistic")
    try:
        if crit.get("criterion") == "Agreement" and statistic == "max |t|":
            return _agreement(record)
        if statistic == "one-sided interval end":
            return _one_sided(record, upper=_upper_bound(record))
        if statistic == "one-sided difference test":
            return _order(record)
        if statistic == "Clopper-Pearson end":
            return _bound(record)
        if crit.get("criterion") == "Detection":
            return _detection(record)
    except KeyError as err:
        raise ValueError(f"record lacks {err} for its statistic {statistic!r}") from None
    except ValueError as err:
        if str(err).startswith("record"):          # already names the record's field
            raise
        raise ValueError(f"record holds a value that is not valid: {err}") from err
    return None
