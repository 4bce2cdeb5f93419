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
the probability its intervals were built for, ``(1 - alpha/k)^k`` (at least ``1 - alpha``),
provided they stay narrower than the margin. Each outcome is an
event on the ``e'_i``: every point inside an interval ("all inside") or one point outside
("any outside"), so its probability is a product of normal probabilities of intervals. For
one point and one threshold at distance ``d`` standard errors the agreement probability is
``Phi(d / sqrt 2)``; it reaches :data:`STABLE` = 0.99 at ``d = 3.29``.

This probability is calibrated on average over true effects (the test
``tests/test_stability.py`` simulates pairs of runs over a range of effects and compares the
predicted and the observed agreement rates); for one fixed true effect it is an estimate.

Records that this module cannot assess return ``None`` from :func:`of_record`: exact and
consistency records (nothing random decides them), proportions compared by Fisher's test and
detections decided by a p-value alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from scipy import stats as _st

from .records import CONFIRMED, CORRECTED, NOT_REPRODUCED, REFUTED
from .stats import Estimate

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
        return {"probability": self.probability, "distance": self.distance,
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


def _agreement(record: Mapping) -> Stability | None:
    crit, test = record["criterion"], record["test"]
    rows = [v for v in record["values"] if v.get("type") == "estimate" and "theory" in v]
    if not rows or len(rows) != test.get("family"):
        return None
    k, exact_law = len(rows), bool(crit.get("exact_law"))
    alpha = _num(crit, "alpha", "record['criterion']")
    pts, conf, keep, corr_conf = [], 1.0, 1.0, 1.0
    joint = 1.0            # corrected confirmed and printed kept, on the same re-run
    narrow = True
    for v in rows:
        e = _estimate(v)
        if not e.se > 0:
            return None
        h, t = e.critical(alpha / k, sides=2) * e.se, _num(v, "theory")
        narrow &= not exact_law or h <= _margin(crit, t)
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
            joint *= _prob(max(a_lo, k_lo), min(a_hi, k_hi), centre, law_se)
    outcome = record["outcome"]
    if outcome == CORRECTED and any("corrected" in v for v in rows):
        p = corr_conf - joint
    elif outcome == CONFIRMED and exact_law:
        # the claim confirmed is mu_i = t_i: under it each interval covers t_i with
        # probability 1 - alpha/k (the test's design), whatever the recorded e_i
        p = (1.0 - alpha / k) ** k if narrow else 0.0
    elif outcome == CONFIRMED:
        p = conf if narrow else 0.0
    elif outcome in (REFUTED, NOT_REPRODUCED):
        p = 1.0 - keep
    else:                                     # inconclusive
        p = keep - (conf if narrow else 0.0)
    worst = min(pts, key=lambda q: q.distance)
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


def _order(record: Mapping) -> Stability | None:
    crit, test = record["criterion"], record["test"]
    vals = record["values"]
    k = test.get("family")
    if isinstance(k, bool) or not isinstance(k, int) or not 0 < 2 * k <= len(vals):
        return None
    pairs = [(vals[2 * j], vals[2 * j + 1]) for j in range(k)]
    if any(x.get("type") != "estimate" or y.get("type") not in ("estimate",)
           for x, y in pairs):
        return None
    alpha = _num(crit, "alpha", "record['criterion']")
    pts, conf, keep = [], 1.0, 1.0
    for x, y in pairs:
        d = _estimate(x) - _estimate(y)
        if not d.se > 0:
            return None
        h = d.critical(alpha / k, sides=1) * d.se
        pt = _Point(x.get("name", ""), d.value, d.se, [h, -h])
        pts.append(pt)
        conf *= pt.p(h, math.inf)
        keep *= pt.p(-h, math.inf)
    return _decide(record["outcome"], conf, keep, pts)


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
        None for records that no random draw decides (exact, consistency) and for the
        decisions this module does not model (proportions, p-values).

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
            return _one_sided(record, upper=str(record.get("theory", "")).startswith("<="))
        if statistic == "one-sided difference test":
            return _order(record)
    except KeyError as err:
        raise ValueError(f"record lacks {err} for its statistic {statistic!r}") from None
    except ValueError as err:
        if str(err).startswith("record"):          # already names the record's field
            raise
        raise ValueError(f"record holds a value that is not valid: {err}") from err
    return None
