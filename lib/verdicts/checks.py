"""Checks: turn (claim, pre-registered criterion, measurement) into a recorded verdict.

Every function returns a :class:`~eit.verdicts.records.Verdict` whose outcome is *computed*
from the evidence, following the protocol of DESIGN.md section 3a:

* :func:`agree`: estimates equal a theory value (:class:`~eit.verdicts.criteria.Agreement`);
* :func:`at_most`, :func:`at_least`: an expectation bound; :func:`bound`: a probability
  bound from counts; :func:`order`: one quantity exceeds another
  (:class:`~eit.verdicts.criteria.Inequality`);
* :func:`detects`: an effect exists (:class:`~eit.verdicts.criteria.Detection`);
* :func:`exact`: a printed formula against the SymPy derivation;
* :func:`holds`: a yes/no claim decided by an exact computation;
* :func:`consistency`: a check that cannot fail at this setting (recorded, never counted as a
  confirmation).

Every check takes a ``scope`` (:data:`~eit.verdicts.records.PAPER`,
:data:`~eit.verdicts.records.SUBSTITUTE`, :data:`~eit.verdicts.records.EXTENSION`). A failure
on a substitute setting is recorded as "not reproduced on the substitute", never as a
refutation. Nothing random is ever decided by a NaN: every number is validated first and a
NaN or an infinity is an error naming the argument.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import sympy as sp
from sympy.parsing.sympy_parser import convert_xor, parse_expr, standard_transformations

from ..core.device import scale
from ..core.provenance import check_drawn_after
from .criteria import Agreement, Detection, Inequality
from .records import (
    CONFIRMED,
    CONSISTENCY,
    CORRECTED,
    EXACT,
    EXTENSION,
    INCONCLUSIVE,
    KINDS,
    NOT_REPRODUCED,
    PAPER,
    REFUTED,
    SCOPES,
    SUBSTITUTE,
    TEST,
    Exact,
    Verdict,
    value_record,
)
from .stats import Estimate, Proportion, Statistic, positive

__all__ = ["Exact", "agree", "at_most", "at_least", "bound", "order", "detects", "exact", "holds",
           "consistency", "CONFIRMED", "CORRECTED", "REFUTED", "INCONCLUSIVE", "NOT_REPRODUCED",
           "PAPER", "SUBSTITUTE", "EXTENSION", "TEST", "EXACT", "CONSISTENCY", "detects_positive"]

#: A bound cleared by more than this factor is not under test (recorded as a consistency check).
UNTESTED_FACTOR = 100.0


# -- validation ------------------------------------------------------------------------------
def _text(name: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value


def _head(paper, claim, statement, scope) -> None:
    for name, value in (("paper", paper), ("claim", claim), ("statement", statement)):
        _text(name, value)
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")


def _finite(name: str, value) -> float:
    if isinstance(value, sp.Basic):
        if not value.is_number:
            raise TypeError(f"{name} must be a number, got the expression {value}")
        value = float(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


def _seq(name: str, value, kind) -> tuple[list, bool]:
    """(list of items, single?) for one item or a non-empty sequence of items."""
    if isinstance(value, kind):
        return [value], True
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise TypeError(f"{name} must be a {names} or a sequence of them, got "
                        f"{type(value).__name__}")
    items = list(value)
    if not items:
        raise ValueError(f"{name} must not be empty")
    for i, item in enumerate(items):
        if not isinstance(item, kind):
            raise TypeError(f"{name}[{i}] must be a {getattr(kind, '__name__', kind)}, got "
                            f"{type(item).__name__}")
    return items, False


def _numbers(name: str, value, k: int) -> list[float]:
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a number or a sequence of numbers, got a string")
    if isinstance(value, (Sequence, np.ndarray)):
        items = [_finite(f"{name}[{i}]", v) for i, v in enumerate(value)]
    else:
        items = [_finite(name, value)] * k
    if len(items) != k:
        raise ValueError(f"{name} must have one value per point ({k}), got {len(items)}")
    return items


def _labels(labels, k: int) -> list[str]:
    if labels is None:
        return [""] * k if k == 1 else [f"point {i + 1}" for i in range(k)]
    if isinstance(labels, (str, bytes, Mapping)) or not isinstance(
            labels, (Sequence, np.ndarray, range)):
        raise TypeError(f"labels must be a sequence of names (one per point), got "
                        f"{type(labels).__name__}")
    labels = [str(x) for x in labels]
    if len(labels) != k:
        raise ValueError(f"labels must have one entry per point ({k}), got {len(labels)}")
    return labels


def _criterion(name: str, criterion, kind) -> None:
    if not isinstance(criterion, kind):
        raise TypeError(f"{name} must be an eit.verdicts.criteria.{kind.__name__} declared "
                        f"before the measurement, got {type(criterion).__name__}")


def _declared_before(criterion, measured) -> None:
    """Refuse a criterion declared in the same cell as, or after, the measurement."""
    if criterion.declared_in is None:
        return
    for m in measured:
        made = getattr(m, "made_in", None)
        if made is not None and made <= criterion.declared_in:
            raise ValueError(
                f"criterion was declared in cell [{criterion.declared_in}], not before the "
                f"measurement made in cell [{made}]: declare the test in a visible cell ahead "
                "of the experiment (and run the notebook from the top)")


def _drawn_after(criterion, drawn_by, kind: str) -> None:
    """Refuse data drawn before the criterion (:func:`eit.core.provenance.check_drawn_after`).

    In a notebook a statistical check must name the sources of its data (``drawn_by``); an
    exact comparison draws nothing and may name none.
    """
    check_drawn_after(criterion.drawn_state, drawn_by, required=kind != EXACT)


def _evidence(name: str, estimates: list, single: bool, kind: str,
              exact_hint: str = "compare an exact value with kind='exact'") -> None:
    """Refuse evidence that cannot decide the check.

    A Monte Carlo estimate with standard error 0 (one sample, constant samples, a median of
    tied data, a frequency at probability 0, the slope of an exact line) cannot support a
    statistical decision; an estimate with a positive standard error is no exact value.
    """
    for i, e in enumerate(estimates):
        where = name if single else f"{name}[{i}]"
        if kind == EXACT and e.se != 0:
            raise ValueError(
                f"{where} is a Monte Carlo estimate (se = {e.se:g} > 0): kind='exact' is only "
                "for exact values (se = 0); use kind='test'")
        if kind != EXACT and not e.se > 0 and scale() != "smoke":
            # (a smoke run exercises the code paths at tiny sizes, where degenerate samples are
            # common; its verdicts are never compared or shown, so it is let through there)
            raise ValueError(
                f"{where} has standard error 0 (one sample, constant samples, ties or an "
                f"exact value): no statistical test can be decided on it; use more samples, "
                f"or {exact_hint}")


def _extra(values) -> list[dict]:
    if values is None:
        return []
    if not isinstance(values, Mapping):
        raise TypeError(f"values must be a mapping of name -> value, got {type(values).__name__}")
    out = []
    for k, v in values.items():
        name = _text("values key", k)
        try:
            rec = value_record(v)
        except (TypeError, ValueError) as err:
            raise type(err)(f"values[{k!r}]: {err}") from err
        out.append({"name": name, **rec})
    return out


def _correction(value) -> str:
    """The text of an erratum: a string (empty when there is none)."""
    if not isinstance(value, str):
        raise TypeError(f"correction must be a string, got {type(value).__name__}")
    return value


def _kind(kind) -> str:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return kind


def _failed(scope: str) -> str:
    return NOT_REPRODUCED if scope == SUBSTITUTE else REFUTED


def _pointwise(paper, claim, statement, scope, *, criterion, criterion_type, kind,
               measured_name, measured, measured_types, reference_name, reference, labels,
               drawn_by):
    """The shared preamble of the checks of one measurement per point against a reference.

    Validates the head, the criterion (of ``criterion_type``, declared before the
    measurement) and the kind, and returns ``(kind, measured, single, reference, labels)``:
    the k measurements as a list, whether one was given bare, the k reference numbers (one
    number is repeated) and the k labels.
    """
    _head(paper, claim, statement, scope)
    _criterion("criterion", criterion, criterion_type)
    kind = _kind(kind)
    items, single = _seq(measured_name, measured, measured_types)
    k = len(items)
    refs = _numbers(reference_name, reference, k)
    labs = _labels(labels, k)
    _declared_before(criterion, items)
    _drawn_after(criterion, drawn_by, kind)
    if all(isinstance(m, Estimate) for m in items):
        _evidence(measured_name, items, single, kind)
    return kind, items, single, refs, labs


def _g(x: float) -> str:
    return f"{x:.4g}"


def _representable(where: str, *numbers: float) -> None:
    """Refuse a point whose interval or distance leaves the float range (extreme scales)."""
    if not all(math.isfinite(x) for x in numbers):
        raise ValueError(f"{where}: its interval or its distance to the reference overflows "
                         "the floating-point range; rescale the quantity (e.g. compare logs)")


# -- agreement -------------------------------------------------------------------------------
@dataclass
class _Point:
    label: str
    estimate: Estimate
    theory: float
    lo: float
    hi: float
    half: float
    margin: float
    crit: float

    @property
    def t(self) -> float:
        return self.estimate.z(self.theory)

    @property
    def contains(self) -> bool:
        return self.lo <= self.theory <= self.hi

    @property
    def inside_band(self) -> bool:
        return self.theory - self.margin <= self.lo and self.hi <= self.theory + self.margin

    @property
    def outside_band(self) -> bool:
        return self.lo > self.theory + self.margin or self.hi < self.theory - self.margin


def _points(estimates, theories, labels, crit: Agreement) -> list[_Point]:
    k = len(estimates)
    out = []
    for i, (lab, e, t) in enumerate(zip(labels, estimates, theories, strict=True)):
        c = e.critical(crit.alpha / k, sides=2)
        half = c * e.se
        if crit.relative and t == 0:
            raise ValueError("a relative margin needs non-zero theory values; use an absolute "
                             "margin where the theory is 0")
        m = crit.margin * abs(t) if crit.relative else crit.margin
        p = _Point(lab, e, t, e.value - half, e.value + half, half, m, c)
        where = "estimate" if k == 1 else f"estimate[{i}]"
        _representable(f"{where} against theory {t:g}", p.lo, p.hi, e.value - t, m, t - m,
                       t + m, p.t if e.se > 0 else 0.0, half / abs(t) if crit.relative else 0.0)
        out.append(p)
    return out


def _agreement_outcome(points: list[_Point], crit: Agreement) -> str:
    """CONFIRMED, INCONCLUSIVE or 'fail' for one set of theory values."""
    if crit.exact_law:
        if not all(p.contains for p in points):
            return "fail"
        return CONFIRMED if all(p.half <= p.margin for p in points) else INCONCLUSIVE
    if any(p.outside_band for p in points):
        return "fail"
    return CONFIRMED if all(p.inside_band for p in points) else INCONCLUSIVE


def _detectable(points: list[_Point], crit: Agreement) -> float:
    return max(p.half / abs(p.theory) if crit.relative else p.half for p in points)


def agree(paper: str, claim: str, statement: str, *, theory, estimate, criterion: Agreement,
          scope: str, labels: Sequence[str] | None = None, corrected=None,
          correction: str = "", values: Mapping | None = None, kind: str = TEST,
          drawn_by=None) -> Verdict:
    """Estimates against a claimed value (one point or a curve of points).

    Parameters
    ----------
    paper, claim, statement : str
        Bibliography key, the paper's label, the claim in words.
    theory : float or sequence of float
        The claimed value, one per point (a single value is used at every point).
    estimate : Estimate or sequence of Estimate
        The measurements.
    criterion : Agreement
        Declared before the measurement.
    scope : str
        PAPER, SUBSTITUTE or EXTENSION.
    labels : sequence of str, optional
        A name per point (shown for the worst point).
    corrected : float or sequence of float, optional
        A corrected value; when the printed one fails and this one passes the same test the
        outcome is "confirmed with a correction" (``correction`` says what changed).
    values : mapping, optional
        Further typed numbers to record.
    kind : str, optional
        TEST (default), or CONSISTENCY for a comparison that cannot fail at this setting (for
        example draws of an exact law against a value the law is known to give): recorded,
        never counted as a confirmation. Both need estimates with a positive standard
        error. EXACT only for exact values given as estimates with ``se = 0``.
    drawn_by : source or sequence of sources, optional
        What drew the data (generators of :mod:`eit.core.seeds`, data read by
        :func:`eit.core.store.load_result`, :func:`eit.core.provenance.measured` tokens);
        required in a notebook (not for ``kind=EXACT``): each must have drawn after the
        criterion was declared (:func:`eit.core.provenance.check_drawn_after`).

    Returns
    -------
    Verdict
        Confirmed when every simultaneous interval contains the theory (exact law) or lies
        inside the margin band (approximate law) and is narrower than the margin; refuted (on
        a substitute: not reproduced) when the theory is excluded (exact law) or an interval
        lies outside the band; inconclusive otherwise, with the smallest detectable deviation.

    Examples
    --------
    >>> from eit.verdicts.criteria import Agreement
    >>> from eit.verdicts.stats import Estimate
    >>> crit = Agreement(margin=0.05, relative=True)
    >>> v = agree("key", "Lemma 1", "E X = 1", theory=1.0, estimate=Estimate(1.01, 0.005, 400),
    ...           criterion=crit, scope="paper")
    >>> v.outcome
    'confirmed'
    >>> agree("key", "Lemma 1", "E X = 1", theory=1.0, estimate=Estimate(1.01, 0.05, 400),
    ...       criterion=crit, scope="paper").outcome
    'inconclusive'
    """
    kind, estimates, single, theories, labs = _pointwise(
        paper, claim, statement, scope, criterion=criterion, criterion_type=Agreement,
        kind=kind, measured_name="estimate", measured=estimate, measured_types=Estimate,
        reference_name="theory", reference=theory, labels=labels, drawn_by=drawn_by)
    k = len(estimates)
    correction = _correction(correction)
    if corrected is not None:
        corrected = _numbers("corrected", corrected, k)
        if not correction.strip():
            raise ValueError("correction must describe the corrected value when corrected "
                             "is given")
    points = _points(estimates, theories, labs, criterion)
    result = _agreement_outcome(points, criterion)
    tested = _g(_detectable(points, criterion)) + ("" if not criterion.relative else " (relative)")
    if kind == EXACT:                # exact values (se = 0): compared by their differences
        worst = max(points, key=lambda p: abs(p.estimate.value - p.theory))
        statistic, value, threshold = ("max |difference|", abs(worst.estimate.value
                                                                - worst.theory), worst.margin)
        text = (f"exact values: max |difference| = {_g(value)} ({k} point"
                f"{'s' if k > 1 else ''}), margin {criterion.margin:g}")
    else:
        worst = max(points, key=lambda p: abs(p.t) / p.crit if p.crit else 0.0)
        statistic, value, threshold = "max |t|", abs(worst.t), worst.crit
        text = (f"max $|t|$ = {abs(worst.t):.2f} vs {worst.crit:.2f} ({k} point"
                f"{'s' if k > 1 else ''}, family-wise $\\alpha = {criterion.alpha:g}$); "
                f"detectable deviation {tested}, margin {criterion.margin:g}")
    theory_text = (_g(theories[0]) if len(set(theories)) == 1
                   else f"{k} values from {_g(min(theories))} to {_g(max(theories))}")
    outcome, corr_pts = result, None
    if result == "fail":
        outcome = _failed(scope)
        if corrected is not None:
            corr = corrected
            corr_pts = _points(estimates, corr, labs, criterion)
            corr_result = _agreement_outcome(corr_pts, criterion)
            if kind == EXACT:
                text += ("; corrected: max |difference| = "
                         f"{_g(max(abs(p.estimate.value - p.theory) for p in corr_pts))}")
            else:
                cworst = max(corr_pts, key=lambda p: abs(p.t) / p.crit if p.crit else 0.0)
                text += f"; corrected: max $|t|$ = {abs(cworst.t):.2f}"
            if corr_result == CONFIRMED:
                outcome = CORRECTED
            else:
                text += (" (the correction fails too)" if corr_result == "fail"
                         else " (the correction is not excluded, but not pinned down either)")
            theory_text += (f" (corrected: {_g(corr[0])})" if len(set(corr)) == 1
                            else f" (corrected: {_g(min(corr))} to {_g(max(corr))})")
    elif result == INCONCLUSIVE:
        text += ": too wide to confirm"
    measured = (str(worst.estimate) if single
                else f"worst point {worst.label}: {worst.estimate} (theory {_g(worst.theory)})")
    recs = []
    for i, p in enumerate(points):
        rec = {"name": p.label or "estimate", **value_record(p.estimate), "theory": p.theory}
        if corr_pts is not None:
            rec["corrected"] = corr_pts[i].theory
        recs.append(rec)
    test = {"text": text, "statistic": statistic, "value": value,
            "threshold": threshold, "detectable": _detectable(points, criterion),
            "family": k, "alpha": criterion.alpha}
    return Verdict(paper, claim, statement, outcome, scope, kind, theory_text, measured,
                   correction=correction if outcome == CORRECTED or corrected is not None
                   else "", criterion=criterion.record(), test=test,
                   values=recs + _extra(values))


# -- inequalities ----------------------------------------------------------------------------
def _one_sided(paper, claim, statement, *, estimate, bound_, criterion, scope, labels, kind,
               values, upper: bool, drawn_by) -> Verdict:
    kind, estimates, single, bounds, labs = _pointwise(
        paper, claim, statement, scope, criterion=criterion, criterion_type=Inequality,
        kind=kind, measured_name="estimate", measured=estimate, measured_types=Estimate,
        reference_name="bound", reference=bound_, labels=labels, drawn_by=drawn_by)
    k = len(estimates)
    rows = []
    for i, (lab, e, b) in enumerate(zip(labs, estimates, bounds, strict=True)):
        c = e.critical(criterion.alpha / k, sides=1)
        rows.append((lab, e, b, e.value - c * e.se, e.value + c * e.se, c))
        _representable(("estimate" if single else f"estimate[{i}]") + f" against bound {b:g}",
                       rows[-1][3], rows[-1][4], b - rows[-1][4], rows[-1][3] - b)
    # for an upper bound (value <= b): violated if lo > b, cleared if hi <= b
    if upper:
        violated = [r for r in rows if r[3] > r[2]]
        cleared = all(r[4] <= r[2] for r in rows)
        slack = [r[2] - r[4] for r in rows]
        untested = all(r[2] > 0 and r[4] > 0 and r[4] * UNTESTED_FACTOR < r[2] for r in rows)
    else:
        violated = [r for r in rows if r[4] < r[2]]
        cleared = all(r[3] >= r[2] for r in rows)
        slack = [r[3] - r[2] for r in rows]
        untested = all(r[2] > 0 and r[3] > UNTESTED_FACTOR * r[2] for r in rows)
    rel = r"$\le$" if upper else r"$\ge$"
    tight = min(range(k), key=lambda i: slack[i])
    lab, e, b, lo, hi, c = rows[rows.index(violated[0]) if violated else tight]
    if violated:
        outcome = _failed(scope)
        text = f"{'lower' if upper else 'upper'} end {_g(lo if upper else hi)} beyond the bound"
    elif cleared:
        outcome = CONFIRMED
        text = (f"{'upper' if upper else 'lower'} end {_g(hi if upper else lo)} {rel} bound "
                f"{_g(b)}: margin {_g(slack[tight])}")
        if untested:
            kind = CONSISTENCY
            text += f" (cleared by more than {UNTESTED_FACTOR:g}x: the bound is not under test)"
    else:
        outcome = INCONCLUSIVE
        # a true value this far beyond (or inside) the bound is decided with probability 1/2
        text = (f"the interval [{_g(lo)}, {_g(hi)}] straddles the bound {_g(b)}; "
                f"detectable difference {_g(c * e.se)}")
    text += f" ({_family(k, 'point', criterion.alpha)})"
    where = f" at {lab}" if lab else ""
    recs = [{"name": r[0] or "estimate", **value_record(r[1]), "bound": r[2]} for r in rows]
    test = {"text": text, "statistic": "one-sided interval end", "value": hi if upper else lo,
            "threshold": b, "margin": slack[tight], "family": k, "alpha": criterion.alpha}
    if outcome == INCONCLUSIVE:
        test["detectable"] = c * e.se
    return Verdict(paper, claim, statement, outcome, scope, kind, f"{rel} {_g(b)}{where}",
                   f"{e}{where}" if not single else str(e), criterion=criterion.record(),
                   test=test, values=recs + _extra(values))


def at_most(paper: str, claim: str, statement: str, *, estimate, bound, criterion: Inequality,
            scope: str, labels: Sequence[str] | None = None, kind: str = TEST,
            values: Mapping | None = None, drawn_by=None) -> Verdict:
    """A claimed upper bound ``E <= bound`` on estimated quantities (one or several points).

    Confirmed when every one-sided upper interval end is at or below its bound (the margin is
    recorded), refuted when a lower end is above it, inconclusive otherwise. A bound cleared
    by more than a factor 100 is recorded as a consistency check. ``drawn_by`` names what
    drew the data (see :func:`agree`).

    Examples
    --------
    >>> from eit.verdicts.criteria import Inequality
    >>> from eit.verdicts.stats import Estimate
    >>> at_most("key", "Thm 1", "E X <= 2", estimate=Estimate(1.5, 0.1, 50, df=49), bound=2.0,
    ...         criterion=Inequality(), scope="paper").outcome
    'confirmed'
    """
    return _one_sided(paper, claim, statement, estimate=estimate, bound_=bound,
                      criterion=criterion, scope=scope, labels=labels, kind=kind,
                      values=values, upper=True, drawn_by=drawn_by)


def at_least(paper: str, claim: str, statement: str, *, estimate, bound, criterion: Inequality,
             scope: str, labels: Sequence[str] | None = None, kind: str = TEST,
             values: Mapping | None = None, drawn_by=None) -> Verdict:
    """A claimed lower bound ``E >= bound`` (see :func:`at_most`)."""
    return _one_sided(paper, claim, statement, estimate=estimate, bound_=bound,
                      criterion=criterion, scope=scope, labels=labels, kind=kind,
                      values=values, upper=False, drawn_by=drawn_by)


def bound(paper: str, claim: str, statement: str, *, bound, failures, criterion: Inequality,
          scope: str, labels: Sequence[str] | None = None, kind: str = TEST,
          values: Mapping | None = None, drawn_by=None) -> Verdict:
    """A claimed upper bound on a probability, against counted failures.

    Parameters
    ----------
    bound : float or sequence of float
        The claimed bound on P(failure), one per point, in [0, 1].
    failures : Proportion or sequence of Proportion
        The observed failure counts.
    drawn_by : source or sequence of sources, optional
        What drew the trials (see :func:`agree`); required in a notebook.

    Returns
    -------
    Verdict
        Refuted (not reproduced, on a substitute) when a one-sided Clopper-Pearson lower end
        exceeds its bound, confirmed when every upper end is at or below it (a bound >= 1, or
        one cleared by more than a factor 100, is a consistency check), inconclusive otherwise.
    """
    kind, props, single, bounds, labs = _pointwise(
        paper, claim, statement, scope, criterion=criterion, criterion_type=Inequality,
        kind=kind, measured_name="failures", measured=failures, measured_types=Proportion,
        reference_name="bound", reference=bound, labels=labels, drawn_by=drawn_by)
    if kind == EXACT:
        raise ValueError("kind='exact' is not for counts of random trials: use kind='test' "
                         "(or holds() for a count from an exact computation)")
    for i, b in enumerate(bounds):
        if not 0 <= b <= 1:
            where = "bound" if single else f"bound[{i}]"
            raise ValueError(f"{where} is a probability bound and must lie in [0, 1], got {b} "
                             "(a bound formula above 1 states nothing: pass min(bound, 1))")
    k = len(props)
    ends = [p.bounds(criterion.alpha / k, sides=1) for p in props]
    violated = [i for i in range(k) if ends[i][0] > bounds[i]]
    cleared = all(ends[i][1] <= bounds[i] for i in range(k))
    tight = min(range(k), key=lambda i: bounds[i] - ends[i][1])
    i = violated[0] if violated else tight
    where = f" at {labs[i]}" if labs[i] else ""
    if violated:
        outcome = _failed(scope)
        text = f"lower end {_g(ends[i][0])} above the bound {_g(bounds[i])}{where}"
    elif cleared:
        outcome = CONFIRMED
        text = (f"upper end {_g(ends[i][1])} $\\le$ bound {_g(bounds[i])}{where}: margin "
                f"{_g(bounds[i] - ends[i][1])}")
        if all(b >= 1 for b in bounds):
            kind, text = CONSISTENCY, text + r" (a probability bound $\ge 1$ cannot fail)"
        elif all(ends[j][1] * UNTESTED_FACTOR < bounds[j] for j in range(k)):
            kind = CONSISTENCY
            text += f" (cleared by more than {UNTESTED_FACTOR:g}x: the bound is not under test)"
    else:
        outcome = INCONCLUSIVE
        text = (f"the interval [{_g(ends[i][0])}, {_g(ends[i][1])}] straddles the bound "
                f"{_g(bounds[i])}{where}")
    text += f" ({_family(k, 'point', criterion.alpha)})"
    recs = [{"name": labs[j] or "failures", **value_record(props[j]), "bound": bounds[j]}
            for j in range(k)]
    test = {"text": text, "statistic": "Clopper-Pearson end", "value": ends[i][1],
            "threshold": bounds[i], "margin": bounds[tight] - ends[tight][1], "family": k,
            "alpha": criterion.alpha}
    theory = f"$P \\le$ {_g(bounds[i])}{where}"
    return Verdict(paper, claim, statement, outcome, scope, kind, theory,
                   str(props[i]) + ("" if single else where), criterion=criterion.record(),
                   test=test, values=recs + _extra(values))


def order(paper: str, claim: str, statement: str, *, larger, smaller, criterion: Inequality,
          scope: str, labels: Sequence[str] | None = None, values: Mapping | None = None,
          drawn_by=None) -> Verdict:
    """The claim ``larger > smaller`` (for every pair given), from independent measurements.

    Estimates are compared by their difference (Welch t), proportions by Fisher's exact test;
    an exact reference value (:class:`~eit.verdicts.records.Exact`) may stand on one side of
    a pair of estimates. Estimates need a positive standard error (one with ``se = 0`` is
    refused). Confirmed when every pair is significantly in the claimed order, refuted (not
    reproduced, on a substitute) when one pair is significantly in the opposite order,
    inconclusive otherwise (then the smallest detectable difference is stated). ``drawn_by``
    names what drew the data (see :func:`agree`; required in a notebook).
    """
    _head(paper, claim, statement, scope)
    _criterion("criterion", criterion, Inequality)
    kinds = (Estimate, Proportion, Exact)
    big, single = _seq("larger", larger, kinds)
    small, single_small = _seq("smaller", smaller, kinds)
    if len(big) != len(small):
        raise ValueError(f"larger and smaller must pair up, got {len(big)} and {len(small)}")
    k = len(big)
    labs = _labels(labels, k)
    _declared_before(criterion, big + small)
    _drawn_after(criterion, drawn_by, TEST)
    for name, items, one in (("larger", big, single), ("smaller", small, single_small)):
        for i, x in enumerate(items):
            if isinstance(x, Estimate):
                _evidence(name if one else f"{name}[{i}]", [x], True, TEST,
                          "pass an exact reference value as Exact(value)")
    for i, (x, y) in enumerate(zip(big, small, strict=True)):
        if isinstance(x, Exact) and isinstance(y, Exact):
            raise TypeError(f"larger[{i}] and smaller[{i}] are both exact: decide an order of "
                            "exact values with holds()")
        pair = {type(x), type(y)}
        if Proportion in pair and pair != {Proportion}:
            raise TypeError(f"larger[{i}] and smaller[{i}] must both be Proportions, or "
                            "Estimates (one of them may be an Exact reference)")
    a = criterion.alpha / k
    right, wrong, detect, recs = [], [], [], []
    from .stats import fisher_exact
    for j, (lab, x, y) in enumerate(zip(labs, big, small, strict=True)):
        if not isinstance(x, Proportion):
            where = "larger and smaller" if single else f"larger[{j}] and smaller[{j}]"
            try:
                if isinstance(y, Exact):
                    d = x - y.value
                else:
                    d = x.value - y if isinstance(x, Exact) else x - y
            except ValueError as err:
                raise ValueError(f"{where}: their difference is not representable ({err})"
                                 ) from err
            c = d.critical(a, sides=1)
            _representable(where, d.value - c * d.se, d.value + c * d.se)
            right.append(d.value - c * d.se > 0)
            wrong.append(d.value + c * d.se < 0)
            detect.append(c * d.se)
        else:
            right.append(fisher_exact(x, y, "greater") < a)
            wrong.append(fisher_exact(x, y, "less") < a)
            detect.append(math.nan)
        recs += [{"name": f"{lab} larger".strip(), **value_record(x)},
                 {"name": f"{lab} smaller".strip(), **value_record(y)}]
    if any(wrong):
        outcome = _failed(scope)
        i = wrong.index(True)
        text = f"significantly in the opposite order at {labs[i] or 'the point'}"
    elif all(right):
        outcome, i = CONFIRMED, 0
        text = "every pair significantly in the claimed order"
    else:
        outcome = INCONCLUSIVE
        i = right.index(False)
        d = detect[i]
        text = (f"not significant at {labs[i] or 'the point'}"
                + (f" (detectable difference {_g(d)})" if math.isfinite(d) else ""))
    text += f" ({_family(k, 'pair', criterion.alpha)})"
    measured = f"{big[i]} vs {small[i]}" + ("" if single else f" at {labs[i]}")
    test = {"text": text, "statistic": "one-sided difference test", "family": k,
            "alpha": criterion.alpha}
    return Verdict(paper, claim, statement, outcome, scope, TEST, "larger > smaller", measured,
                   criterion=criterion.record(), test=test, values=recs + _extra(values))


def detects(paper: str, claim: str, statement: str, *, statistic: Statistic, p_value: float,
            criterion: Detection, scope: str, values: Mapping | None = None,
            detectable: float | None = None, drawn_by=None) -> Verdict:
    """A claimed effect (a trend, a correlation): confirmed when ``p_value < alpha``.

    A non-detection is inconclusive, never a refutation: absence of evidence at this sample
    size is not evidence of absence. An inconclusive record states the smallest effect the
    test could have detected (``detectable``, in the statistic's units: for a one-sided t-test
    the critical value times the standard error, the effect detected with probability 1/2);
    a non-detection without it raises. ``drawn_by`` names what drew the data (see
    :func:`agree`; required in a notebook).

    Examples
    --------
    >>> from eit.verdicts.criteria import Detection
    >>> from eit.verdicts.stats import Statistic
    >>> detects("key", "Fig. 1", "X grows", statistic=Statistic(0.2), p_value=0.3,
    ...         criterion=Detection("one-sided t-test"), scope="paper", detectable=0.5).outcome
    'inconclusive'
    """
    _head(paper, claim, statement, scope)
    _criterion("criterion", criterion, Detection)
    if not isinstance(statistic, Statistic):
        raise TypeError(f"statistic must be a stats.Statistic, got {type(statistic).__name__}")
    _declared_before(criterion, [statistic])
    _drawn_after(criterion, drawn_by, TEST)
    p = _finite("p_value", p_value)
    if not 0 <= p <= 1:
        raise ValueError(f"p_value must lie in [0, 1], got {p}")
    if detectable is not None:
        detectable = _finite("detectable", detectable)
        if detectable <= 0:
            raise ValueError(f"detectable must be > 0, got {detectable}")
    outcome = CONFIRMED if p < criterion.alpha else INCONCLUSIVE
    if outcome == INCONCLUSIVE and detectable is None:
        raise ValueError("a non-detection must state the smallest effect it could have "
                         "detected: pass detectable")
    rel = "<" if p < criterion.alpha else r"\ge"
    text = f"{criterion.test}: $p {rel} {criterion.alpha:g}$"
    test = {"text": text, "statistic": criterion.test, "value": statistic.value, "p": p,
            "threshold": criterion.alpha}
    if outcome == INCONCLUSIVE:
        text += f"; detectable effect {_g(detectable)}"
        test.update(text=text, detectable=detectable)
    return Verdict(paper, claim, statement, outcome, scope, TEST, "an effect exists",
                   f"statistic {statistic}", criterion=criterion.record(), test=test,
                   values=[{"name": "statistic", **value_record(statistic)}] + _extra(values))


# -- exact -----------------------------------------------------------------------------------
#: The functions and constants a formula given as text may use; every other name is a symbol.
_MATH = {name: getattr(sp, name) for name in (
    "sqrt", "cbrt", "root", "exp", "log", "sin", "cos", "tan", "asin", "acos", "atan",
    "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "Abs", "sign", "floor",
    "ceiling", "factorial", "binomial", "gamma", "loggamma", "beta", "erf", "erfc", "Min",
    "Max", "re", "im", "Rational", "Integer", "Float", "pi", "E", "I", "oo")}
_MATH.update(abs=sp.Abs, ln=sp.log, Symbol=sp.Symbol, Function=sp.Function)
_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Call, ast.Name, ast.Load, ast.Constant,
          ast.Compare, ast.operator, ast.unaryop, ast.cmpop)
_NOT_MATH = (ast.MatMult, ast.BitAnd, ast.BitOr, ast.LShift, ast.RShift, ast.Invert, ast.Not,
             ast.Is, ast.IsNot, ast.In, ast.NotIn)
_MAX_TEXT = 5000


def _parse(name: str, text: str) -> sp.Basic:
    """A formula given as text, parsed as plain mathematics: never executed as Python.

    Only numbers, names (symbols, or the functions and constants of ``_MATH``), arithmetic,
    comparisons and calls of those functions are accepted; the string is checked on its
    syntax tree before SymPy's parser sees it, with no builtins in reach.
    """
    if len(text) > _MAX_TEXT:
        raise ValueError(f"{name} is a formula of {len(text)} characters, more than "
                         f"{_MAX_TEXT}: pass a SymPy expression")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as err:
        raise TypeError(f"{name} must be a SymPy expression or a formula, got {text!r}") from err
    for node in ast.walk(tree):
        bad = not isinstance(node, _NODES) or isinstance(node, _NOT_MATH)
        if isinstance(node, ast.Name):
            bad = node.id.startswith("_")
        elif isinstance(node, ast.Constant):
            bad = isinstance(node.value, bool) or not isinstance(node.value, (int, float))
        elif isinstance(node, ast.Call):
            bad = (not isinstance(node.func, ast.Name) or node.func.id not in _MATH
                   or bool(node.keywords))
        if bad:
            raise ValueError(f"{name} must be plain mathematics (numbers, symbols, arithmetic "
                             f"and {sorted(_MATH)}), got {text!r}")
    try:
        return parse_expr(text.strip(), local_dict={},
                          global_dict={"__builtins__": {}, **_MATH},
                          transformations=(*standard_transformations, convert_xor))
    except (sp.SympifyError, SyntaxError, TypeError, ValueError, NameError,
            AttributeError) as err:
        raise TypeError(f"{name} must be a SymPy expression or a formula, got {text!r}"
                        ) from err


def _sympy(name: str, value) -> sp.Basic:
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a SymPy expression or number, got a bool")
    if isinstance(value, (float, np.floating)) and not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if isinstance(value, str):
        expr = _parse(name, value)
    else:
        try:
            expr = sp.sympify(value, strict=True)
        except (sp.SympifyError, TypeError) as err:
            raise TypeError(f"{name} must be a SymPy expression or number, got {value!r}"
                            ) from err
    if not isinstance(expr, (sp.Basic, sp.MatrixBase)) or isinstance(
            expr, (sp.Dict, sp.Tuple, sp.sets.Set)):
        raise TypeError(f"{name} must be a SymPy expression or number, got {value!r}")
    if expr.has(sp.nan, sp.zoo):
        raise ValueError(f"{name} is NaN or complex infinity: {expr}")
    return expr


def _equal(a: sp.Basic, b: sp.Basic) -> bool:
    if a == b:                       # structurally equal (oo = oo, where oo - oo is NaN)
        return True
    if any(x.has(sp.oo, -sp.oo) or getattr(x, "is_infinite", False) for x in (a, b)):
        return bool(sp.simplify(a) == sp.simplify(b))
    diff = a - b
    if sp.simplify(diff) == 0 or sp.expand(diff) == 0:
        return True
    return bool(diff.equals(0))


def _family(k: int, noun: str, alpha: float) -> str:
    """'3 points, one-sided family-wise $\\alpha = 0.01$'."""
    return f"{k} {noun}{'s' if k > 1 else ''}, one-sided family-wise $\\alpha = {alpha:g}$"


def _tex(expr) -> str:
    """A SymPy value as inline math, ``$...$`` (rendered verdicts typeset it)."""
    return f"${sp.latex(expr)}$"


def exact(paper: str, claim: str, statement: str, *, printed, derived, scope: str,
          if_wrong: str = CORRECTED, correction: str = "", kind: str = EXACT) -> Verdict:
    """A printed formula against the SymPy derivation: equal means confirmed.

    When they differ the outcome is ``if_wrong``: CORRECTED for an erratum that leaves the
    paper's conclusion standing (``correction`` says why; the derived formula is the
    correction), REFUTED when the claim falls. ``kind=CONSISTENCY`` marks an identity true by
    construction.
    """
    _head(paper, claim, statement, scope)
    if if_wrong not in (CORRECTED, REFUTED):
        raise ValueError(f"if_wrong must be {CORRECTED!r} or {REFUTED!r}, got {if_wrong!r}")
    kind = _kind(kind)
    correction = _correction(correction)
    printed, derived = _sympy("printed", printed), _sympy("derived", derived)
    shown = f"printed {_tex(printed)}"
    vals = [{"name": "printed", **value_record(printed)},
            {"name": "derived", **value_record(derived)}]
    if _equal(printed, derived):
        return Verdict(paper, claim, statement, CONFIRMED, scope, kind, shown,
                       f"derived {_tex(derived)}",
                       test={"text": "symbolic difference simplifies to 0"}, values=vals)
    if if_wrong == CORRECTED and not (isinstance(correction, str) and correction.strip()):
        raise ValueError("correction must explain the erratum when the formulas differ")
    outcome = if_wrong if if_wrong == CORRECTED else _failed(scope)
    return Verdict(paper, claim, statement, outcome, scope, kind, shown,
                   f"derived {_tex(derived)}", correction=correction or
                   f"use {_tex(derived)}", test={"text": "symbolic difference is not 0"},
                   values=vals)


def _bool(name: str, value) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be a bool (the result of a computation), got "
                    f"{type(value).__name__}")


def holds(paper: str, claim: str, statement: str, *, holds: bool, evidence: str, scope: str,
          theory: str = "holds", kind: str = EXACT, if_wrong: str = REFUTED,
          correction: str = "", corrected: bool | None = None,
          values: Mapping | None = None) -> Verdict:
    """A yes/no claim decided by an exact computation (an identity over a range, a count).

    With ``if_wrong=CORRECTED`` a failing claim is corrected only when the corrected claim is
    itself decided true by the evidence: ``corrected`` must be the bool computed from it, and
    a correction that fails too makes the outcome refuted. ``evidence`` says how the decision
    was reached; it must not contain random numbers (put those in ``values``).
    """
    return _decide(paper, claim, statement, ok=holds, evidence=evidence, scope=scope,
                   theory=theory, kind=kind, if_wrong=if_wrong, correction=correction,
                   corrected=corrected, values=values)


def _decide(paper, claim, statement, *, ok, evidence, scope, theory, kind, if_wrong, correction,
            corrected, values) -> Verdict:
    _head(paper, claim, statement, scope)
    _text("evidence", evidence)
    kind = _kind(kind)
    ok = _bool("holds", ok)
    if if_wrong not in (CORRECTED, REFUTED):
        raise ValueError(f"if_wrong must be {CORRECTED!r} or {REFUTED!r}, got {if_wrong!r}")
    if if_wrong == CORRECTED:
        _text("correction", correction)
        corrected = _bool("corrected", corrected)
    elif corrected is not None:
        raise ValueError("corrected is only meaningful with if_wrong=CORRECTED")
    vals = _extra(values)
    if ok:
        return Verdict(paper, claim, statement, CONFIRMED, scope, kind, theory, "holds",
                       evidence=evidence, test={"text": "holds"}, values=vals)
    if if_wrong == CORRECTED:
        outcome = CORRECTED if corrected else _failed(scope)
        test = "fails; the correction holds" if corrected else "fails, and so does the correction"
        return Verdict(paper, claim, statement, outcome, scope, kind, theory, "fails",
                       evidence=evidence, correction=correction, test={"text": test},
                       values=vals)
    return Verdict(paper, claim, statement, _failed(scope), scope, kind, theory, "fails",
                   evidence=evidence, correction=correction, test={"text": "fails"},
                   values=vals)


def consistency(paper: str, claim: str, statement: str, *, holds: bool, evidence: str,
                reason: str, scope: str, values: Mapping | None = None) -> Verdict:
    """A check that cannot fail at this setting: an identity true by construction, a bound
    implied by another result. Recorded (a failure would be a bug), never a confirmation.

    ``reason`` says why it cannot fail.
    """
    _text("reason", reason)
    v = _decide(paper, claim, statement, ok=holds, evidence=evidence, scope=scope,
                theory="holds", kind=CONSISTENCY, if_wrong=REFUTED, correction="",
                corrected=None, values=values)
    return Verdict(v.paper, v.claim, v.statement, v.outcome, v.scope, v.kind, v.theory,
                   v.measured, evidence=f"{evidence} (consistency check: {reason})",
                   test=v.test, values=v.values)


def detects_positive(paper: str, claim: str, statement: str, *estimates: Estimate,
                     criterion: Detection, scope: str,
                     values: Mapping | None = None, drawn_by=None) -> Verdict:
    """Record whether every estimate is detected as positive (one-sided t-tests).

    The statistic is the smallest estimate; the p-value the largest one-sided p-value; the
    detectable effect the largest ``t_{1-alpha, df} * se`` (:func:`~.stats.positive`). The
    record is :func:`~.checks.detects`'s: confirmed when the p-value is below the criterion's
    level, else inconclusive (never refuted).

    Parameters
    ----------
    paper, claim, statement : str
        As in :func:`~.checks.detects`.
    *estimates : Estimate
        One or more estimates of the effect (each must be positive).
    criterion : Detection
        The declared test (its ``alpha``).
    scope : str
        The record's scope.
    values : mapping, optional
        Further values shown with the record.
    drawn_by : source or sequence of sources, optional
        What drew the data (see :func:`agree`); required in a notebook.

    Returns
    -------
    Verdict

    Raises
    ------
    ValueError, TypeError
        No estimate, an estimate with no positive standard error, a bad criterion.

    References
    ----------
    Meterez et al. (2024), Figure 1 (the rate depends on the width) and Figure 5 (gradient
    explosion without shaping).

    Examples
    --------
    >>> from eit.verdicts.criteria import Detection
    >>> v = detects_positive("key", "Fig. 1", "X grows", Estimate(0.3, 0.05, 50, df=49),
    ...                      criterion=Detection("one-sided t-test"), scope="paper")
    >>> v.outcome
    'confirmed'
    """
    if not estimates:
        raise ValueError("estimates must not be empty")
    if not isinstance(criterion, Detection):
        raise TypeError(f"criterion must be a Detection, got {type(criterion).__name__}")
    _declared_before(criterion, list(estimates))
    p_value, detectable = positive(*estimates, alpha=criterion.alpha)
    return detects(paper, claim, statement, statistic=Statistic(min(e.value for e in estimates)),
                   p_value=p_value, detectable=detectable, criterion=criterion, scope=scope,
                   values=values, drawn_by=drawn_by)
