"""Verdict records and tables: what a chapter shows, with its numbers kept as data.

A verdict (:class:`Verdict`) and a table of measurements (:class:`Table`) render as text and
HTML for the reader, and carry a machine-readable record in the output's metadata (under
:data:`MIME_VERDICT` and :data:`MIME_TABLE`). The record holds every number *typed*:

* ``{"type": "estimate", "value", "se", "n", "df"}``: a Monte Carlo estimate;
* ``{"type": "proportion", "k", "n"}``: a count out of a number of trials;
* ``{"type": "statistic", "value"}``: a random number without a standard error (shown only);
* ``{"type": "exact", "value"}``: an exact value (int, fraction, SymPy, text), or a float
  computed from a closed form (``"float": true``).

The regression test (``conftest.py``, :mod:`eit.verdicts.compare`) compares exact values
exactly and Monte Carlo values statistically, from these records; the claims ledger is built
from the verdict records.
"""

from __future__ import annotations

import hashlib
import html
import math
import re
from dataclasses import asdict, dataclass, field
from fractions import Fraction

import numpy as np
import sympy as sp

from .stats import Estimate, Proportion, Statistic

__all__ = ["MIME_VERDICT", "MIME_TABLE", "MIME_CRITERION", "CONFIRMED", "CORRECTED", "REFUTED",
           "INCONCLUSIVE", "NOT_REPRODUCED", "OUTCOMES", "PAPER", "SUBSTITUTE", "EXTENSION",
           "SCOPES", "TEST", "EXACT", "CONSISTENCY", "KINDS", "Exact", "Verdict", "Table",
           "value_record", "render_value", "render_html", "tex_to_html"]

MIME_VERDICT = "application/vnd.eit.verdict+json"
MIME_TABLE = "application/vnd.eit.table+json"
MIME_CRITERION = "application/vnd.eit.criterion+json"
SCHEMA = 2

#: Outcomes (DESIGN.md section 3a). NOT_REPRODUCED is the outcome of a failed test on a
#: substitute setting: it never counts as a refutation of the paper.
CONFIRMED, CORRECTED, REFUTED = "confirmed", "confirmed with a correction", "refuted"
INCONCLUSIVE, NOT_REPRODUCED = "inconclusive", "not reproduced on the substitute"
OUTCOMES = (CONFIRMED, CORRECTED, REFUTED, INCONCLUSIVE, NOT_REPRODUCED)
#: Scopes: the paper's claim as stated, on a substitute setting, or the book's own extension.
PAPER, SUBSTITUTE, EXTENSION = "paper", "substitute", "extension"
SCOPES = (PAPER, SUBSTITUTE, EXTENSION)
#: Kinds: a statistical test, an exact computation, or a consistency check (one that cannot
#: fail at this setting, or an identity true by construction: never counted as a confirmation).
TEST, EXACT, CONSISTENCY = "test", "exact", "consistency"
KINDS = (TEST, EXACT, CONSISTENCY)

_MARK = {CONFIRMED: "✔", CORRECTED: "✎", REFUTED: "✘", INCONCLUSIVE: "?", NOT_REPRODUCED: "≠"}
_SCOPE_TEXT = {PAPER: "the paper's claim", SUBSTITUTE: "on a substitute setting",
               EXTENSION: "the book's extension"}


@dataclass(frozen=True)
class Exact:
    """A float computed from a closed form (theory), compared to 9 significant digits.

    Exact rationals, integers, SymPy expressions and text need no wrapper; a float does, so
    that nothing random is ever mistaken for theory.
    """

    value: float
    digits: int = 6

    def __post_init__(self):
        if isinstance(self.value, bool) or not isinstance(
                self.value, (int, float, np.integer, np.floating)):
            raise TypeError(f"value must be a real number, got {type(self.value).__name__}")
        if math.isnan(float(self.value)):
            raise ValueError("value is NaN")
        object.__setattr__(self, "value", float(self.value))

    def __str__(self) -> str:
        return f"{self.value:.{self.digits}g}"


def value_record(value) -> dict:
    """The typed JSON record of one value (see the module docstring)."""
    if isinstance(value, Estimate):
        return {"type": "estimate", "value": value.value, "se": value.se, "n": value.n,
                "df": value.df}
    if isinstance(value, Proportion):
        return {"type": "proportion", "k": value.successes, "n": value.trials}
    if isinstance(value, Statistic):
        return {"type": "statistic", "value": value.value}
    if isinstance(value, Exact):
        return {"type": "exact", "value": value.value, "float": True}
    if isinstance(value, (bool, np.bool_)):
        return {"type": "exact", "value": bool(value)}
    if isinstance(value, (int, np.integer)):
        return {"type": "exact", "value": int(value)}
    if isinstance(value, Fraction):
        return {"type": "exact", "value": str(value)}
    if isinstance(value, str):
        return {"type": "exact", "value": value}
    if isinstance(value, sp.Basic):
        if value.has(sp.nan, sp.zoo):
            raise ValueError(f"value: an exact value may not be NaN or complex infinity: "
                             f"{value}")
        return {"type": "exact", "value": sp.sstr(value)}
    if isinstance(value, (float, np.floating)):
        raise TypeError(
            f"value is a bare float ({value!r}), which is ambiguous: wrap a Monte Carlo number "
            "as stats.Estimate (with its standard error) or stats.Statistic, and a closed-form "
            "number as records.Exact")
    raise TypeError(f"cannot record a value of type {type(value).__name__}")


def render_value(value) -> str:
    """Plain text of one value, with only converged digits."""
    value_record(value)  # validates (a SymPy NaN or complex infinity too)
    if isinstance(value, sp.Basic):
        return sp.sstr(value)
    return str(value)


def render_html(value) -> str:
    """HTML of one value: a SymPy value typeset (``$latex$``), any other as
    :func:`render_value` with its ``$...$`` math typeset.

    Examples
    --------
    >>> print(render_html(sp.sqrt(2) / 2))
    <span class="math notranslate nohighlight">\\(\\frac{\\sqrt{2}}{2}\\)</span>
    """
    if isinstance(value, sp.Basic):
        value_record(value)
        return tex_to_html(f"${sp.latex(value)}$")
    return tex_to_html(render_value(value))


_MATH = re.compile(r"\$([^$]+)\$")


def tex_to_html(text: str) -> str:
    """Escape ``text`` for HTML, turning ``$...$`` into inline math that MathJax typesets."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    out, last = [], 0
    for m in _MATH.finditer(text):
        out.append(html.escape(text[last:m.start()]))
        out.append(f'<span class="math notranslate nohighlight">\\({html.escape(m.group(1))}'
                   "\\)</span>")
        last = m.end()
    out.append(html.escape(text[last:]))
    return "".join(out)


def _text(name: str, value, *, empty: bool = False) -> str:
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value


def _anchor(paper: str, claim: str, statement: str) -> str:
    digest = hashlib.sha1(f"{paper}\x00{claim}\x00{statement}".encode()).hexdigest()
    return f"v-{digest[:10]}"


@dataclass(frozen=True)
class Verdict:
    """One claim's verdict. Built by the checks in :mod:`eit.verdicts.checks`, never by hand.

    Attributes
    ----------
    paper, claim, statement : str
        Bibliography key, the paper's label ("Lemma 2, eq. (5)") and the claim in words;
        ``$...$`` is typeset as math.
    outcome : str
        One of :data:`OUTCOMES`.
    scope : str
        One of :data:`SCOPES`.
    kind : str
        One of :data:`KINDS`.
    theory, measured, evidence, correction : str
        What the paper claims, what was measured (rendered from ``values``), how the decision
        was reached in words (no random numbers in it), and the erratum if any.
    criterion : dict
        The pre-registered test (see :mod:`eit.verdicts.criteria`).
    test : dict
        The statistic, its threshold and the smallest effect the test could detect.
    values : list of dict
        The typed numbers (:func:`value_record`), each with a ``name``.
    """

    paper: str
    claim: str
    statement: str
    outcome: str
    scope: str
    kind: str
    theory: str
    measured: str
    evidence: str = ""
    correction: str = ""
    criterion: dict = field(default_factory=dict)
    test: dict = field(default_factory=dict)
    values: list = field(default_factory=list)

    def __post_init__(self):
        for name in ("paper", "claim", "statement"):
            _text(name, getattr(self, name))
        for name in ("theory", "measured", "evidence", "correction"):
            _text(name, getattr(self, name), empty=True)
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {self.outcome!r}")
        if self.scope not in SCOPES:
            raise ValueError(f"scope must be one of {SCOPES}, got {self.scope!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.outcome == NOT_REPRODUCED and self.scope != SUBSTITUTE:
            raise ValueError("outcome 'not reproduced on the substitute' needs scope substitute")
        if self.outcome == REFUTED and self.scope == SUBSTITUTE:
            raise ValueError("a failure on a substitute setting is 'not reproduced on the "
                             "substitute', never 'refuted'")
        if self.outcome == CORRECTED and not self.correction.strip():
            raise ValueError("a correction must be stated when the outcome is corrected")

    @property
    def id(self) -> str:
        """The HTML anchor of the verdict block (stable: a hash of paper, claim, statement)."""
        return _anchor(self.paper, self.claim, self.statement)

    @property
    def verdict(self) -> str:
        """Alias of :attr:`outcome` (the name used by schema 1)."""
        return self.outcome

    def record(self) -> dict:
        """The JSON record stored in the output metadata under :data:`MIME_VERDICT`."""
        return {"schema": SCHEMA, "id": self.id, **asdict(self)}

    def line(self) -> str:
        kind = "" if self.kind != CONSISTENCY else " · consistency check"
        text = (f"{_MARK[self.outcome]} [{self.outcome} · {self.scope}{kind}] {self.claim}: "
                f"{self.statement} | theory {self.theory} | measured {self.measured} | "
                f"{self.test.get('text', '')}")
        return text + (f" | correction: {self.correction}" if self.correction else "")

    def _repr_mimebundle_(self, include=None, exclude=None):
        css = self.outcome.replace(" ", "-")
        kind = ("<span class='eit-badge eit-consistency'>consistency check</span>"
                if self.kind == CONSISTENCY else "")
        parts = [("theory", self.theory), ("measured", self.measured),
                 ("test", self.test.get("text", "")), ("evidence", self.evidence),
                 ("correction", self.correction)]
        body = "".join(f"<span class='eit-{k}'><b>{k}</b> {tex_to_html(v)}</span> "
                       for k, v in parts if v)
        markup = (
            f"<div class='eit-verdict eit-{css}' id='{self.id}'>"
            f"<a class='eit-anchor' href='#{self.id}' title='link to this verdict'>"
            f"{_MARK[self.outcome]}</a> <b>{html.escape(self.outcome)}</b> "
            f"<span class='eit-badge eit-scope-{self.scope}'>{_SCOPE_TEXT[self.scope]}</span>"
            f"{kind} · <i>{tex_to_html(self.claim)}</i>: {tex_to_html(self.statement)}<br>"
            f"{body}</div>")
        return {"text/plain": self.line(), "text/html": markup}, {MIME_VERDICT: self.record()}


class Table:
    """A table of measurements whose cells keep their type (estimate, count, exact, ...).

    Parameters
    ----------
    columns : sequence of str
        Column headers.
    rows : sequence of sequences
        One cell per column: an :class:`~eit.verdicts.stats.Estimate`, a
        :class:`~eit.verdicts.stats.Proportion`, a :class:`~eit.verdicts.stats.Statistic`, an
        :class:`Exact` float, an int, a Fraction, a SymPy number or a string. A bare float is
        refused (is it random or exact?).
    caption : str, optional
        A line above the table.

    Examples
    --------
    >>> from eit.verdicts.stats import Estimate
    >>> t = Table(["width", "E[M]"], [[10, Estimate(1.02, 0.01, 100)]])
    >>> print(t)
    width  E[M]
       10  1.020 ± 0.010
    """

    def __init__(self, columns, rows, caption: str = ""):
        self.columns = [_text(f"columns[{i}]", c) for i, c in enumerate(columns)]
        if not self.columns:
            raise ValueError("columns must not be empty")
        self.rows = [list(r) for r in rows]
        for i, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ValueError(f"rows[{i}] has {len(row)} cells for {len(self.columns)} "
                                 "columns")
        self.caption = _text("caption", caption, empty=True)
        self._records = [[value_record(c) for c in row] for row in self.rows]

    def record(self) -> dict:
        return {"schema": SCHEMA, "caption": self.caption, "columns": self.columns,
                "rows": self._records}

    def _cells(self) -> list[list[str]]:
        return [[render_value(c) for c in row] for row in self.rows]

    def __str__(self) -> str:
        cells = self._cells()
        widths = [max(len(h), *(len(r[j]) for r in cells)) if cells else len(h)
                  for j, h in enumerate(self.columns)]
        lines = [self.caption] if self.caption else []
        lines.append("  ".join(h.ljust(w) for h, w in zip(self.columns, widths)).rstrip())
        for r in cells:
            lines.append("  ".join(c.rjust(w) for c, w in zip(r, widths)).rstrip())
        return "\n".join(lines)

    def _repr_mimebundle_(self, include=None, exclude=None):
        head = "".join(f"<th>{tex_to_html(h)}</th>" for h in self.columns)
        body = "".join("<tr>" + "".join(f"<td>{render_html(c)}</td>" for c in r) + "</tr>"
                       for r in self.rows)
        cap = f"<caption>{tex_to_html(self.caption)}</caption>" if self.caption else ""
        markup = (f"<table class='eit-table'>{cap}<thead><tr>{head}</tr></thead>"
                  f"<tbody>{body}</tbody></table>")
        return {"text/plain": str(self), "text/html": markup}, {MIME_TABLE: self.record()}
