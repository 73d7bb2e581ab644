"""HTML pages: the main content, as Markdown, its headings the sections.

trafilatura finds the page's main content (leaving out menus, language lists, footers and
sidebars) and writes it as Markdown: headings, lists, tables, and links as their text. A page
it finds nothing in (a fragment, a page of only navigation), and a short page, are read whole: the visible text, with
block elements kept as line and paragraph breaks (``extract``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from .base import LoadResult
from .decode import empty_result
from .text import TextFileLoader, single_document

_INVISIBLE = ("script", "style", "noscript", "head", "template", "svg", "iframe", "object")
# Elements that start a new paragraph, and those that only start a new line.
_PARAGRAPH_BLOCKS = (
    "p", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "table", "ul", "ol", "dl",
    "section", "article", "aside", "header", "footer", "nav", "main", "figure", "form",
    "div", "hr", "details", "fieldset", "address",
)
_LINE_BLOCKS = ("li", "tr", "dt", "dd", "figcaption", "caption", "summary", "legend")
_CELLS = ("td", "th")
# Block boundaries are marked while the markup is read and turned into line breaks at the
# end, so the whitespace between tags never adds blank lines of its own.
_PARAGRAPH_MARK, _LINE_MARK = "\x00P", "\x00L"
_BREAKS = re.compile(r"(?:\s|\x00[PL])+")
_MARKS = {
    **{tag: _LINE_MARK for tag in (*_LINE_BLOCKS, "br")},
    **{tag: _PARAGRAPH_MARK for tag in _PARAGRAPH_BLOCKS},
}
# Elements that never have content or an end tag.
_VOID = frozenset(
    ("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr")
)


class HtmlLoader(TextFileLoader):
    name = "html"
    extensions = (".html", ".htm")
    sandboxed = True  # trafilatura builds a tree of the whole page
    version = 2  # the main content (trafilatura), as Markdown

    def parse(self, text: str, path: Path, source: str) -> LoadResult:
        page = extract(text)
        wanted = len(page.body) >= MAIN_CONTENT_FROM_CHARS and page.depth <= MAX_MAIN_CONTENT_DEPTH
        body = (main_content(text) if wanted else "") or page.body
        if not body:
            return empty_result(source)
        title = page.title or page.heading or path.stem
        return LoadResult([single_document(body, path, source, title=title)])


#: Pages with less visible text than this are read whole: there is little boilerplate to leave out,
#: and on short pages trafilatura falls back to a flat text that loses their structure.
MAIN_CONTENT_FROM_CHARS = 2_000
#: Pages nested deeper than this are read whole: trafilatura's tree is lxml's, which cuts deeper
#: nesting short (and the one-pass reader stays linear however deep a page goes).
MAX_MAIN_CONTENT_DEPTH = 200
_ESCAPED = re.compile(r"\\([_*`\[\]#<>])")


def main_content(html: str) -> str:
    """The page's main content as Markdown (trafilatura), or "" when it finds none."""
    import trafilatura

    found = trafilatura.extract(html, output_format="markdown", include_links=False, include_tables=True,
                                include_images=False, include_comments=False, favor_recall=True)
    return _ESCAPED.sub(r"\1", found or "").strip()  # ``base\_link`` is ``base_link`` in the page


@dataclass
class Page:
    body: str
    title: str
    #: The first <h1>, the title when the page has no <title>.
    heading: str
    #: How deep its elements nest.
    depth: int = 0


def extract(html: str) -> Page:
    """What a reader sees: no scripts, styles or comments; blocks separated by newlines.

    One pass over the markup with a stack of open elements, so the time is linear in the
    size of the page however deeply it nests (a tree-walking extractor is quadratic there).
    """
    parser = _VisibleText()
    parser.feed(html)
    parser.close()
    return Page(
        body=_BREAKS.sub(_collapse, "".join(parser.out)).strip(),
        title=" ".join(" ".join(parser.title).split()),
        heading=" ".join(" ".join(parser.heading).split()),
        depth=parser.deepest,
    )


class _VisibleText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.title: list[str] = []
        self.heading: list[str] = []
        # Open elements, each with the number of table cells opened directly inside it.
        self._stack: list[list] = []
        self._open: Counter[str] = Counter()  # how many of each element are open, for stray end tags
        self._hidden = 0  # open invisible elements
        self._pre = 0
        self._in_title = 0
        self._in_h1 = 0
        self._h1_done = False
        self.deepest = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in _VOID:
            if not self._hidden and tag in _MARKS:
                self.out.append(_MARKS[tag])
            return
        if tag in _CELLS and self._stack:
            parent = self._stack[-1]
            if parent[1] and not self._hidden:
                self.out.append(" | ")
            parent[1] += 1
        if not self._hidden and tag in _MARKS:
            self.out.append(_MARKS[tag])
        self._stack.append([tag, 0])
        self.deepest = max(self.deepest, len(self._stack))
        self._open[tag] += 1
        self._count(tag, +1)

    def handle_endtag(self, tag: str) -> None:
        if not self._open[tag]:
            return  # a stray end tag closes nothing
        while self._stack:
            name = self._stack.pop()[0]
            self._open[name] -= 1
            self._count(name, -1)
            if not self._hidden and name in _MARKS:
                self.out.append(_MARKS[name])
            if name == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
        if self._in_h1 and not self._h1_done and not self._hidden:
            self.heading.append(data)
        if self._hidden:
            return
        self.out.append(data.replace("\n", _LINE_MARK) if self._pre else data)

    def _count(self, tag: str, step: int) -> None:
        if tag in _INVISIBLE:
            self._hidden += step
        elif tag == "pre":
            self._pre += step
        if tag == "title":
            self._in_title += step
        elif tag == "h1":
            self._in_h1 += step
            if step < 0 and self.heading:
                self._h1_done = True
def _collapse(match: re.Match[str]) -> str:
    run = match.group()
    if _PARAGRAPH_MARK in run:
        return "\n\n"
    return "\n" if _LINE_MARK in run else " "
