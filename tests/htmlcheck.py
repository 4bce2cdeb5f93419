"""Checks of the built HTML, shared by tests/test_html.py (and usable on their own).

``python tests/htmlcheck.py _build/html`` prints every defect found in a built book.

* :func:`unrendered_math`: TeX that MathJax will not typeset: ``$``, ``\\tag``, ``\\begin``,
  ``\\frac``, any other TeX command and math delimiters in text outside math elements (MyST
  math that silently failed to parse, raw TeX in link texts).
* :func:`ragged_tables`: table rows whose cell count (with colspan and rowspan) differs from
  the header's.
* :func:`images_without_alt`: images whose alt text is missing, empty or a file path or hash.
* :func:`code_math`: formulas written as code or plain text in verdicts, tables of results and
  figure captions, outside math: ``**``, ``x^2``, ``2*n``, ``sqrt(``, ``||u||``, ``nu_2``,
  ``E[...]``, a Greek letter spelled out (``lambda``), a fraction of single letters (``n/m``).

Each defect names the page and, for a chapter, the line of its ``.md`` source.
"""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from bs4 import BeautifulSoup, NavigableString, Tag

ROOT = Path(__file__).resolve().parent.parent
SKIP_PAGES = {"genindex.html", "search.html"}
#: elements whose text is not prose (code, math, scripts)
NOT_PROSE = ("script", "style", "pre", "code", "kbd", "samp", "svg", "math", "textarea",
             "mjx-container", "template")
MATH_CLASSES = {"math", "highlight"}
TEX = re.compile(r"\$|\\(?:tag|begin|end|frac|[a-zA-Z]{2,})\b|\\[()\[\]]")


@dataclass(frozen=True)
class Defect:
    page: str
    where: str  # "markdown" or "cell output" or "page"
    what: str
    source: str = ""  # "chapters/x/y.md:123" when it could be found

    def __str__(self) -> str:
        loc = f" [{self.source}]" if self.source else ""
        return f"{self.page} ({self.where}){loc}: {self.what}"


def pages(html: Path) -> list[Path]:
    return sorted(p for p in html.rglob("*.html")
                  if p.name not in SKIP_PAGES and not {"_static", "_sources", "mathjax",
                                                        "_images"} & set(p.parts))


@functools.cache
def _soup(path: str, mtime: float) -> BeautifulSoup:
    return BeautifulSoup(Path(path).read_text(), "html.parser")


def soup_of(page: Path) -> BeautifulSoup:
    """The parsed page (parsed once per process: the three checks share it)."""
    return _soup(str(page), page.stat().st_mtime)


def source_of(html: Path, page: Path) -> Path | None:
    """The MyST source of a page: a chapter's .md, or a top-level page's .md."""
    rel = page.relative_to(html).with_suffix(".md")
    path = ROOT / rel
    return path if path.exists() else None


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"[A-Za-z]{4,}", text)]


def locate(source: Path | None, context: str) -> str:
    """``file:line`` of the source line that shares the most words with ``context``."""
    if source is None:
        return ""
    words = _words(context)
    if not words:
        return source.relative_to(ROOT).as_posix()
    best, best_n = 0, 0
    for i, line in enumerate(source.read_text().splitlines(), 1):
        n = sum(1 for w in set(words) if w in line)
        if n > best_n:
            best, best_n = i, n
    rel = source.relative_to(ROOT).as_posix()
    return f"{rel}:{best}" if best else rel


def _in_output(node) -> bool:
    return any(isinstance(p, Tag) and "cell_output" in (p.get("class") or [])
               for p in node.parents)


def _prose_strings(body: Tag):
    for s in body.find_all(string=True):
        if not isinstance(s, NavigableString) or type(s).__name__ in ("Comment", "Doctype"):
            continue
        skip = False
        for parent in s.parents:
            if not isinstance(parent, Tag):
                continue
            if parent.name in NOT_PROSE or MATH_CLASSES & set(parent.get("class") or []):
                skip = True
                break
        if not skip:
            yield s


def unrendered_math(html: Path) -> list[Defect]:
    found = []
    for page in pages(html):
        soup = soup_of(page)
        body = soup.body or soup
        rel = page.relative_to(html).as_posix()
        src = source_of(html, page)
        for s in _prose_strings(body):
            text = str(s)
            for m in TEX.finditer(text):
                # the paragraph around it, to show and to find the source line
                block = s.find_parent(["p", "li", "td", "th", "dt", "dd", "h1", "h2", "h3",
                                       "h4", "div", "a", "span"])
                around = " ".join((block.get_text(" ") if block else text).split())
                i = around.find(m.group(0))
                snippet = around[max(0, i - 60):i + 60] if i >= 0 else text[:120]
                where = "cell output" if _in_output(s) else "markdown"
                found.append(Defect(rel, where, f"{m.group(0)!r} outside math in "
                                                f"...{snippet}...",
                                    locate(src, around) if where == "markdown" else ""))
                break  # one defect per text node
    return _unique(found)


def _unique(defects: list[Defect]) -> list[Defect]:
    seen, out = set(), []
    for d in defects:
        if (d.page, d.what) not in seen:
            seen.add((d.page, d.what))
            out.append(d)
    return out


def _row_widths(table: Tag) -> tuple[int, list[tuple[int, str]]]:
    """The header's width and, per body row, its width with rowspans carried over."""
    rows = [tr for tr in table.find_all("tr") if tr.find_parent("table") is table]
    widths, carry = [], {}
    for tr in rows:
        cells = [c for c in tr.find_all(["td", "th"], recursive=False)]
        n = sum(int(c.get("colspan", 1) or 1) for c in cells)
        n += sum(1 for k, left in carry.items() if left > 0)
        carry = {k: v - 1 for k, v in carry.items() if v - 1 > 0}
        col = 0
        for c in cells:
            span = int(c.get("rowspan", 1) or 1)
            if span > 1:
                carry[(id(tr), col)] = span - 1
            col += 1
        text = " ".join(tr.get_text(" ").split())[:100]
        widths.append((n, text))
    if not widths:
        return 0, []
    head = table.find("thead")
    header = widths[0][0]
    if head is not None:
        head_rows = [tr for tr in head.find_all("tr")]
        header = widths[len(head_rows) - 1][0] if head_rows else header
        body = widths[len(head_rows):]
    else:
        body = widths[1:]
    return header, body


def ragged_tables(html: Path) -> list[Defect]:
    found = []
    for page in pages(html):
        soup = soup_of(page)
        rel = page.relative_to(html).as_posix()
        src = source_of(html, page)
        for table in soup.find_all("table"):
            header, body = _row_widths(table)
            for n, text in body:
                if n != header:
                    where = "cell output" if _in_output(table) else "markdown"
                    found.append(Defect(rel, where, f"a row has {n} cells, the header "
                                                    f"{header}: {text}",
                                        locate(src, text) if where == "markdown" else ""))
    return found


_HASH = re.compile(r"^[0-9a-f]{16,}$")


def bad_alt(alt: str | None, src: str) -> bool:
    """True when ``alt`` does not describe the image (missing, empty, a path or a hash)."""
    if alt is None or not alt.strip():
        return True
    a = alt.strip()
    one_token = not re.search(r"\s", a)
    path_like = one_token and ("/" in a or a.lower().endswith(
        (".png", ".svg", ".jpg", ".jpeg", ".gif", ".webp")))
    return (path_like or a == Path(src).name or bool(_HASH.match(Path(a).stem))
            or a.lower() in {"image", "png", "figure", "plot", "output"})


def code_cell_lines(md: Path) -> list[int]:
    """The line of each ``{code-cell}`` fence of a MyST notebook, in order."""
    return [i for i, line in enumerate(md.read_text().splitlines(), 1)
            if line.startswith("```{code-cell}")]


def images_without_alt(html: Path) -> list[Defect]:
    found = []
    for page in pages(html):
        soup = soup_of(page)
        rel = page.relative_to(html).as_posix()
        src = source_of(html, page)
        article = soup.find("article") or soup.body or soup
        cells = [c for c in article.find_all("div", class_="cell")]
        cell_lines = code_cell_lines(src) if src is not None else []
        for img in article.find_all("img"):
            if not bad_alt(img.get("alt"), img.get("src", "")):
                continue
            where, source = "markdown", ""
            cell = img.find_parent("div", class_="cell")
            if cell is not None:
                where = "cell output"
                k = cells.index(cell) if cell in cells else -1
                if 0 <= k < len(cell_lines) and src is not None:
                    source = f"{src.relative_to(ROOT).as_posix()}:{cell_lines[k]}"
            found.append(Defect(rel, where, f"image {img.get('src')} has alt text "
                                            f"{img.get('alt')!r}", source))
    return found


#: Formula syntax that must not appear outside math in rendered results (see :func:`code_math`)
CODE_MATH = {
    "power": re.compile(r"\*\*|[\w)\]}]\^[\w({\-]"),
    "product": re.compile(r"[\w)]\*[\w(]"),
    "call": re.compile(r"\b(?:sqrt|exp|log|ln|sin|cos|tanh|erf|gamma|Derivative|Subs|Symbol|"
                       r"Integral|Sum|Abs|binomial|factorial|Rational|Eq)\("),
    "norm": re.compile(r"\|\|"),
    "subscript": re.compile(r"(?<![\w-])[A-Za-z]{1,3}_(?:[A-Za-z0-9]{1,3}(?!\w)|[{(])"),
    "Greek name": re.compile(r"\b(?:lambda|sigma|alpha|eta|tau|mu|nu|rho|theta|epsilon|eps|"
                             r"kappa|phi|psi|pi)\b"),
    "expectation": re.compile(r"\b(?:E|Var|P)\[|\bE\|"),
    "fraction": re.compile(r"(?<![\w-])[A-Za-z]/[A-Za-z(\d](?![\w-])|\d/\(|\)/[\w(]"),
}
_EQ_REFS = re.compile(r"\(\d+[a-z]?\)(?:/\(\d+[a-z]?\))+")
#: Where results are rendered: verdict blocks, the book's tables of results, figure captions
RESULTS = "div.eit-verdict, table.eit-table, figcaption"


def code_math(html: Path) -> list[Defect]:
    """Formulas written as code or plain text (:data:`CODE_MATH`) in the text of rendered
    results (:data:`RESULTS`), outside their math elements."""
    found = []
    for page in pages(html):
        soup = soup_of(page)
        rel = page.relative_to(html).as_posix()
        for block in soup.select(RESULTS):
            text = " ".join(str(s) for s in _prose_strings(block))
            text = _EQ_REFS.sub(" ", text)   # "eqs. (171)/(191)": references, not a fraction
            for kind, pattern in CODE_MATH.items():
                m = pattern.search(text)
                if m:
                    i = m.start()
                    found.append(Defect(rel, "result", f"{kind} {m.group(0)!r} outside math "
                                                       f"in ...{text[max(0, i - 60):i + 60]}...",
                                        ""))
    return _unique(found)


def main(argv: list[str]) -> int:
    html = Path(argv[1]) if len(argv) > 1 else ROOT / "_build" / "html"
    n = 0
    for name, check in (("unrendered math", unrendered_math), ("ragged tables", ragged_tables),
                        ("images without alt text", images_without_alt),
                        ("formulas as code in results", code_math)):
        defects = check(html)
        n += len(defects)
        print(f"== {name}: {len(defects)}")
        for d in defects:
            print(f"  {d}")
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
