"""Verdicts: turn (theory, measurement) into a recorded verdict on a paper's claim.

Each check returns a :class:`Verdict`. Shown as a cell's result it renders as one stable line
(plain text and HTML) and carries a machine-readable record in the output's metadata under
:data:`MIME`, from which the claims ledger is built (``eit.verdicts.ledger``). The
verdict is computed, never passed in:

* ``confirmed``: the claim as printed agrees with the evidence;
* ``confirmed with a correction``: the printed form fails, a corrected form (stated, with the
  evidence that separates the two) agrees;
* ``refuted``: the evidence contradicts the claim and no correction is offered or it fails too.
"""

from __future__ import annotations

import html
import math
from dataclasses import asdict, dataclass

import sympy as sp

from .stats import Estimate, Proportion, significant

MIME = "application/vnd.eit.verdict+json"
CONFIRMED, CORRECTED, REFUTED = "confirmed", "confirmed with a correction", "refuted"
_MARK = {CONFIRMED: "✔", CORRECTED: "✎", REFUTED: "✘"}


@dataclass(frozen=True)
class Verdict:
    paper: str        # bibliography key of the paper
    claim: str        # the paper's label, e.g. "Lemma 2, eq. (5)"
    statement: str    # the claim in words or a formula
    verdict: str      # CONFIRMED, CORRECTED or REFUTED
    theory: str       # the value or law claimed (and the corrected one, if any)
    measured: str     # the evidence: estimate ± SE, a CI, or an exact computation
    test: str         # how the verdict was decided (tolerance, statistic)
    correction: str = ""

    def line(self) -> str:
        text = (f"{_MARK[self.verdict]} [{self.verdict}] {self.claim}: {self.statement} | "
                f"theory {self.theory} | measured {self.measured} | {self.test}")
        return text + (f" | correction: {self.correction}" if self.correction else "")

    def _repr_mimebundle_(self, include=None, exclude=None):
        css = self.verdict.replace(" ", "-")
        body = "".join(
            f"<span class='eit-{k}'><b>{k}</b> {html.escape(getattr(self, k))}</span> "
            for k in ("theory", "measured", "test", "correction") if getattr(self, k))
        markup = (f"<div class='eit-verdict eit-{css}'>{_MARK[self.verdict]} "
                  f"<b>{html.escape(self.verdict)}</b> · <i>{html.escape(self.claim)}</i>: "
                  f"{html.escape(self.statement)}<br>{body}</div>")
        # The record travels in the output's metadata: renderers ignore it, the ledger reads it.
        return {"text/plain": self.line(), "text/html": markup}, {MIME: asdict(self)}


def _num(x: float) -> str:
    return f"{x:.6g}"


def _text(name: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value


def agree(paper: str, claim: str, statement: str, *, theory: float, estimate: Estimate,
          tol_se: float = 4.0, corrected: float | None = None, correction: str = "") -> Verdict:
    """Compare a Monte Carlo estimate with the claimed value: |z| <= ``tol_se`` agrees.

    If the claimed value fails and a ``corrected`` value is given, the verdict is
    CORRECTED when the corrected value agrees (``correction`` says what changed).
    """
    for name in ("paper", "claim", "statement"):
        _text(name, locals()[name])
    if not isinstance(estimate, Estimate):
        raise TypeError("estimate must be an eit.verdicts.stats.Estimate, got "
                        f"{type(estimate).__name__}")
    if not (isinstance(tol_se, (int, float)) and tol_se > 0):
        raise ValueError(f"tol_se must be > 0, got {tol_se!r}")
    if not math.isfinite(theory):
        raise ValueError(f"theory must be finite, got {theory!r}")
    if corrected is not None and not correction:
        raise ValueError("correction must describe the corrected value when corrected is given")
    z = estimate.z(theory)
    test = f"|z| = {abs(z):.2f} vs tolerance {tol_se:g} SE (n = {estimate.n})"
    if abs(z) <= tol_se:
        return Verdict(paper, claim, statement, CONFIRMED, _num(theory), str(estimate), test)
    if corrected is not None:
        zc = estimate.z(corrected)
        test += f"; corrected |z| = {abs(zc):.2f}"
        status = CORRECTED if abs(zc) <= tol_se else REFUTED
        return Verdict(paper, claim, statement, status,
                       f"{_num(theory)} (corrected: {_num(corrected)})", str(estimate), test,
                       correction)
    return Verdict(paper, claim, statement, REFUTED, _num(theory), str(estimate), test)


def agree_all(paper: str, claim: str, statement: str, *, theory, estimates,
              tol_se: float = 4.0, corrected=None, correction: str = "") -> Verdict:
    """Compare several estimates (a curve) with their claimed values at once.

    The statistic is the largest |z| over the points; it must not exceed ``tol_se``. With
    ``corrected`` values (one per point) the verdict can be CORRECTED, as in :func:`agree`.
    """
    for name in ("paper", "claim", "statement"):
        _text(name, locals()[name])
    theory, estimates = list(theory), list(estimates)
    if not estimates or len(theory) != len(estimates):
        raise ValueError(f"theory and estimates must be non-empty and of equal length, got "
                         f"{len(theory)} and {len(estimates)}")
    if not all(isinstance(e, Estimate) for e in estimates):
        raise TypeError("estimates must all be eit.verdicts.stats.Estimate")
    if corrected is not None:
        corrected = list(corrected)
        if len(corrected) != len(estimates):
            raise ValueError("corrected must have one value per estimate")
        if not correction:
            raise ValueError("correction must describe the corrected values")
    zmax = max(abs(e.z(t)) for e, t in zip(estimates, theory, strict=True))
    k = len(estimates)
    test = f"max |z| = {zmax:.2f} over {k} points vs tolerance {tol_se:g} SE"
    shown = f"{k} values from {_num(min(theory))} to {_num(max(theory))}"
    worst = max(estimates, key=lambda e: abs(e.z(theory[estimates.index(e)])))
    measured = f"worst point {worst}"
    if zmax <= tol_se:
        return Verdict(paper, claim, statement, CONFIRMED, shown, measured, test)
    if corrected is not None:
        zc = max(abs(e.z(t)) for e, t in zip(estimates, corrected, strict=True))
        test += f"; corrected max |z| = {zc:.2f}"
        status = CORRECTED if zc <= tol_se else REFUTED
        return Verdict(paper, claim, statement, status, shown, measured, test, correction)
    return Verdict(paper, claim, statement, REFUTED, shown, measured, test)


def bound(paper: str, claim: str, statement: str, *, bound, failures) -> Verdict:
    """A claimed upper bound on a probability, checked against estimated probabilities.

    ``bound`` and ``failures`` are one value and one :class:`Proportion`, or equal-length
    sequences of them (a bound at several widths). Refuted when, at some point, the whole
    confidence interval of the estimate lies above the bound.
    """
    for name in ("paper", "claim", "statement"):
        _text(name, locals()[name])
    single = isinstance(failures, Proportion)
    bounds = [bound] if single else list(bound)
    props = [failures] if single else list(failures)
    if not props or len(bounds) != len(props):
        raise ValueError(f"bound and failures must be non-empty and of equal length, got "
                         f"{len(bounds)} and {len(props)}")
    if not all(isinstance(f, Proportion) for f in props):
        raise TypeError("failures must be eit.verdicts.stats.Proportion (or a sequence of them)")
    if not all(isinstance(b, (int, float)) and math.isfinite(b) for b in bounds):
        raise ValueError(f"bound must be finite numbers, got {bounds!r}")
    violated = [i for i, (b, f) in enumerate(zip(bounds, props, strict=True)) if f.lo > b]
    status = REFUTED if violated else CONFIRMED
    i = violated[0] if violated else min(range(len(props)), key=lambda j: bounds[j] - props[j].hi)
    where = "above" if violated else "at or below"
    test = (f"lower CI end {props[i].lo:.3g} {where} the bound {_num(bounds[i])}"
            + ("" if single else f" at the tightest of {len(props)} points"))
    return Verdict(paper, claim, statement, status, f"P <= {_num(bounds[i])}", str(props[i]),
                   test)


def exact(paper: str, claim: str, statement: str, *, printed: sp.Expr, derived: sp.Expr,
          if_wrong: str = CORRECTED, correction: str = "") -> Verdict:
    """Compare a printed formula with the SymPy derivation: equal means CONFIRMED.

    When they differ the verdict is ``if_wrong``: CORRECTED for an erratum that leaves the
    paper's conclusion standing (``correction`` says why), REFUTED when the claim falls.
    """
    for name in ("paper", "claim", "statement"):
        _text(name, locals()[name])
    if if_wrong not in (CORRECTED, REFUTED):
        raise ValueError(f"if_wrong must be {CORRECTED!r} or {REFUTED!r}, got {if_wrong!r}")
    printed, derived = sp.sympify(printed), sp.sympify(derived)
    equal = sp.simplify(printed - derived) == 0
    shown = f"printed {sp.sstr(printed)}"
    if equal:
        return Verdict(paper, claim, statement, CONFIRMED, shown, f"derived {sp.sstr(derived)}",
                       "symbolic difference simplifies to 0")
    if if_wrong == CORRECTED and not correction:
        raise ValueError("correction must explain the erratum when the formulas differ")
    return Verdict(paper, claim, statement, if_wrong, shown, f"derived {sp.sstr(derived)}",
                   "symbolic difference is not 0", correction or f"use {sp.sstr(derived)}")


def holds(paper: str, claim: str, statement: str, *, holds: bool, evidence: str,
          theory: str = "holds", if_wrong: str = REFUTED, correction: str = "",
          corrected: bool | None = None) -> Verdict:
    """A yes/no claim (an inequality, an identity over a range) decided by ``evidence``.

    With ``if_wrong=CORRECTED`` a failing claim is CORRECTED only when the corrected claim
    (``correction``) is itself decided true by the evidence: ``corrected`` must then be the
    bool computed from it, and a correction that fails too makes the verdict REFUTED.
    """
    for name in ("paper", "claim", "statement", "evidence"):
        _text(name, locals()[name])
    if not isinstance(holds, bool):
        raise TypeError(f"holds must be a bool, got {type(holds).__name__}")
    if if_wrong not in (CORRECTED, REFUTED):
        raise ValueError(f"if_wrong must be {CORRECTED!r} or {REFUTED!r}, got {if_wrong!r}")
    if if_wrong == CORRECTED:
        if not correction:
            raise ValueError("correction must state the corrected claim")
        if not isinstance(corrected, bool):
            raise TypeError("corrected must be a bool decided by the evidence for the corrected "
                            f"claim, got {type(corrected).__name__}")
    elif corrected is not None:
        raise ValueError("corrected is only meaningful with if_wrong=CORRECTED")
    if holds:
        return Verdict(paper, claim, statement, CONFIRMED, theory, evidence, "holds")
    if if_wrong == CORRECTED:
        status = CORRECTED if corrected else REFUTED
        test = "fails; the correction holds" if corrected else "fails, and so does the correction"
        return Verdict(paper, claim, statement, status, theory, evidence, test, correction)
    return Verdict(paper, claim, statement, REFUTED, theory, evidence, "fails", correction)


__all__ = ["MIME", "CONFIRMED", "CORRECTED", "REFUTED", "Verdict", "agree", "agree_all", "bound",
           "exact", "holds", "significant"]
