"""No outcome stated in an overview's (or the introduction's) prose can go stale.

Every outcome that a part overview states about its records is an ``{outcome}`` role
(``_ext/eit_pages.py``), which the build renders from the record it names; so

* every ``{outcome}`` role resolves to exactly one record (a role naming a missing or an
  ambiguous claim fails here, and is an error in the build);
* no bare outcome word (confirmed, refuted, inconclusive, not reproduced, corrected,
  consistency check) is left in the prose outside a role, except in the short list of
  definitional sentences below, each with its reason;
* a negative control: mutated texts (a role naming a missing claim, a bare "inconclusive")
  make the checker fail.
"""

from __future__ import annotations

import re
from pathlib import Path

import extension
import pytest

from eit.verdicts import ledger

ROOT = Path(__file__).resolve().parent.parent
PAGES = [*sorted((ROOT / "chapters").glob("*/overview.md")), ROOT / "intro.md"]
RECORDS = ledger.verdicts()

ROLE = re.compile(r"\{outcome\}`([^`]*)`")
ANY_ROLE = re.compile(r"\{[a-z:-]+\}`[^`]*`")
FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.S | re.M)
TABLE_ROW = re.compile(r"^(\|.*(?<!\\)\|)([^|\n]*(?:\\\|[^|\n]*)*\|[ \t]*)$", re.M)
BARE = re.compile(r"\b(confirm(?:ed|s|ing|ation|ations)?|refut(?:ed|es|ing|ation|ations)?|"
                  r"inconclusive|not reproduced|corrected|consistency checks?)\b", re.I)

#: Sentences (fragments, exactly as written) that may name an outcome without a role, with
#: the reason. A fragment that no longer occurs in its page fails the test (no stale entry).
ALLOWED: dict[str, list[tuple[str, str]]] = {
    "intro.md": [
        ("4. **rules**: *confirmed*, *confirmed with a correction* (an erratum, shown with the "
         "evidence\n   that separates the printed and the corrected formula), *refuted*, or "
         "*inconclusive*; a\n   claim checked on a substitute setting (digits for CIFAR, a "
         "smaller width) that fails there\n   is *not reproduced on the substitute*, never "
         "refuted.",
         "the verdict protocol: defines the outcomes, states none"),
    ],
    "meterez-et-al-2024": [
        ("a failure there is \"not reproduced on the\nsubstitute\", never a refutation",
         "definition of the substitute scope"),
        ("(and their kind where\nit matters: a *consistency check* cannot fail at the tested "
         "setting and confirms nothing)", "definition of a consistency check"),
        ("Errata: every record confirmed with a correction", "what the section lists"),
        ("(recorded as confirmations where under test, as\n  consistency checks where not)",
         "how such bounds are recorded, in general"),
        ("(not refutations)", "a substitute scope cannot refute"),
    ],
    "arpit-bengio-2019": [
        ("(and their kind where\nit matters: a *consistency check* cannot fail at the tested "
         "setting and confirms nothing)", "definition of a consistency check"),
        ("Errata: the records confirmed with a correction or refuted.",
         "what the section lists"),
        ("the records are confirmations, consistency checks or\n\"not reproduced on the "
         "substitute\"", "what the section lists"),
        ("not a refutation", "a substitute scope cannot refute"),
    ],
    "arpit-campos-bengio-2019": [
        ("so none of\nthem can refute the paper", "a substitute scope cannot refute"),
        ("(a substitute cannot refute the paper)", "a substitute scope cannot refute"),
    ],
}


def _pages_key(page: Path) -> str:
    return "intro.md" if page.name == "intro.md" else page.parent.name


def role_texts(text: str) -> list[str]:
    """The texts of the ``{outcome}`` roles (MyST reads ``\\|`` in a table row as ``|``)."""
    texts = []
    for line in text.splitlines():
        table = line.lstrip().startswith("|")
        texts += [m.group(1).replace("\\|", "|") if table else m.group(1)
                  for m in ROLE.finditer(line)]
    return texts


def unresolved(text: str, resolve, records: list[dict]) -> list[str]:
    """The errors of the roles that do not name exactly one record."""
    errors = []
    for role in role_texts(text):
        try:
            resolve(role, records)
        except ValueError as err:
            errors.append(str(err))
    return errors


def bare_outcomes(text: str, allowed: list[tuple[str, str]]) -> list[str]:
    """Outcome words outside roles, fenced blocks and allowed sentences (with their line)."""
    for fragment, _reason in allowed:
        if fragment not in text:
            return [f"allowed sentence no longer in the page: {fragment!r}"]
        text = text.replace(fragment, " " * len(fragment))
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    # a table row's claim and statement cells name claims ("Corrected eq. (2.3)"); its
    # outcomes are in the last (status) cell
    text = TABLE_ROW.sub(lambda m: " " * len(m.group(1)) + m.group(2), text)
    text = ANY_ROLE.sub(lambda m: " " * len(m.group(0)), text)
    lines = text.splitlines()
    found = []
    for m in BARE.finditer(text):
        line = text.count("\n", 0, m.start())
        found.append(f"line {line + 1}: {m.group(0)!r} in {lines[line].strip()!r}")
    return found


@pytest.fixture(scope="module")
def resolve_outcome():
    return extension.load().resolve_outcome


@pytest.mark.parametrize("page", PAGES, ids=_pages_key)
def test_every_outcome_role_names_one_record(page, resolve_outcome):
    errors = unresolved(page.read_text(), resolve_outcome, RECORDS)
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("page", PAGES, ids=_pages_key)
def test_roles_name_records_of_their_part(page, resolve_outcome):
    if page.name == "intro.md":
        return
    for role in role_texts(page.read_text()):
        record = resolve_outcome(role, RECORDS)
        assert record["part"] == page.parent.name, (role, record["part"])


@pytest.mark.parametrize("page", PAGES, ids=_pages_key)
def test_no_bare_outcome_in_prose(page):
    found = bare_outcomes(page.read_text(), ALLOWED.get(_pages_key(page), []))
    assert not found, (f"{page.relative_to(ROOT)}: outcome stated outside an {{outcome}} role "
                       "(use the role, or allow a definitional sentence with its reason):\n"
                       + "\n".join(found))


def test_allowed_sentences_have_reasons():
    for entries in ALLOWED.values():
        for fragment, reason in entries:
            assert fragment.strip() and reason.strip()


def test_checker_catches_stale_prose(resolve_outcome):
    """Negative control: a role naming no record and a bare outcome word are both caught."""
    meterez = next(p for p in PAGES if p.parent.name == "meterez-et-al-2024")
    text = meterez.read_text()
    roles = role_texts(text)
    assert roles, "the Meterez overview states its outcomes through roles"
    assert not unresolved(text, resolve_outcome, RECORDS)
    first = ROLE.search(text)
    chapter = first.group(1).partition(": ")[0]
    missing = text.replace(first.group(0), f"{{outcome}}`{chapter}: no such claim`", 1)
    assert unresolved(missing, resolve_outcome, RECORDS)
    ambiguous = "{outcome}`02-isometry-gap: Eq. (5)`"
    assert unresolved(ambiguous, resolve_outcome, RECORDS)
    allowed = ALLOWED["meterez-et-al-2024"]
    assert not bare_outcomes(text, allowed)
    stale = text.replace("## Claims and chapters\n",
                         "## Claims and chapters\n\nThe warm-up claim is inconclusive.\n", 1)
    assert any("inconclusive" in f for f in bare_outcomes(stale, allowed))
    # a role's rendered words do not count, but the same words outside it do
    assert bare_outcomes("Figure 5: confirmed · substitute", [])
    assert not bare_outcomes(f"Figure 5: {{outcome}}`{roles[0]}`", [])
