"""Tables a PDF draws without ruling lines, found from where its text runs sit.

PDFium gives each run of text on a line as a rectangle, and splits a line where a wide gap falls.
A table without lines is then a block of at least ``MIN_ROWS`` consecutive lines that each hold two
or more runs, whose runs stack into the same columns, and whose cells are short. Prose set in two
columns also gives two runs a line, in two columns: its cells are whole lines of text, which is
what tells it apart (``_looks_tabular``). Lines are told apart by their geometry alone, and the
text of a block is read only when its runs are short enough to be cells: reading every run's text
would cost PDFium more than reading the page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from statistics import median
from typing import Callable

#: A table found: its box as pdfplumber gives one (x0, top, x1, bottom; origin at the top left), its rows of cells.
Table = tuple[tuple[float, float, float, float], list[list[str]]]
#: A table has a header row and at least two rows under it.
MIN_ROWS = 3
#: A cell's text is short: the median cell has at most this many characters...
MAX_MEDIAN_CELL_CHARS = 24
#: ...and few cells (at most this share) are as long as a line of a prose column.
LONG_CELL_CHARS = 40
MAX_LONG_CELL_SHARE = 0.2
#: A list's markers, set apart from their items as cells are: bullets, dashes, "1." "a)" "(iv)".
_LIST_MARKER = re.compile(r"[•◦▪‣∙·●○■□➢►\-–—*+]|\(?(\d{1,3}|[a-zA-Z]|[ivxlc]{1,6})[.)]")
#: Runs on one line closer than this many line heights are one cell (a bold word inside a sentence).
CELL_GAP = 0.9
#: Lines further apart than this many line heights are not rows of one table.
ROW_GAP = 3.0


@dataclass(frozen=True)
class Run:
    """A run of text on a line, in PDF coordinates (origin at the bottom left)."""

    left: float
    bottom: float
    right: float
    top: float
    text: str = ""

    @property
    def height(self) -> float:
        return max(self.top - self.bottom, 1.0)


def page_tables(textpage, page_height: float) -> list[Table]:
    """The tables without ruling lines on a PDFium text page."""
    runs = [Run(*textpage.get_rect(index)) for index in range(textpage.count_rects())]

    def text_of(run: Run) -> str:
        return " ".join(textpage.get_text_bounded(run.left, run.bottom, run.right, run.top).split())

    return borderless_tables(runs, page_height, text_of)


def borderless_tables(runs: list[Run], page_height: float, text_of: Callable[[Run], str]) -> list[Table]:
    """The tables the runs of one page make; ``text_of`` reads a run's text."""
    tables = []
    for block in _multi_cell_blocks(_lines(runs)):
        if not _short_runs(block):
            continue
        block = [[replace(run, text=text_of(run)) for run in line] for line in block]
        rows = _table_rows(block)
        if rows is not None and _looks_tabular(rows):
            cells = [run for line in block for run in line]
            box = (min(r.left for r in cells) - 1, page_height - max(r.top for r in cells) - 1,
                   max(r.right for r in cells) + 1, page_height - min(r.bottom for r in cells) + 1)
            tables.append((box, rows))
    return tables


def _lines(runs: list[Run]) -> list[list[Run]]:
    """Runs grouped into lines, top to bottom; within a line, left to right, and runs closer than
    a cell gap joined."""
    lines: list[list[Run]] = []
    for run in sorted(runs, key=lambda r: -(r.top + r.bottom)):
        line = lines[-1] if lines else None
        if line and _same_line(line[0], run):
            line.append(run)
        else:
            lines.append([run])
    return [_join_close(sorted(line, key=lambda r: r.left)) for line in lines]


def _same_line(a: Run, b: Run) -> bool:
    overlap = min(a.top, b.top) - max(a.bottom, b.bottom)
    return overlap >= 0.5 * min(a.height, b.height)


def _join_close(line: list[Run]) -> list[Run]:
    joined = [line[0]]
    for run in line[1:]:
        last = joined[-1]
        if run.left - last.right < CELL_GAP * max(last.height, run.height):
            joined[-1] = Run(last.left, min(last.bottom, run.bottom), max(last.right, run.right),
                             max(last.top, run.top))  # its text is read from the joined box
        else:
            joined.append(run)
    return joined


def _multi_cell_blocks(lines: list[list[Run]]) -> list[list[list[Run]]]:
    """Runs of at least MIN_ROWS consecutive, closely spaced lines of two or more cells each."""
    blocks: list[list[list[Run]]] = []
    current: list[list[Run]] = []
    for line in lines:
        close = current and _gap(current[-1], line) <= ROW_GAP * max(r.height for r in line)
        if len(line) >= 2 and (not current or close):
            current.append(line)
            continue
        if len(current) >= MIN_ROWS:
            blocks.append(current)
        current = [line] if len(line) >= 2 else []
    if len(current) >= MIN_ROWS:
        blocks.append(current)
    return blocks


def _gap(upper: list[Run], lower: list[Run]) -> float:
    return min(r.bottom for r in upper) - max(r.top for r in lower)


def _table_rows(block: list[list[Run]]) -> list[list[str]] | None:
    """The block's cells in columns: runs that overlap horizontally across rows are one column.
    None when the block has fewer than two columns."""
    spans: list[list[float]] = []
    for left, right in sorted((r.left, r.right) for line in block for r in line):
        if spans and left <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], right)
        else:
            spans.append([left, right])
    if len(spans) < 2:
        return None
    rows = []
    for line in block:
        row = [""] * len(spans)
        for run in line:
            column = next(k for k, (left, right) in enumerate(spans) if left <= run.left <= right)
            row[column] = f"{row[column]} {run.text}".strip()
        rows.append(row)
    return rows


def _short_runs(block: list[list[Run]]) -> bool:
    """Whether the block's runs may be cells, judged by their width: a character is about half as
    wide as the line is high."""
    estimates = [(r.right - r.left) / (0.5 * r.height) for line in block for r in line]
    return median(estimates) <= 1.5 * MAX_MEDIAN_CELL_CHARS


def _looks_tabular(rows: list[list[str]]) -> bool:
    markers = [row[0] for row in rows if row[0]]
    if markers and all(_LIST_MARKER.fullmatch(cell) for cell in markers):
        return False  # a bulleted or numbered list
    cells = [cell for row in rows for cell in row if cell]
    lengths = [len(cell) for cell in cells]
    if median(lengths) > MAX_MEDIAN_CELL_CHARS:
        return False
    return sum(n >= LONG_CELL_CHARS for n in lengths) <= MAX_LONG_CELL_SHARE * len(cells)
