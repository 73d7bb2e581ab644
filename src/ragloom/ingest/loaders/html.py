"""HTML pages: the visible text, with block elements kept as line and paragraph breaks."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from .base import LoadResult
from .decode import empty_result
from .text import TextFileLoader, single_document

if TYPE_CHECKING:
    from bs4 import BeautifulSoup

_INVISIBLE = ("script", "style", "noscript", "head", "template", "svg", "iframe", "object")
# Elements that start a new paragraph, and those that only start a new line.
_PARAGRAPH_BLOCKS = (
    "p", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "table", "ul", "ol", "dl",
    "section", "article", "aside", "header", "footer", "nav", "main", "figure", "form",
    "div", "hr", "details", "fieldset", "address",
)
_LINE_BLOCKS = ("li", "tr", "dt", "dd", "figcaption", "caption", "summary", "legend")
_CELLS = ("td", "th")
# Block boundaries are marked while the tree is walked and turned into line breaks at the
# end, so the whitespace between tags never adds blank lines of its own.
_PARAGRAPH_MARK, _LINE_MARK = "\x00P", "\x00L"
_BREAKS = re.compile(r"(?:\s|\x00[PL])+")


class HtmlLoader(TextFileLoader):
    name = "html"
    extensions = (".html", ".htm")

    def parse(self, text: str, path: Path, source: str) -> LoadResult:
        from bs4 import BeautifulSoup

        soup = BeautifulSoup(text, "html.parser")
        title_tag = soup.find("title")
        title = title_tag.get_text(" ", strip=True) if title_tag else ""
        body = visible_text(soup)
        if not body:
            return empty_result(source)
        if not title:
            heading = soup.find("h1")
            title = heading.get_text(" ", strip=True) if heading else path.stem
        return LoadResult([single_document(body, path, source, title=title)])


def visible_text(soup: BeautifulSoup) -> str:
    """What a reader sees: no scripts, styles or comments; blocks separated by newlines."""
    from bs4 import NavigableString

    for tag in soup.find_all(_INVISIBLE):
        tag.decompose()
    for node in soup.find_all(string=True):
        if type(node) is not NavigableString:  # comments, doctype, CDATA, processing instructions
            node.extract()
        elif node.find_parent("pre") is not None:
            node.replace_with(str(node).replace("\n", _LINE_MARK))
    for br in soup.find_all("br"):
        br.replace_with(_LINE_MARK)
    for tag in soup.find_all(_CELLS):
        if tag.find_previous_sibling(_CELLS) is not None:
            tag.insert_before(" | ")
    for names, mark in ((_LINE_BLOCKS, _LINE_MARK), (_PARAGRAPH_BLOCKS, _PARAGRAPH_MARK)):
        for tag in soup.find_all(names):
            tag.insert_before(mark)
            tag.insert_after(mark)
    return _BREAKS.sub(_collapse, soup.get_text()).strip()


def _collapse(match: re.Match[str]) -> str:
    run = match.group()
    if _PARAGRAPH_MARK in run:
        return "\n\n"
    return "\n" if _LINE_MARK in run else " "
