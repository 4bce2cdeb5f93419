"""The regression test's comparison: exact things exactly, Monte Carlo things statistically.

Bitwise-equal Monte Carlo output across machines is impossible for chaotic computations
(DESIGN.md section 3). The book's outputs therefore carry their numbers as typed records
(:mod:`eit.verdicts.records`), and two executions of a chapter, on two machines or with two
seeds, are compared record by record:

* exact values (integers, fractions, SymPy, text, verdict outcomes, claims, criteria, theory
  values) must be equal; floats computed from closed forms agree to :data:`REL_EXACT`;
* estimates must agree by a two-sided Welch t-test at level :data:`ALPHA` on their combined
  standard error: ``|a - b| <= t_{1 - ALPHA/2, df} sqrt(se_a^2 + se_b^2)``;
* proportions must agree by Fisher's exact test at level :data:`ALPHA`;
* statistics (numbers without a standard error) are compared only through the decisions they
  feed.

The same rules serve the nbval plugin (``conftest.py``: every executed cell against the
committed one) and the seed-invariance run (``./book seeds``: the verdict records of a second
seed against the committed ones). Two executions at the same seed are strongly correlated, so
the test is conservative there; at two seeds they are independent, as the test assumes.
``ALPHA`` is small because a book has thousands of compared values: a true agreement fails
with probability about ``ALPHA`` per value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from scipy import stats as _st

from .records import MIME_CRITERION, MIME_TABLE, MIME_VERDICT

__all__ = ["ALPHA", "REL_EXACT", "Comparison", "compare_values", "compare_verdicts",
           "compare_tables", "compare_records", "compare_outputs", "EIT_MIMES"]

#: Per-value level of the statistical comparison (two-sided).
ALPHA = 1e-5
#: Relative tolerance for floats computed from closed forms (libm differs in the last bits).
REL_EXACT = 1e-9
EIT_MIMES = (MIME_VERDICT, MIME_TABLE, MIME_CRITERION)


@dataclass
class Comparison:
    """The result of comparing a reference with a new execution."""

    problems: list[str] = field(default_factory=list)
    tolerated: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def extend(self, other: Comparison) -> None:
        self.problems += other.problems
        self.tolerated += other.tolerated


# -- validation: a malformed record is an error naming the argument it came from ------------
def _where(where) -> str:
    if not isinstance(where, str):
        raise TypeError(f"where must be a str (a label of the messages), got "
                        f"{type(where).__name__}")
    return where


def _record(name: str, value, what: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be {what} (a dict), got {type(value).__name__}")
    return value


def _list(name: str, value, what: str) -> list:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a list of {what}, got {type(value).__name__}")
    return list(value)


def _field(name: str, rec: Mapping, key: str, *, integer: bool = False, optional: bool = False):
    """A number stored in a record: a real number (an int where ``integer``), or None."""
    if key not in rec:
        if optional:
            return None
        raise ValueError(f"{name}: a {rec.get('type')} record needs {key!r}, got keys "
                         f"{sorted(map(str, rec))}")
    x = rec[key]
    if x is None and optional:
        return None
    kinds = int if integer else (int, float)
    if isinstance(x, bool) or not isinstance(x, kinds):
        raise TypeError(f"{name}[{key!r}] must be {'an int' if integer else 'a real number'}, "
                        f"got {type(x).__name__}")
    return x


def _close(a: float, b: float, rel: float = REL_EXACT) -> bool:
    if a == b:
        return True
    if not (math.isfinite(a) and math.isfinite(b)):
        return False
    return abs(a - b) <= rel * max(abs(a), abs(b)) + 1e-300


def _estimate(ref: Mapping, new: Mapping, where: str, out: Comparison) -> None:
    a, b = float(_field("ref", ref, "value")), float(_field("new", new, "value"))
    sa, sb = float(_field("ref", ref, "se")), float(_field("new", new, "se"))
    for name, rec in (("ref", ref), ("new", new)):
        _field(name, rec, "df", optional=True)
    if not all(math.isfinite(x) for x in (a, b, sa, sb)):
        out.problems.append(f"{where}: non-finite estimate ({a} ± {sa} vs {b} ± {sb})")
        return
    if a == b and sa == sb:
        return
    se = math.hypot(sa, sb)
    if se == 0:
        if not _close(a, b):
            out.problems.append(f"{where}: exact estimates differ ({a!r} vs {b!r})")
        return
    dfs = [ref.get("df"), new.get("df")]
    if any(d is None for d in dfs):
        crit = float(_st.norm.ppf(1 - ALPHA / 2))
    else:  # Welch-Satterthwaite
        va, vb = sa**2, sb**2
        den = (va**2 / dfs[0] if dfs[0] else 0) + (vb**2 / dfs[1] if dfs[1] else 0)
        df = (va + vb) ** 2 / den if den else min(dfs)
        crit = float(_st.t.ppf(1 - ALPHA / 2, df))
    t = abs(a - b) / se
    line = f"{where}: {a:.6g} ± {sa:.2g} vs {b:.6g} ± {sb:.2g} (|t| = {t:.2f}, limit {crit:.2f})"
    (out.problems if t > crit else out.tolerated).append(line)


def _proportion(ref: Mapping, new: Mapping, where: str, out: Comparison) -> None:
    ka, na = _field("ref", ref, "k", integer=True), _field("ref", ref, "n", integer=True)
    kb, nb = _field("new", new, "k", integer=True), _field("new", new, "n", integer=True)
    for name, (k, n) in (("ref", (ka, na)), ("new", (kb, nb))):
        if not 0 <= k <= n:
            raise ValueError(f"{name}: a proportion record needs 0 <= k <= n, got {k}/{n}")
    if (ka, na) == (kb, nb):
        return
    p = float(_st.fisher_exact([[ka, na - ka], [kb, nb - kb]]).pvalue)
    line = f"{where}: {ka}/{na} vs {kb}/{nb} (Fisher p = {p:.3g}, limit {ALPHA:g})"
    (out.problems if p < ALPHA else out.tolerated).append(line)


def _exact(ref, new) -> bool:
    if isinstance(ref, float) or isinstance(new, float):
        return isinstance(ref, (int, float)) and isinstance(new, (int, float)) and _close(
            float(ref), float(new))
    return ref == new


def compare_values(ref: dict, new: dict, where: str) -> Comparison:
    """Compare two typed value records (:func:`eit.verdicts.records.value_record`).

    A malformed record (not a dict, a type that is no string, a missing or non-numeric
    number) is an error naming ``ref`` or ``new``; a NaN or an infinity in a stored estimate
    is a problem of the comparison.
    """
    where = _where(where)
    out = Comparison()
    for name, rec in (("ref", ref), ("new", new)):
        _record(name, rec, "a value record")
        if not isinstance(rec.get("type", ""), str):
            raise TypeError(f"{name}['type'] must be a str, got {type(rec['type']).__name__}")
    kind = ref.get("type")
    if kind != new.get("type"):
        out.problems.append(f"{where}: type {kind!r} became {new.get('type')!r}")
        return out
    for key in sorted(set(ref) | set(new)):  # labels and theory values attached to a value
        if key in ("type", "value", "se", "n", "df", "k"):
            continue
        if not _exact(ref.get(key), new.get(key)):
            out.problems.append(f"{where}: {key} {ref.get(key)!r} became {new.get(key)!r}")
    if kind == "estimate":
        _estimate(ref, new, where, out)
    elif kind == "proportion":
        _proportion(ref, new, where, out)
    elif kind == "statistic":
        pass  # compared through the decisions it feeds
    elif kind == "exact":
        if not _exact(ref.get("value"), new.get("value")):
            out.problems.append(f"{where}: exact value {ref.get('value')!r} became "
                                f"{new.get('value')!r}")
    else:
        out.problems.append(f"{where}: unknown value type {kind!r}")
    return out


_VERDICT_EXACT = ("schema", "id", "paper", "claim", "statement", "outcome", "verdict", "scope",
                  "kind", "theory", "evidence", "correction", "criterion")
_TEST_EXACT = ("statistic", "family", "alpha")
def _monte_carlo(record: dict) -> bool:
    """Whether the record's values include Monte Carlo estimates (typed ``estimate``)."""
    return any(isinstance(v, dict) and v.get("type") == "estimate"
               for v in record.get("values", []))


#: Checks that append the label of their tightest point to ``theory`` (" at L = 5"): which
#: point is tightest depends on the draws, so the label is not compared.
_TIGHTEST_POINT = ("one-sided interval end", "Clopper-Pearson end")


def _theory(record: dict):
    """The record's theory, without the tightest point's label where a check appended it."""
    theory, test = record.get("theory"), record.get("test")
    if not (isinstance(theory, str) and isinstance(test, Mapping)
            and test.get("statistic") in _TIGHTEST_POINT):
        return theory
    for v in record.get("values", []):
        name = v.get("name") if isinstance(v, Mapping) else None
        if isinstance(name, str) and name and theory.endswith(f" at {name}"):
            return theory[:-len(f" at {name}")]
    return theory


def compare_verdicts(ref: dict, new: dict, where: str = "verdict") -> Comparison:
    """Compare two verdict records: every exact field equal, values statistically."""
    where = _where(where)
    for arg, rec in (("ref", ref), ("new", new)):
        _record(arg, rec, "a verdict record")
        for key in ("criterion", "test"):
            if key in rec and not isinstance(rec[key], Mapping):
                raise TypeError(f"{arg}[{key!r}] must be a dict, got {type(rec[key]).__name__}")
        _list(f"{arg}['values']", rec.get("values", []), "value records")
    out = Comparison()
    name = f"{where} [{ref.get('claim', '?')}]"
    for key in _VERDICT_EXACT:
        if key in ref or key in new:
            if key == "theory":
                a, b = _theory(ref), _theory(new)
            else:
                a, b = ref.get(key), new.get(key)
            if not _exact(a, b):
                out.problems.append(f"{name}: {key} {ref.get(key)!r} became {new.get(key)!r}")
    rt, nt = ref.get("test", {}), new.get("test", {})
    if isinstance(rt, dict) and isinstance(nt, dict):
        for key in _TEST_EXACT:
            if not _exact(rt.get(key), nt.get(key)):
                out.problems.append(f"{name}: test {key} {rt.get(key)!r} became {nt.get(key)!r}")
        if "threshold" in rt or "threshold" in nt:
            a, b = rt.get("threshold"), nt.get("threshold")
            numbers = isinstance(a, (int, float)) and isinstance(b, (int, float))
            if numbers and _close(float(a), float(b), 1e-6) or a == b:
                pass
            elif numbers and _monte_carlo(ref):
                # the critical value at the worst point, a t quantile at that point's
                # estimated degrees of freedom: which point is worst, and its degrees of
                # freedom, are statistics of the sample; the outcome is compared exactly
                out.tolerated.append(f"{name}: test threshold {a:.6g} became {b:.6g} "
                                     "(critical value at the sample's worst point)")
            else:
                out.problems.append(f"{name}: test threshold {a!r} became {b!r}")
    elif "measured" in ref and ref.get("schema") is None:  # schema 1: text only
        if ref.get("measured") != new.get("measured") or rt != nt:
            out.problems.append(f"{name}: schema-1 record differs (no typed values to compare "
                                "statistically)")
    rv, nv = list(ref.get("values", [])), list(new.get("values", []))
    for arg, vals in (("ref", rv), ("new", nv)):
        for i, v in enumerate(vals):
            _record(f"{arg}['values'][{i}]", v, "a value record")
    if len(rv) != len(nv):
        out.problems.append(f"{name}: {len(rv)} values became {len(nv)}")
        return out
    for i, (a, b) in enumerate(zip(rv, nv, strict=True)):
        out.extend(compare_values(a, b, f"{name} value {a.get('name', i)!r}"))
    return out


def compare_tables(ref: dict, new: dict, where: str = "table") -> Comparison:
    """Compare two table records: headers exactly, cells by type."""
    where = _where(where)
    for arg, rec in (("ref", ref), ("new", new)):
        _record(arg, rec, "a table record")
        for i, row in enumerate(_list(f"{arg}['rows']", rec.get("rows", []), "rows")):
            for j, cell in enumerate(_list(f"{arg}['rows'][{i}]", row, "value records")):
                _record(f"{arg}['rows'][{i}][{j}]", cell, "a value record")
    out = Comparison()
    for key in ("caption", "columns"):
        if ref.get(key) != new.get(key):
            out.problems.append(f"{where}: {key} {ref.get(key)!r} became {new.get(key)!r}")
    rr, nr = ref.get("rows", []), new.get("rows", [])
    if len(rr) != len(nr) or any(len(a) != len(b) for a, b in zip(rr, nr)):
        out.problems.append(f"{where}: table shape changed")
        return out
    cols = ref.get("columns", [])
    for i, (ra, rb) in enumerate(zip(rr, nr, strict=True)):
        for j, (a, b) in enumerate(zip(ra, rb, strict=True)):
            col = cols[j] if j < len(cols) else j
            out.extend(compare_values(a, b, f"{where} row {i + 1}, column {col!r}"))
    return out


def compare_records(ref: Sequence[dict], new: Sequence[dict], where: str) -> Comparison:
    """Compare two lists of verdict records (a chapter's, in order)."""
    where = _where(where)
    ref, new = _list("ref", ref, "verdict records"), _list("new", new, "verdict records")
    for arg, recs in (("ref", ref), ("new", new)):
        for i, rec in enumerate(recs):
            _record(f"{arg}[{i}]", rec, "a verdict record")
    out = Comparison()
    if len(ref) != len(new):
        out.problems.append(f"{where}: {len(ref)} verdicts became {len(new)}")
    for i, (a, b) in enumerate(zip(ref, new)):
        out.extend(compare_verdicts(a, b, f"{where} verdict {i + 1}"))
    return out


def _mime(output: Mapping) -> str | None:
    meta = output.get("metadata") or {}
    return next((m for m in EIT_MIMES if m in meta), None)


def _outputs(name: str, value) -> list[Mapping]:
    """A cell's outputs (nbformat dicts), checked: each a dict, its metadata and data dicts."""
    outputs = _list(name, value, "notebook outputs")
    for i, o in enumerate(outputs):
        _record(f"{name}[{i}]", o, "a notebook output")
        for key in ("metadata", "data"):
            if o.get(key) is not None and not isinstance(o[key], Mapping):
                raise TypeError(f"{name}[{i}][{key!r}] must be a dict, got "
                                f"{type(o[key]).__name__}")
    return outputs


def compare_outputs(ref: Sequence[dict], new: Sequence[dict], where: str) -> Comparison:
    """Compare a cell's eit outputs (those with an eit record in their metadata), in order.

    Outputs without an eit record are not looked at here: the caller compares them exactly.
    A difference in the rendered text of an eit output whose records agree is listed under
    ``tolerated`` (it passed only thanks to the statistical comparison).
    """
    where = _where(where)
    ref, new = _outputs("ref", ref), _outputs("new", new)
    out = Comparison()
    ra = [o for o in ref if _mime(o)]
    na = [o for o in new if _mime(o)]
    if [_mime(o) for o in ra] != [_mime(o) for o in na]:
        out.problems.append(f"{where}: the eit outputs changed from {[_mime(o) for o in ra]} "
                            f"to {[_mime(o) for o in na]}")
        return out
    for i, (a, b) in enumerate(zip(ra, na, strict=True)):
        mime = _mime(a)
        ma, mb = a["metadata"][mime], b["metadata"][mime]
        label = f"{where} output {i + 1}"
        if mime == MIME_VERDICT:
            res = compare_verdicts(ma, mb, label)
        elif mime == MIME_TABLE:
            res = compare_tables(ma, mb, label)
        else:
            res = Comparison()
            if ma != mb:
                res.problems.append(f"{label}: criterion {ma!r} became {mb!r}")
        out.extend(res)
        if res.ok and (a.get("data") or {}).get("text/plain") != (b.get("data") or {}).get(
                "text/plain"):
            out.tolerated.append(f"{label}: rendered text differs, records agree")
    return out


def is_eit_output(output: dict) -> bool:
    """Whether an output carries an eit record (compared by :func:`compare_outputs`)."""
    return _mime(output) is not None
