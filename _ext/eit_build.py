"""Build-time fixes of the book's HTML, none of which needs a chapter to change.

* **Verdict anchors**: every verdict block gets ``id=`` its record's ``id`` (schema-2 outputs
  carry it already; schema-1 outputs get it here), so that the ledger can link to it.
* **Links to pages whose title holds math** (``{doc}`` without a text, the ledger's and status
  page's links) show the title's math typeset, not its raw TeX.
* **Plain titles**: the browser tab (``<title>``) and the search index show a title's math as
  Unicode text (``γ = 1/B``), since MathJax does not run there.
* **Theorem titles**: a ``prf`` block titled with the paper's own label ("Theorem 4, eq. (20)")
  shows that label alone, not "Theorem (Theorem 4, eq. (20))".
* **Downloadable notebooks** (``_sources/**/*.ipynb``) start with two cells telling the reader
  how to get ``eit``, the second installing it where it is missing.
* **Proof index**: ``{ref}`prf-prf``` links to sphinx-proof's index page, whose entries are
  named by the blocks' titles ("Theorem 3 (Arpit & Bengio 2019)"), grouped by part.
* **Ledger export**: ``ledger.json`` (:func:`eit.verdicts.ledger.export`) is written into the
  built site.
"""

from __future__ import annotations

import copy
import html
import json
import re
from pathlib import Path

from docutils import nodes
from eit_tex import tex_to_unicode
from sphinx.domains import IndexEntry
from sphinx.util import logging
from sphinx.util.nodes import clean_astext
from sphinx.util.osutil import relative_uri
from sphinx_proof.domain import ProofIndex

from eit.verdicts import ledger
from eit.verdicts.records import MIME_VERDICT

logger = logging.getLogger(__name__)

# --- verdict anchors -------------------------------------------------------------------------


def _notebook_ids(path: Path) -> list[str]:
    nb = json.loads(path.read_text())
    ids = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            rec = out.get("metadata", {}).get(MIME_VERDICT)
            if rec is not None:
                ids.append(ledger.normalize(rec)["id"])
    return ids


_VERDICT_DIV = re.compile(r"<div (?:id=['\"][^'\"]*['\"] )?class=['\"]eit-verdict\b")


def add_verdict_ids(app, doctree) -> None:
    """Give each verdict block of a chapter notebook the anchor of its record."""
    docname = app.env.docname
    source = Path(app.env.doc2path(docname))
    if source.suffix != ".ipynb":
        return
    raws = [n for n in doctree.findall(nodes.raw)
            if n.get("format") == "html" and _VERDICT_DIV.search(n.astext())]
    ids = _notebook_ids(source)
    if len(raws) != len(ids):
        logger.warning(f"{len(ids)} verdict records but {len(raws)} verdict blocks rendered",
                       location=docname)
        return
    for raw, vid in zip(raws, ids):
        text = raw.astext()
        if re.search(r"<div[^>]*\bid=", text.split(">", 1)[0] + ">"):
            continue
        new = _VERDICT_DIV.sub(
            lambda m, vid=vid: m.group(0).replace("<div ", f"<div id='{vid}' ", 1), text,
            count=1)
        raw.replace_self(nodes.raw("", new, format="html"))


# --- titles with math ------------------------------------------------------------------------

def plain(node: nodes.Node) -> str:
    """A node's text with its math as Unicode."""
    if isinstance(node, nodes.math):
        return tex_to_unicode(node.astext())
    if isinstance(node, nodes.Text):
        return node.astext()
    return "".join(plain(c) for c in node.children)


def collect_plain_titles(app, doctree) -> None:
    """Remember, per document, the Unicode text of each title holding math (for search)."""
    found = {}
    for title in doctree.findall(nodes.title):
        if any(True for _ in title.findall(nodes.math)):
            found[title.astext()] = plain(title)
    env = app.env
    if not hasattr(env, "eit_plain_titles"):
        env.eit_plain_titles = {}
    env.eit_plain_titles[env.docname] = found


def purge(app, env, docname) -> None:
    getattr(env, "eit_plain_titles", {}).pop(docname, None)


def merge(app, env, docnames, other) -> None:
    if not hasattr(env, "eit_plain_titles"):
        env.eit_plain_titles = {}
    for d in docnames:
        if d in getattr(other, "eit_plain_titles", {}):
            env.eit_plain_titles[d] = other.eit_plain_titles[d]


def resolve(app, doctree, fromdocname) -> None:
    """Resolve the extension's links; typeset the math of page titles in link texts."""
    from eit_pages import eit_link

    builder = app.builder
    here = builder.get_target_uri(fromdocname)
    for node in list(doctree.findall(eit_link)):
        if node["docname"]:
            uri = relative_uri(here, builder.get_target_uri(node["docname"]))
            uri += f"#{node['anchor']}" if node["anchor"] else ""
        elif node["path"].startswith("?"):
            uri = node["path"]
        else:
            uri = relative_uri(here, node["path"])
        ref = nodes.reference("", "", *node.children, refuri=uri, internal=True,
                              classes=["eit-link"])
        node.replace_self(ref)
    # {doc} links without a text: Sphinx writes the target's title as plain text (raw TeX)
    with_math = {}
    for title in app.env.titles.values():
        if any(True for _ in title.findall(nodes.math)):
            with_math[clean_astext(title)] = title
    if not with_math:
        return
    for inline in list(doctree.findall(nodes.inline)):
        if "doc" in inline["classes"] and inline.astext() in with_math:
            title = with_math[inline.astext()]
            inline.children = []
            inline.extend(copy.deepcopy(c) for c in title.children)


_MATH_SPAN = re.compile(
    r'<span class="math notranslate nohighlight">\\\((.*?)\\\)</span>', re.S)


def html_math_to_unicode(text: str) -> str:
    """HTML with Sphinx's inline math spans turned into Unicode text."""
    return _MATH_SPAN.sub(lambda m: html.escape(tex_to_unicode(html.unescape(m.group(1)))),
                          text)


# --- theorem titles --------------------------------------------------------------------------

_LABEL = re.compile(
    r"^(Theorems?|Lemmas?|Propositions?|Corollar(?:y|ies)|Definitions?|Remarks?|Claims?|"
    r"Observations?|Conjectures?|Sections?|Figures?|Tables?|Footnotes?|Appendix|Eqs?\.|"
    r"Equations?|Algorithms?|Assumptions?)\s+[\w(]")
_PROOF_TITLE = re.compile(
    r'(<p class="admonition-title"[^>]*>)<span class="caption-number">([^<]*)</span> '
    r"\((.*)\)</p>")


def fix_theorem_titles(body: str) -> str:
    """'Theorem (Theorem 4, eq. (20))' -> 'Theorem 4, eq. (20)' where the title names itself."""
    def repl(m: re.Match) -> str:
        title = m.group(3)
        if not _LABEL.match(re.sub(r"<[^>]+>", "", title)):
            return m.group(0)
        return f'{m.group(1)}<span class="eit-proof-label">{title}</span></p>'

    return _PROOF_TITLE.sub(repl, body)


def dedupe_scripts(context) -> None:
    """Drop repeated inline scripts (sphinx-thebe's config is added twice: a `const` declared
    twice is an error in the browser)."""
    files = context.get("script_files")
    if not isinstance(files, list):
        return
    seen, kept = set(), []
    for js in files:
        attrs = getattr(js, "attributes", {}) or {}
        key = (str(getattr(js, "filename", js) or ""), repr(sorted(attrs.items())))
        if key not in seen:
            seen.add(key)
            kept.append(js)
    files[:] = kept


def page_context(app, pagename, templatename, context, doctree) -> None:
    dedupe_scripts(context)
    if context.get("title"):
        context["title"] = html_math_to_unicode(context["title"])
    title = app.env.titles.get(pagename)
    if title is not None and any(True for _ in title.findall(nodes.math)):
        context["pagetitle"] = plain(title)  # the print header of sphinx-book-theme
    if context.get("body"):
        context["body"] = fix_theorem_titles(context["body"])


# --- after the build -------------------------------------------------------------------------

def fix_search_index(app, outdir: Path) -> None:
    path = outdir / "searchindex.js"
    if not path.exists():
        return
    text = path.read_text()
    m = re.match(r"^(Search\.setIndex\()(.*)(\))\s*$", text, re.S)
    if not m:
        logger.warning("searchindex.js has an unexpected form; titles with math left as TeX")
        return
    index = json.loads(m.group(2))
    index["titles"] = [html_math_to_unicode(t) for t in index.get("titles", [])]
    mapping = {}
    for found in getattr(app.env, "eit_plain_titles", {}).values():
        mapping.update(found)
    index["alltitles"] = {mapping.get(k, k): v for k, v in index.get("alltitles", {}).items()}
    path.write_text(m.group(1) + json.dumps(index, separators=(",", ":"), ensure_ascii=False)
                    + m.group(3))


RUNTIME = ("torch", "numpy", "scipy", "sympy", "haarpy", "matplotlib", "scikit-learn")


def getting_eit_cells(repo: str, ref: str, pins: dict[str, str]) -> list[dict]:
    """The two cells prepended to a downloadable chapter notebook.

    ``ref`` is the commit the book was built from (or a branch where the build had no git).
    The code cell installs, where the kernel lacks ``eit``, ``eit`` at ``ref`` (with the
    stored results of ``data/``, which ship with it) and only those runtime packages that
    are missing, at the book's versions: on Colab, whose PyTorch is kept, that is a few.
    """
    modules = {"scikit-learn": "sklearn"}   # the import name where it is not the package's
    wanted = [(modules.get(p, p), f"{p}=={pins[p]}") for p in RUNTIME if p in pins]
    spec = f'"eit @ git+{repo}@{ref}"'
    md = (
        "**Running this notebook.** It is a chapter of the book *Executable Initialization "
        f"Theory* ({repo}, commit `{ref}`) and uses the book's library, `eit`.\n\n"
        "* In the book's repository (after `./book setup`; `./book lab` opens the chapters in "
        "JupyterLab) and on Binder (the rocket button of the book's pages), `eit` is "
        "installed: the next cell does nothing.\n"
        "* In any other Jupyter kernel (Colab included), the next cell installs `eit` at the "
        "commit this page was built from, with the stored results the chapters read "
        "(checked against their sha256), and those of the book's pinned packages the kernel "
        "lacks (the CPU build of PyTorch where there is none; an installed PyTorch is kept).")
    code = (
        "# Get `eit`, the book's library, where this kernel lacks it (see above).\n"
        "import importlib\n"
        "import importlib.util\n\n"
        'if importlib.util.find_spec("eit") is None:\n'
        f"    _pins = {wanted!r}\n"
        "    _missing = \" \".join(p for m, p in _pins if importlib.util.find_spec(m) is None)\n"
        "    %pip install --quiet --extra-index-url https://download.pytorch.org/whl/cpu "
        f"{{_missing}} {spec}\n"
        "    importlib.invalidate_caches()")

    def lines(text):
        parts = text.split("\n")
        return [p + "\n" for p in parts[:-1]] + [parts[-1]]

    return [
        {"cell_type": "markdown", "id": "eit-getting-eit", "metadata": {"tags": ["eit-setup"]},
         "source": lines(md)},
        {"cell_type": "code", "id": "eit-install-eit", "execution_count": None,
         "metadata": {"tags": ["eit-setup"]}, "outputs": [], "source": lines(code)},
    ]


def fix_downloads(app, outdir: Path) -> None:
    """Prepend the cells of :func:`getting_eit_cells` to each downloadable chapter notebook,
    pinning ``eit`` to the commit being built (``git rev-parse HEAD``; the repository's branch,
    with a warning, where the source has no git)."""
    import subprocess

    from eit_pages import pinned

    opts = app.config.html_theme_options or {}
    repo = (opts.get("repository_url") or "").rstrip("/")
    try:
        ref = subprocess.run(["git", "rev-parse", "HEAD"], cwd=app.srcdir, check=True,
                             capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        ref = opts.get("repository_branch") or "main"
        logger.warning(f"no git commit for {app.srcdir}: the downloadable notebooks install "
                       f"eit from the branch {ref!r}, not from the commit built")
    cells = getting_eit_cells(repo, ref, pinned(app.srcdir))
    for docname in app.env.found_docs:
        if not docname.startswith("chapters/"):
            continue
        if Path(app.env.doc2path(docname)).suffix != ".ipynb":
            continue
        path = outdir / "_sources" / f"{docname}.ipynb"
        if not path.exists():
            continue
        nb = json.loads(path.read_text())
        if nb["cells"] and "eit-setup" in nb["cells"][0].get("metadata", {}).get("tags", []):
            continue
        nb["cells"] = copy.deepcopy(cells) + nb["cells"]
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def finished(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    fix_search_index(app, outdir)
    fix_downloads(app, outdir)
    export = ledger.export()
    for key in ("verdicts", "status"):  # the chapters this site renders
        export[key] = [r for r in export[key] if r["chapter"] in app.env.found_docs]
    (outdir / "ledger.json").write_text(json.dumps(export, indent=1, ensure_ascii=False) + "\n")


def proof_title(node: nodes.Element, title_format: str) -> str:
    """A theorem block's own title as text (its math as Unicode): the argument of
    ``{prf:theorem} <title>``, which sphinx-proof wraps in ``proof_title_format`` (" (%t)")."""
    title = next((c for c in node.children if isinstance(c, nodes.title)), None)
    text = " ".join(plain(title).split()) if title is not None else ""
    before, _, after = (" ".join(p.split()) for p in title_format.partition("%t"))
    if text and text.startswith(before) and text.endswith(after):
        text = text[len(before):len(text) - len(after)].strip()
    return text


def proof_index_name(title: str, realtype: str, part: dict) -> str:
    """'Theorem 3 (Arpit & Bengio 2019)': a block's title, followed by the paper of its part
    (from the part's caption) where the title does not name the paper's first author; the
    kind of block where it has no title."""
    name = title or realtype.title()
    paper = part["caption"].partition(": ")[2] if part["number"] else ""
    author = re.match(r"[^\W\d_]+", paper)
    if author and author.group(0) not in name:
        name += f" ({paper})"
    return name


def proof_index_content(env, docnames=None) -> list[tuple[str, list[IndexEntry]]]:
    """The entries of the proof index, one group per part ("I", "II", ...; "Book" for the
    book's own pages) in the order of ``_toc.yml``, each entry a block in its order on the
    page: its name (:func:`proof_index_name`), its chapter's title and its kind."""
    from eit_pages import ROMAN, part_of, toc_parts

    parts = toc_parts(env.srcdir)
    order = [f for part in parts for f in part["files"]]
    proofs = getattr(env, "proof_list", {})
    docs = sorted({v["docname"] for v in proofs.values()},
                  key=lambda d: (order.index(d) if d in order else len(order), d))
    groups: dict[str, list[IndexEntry]] = {}
    for docname in docs:
        if docnames and docname not in docnames:
            continue
        part = part_of(docname, parts)
        chapter = plain(env.titles[docname]) if docname in env.titles else docname
        for node in env.get_doctree(docname).findall(nodes.Element):
            label, realtype = node.get("label"), node.get("realtype")
            if not (label and realtype) or proofs.get(label, {}).get("docname") != docname:
                continue
            name = proof_index_name(proof_title(node, env.config.proof_title_format),
                                    realtype, part)
            groups.setdefault(ROMAN[part["number"]] or "Book", []).append(
                IndexEntry(name, 0, docname, label, chapter, "", realtype))
    return list(groups.items())


class TitledProofIndex(ProofIndex):
    """sphinx-proof's proof index (``prf-prf.html``) naming each block by its title, with
    its chapter's title, not by its label and file path (:func:`proof_index_content`)."""

    def generate(self, docnames=None):
        return proof_index_content(self.domain.env, docnames), False


def mark_proof_index(app, pagename, templatename, context, doctree) -> None:
    """A marker in the proof index's head, for its styles (``_static/eit.css``): its names
    are titles, not code."""
    if pagename == "prf-prf":
        context["metatags"] = (context.get("metatags") or "") + \
            '<meta name="eit-page" content="proof-index">\n'


def register_proof_index(app) -> None:
    """``{ref}`prf-prf``` links to the proof index, whose entries are the blocks' titles
    (:class:`TitledProofIndex` in place of sphinx-proof's own index)."""
    std = app.env.get_domain("std")
    std.data["labels"]["prf-prf"] = ("prf-prf", "", "Proof index")
    std.data["anonlabels"]["prf-prf"] = ("prf-prf", "")
    app.env.get_domain("prf").indices = [TitledProofIndex]
    app.connect("html-page-context", mark_proof_index)


def setup(app) -> None:
    # MathJax on every page: the navigation holds titles with math, also on pages without any
    # (search, indices), and search results are typeset (_static/eit.js)
    app.set_html_assets_policy("always")
    app.connect("builder-inited", register_proof_index)
    app.connect("doctree-read", add_verdict_ids)
    app.connect("doctree-read", collect_plain_titles)
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
    app.connect("doctree-resolved", resolve)
    app.connect("html-page-context", page_context)
    app.connect("build-finished", finished)
