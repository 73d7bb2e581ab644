"""Markdown chunking by section: one or more chunks per ``#``/``##``/``###`` section.

Each chunk carries its header path, e.g. ("Guide", "Install", "Linux"). Deeper headers
stay inside their section. Fenced code blocks and tables are never split — an oversize
one becomes a chunk of its own, with its section header when it opens the section —
and ``#`` lines inside a code fence are code, not headers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ...types import Document
from ._tokens import TokenMeter
from ._units import Unit, UnitChunker, fitting_units, pack
from .base import Span

#: Headers up to this level start a section; deeper ones are part of the text.
SECTION_LEVEL = 3

_HEADER = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))??(?:[ \t]+#+)?[ \t]*\r?\n?")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_TABLE_ROW = re.compile(r" {0,3}\|")
# A heading attribute list at the end of a title, as MkDocs (attr_list), Pandoc and kramdown
# write it: `{ #id }`, `{#id .class key=val}`, `{: #id}`. It names the heading, it is not its title.
_ATTRIBUTES = re.compile(r"[ \t]*\{:?[ \t]*(?:[#.][\w:.-]+|[\w-]+=(?:\"[^\"]*\"|'[^']*'|[^\s}]*))"
                         r"(?:[ \t]+(?:[#.][\w:.-]+|[\w-]+=(?:\"[^\"]*\"|'[^']*'|[^\s}]*)))*[ \t]*\}[ \t]*$")


@dataclass(frozen=True)
class Block:
    kind: str  # "header" | "code" | "table" | "text"
    start: int
    end: int
    level: int = 0
    title: str = ""


@dataclass
class Section:
    path: tuple[str, ...]
    blocks: list[Block]

    @property
    def header_only(self) -> bool:
        return len(self.blocks) == 1 and self.blocks[0].kind == "header"


class MarkdownSectionChunker(UnitChunker):
    name = "markdown"
    #: 2: section titles without their heading attribute lists.
    version = "2"

    def split(self, document: Document) -> list[Span]:
        text = document.text
        meter = self.meter(document)
        spans: list[Span] = []
        for section in markdown_sections(text):
            units = self._units(meter, section)
            spans.extend(Span(s, e, section.path) for s, e in pack(meter, units, self.config.chunk_size))
        return spans

    def _units(self, meter: TokenMeter, section: Section) -> list[Unit]:
        units: list[Unit] = []
        for block in section.blocks:
            if block.kind in ("code", "table"):
                units.append(Unit(block.start, block.end, atomic=True))
            elif block.kind == "header" and block.level <= SECTION_LEVEL:
                units.append(Unit(block.start, block.end, sticky=True))
            else:
                ranges = [(block.start, block.end)]
                units.extend(fitting_units(meter, ranges, self.config.chunk_size, self.config.sentence_splitter))
        return units


def markdown_headers(text: str) -> list[Block]:
    """ATX headers outside code fences, in order."""
    return [block for block in markdown_blocks(text) if block.kind == "header"]


def markdown_sections(text: str) -> list[Section]:
    """The document cut at section headers; a section holding only its header joins the next."""
    sections: list[Section] = [Section((), [])]
    stack: list[tuple[int, str]] = []
    for block in markdown_blocks(text):
        if block.kind == "header" and block.level <= SECTION_LEVEL:
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.title))
            carried = sections.pop().blocks if sections[-1].header_only else []
            sections.append(Section(tuple(title for _, title in stack), [*carried, block]))
        else:
            sections[-1].blocks.append(block)
    return [section for section in sections if section.blocks]


def markdown_blocks(text: str) -> list[Block]:
    """Headers, fenced code blocks, tables and paragraphs of ``text``, with their ranges."""
    blocks: list[Block] = []
    lines = list(_lines(text))
    i = 0
    while i < len(lines):
        start, line = lines[i]
        if not line.strip():
            i += 1
            continue
        if (fence := _FENCE_OPEN.fullmatch(line.rstrip("\r\n"))) and _opens_fence(fence):
            j = _fence_end(lines, i, fence.group(1))
            blocks.append(Block("code", start, _end_of(lines, j - 1)))
        elif header := _HEADER.fullmatch(line):
            level, title = len(header.group(1)), heading_title(header.group(2) or "")
            blocks.append(Block("header", start, _end_of(lines, i), level, title))
            j = i + 1
        elif _TABLE_ROW.match(line):
            j = _run_end(lines, i, lambda s: _TABLE_ROW.match(s) is not None)
            blocks.append(Block("table", start, _end_of(lines, j - 1)))
        else:
            j = _run_end(lines, i, _is_paragraph_line)
            blocks.append(Block("text", start, _end_of(lines, j - 1)))
        i = j
    return blocks


def heading_title(raw: str) -> str:
    """A heading's title as a reader sees it: without a trailing attribute list (``{ #query-parameters }``)."""
    return _ATTRIBUTES.sub("", raw).strip()


def _lines(text: str) -> Iterator[tuple[int, str]]:
    offset = 0
    for line in text.splitlines(keepends=True):
        yield offset, line
        offset += len(line)


def _end_of(lines: list[tuple[int, str]], index: int) -> int:
    """End of line ``index`` without its line break."""
    start, line = lines[index]
    return start + len(line.rstrip("\r\n"))


def _opens_fence(fence: re.Match[str]) -> bool:
    # A backtick fence's info string may not contain backticks (CommonMark).
    return not (fence.group(1)[0] == "`" and "`" in fence.group(2))


def _fence_end(lines: list[tuple[int, str]], opening: int, marker: str) -> int:
    """Index after the closing fence line (or after the last line, for an unclosed fence)."""
    closing = re.compile(rf" {{0,3}}{re.escape(marker[0])}{{{len(marker)},}}[ \t]*")
    for j in range(opening + 1, len(lines)):
        if closing.fullmatch(lines[j][1].rstrip("\r\n")):
            return j + 1
    return len(lines)


def _run_end(lines: list[tuple[int, str]], first: int, belongs: Callable[[str], bool]) -> int:
    j = first + 1
    while j < len(lines) and belongs(lines[j][1]):
        j += 1
    return j


def _is_paragraph_line(line: str) -> bool:
    stripped = line.rstrip("\r\n")
    if not stripped.strip():
        return False
    if _HEADER.fullmatch(line) or _TABLE_ROW.match(line):
        return False
    fence = _FENCE_OPEN.fullmatch(stripped)
    return not (fence and _opens_fence(fence))
