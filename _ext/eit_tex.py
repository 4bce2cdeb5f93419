"""Plain-text renderings of TeX and SymPy text, for places where MathJax cannot run.

* :func:`tex_to_unicode` turns simple TeX (``\\gamma = 1/B``, ``K_n``, ``(1 + 1/B)^{B/2}``)
  into readable Unicode (``γ = 1/B``, ``Kₙ``, ``(1 + 1/B)^(B/2)``): page titles in the
  browser tab and search results.
* :func:`sympy_text_to_tex` turns SymPy's text form of an expression
  (``norm_u/(sqrt(pi)*sqrt(m))``) into TeX that MathJax typesets, and leaves anything else
  (prose, numbers) alone.
"""

from __future__ import annotations

import re

_GREEK = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε",
    "zeta": "ζ", "eta": "η", "theta": "θ", "vartheta": "ϑ", "iota": "ι", "kappa": "κ",
    "lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ", "pi": "π", "rho": "ρ", "sigma": "σ",
    "tau": "τ", "upsilon": "υ", "phi": "φ", "varphi": "φ", "chi": "χ", "psi": "ψ",
    "omega": "ω", "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ",
    "Pi": "Π", "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
}
_SYMBOLS = {
    "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠", "neq": "≠", "approx": "≈",
    "sim": "∼", "cdot": "·", "times": "×", "to": "→", "rightarrow": "→", "infty": "∞",
    "|": "‖", "Vert": "‖", "vert": "|", "mid": "|", "in": "∈", "sum": "∑", "prod": "∏",
    "partial": "∂", "nabla": "∇", "pm": "±", "ldots": "…", "cdots": "⋯", "dots": "…",
    "langle": "⟨", "rangle": "⟩", "ell": "ℓ", "log": "log", "exp": "exp", "ln": "ln",
    "min": "min", "max": "max", "sqrt": "√", ",": " ", ";": " ", "quad": " ", "qquad": "  ",
    "{": "{", "}": "}", "%": "%", "&": "&", "_": "_", "#": "#",
}
_BLACKBOARD = {"R": "ℝ", "N": "ℕ", "Z": "ℤ", "Q": "ℚ", "C": "ℂ", "E": "𝔼", "P": "ℙ"}
_DROP = {"left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr",
         "displaystyle", "textstyle", "limits", "nolimits", "!"}
_UNWRAP = {"text", "mathrm", "mathit", "mathbf", "operatorname", "textrm", "textit", "bm",
           "boldsymbol", "mathsf", "mathtt", "hat", "tilde", "bar", "overline", "widehat",
           "widetilde", "mathcal"}
_SUP = dict(zip("0123456789+-=()n", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿ"))
_SUB = dict(zip("0123456789+-=()aeijklmnoprstux", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑᵢⱼₖₗₘₙₒₚᵣₛₜᵤₓ"))


def _group(tex: str, i: int) -> tuple[str, int]:
    """The argument starting at ``tex[i]``: a braced group or one (command) token."""
    while i < len(tex) and tex[i] == " ":
        i += 1
    if i >= len(tex):
        return "", i
    if tex[i] == "{":
        depth, j = 0, i
        while j < len(tex):
            depth += {"{": 1, "}": -1}.get(tex[j], 0)
            if depth == 0:
                return tex[i + 1:j], j + 1
            j += 1
        return tex[i + 1:], len(tex)
    if tex[i] == "\\":
        m = re.match(r"\\([A-Za-z]+|.)", tex[i:])
        return m.group(0), i + len(m.group(0))
    return tex[i], i + 1


def _script(text: str, table: dict[str, str], mark: str) -> str:
    if text and all(c in table for c in text):
        return "".join(table[c] for c in text)
    return f"{mark}{text}" if len(text) == 1 else f"{mark}({text})"


def _wrap(s: str) -> str:
    return s if re.fullmatch(r"[\w.√]+", s) else f"({s})"


def tex_to_unicode(tex: str) -> str:
    """Readable Unicode text of a simple TeX formula (what MathJax would show, roughly).

    >>> tex_to_unicode(r"\\gamma = 1/B")
    'γ = 1/B'
    >>> tex_to_unicode(r"(1 + 1/B)^{B/2}")
    '(1 + 1/B)^(B/2)'
    >>> tex_to_unicode(r"K_n \\le \\frac{2}{\\sqrt{n}}")
    'Kₙ ≤ 2/√n'
    """
    out: list[str] = []
    i = 0
    while i < len(tex):
        c = tex[i]
        if c == "\\":
            m = re.match(r"\\([A-Za-z]+|.)", tex[i:])
            name, i = m.group(1), i + len(m.group(0))
            if name in _GREEK:
                out.append(_GREEK[name])
            elif name == "frac" or name in ("tfrac", "dfrac"):
                num, i = _group(tex, i)
                den, i = _group(tex, i)
                num, den = tex_to_unicode(num), tex_to_unicode(den)
                out.append(f"{_wrap(num)}/{_wrap(den)}")
            elif name == "sqrt":
                arg, i = _group(tex, i)
                arg = tex_to_unicode(arg)
                out.append("√" + (arg if re.fullmatch(r"[\w.]+", arg) else f"({arg})"))
            elif name == "mathbb":
                arg, i = _group(tex, i)
                out.append("".join(_BLACKBOARD.get(ch, ch) for ch in arg))
            elif name in _UNWRAP:
                arg, i = _group(tex, i)
                out.append(tex_to_unicode(arg))
            elif name in _SYMBOLS:
                out.append(_SYMBOLS[name])
            elif name in _DROP:
                pass
            else:
                out.append(name)
        elif c in "^_":
            arg, i = _group(tex, i + 1)
            arg = tex_to_unicode(arg)
            out.append(_script(arg, _SUP if c == "^" else _SUB, c))
        elif c in "{}":
            i += 1
        elif c == "~":
            out.append(" ")
            i += 1
        else:
            out.append(c)
            i += 1
    return re.sub(r" {2,}", " ", "".join(out))


_DOLLARS = re.compile(r"\$([^$]+)\$")


def text_to_unicode(text: str) -> str:
    """``text`` with each ``$...$`` segment rendered by :func:`tex_to_unicode`."""
    return _DOLLARS.sub(lambda m: tex_to_unicode(m.group(1)), text)


_FUNCS = {"sqrt", "log", "exp", "sin", "cos", "tan", "tanh", "atan", "asin", "acos", "Abs",
          "erf", "erfc", "binomial", "factorial", "Sum", "Min", "Max", "floor", "ceiling",
          "Integral", "Derivative", "sign", "cosh", "sinh", "acosh", "pi", "oo", "Rational",
          "Piecewise"}
_PREFIX = re.compile(r"^(printed|derived|corrected|paper|book)(:?\s+)(.+)$", re.S)
#: a name: an identifier, or a norm written into a symbol's name (``E||z||^2``, ``||u||^2``)
_NAME = re.compile(r"(?:[A-Za-z_]\w*)?\|\|\w+\|\|(?:\^\d+)?|[A-Za-z_]\w*(?:\{[^{}]*\})?")
_EXPR = re.compile(r"^(?:[\w\s+\-*/().,]|\|\|\w+\|\|(?:\^\d+)?|_\{[^{}]*\})+$")
_CONSTANTS = {"True", "False", "pi", "oo", "E", "I", "nan", "zoo"}


def _looks_like_sympy(text: str) -> bool:
    if not _EXPR.match(text) or not re.search(r"[*/]|\b(sqrt|log|exp)\(", text):
        return False
    # prose has two words in a row; SymPy text separates names by operators
    return not re.search(r"[A-Za-z_|]\w*\|*\s+[A-Za-z_(]", text)


def _name_tex(name: str) -> str:
    import sympy as sp

    m = re.fullmatch(r"([A-Za-z_]\w*)?\|\|(\w+)\|\|(?:\^(\d+))?", name)
    if m:
        pre = {"E": r"\mathbb{E}"}.get(m.group(1) or "", m.group(1) or "")
        power = f"^{{{m.group(3)}}}" if m.group(3) else ""
        return f"{pre}\\|{sp.latex(sp.Symbol(m.group(2)))}\\|{power}"
    return sp.latex(sp.Symbol(name))


def _placeholder(i: int) -> str:
    letters = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        letters = chr(ord("a") + r) + letters
    return f"eitq{letters}"


def sympy_text_to_tex(text: str) -> tuple[str, str] | None:
    r"""``(label, TeX)`` for SymPy's text form of an expression, or None if ``text`` is not one.

    A leading word such as ``printed`` or ``derived`` is returned as the label (else ``""``).
    The text is what ``sympy.sstr`` printed, so parsing it back gives the same expression.

    >>> sympy_text_to_tex("printed norm_u/(sqrt(pi)*sqrt(m))")
    ('printed', '\\frac{norm_{u}}{\\sqrt{\\pi} \\sqrt{m}}')
    >>> sympy_text_to_tex("derived 2*E||z||^2*||u||^2/m")
    ('derived', '\\frac{2 \\mathbb{E}\\|z\\|^{2} \\|u\\|^{2}}{m}')
    >>> sympy_text_to_tex("0 violations in 32000 pairs") is None
    True
    """
    import sympy as sp
    from sympy.parsing.sympy_parser import parse_expr

    label, expr_text = "", text.strip()
    m = _PREFIX.match(expr_text)
    if m:
        label, expr_text = m.group(1), m.group(3).strip()
    if not _looks_like_sympy(expr_text):
        return None
    names: dict[str, str] = {}  # placeholder -> the name's TeX

    def placeholder(match: re.Match) -> str:
        name = match.group(0)
        called = expr_text[match.end():match.end() + 1] == "("
        if name in _FUNCS or (called and callable(getattr(sp, name, None))):
            return name
        if name in _CONSTANTS - {"E", "I"}:
            return name
        key = _placeholder(len(names))
        names[key] = _name_tex(name)
        return key

    code = _NAME.sub(placeholder, expr_text)
    try:
        expr = parse_expr(code, local_dict={k: sp.Symbol(k) for k in names}, evaluate=True)
        tex = sp.latex(expr, order="none")
    except Exception:  # anything SymPy cannot read stays as text
        return None
    # longest placeholders first, so that "eitqab" is not caught by "eitqa"
    for key in sorted(names, key=len, reverse=True):
        tex = re.sub(rf"{key}(?![a-z])", lambda _m, k=key: names[k], tex)
    return label, tex
