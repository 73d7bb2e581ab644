"""A Markdown writer the structured-document loaders share (Word, PowerPoint, sheets, e-books, …).

Those formats are turned into Markdown so that one chunker serves them all: headings become
the section path, code stays in fences, and tables become Markdown tables. A table is written
in blocks of whole rows, each block opening with the table's header row, so a chunk that holds
one block still says what its columns are; the Markdown chunker never splits a table block.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ...types import Document

#: Rows of a table are grouped into blocks of about this many characters (a 256-token chunk is
#: ~1,000 characters of English), each block with the header row repeated above it.
TABLE_BLOCK_CHARS = 500
_SPACE = re.compile(r"\s+")
_HEADING_MARKS = re.compile(r"^#+\s*")


def cell_text(value: Any) -> str:
    """One table cell as Markdown: one line, pipes escaped, floats without noise."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return _SPACE.sub(" ", str(value)).strip().replace("|", "\\|")


def one_line(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


class MarkdownWriter:
    """Collects blocks in reading order and renders them as one Markdown document."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        #: Offsets where each page (or slide) starts, when the writer is told of them.
        self.page_starts: list[int] = []
        self.tables = 0

    def _add(self, block: str) -> None:
        block = block.strip("\n")
        if not block.strip():
            return
        if self._parts:
            self._parts.append("\n\n")
            self._length += 2
        self._parts.append(block)
        self._length += len(block)

    def new_page(self) -> None:
        """The next block starts a new page (a slide, a sheet) for the ``page`` metadata."""
        self.page_starts.append(self._length + (2 if self._parts else 0))

    def heading(self, text: str, level: int = 1) -> None:
        text = _HEADING_MARKS.sub("", one_line(text))
        if text:
            self._add("#" * max(1, min(level, 6)) + " " + text)

    def paragraph(self, text: str) -> None:
        # A line that starts like a Markdown heading or fence would change the structure.
        lines = [line.rstrip() for line in text.strip().splitlines()]
        lines = ["\\" + line if line.lstrip().startswith(("#", "```", "~~~")) else line for line in lines]
        self._add("\n".join(lines))

    def markdown(self, text: str) -> None:
        """Text that is Markdown already (a notebook's Markdown cell), kept as written."""
        self._add(text.strip())

    def item(self, text: str, level: int = 0, ordered: bool = False) -> None:
        text = one_line(text)
        if text:
            self._add("  " * level + ("1. " if ordered else "- ") + text)

    def code(self, text: str, language: str = "") -> None:
        if text.strip():
            fence = "````" if "```" in text else "```"
            self._add(f"{fence}{language}\n{text.rstrip()}\n{fence}")

    #: Table cells cut at ``MAX_CELL_CHARS``, rows cut at ``MAX_ROW_CELLS`` (a loader reports them).
    cut_cells = 0
    cut_rows = 0

    def cut_notes(self, source: str) -> list[str]:
        """The report's lines for what ``table`` cut."""
        notes = []
        if self.cut_cells:
            notes.append(f"{source}: {self.cut_cells:,} cells longer than {MAX_CELL_CHARS:,} characters were cut")
        if self.cut_rows:
            notes.append(f"{source}: {self.cut_rows:,} rows of more than {MAX_ROW_CELLS:,} cells were cut")
        return notes

    def table(self, rows: Iterable[Sequence[Any]], header: Sequence[Any] | None = None) -> int:
        """Write a table; the first row is its header unless ``header`` is given. Returns rows written."""
        iterator = iter(rows)
        if header is None:
            header = next(iterator, None)
            if header is None:
                return 0
        head = [cell_text(c)[:MAX_CELL_CHARS] or f"column {i + 1}" for i, c in enumerate(header[:MAX_ROW_CELLS])]
        width = len(head)
        head_lines = _head_lines(head)
        block: list[str] = []
        size = 0
        count = 0
        for row in iterator:
            cells = [cell_text(c) for c in row[:MAX_ROW_CELLS]]
            if len(row) > MAX_ROW_CELLS:
                self.cut_rows += 1
            for i, cell in enumerate(cells):
                if len(cell) > MAX_CELL_CHARS:
                    cells[i] = cell[:MAX_CELL_CHARS] + "…"
                    self.cut_cells += 1
            if not any(cells):
                continue
            if len(cells) > width:  # a row wider than the header widens the table: no cell is dropped
                head += [f"column {i + 1}" for i in range(width, len(cells))]
                width, head_lines = len(cells), _head_lines(head)
            cells += [""] * (width - len(cells))
            line = "| " + " | ".join(cells) + " |"
            if block and size + len(line) > TABLE_BLOCK_CHARS:
                self._add("\n".join([*head_lines, *block]))
                block, size = [], 0
            block.append(line)
            size += len(line) + 1
            count += 1
        if block or not count:
            self._add("\n".join([*head_lines, *block]))
        self.tables += 1
        return count

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def document(self, path: Path, source: str, title: str, metadata: dict[str, Any] | None = None,
                 doc_id: str | None = None, page_label: str = "page") -> Document:
        text = self.text
        starts = tuple(s for s in self.page_starts if s < len(text)) if self.page_starts else ()
        return Document(
            text=text,
            source=source,
            doc_id=doc_id or path.name,
            title=title or path.stem,
            metadata=dict(metadata or {}),
            page_starts=starts,
            page_label=page_label,
        )


#: A table cell longer than this is cut (a blob in a spreadsheet is not text to search), and a row
#: is cut after this many cells.
MAX_CELL_CHARS = 5_000
MAX_ROW_CELLS = 1_000


def _head_lines(head: Sequence[str]) -> list[str]:
    """A Markdown table's header row and delimiter row."""
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
