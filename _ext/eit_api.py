"""The API reference page (``api.md``): every module of ``eit``, with its public names.

The directive ``eit-api`` writes one section per package and, under it, one ``automodule``
per module with the names the module itself defines (those of its ``__all__``, or its public
functions and classes), so that every object is described once, where it lives, and
re-exports (``eit.sample.relu_mlp`` for ``eit.sample.mlps.relu_mlp``) are not repeated.

The library's docstrings are NumPy-style prose with plain-text formulas (``||h||^2``,
``|x|``), written for ``help()`` and for doctest, not as reStructuredText: ``|`` and ``*``
in them would be read as substitutions and emphasis. So the first paragraph (autosummary's
one-line summary) is escaped, and the rest is shown verbatim, as ``help()`` shows it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

from docutils import nodes
from docutils.statemachine import StringList
from sphinx import addnodes
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

_SPECIAL = re.compile(r"([\\`*_|\[\]<>])")


_LITERAL = re.compile(r"(``.+?``)")


def _summary(text: str) -> str:
    """The summary as reStructuredText: ``literals`` kept, everything else escaped."""
    return "".join(part if _LITERAL.fullmatch(part) else _SPECIAL.sub(r"\\\1", part)
                   for part in _LITERAL.split(text))


def verbatim_docstring(app, what, name, obj, options, lines: list[str]) -> None:
    """autodoc-process-docstring: an escaped summary paragraph, then a literal block."""
    if not lines:
        return
    first = []
    while lines and lines[0].strip():
        first.append(lines.pop(0).strip())
    while lines and not lines[0].strip():
        lines.pop(0)
    body = list(lines)
    lines[:] = [_summary(" ".join(first)), ""]
    if body:
        lines += ["::", ""] + ["    " + line for line in body] + [""]


_IMPORT = re.compile(r"^(from eit[ .]|import eit)", re.M)


def link_import_cells(app, doctree) -> None:
    """Under each chapter's first cell that imports ``eit``, a link to the API reference."""
    if not app.env.docname.startswith("chapters/"):
        return
    for block in doctree.findall(nodes.literal_block):
        if not _IMPORT.search(block.astext()):
            continue
        cell = block
        while cell.parent is not None and "cell" not in cell.get("classes", []):
            cell = cell.parent
        if cell.parent is None:
            return
        ref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget="/api",
                                    refexplicit=True, refdoc=app.env.docname)
        ref += nodes.inline(text="the library's API reference")
        para = nodes.paragraph("", "", nodes.Text("Every name imported here is documented in "),
                               ref, nodes.Text("."), classes=["eit-api-link"])
        cell.parent.insert(cell.parent.index(cell) + 1, para)
        return


def own_names(module) -> list[str]:
    """The public names a module defines itself, in the order of its ``__all__``."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, o in vars(module).items() if not n.startswith("_")
                 and (inspect.isfunction(o) or inspect.isclass(o))]
    out = []
    for name in names:
        obj = getattr(module, name, None)
        if inspect.ismodule(obj):
            continue
        home = getattr(obj, "__module__", None) if (inspect.isfunction(obj)
                                                     or inspect.isclass(obj)) else None
        if home in (None, module.__name__):
            out.append(name)
    return out


class EitApi(SphinxDirective):
    """``eit-api`` with the packages as arguments, one per line."""

    required_arguments = 1
    final_argument_whitespace = True

    def run(self) -> list[nodes.Node]:
        lines: list[str] = []
        for package in self.arguments[0].split():
            pkg = importlib.import_module(package)
            lines += [f"``{package}``", "-" * (len(package) + 4), "",
                      f".. automodule:: {package}", "   :no-members:", ""]
            for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
                if info.name.startswith("_"):
                    continue
                name = f"{package}.{info.name}"
                module = importlib.import_module(name)
                self.env.note_dependency(inspect.getsourcefile(module) or "")
                members = own_names(module)
                lines += [f"``{name}``", "^" * (len(name) + 4), "",
                          f".. automodule:: {name}"]
                # undocumented names too (a constant, a small helper): the page lists all
                lines += [f"   :members: {', '.join(members)}", "   :undoc-members:",
                          ""] if members else [
                    "   :no-members:", ""]
        container = nodes.section()
        container.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, source="eit-api"), container)
        return container.children


def setup(app):
    app.setup_extension("sphinx.ext.autodoc")
    app.connect("autodoc-process-docstring", verbatim_docstring)
    app.connect("doctree-read", link_import_cells)
    app.add_directive("eit-api", EitApi)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
