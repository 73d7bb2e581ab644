"""Spreadsheets: ``.xlsx`` (openpyxl, streamed), ``.xls`` (xlrd), ``.ods`` (odfpy), ``.csv`` and ``.tsv`` (the csv module).

Each sheet is a section holding one Markdown table; its first non-empty row is the header, and
the header is repeated above every block of rows (see ``_markdown``), so a row found alone still
says what its numbers are. Rows are read one at a time: a huge sheet is never loaded whole.
"""

from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ...errors import CorruptDocumentError
from ._archive import check_archive, library_error
from ._markdown import MarkdownWriter, cell_text
from .base import LoadResult, Loader
from .decode import decode_bytes, empty_result, looks_binary

#: A sheet stops being read after this many empty rows in a row (styled but empty rows can
#: number a million in a file of a few kilobytes).
MAX_EMPTY_RUN = 10_000


class _Sheets(Loader):
    kind = "a spreadsheet"
    version = 2  # title rows above a table, and rows wider than its header, keep every cell

    def load(self, path: Path, source: str) -> LoadResult:
        writer = MarkdownWriter()
        notes: list[str] = []
        try:
            for name, rows in self.sheets(path, source):
                _sheet(writer, name, rows, source, notes)
        except CorruptDocumentError:
            raise
        except MemoryError:
            raise  # over the file's memory budget: never a damaged file (ingest/sandbox.py)
        except Exception as exc:  # the libraries raise many kinds of errors on damaged files
            raise library_error(source, self.kind, exc) from exc
        notes += writer.cut_notes(source)
        if not writer.text.strip():
            result = empty_result(source)
            result.warnings[:0] = notes
            return result
        return LoadResult([writer.document(path, source, title=path.stem)], notes)

    def sheets(self, path: Path, source: str) -> Iterator[tuple[str, Iterable[Sequence[Any]]]]:
        raise NotImplementedError


#: Rows looked at to find a sheet's table header below its title rows.
HEADER_SEARCH_ROWS = 20


def _sheet(writer: MarkdownWriter, name: str, rows: Iterable[Sequence[Any]], source: str, notes: list[str]) -> None:
    kept = _until_empty_run(rows, source, name, notes)
    first = list(itertools.islice(kept, HEADER_SEARCH_ROWS))
    if not first:
        return
    if name:
        writer.heading(f"Sheet: {name}", 2)
    titles = _title_rows(first)
    for row in first[:titles]:
        writer.paragraph(" ".join(cell_text(c) for c in row if c not in (None, "")))
    rest = first[titles:]
    if rest:
        writer.table(itertools.chain(rest[1:], kept), header=rest[0])


def _title_rows(rows: Sequence[Sequence[Any]]) -> int:
    """How many leading rows are titles above the table (one filled cell where the table is wider)."""
    width = max(len(row) for row in rows)
    count = 0
    for row in rows:
        if width < 2 or sum(value not in (None, "") for value in row) > 1:
            break
        count += 1
    return count if count < len(rows) else 0


def _until_empty_run(rows: Iterable[Sequence[Any]], source: str, sheet: str, notes: list[str]) -> Iterator[Sequence[Any]]:
    empty = 0
    for row in rows:
        if any(value not in (None, "") for value in row):
            empty = 0
            yield _trim(row)
        else:
            empty += 1
            if empty >= MAX_EMPTY_RUN:
                notes.append(f"{source}: sheet {sheet or '1'} has {MAX_EMPTY_RUN:,} empty rows in a row; "
                             "the rows after them were not read")
                return


def _trim(row: Sequence[Any]) -> list[Any]:
    cells = list(row)
    while cells and cells[-1] in (None, ""):
        cells.pop()
    return cells


class XlsxLoader(_Sheets):
    name = "xlsx"
    extensions = (".xlsx", ".xlsm")
    kind = "an Excel workbook"

    def sheets(self, path: Path, source: str):
        check_archive(path, source, "Excel (.xlsx)")
        import openpyxl

        # read_only streams rows; data_only reads the values formulas last computed (macros never run).
        workbook = openpyxl.load_workbook(str(path), read_only=True, data_only=True, keep_links=False)
        try:
            for sheet in workbook.worksheets:
                yield sheet.title, sheet.iter_rows(values_only=True)
        finally:
            workbook.close()


class XlsLoader(_Sheets):
    """Excel 97-2003 workbooks (``.xls``, the OLE binary format) through xlrd: values only."""

    name = "xls"
    extensions = (".xls",)
    kind = "an Excel 97-2003 workbook"

    def sheets(self, path: Path, source: str):
        import xlrd

        workbook = xlrd.open_workbook(str(path), on_demand=True)
        try:
            for index in range(workbook.nsheets):
                sheet = workbook.sheet_by_index(index)
                yield sheet.name, (sheet.row_values(row) for row in range(sheet.nrows))
                workbook.unload_sheet(index)
        finally:
            workbook.release_resources()


class OdsLoader(_Sheets):
    name = "ods"
    extensions = (".ods",)
    kind = "an OpenDocument spreadsheet"

    def sheets(self, path: Path, source: str):
        check_archive(path, source, "OpenDocument (.ods)")
        from odf import opendocument, table

        document = opendocument.load(str(path))
        for sheet in document.spreadsheet.getElementsByType(table.Table):
            yield sheet.getAttribute("name") or "", _ods_rows(sheet)


def _ods_rows(sheet) -> Iterator[list[str]]:
    from odf import table

    for row in sheet.getElementsByType(table.TableRow):
        cells: list[str] = []
        for cell in row.childNodes:
            if cell.qname[1] not in ("table-cell", "covered-table-cell"):
                continue
            repeat = int(cell.getAttribute("numbercolumnsrepeated") or 1)
            cells.extend([_ods_text(cell)] * min(repeat, 1_000))
        repeat_rows = int(row.getAttribute("numberrowsrepeated") or 1)
        for _ in range(min(repeat_rows, MAX_EMPTY_RUN)):
            yield cells


def _ods_text(cell) -> str:
    from odf import teletype, text

    return "\n".join(teletype.extractText(p) for p in cell.getElementsByType(text.P))


class CsvLoader(_Sheets):
    name = "csv"
    extensions = (".csv", ".tsv")
    kind = "a CSV file"

    def sheets(self, path: Path, source: str):
        data = path.read_bytes()
        if looks_binary(data):
            raise CorruptDocumentError(
                f"{source} looks like a binary file (it contains NUL bytes) although its name says "
                f"{path.suffix}; rename it or leave it out of the ingest"
            )
        text, _ = decode_bytes(data, source)
        delimiter = "\t" if path.suffix.lower() == ".tsv" else _sniff(text)
        csv.field_size_limit(16 * 2**20)
        yield "", csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)


def _sniff(text: str) -> str:
    try:
        return csv.Sniffer().sniff(text[:8192], delimiters=",;\t|").delimiter
    except csv.Error:
        return ","
