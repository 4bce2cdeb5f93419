"""Pre-registered criteria: the test a verdict will use, declared before the measurement.

A chapter declares its criteria in a visible cell *ahead of the experiment*; shown as a cell's
result, a criterion states the test in words. The checks of :mod:`eit.verdicts.checks` take
the criterion object and refuse one that was declared after (or in the same cell as) the
measurement it judges: every :class:`~eit.verdicts.stats.Estimate` and
:class:`~eit.verdicts.stats.Proportion` remembers the cell it was made in.

Three kinds (DESIGN.md section 3a):

* :class:`Agreement`: estimates equal a theory value. Confirmed only when the test could
  have failed: the simultaneous confidence intervals must contain the theory *and* be narrower
  than the declared ``margin`` (else inconclusive, with the smallest detectable deviation).
* :class:`Inequality`: a bound (``value <= b``), an order (``a > b``), one-sided.
* :class:`Detection`: an effect exists (a p-value below ``alpha``); never refuted by a
  non-detection.

Every criterion controls the family-wise error rate ``alpha`` over all the points of one
verdict (Bonferroni), with Student's t quantiles for estimates that carry degrees of freedom.
"""

from __future__ import annotations

import html
import math
from dataclasses import asdict, dataclass, field

from ..core.provenance import Snapshot, snapshot
from .records import MIME_CRITERION
from .stats import execution_count

__all__ = ["Agreement", "Inequality", "Detection", "Criterion", "EXACT_LAW_ALPHA",
           "APPROXIMATE_ALPHA"]

#: Family-wise level of an :class:`Agreement` with an exact law (one budget of false
#: refutations shared by the book's exact laws: see :class:`Agreement`).
EXACT_LAW_ALPHA = 1e-4
#: Family-wise level of an :class:`Agreement` with an approximate law, and of the other
#: criteria.
APPROXIMATE_ALPHA = 1e-3


def _alpha(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"alpha must be a real number, got {type(value).__name__}")
    if not (0 < value < 0.5):
        raise ValueError(f"alpha must lie in (0, 0.5), got {value!r}")
    return float(value)


class _Shown:
    """Display of a criterion: one line of text, and its record in the output metadata."""

    def text(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def record(self) -> dict:
        rec = {k: v for k, v in asdict(self).items() if k not in ("declared_in", "drawn_state")}
        return {"criterion": type(self).__name__, **rec, "text": self.text()}

    def _repr_mimebundle_(self, include=None, exclude=None):
        line = f"Pre-registered test: {self.text()}"
        markup = (f"<div class='eit-criterion'><b>Pre-registered test</b>: "
                  f"{html.escape(self.text())}</div>")
        return {"text/plain": line, "text/html": markup}, {MIME_CRITERION: self.record()}


@dataclass(frozen=True)
class Agreement(_Shown):
    """Estimates agree with a theory value.

    Parameters
    ----------
    margin : float
        The smallest deviation from the theory that matters: absolute, or a fraction of the
        theory value when ``relative``. A confirmation needs intervals narrower than it.
    relative : bool
        Whether ``margin`` is relative to the theory value.
    alpha : float, optional
        Family-wise error rate over the points of one verdict (Bonferroni). By default
        :data:`EXACT_LAW_ALPHA` (``1e-4``) for an exact law and :data:`APPROXIMATE_ALPHA`
        (``1e-3``) for an approximation. A confirmed exact law is refuted by a re-run with
        probability ``alpha`` by design, whatever its sample size, so the book's exact laws
        (about 80) share one budget of false refutations: ``1e-4`` each keeps their expected
        number per re-run of the whole book under 0.01, where ``1e-3`` made it 0.08 (design
        notes, "Stable records do not make a flip-free book").
    exact_law : bool
        True when the theory is exact at the tested setting: any significant deviation
        refutes it. False for an approximation (an asymptotic law at finite size): then
        only a deviation beyond ``margin`` refutes it, and agreement within ``margin``
        confirms it.

    Examples
    --------
    >>> print(Agreement(margin=0.02, relative=True).text())  # doctest: +NORMALIZE_WHITESPACE
    estimates agree with the exact theory: every 99.99% simultaneous t-interval (Bonferroni)
    contains the theory value and is narrower than ±2% of it
    """

    margin: float
    relative: bool = False
    alpha: float | None = None
    exact_law: bool = True
    declared_in: int | None = field(default_factory=execution_count, compare=False)
    #: the registered generators' states at the declaration (eit.core.provenance): a check
    #: refuses data whose generator has not drawn since
    drawn_state: Snapshot | None = field(default_factory=snapshot, compare=False,
                                         repr=False)

    def __post_init__(self):
        if isinstance(self.margin, bool) or not isinstance(self.margin, (int, float)):
            raise TypeError(f"margin must be a real number, got {type(self.margin).__name__}")
        if not (math.isfinite(self.margin) and self.margin > 0):
            raise ValueError(f"margin must be finite and > 0, got {self.margin!r}")
        if not isinstance(self.relative, bool) or not isinstance(self.exact_law, bool):
            raise TypeError("relative and exact_law must be bools")
        if self.alpha is None:
            object.__setattr__(self, "alpha",
                               EXACT_LAW_ALPHA if self.exact_law else APPROXIMATE_ALPHA)
        object.__setattr__(self, "alpha", _alpha(self.alpha))

    def text(self) -> str:
        m = f"±{100 * self.margin:.3g}% of it" if self.relative else f"±{self.margin:.3g}"
        conf = f"{100 * (1 - self.alpha):.6g}%"
        if self.exact_law:
            return (f"estimates agree with the exact theory: every {conf} simultaneous "
                    f"t-interval (Bonferroni) contains the theory value and is narrower than {m}")
        return (f"estimates agree with the approximate theory within {m}: every {conf} "
                f"simultaneous t-interval (Bonferroni) lies inside the band; refuted when one "
                f"lies entirely outside it")


@dataclass(frozen=True)
class Inequality(_Shown):
    """A one-sided claim: a bound, an order between two quantities.

    Confirmed when every one-sided interval (family-wise ``alpha``, Bonferroni) clears the
    bound, refuted when one lies entirely on the wrong side, inconclusive otherwise. A bound
    cleared by more than a factor ``100`` is not under test at that setting: the verdict is
    then recorded as a consistency check with its margin.
    """

    alpha: float = APPROXIMATE_ALPHA
    declared_in: int | None = field(default_factory=execution_count, compare=False)
    #: the registered generators' states at the declaration (eit.core.provenance): a check
    #: refuses data whose generator has not drawn since
    drawn_state: Snapshot | None = field(default_factory=snapshot, compare=False,
                                         repr=False)

    def __post_init__(self):
        object.__setattr__(self, "alpha", _alpha(self.alpha))

    def text(self) -> str:
        conf = f"{100 * (1 - self.alpha):.6g}%"
        return (f"one-sided {conf} simultaneous intervals (t or Clopper-Pearson, Bonferroni): "
                "confirmed if all clear the bound, refuted if one lies entirely beyond it")


@dataclass(frozen=True)
class Detection(_Shown):
    """An effect exists: the stated test's p-value is below ``alpha``.

    A non-detection is inconclusive, never a refutation.
    """

    test: str
    alpha: float = APPROXIMATE_ALPHA
    declared_in: int | None = field(default_factory=execution_count, compare=False)
    #: the registered generators' states at the declaration (eit.core.provenance): a check
    #: refuses data whose generator has not drawn since
    drawn_state: Snapshot | None = field(default_factory=snapshot, compare=False,
                                         repr=False)

    def __post_init__(self):
        if not isinstance(self.test, str) or not self.test.strip():
            raise ValueError(f"test must name the statistical test, got {self.test!r}")
        object.__setattr__(self, "alpha", _alpha(self.alpha))

    def text(self) -> str:
        return f"{self.test}: an effect is detected when p < {self.alpha:g}"


Criterion = Agreement | Inequality | Detection
