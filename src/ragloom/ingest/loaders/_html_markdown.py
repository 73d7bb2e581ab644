"""HTML to the Markdown writer's blocks, for e-book chapters and HTML e-mail bodies.

Headings become sections, lists and tables keep their shape, scripts and styles are dropped,
and nothing is fetched (images and links are text or nothing).
"""

from __future__ import annotations

from ._markdown import MarkdownWriter, one_line

_SKIP = frozenset(("script", "style", "noscript", "head", "template", "svg", "iframe", "object", "nav"))
_HEADINGS = {f"h{n}": n for n in range(1, 7)}


def write_html(writer: MarkdownWriter, html: str | bytes, heading_offset: int = 0) -> None:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    root = soup.body or soup
    _children(writer, root, heading_offset, 0)


def _children(writer: MarkdownWriter, node, offset: int, depth: int) -> None:
    loose: list[str] = []
    for child in node.children:
        name = getattr(child, "name", None)
        if name is None:
            if str(child).strip() and child.__class__.__name__ == "NavigableString":
                loose.append(str(child))
            continue
        if name in ("span", "a", "b", "i", "em", "strong", "code", "sup", "sub", "small", "br", "abbr", "cite"):
            loose.append(child.get_text(" ") if name != "br" else "\n")
            continue
        if loose:
            writer.paragraph(one_line("".join(loose)))
            loose = []
        _element(writer, child, name, offset, depth)
    if loose:
        writer.paragraph(one_line("".join(loose)))


def _element(writer: MarkdownWriter, node, name: str, offset: int, depth: int) -> None:
    if name in _SKIP:
        return
    if name in _HEADINGS:
        writer.heading(node.get_text(" "), _HEADINGS[name] + offset)
    elif name in ("p", "blockquote", "dt", "dd", "figcaption", "caption", "address"):
        writer.paragraph(one_line(node.get_text(" ")))
    elif name in ("ul", "ol"):
        for item in node.find_all("li", recursive=False):
            nested = item.find_all(["ul", "ol"], recursive=False)
            for inner in nested:
                inner.extract()
            writer.item(item.get_text(" "), level=depth, ordered=name == "ol")
            for inner in nested:
                _element(writer, inner, inner.name, offset, depth + 1)
    elif name == "pre":
        writer.code(node.get_text())
    elif name == "table":
        writer.table(
            [cell.get_text(" ") for cell in row.find_all(["td", "th"], recursive=False)]
            for row in node.find_all("tr")
        )
    elif name in ("img", "hr", "input", "button", "form"):
        return
    else:
        _children(writer, node, offset, depth)
