"""Office Math (OMML, the equations of Word files) as LaTeX-like text: ``\\frac{a}{b}``, ``x^{2}``,
``\\sqrt{x}``, ``\\sum_{i=1}^{n}``; so "For $m=1$, the angle is $θ=\\sin^{-1}(…)$." keeps its
formulas, where the paragraph's plain text would read "For , the angle is ."."""

from __future__ import annotations

from typing import Any

M = "{http://schemas.openxmlformats.org/officeDocument/2006/math}"
W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"

_NARY = {"∑": "\\sum", "∏": "\\prod", "∫": "\\int", "∬": "\\iint", "∮": "\\oint", "⋃": "\\bigcup", "⋂": "\\bigcap"}


def omml_text(element: Any) -> str:
    """An ``m:oMath`` (or ``m:oMathPara``) element as LaTeX-like text."""
    return "".join(_node(child) for child in element).strip()


def _node(element: Any) -> str:
    tag = element.tag.removeprefix(M) if isinstance(element.tag, str) else ""
    handler = _HANDLERS.get(tag)
    if handler is not None:
        return handler(element)
    if tag == "t" or element.tag == f"{W}t":
        return element.text or ""
    if tag.endswith("Pr"):  # properties: nothing to read
        return ""
    return "".join(_node(child) for child in element)


def _part(element: Any, name: str) -> str:
    found = element.find(f"{M}{name}")
    return "".join(_node(child) for child in found) if found is not None else ""


def _fraction(element: Any) -> str:
    return f"\\frac{{{_part(element, 'num')}}}{{{_part(element, 'den')}}}"


def _superscript(element: Any) -> str:
    return f"{_part(element, 'e')}^{{{_part(element, 'sup')}}}"


def _subscript(element: Any) -> str:
    return f"{_part(element, 'e')}_{{{_part(element, 'sub')}}}"


def _sub_superscript(element: Any) -> str:
    return f"{_part(element, 'e')}_{{{_part(element, 'sub')}}}^{{{_part(element, 'sup')}}}"


def _radical(element: Any) -> str:
    degree = _part(element, "deg")
    return f"\\sqrt[{degree}]{{{_part(element, 'e')}}}" if degree else f"\\sqrt{{{_part(element, 'e')}}}"


def _delimiter(element: Any) -> str:
    properties = element.find(f"{M}dPr")
    begin, end = "(", ")"
    if properties is not None:
        begin_char, end_char = properties.find(f"{M}begChr"), properties.find(f"{M}endChr")
        begin = begin_char.get(f"{M}val", begin) if begin_char is not None else begin
        end = end_char.get(f"{M}val", end) if end_char is not None else end
    parts = [("".join(_node(child) for child in e)) for e in element.findall(f"{M}e")]
    return f"{begin}{', '.join(parts)}{end}"


def _nary(element: Any) -> str:
    properties = element.find(f"{M}naryPr")
    char = properties.find(f"{M}chr") if properties is not None else None
    symbol = char.get(f"{M}val", "∫") if char is not None else "∫"
    operator = _NARY.get(symbol, symbol)
    lower, upper = _part(element, "sub"), _part(element, "sup")
    limits = (f"_{{{lower}}}" if lower else "") + (f"^{{{upper}}}" if upper else "")
    return f"{operator}{limits} {_part(element, 'e')}"


def _function(element: Any) -> str:
    return f"{_part(element, 'fName')}({_part(element, 'e')})"


def _matrix(element: Any) -> str:
    rows = [" & ".join("".join(_node(c) for c in e) for e in row.findall(f"{M}e")) for row in element.findall(f"{M}mr")]
    return "\\begin{matrix}" + " \\\\ ".join(rows) + "\\end{matrix}"


_HANDLERS = {
    "f": _fraction, "sSup": _superscript, "sSub": _subscript, "sSubSup": _sub_superscript, "rad": _radical,
    "d": _delimiter, "nary": _nary, "func": _function, "m": _matrix,
}
