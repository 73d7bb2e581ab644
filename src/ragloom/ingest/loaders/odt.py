"""OpenDocument text (``.odt``) through odfpy, and RTF through striprtf.

ODT headings (``text:h`` with their outline level) become sections; lists and tables keep
their shape. RTF carries no reliable heading structure, so it is read as plain text.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import CorruptDocumentError
from ._archive import ArchiveDocumentLoader, library_error
from ._markdown import MarkdownWriter
from .base import LoadResult, Loader
from .decode import decode_bytes, empty_result, looks_binary
from .text import single_document


class OdtLoader(ArchiveDocumentLoader):
    name = "odt"
    extensions = (".odt",)
    kind, noun = "OpenDocument (.odt)", "an OpenDocument text"

    def read(self, path: Path, writer: MarkdownWriter) -> tuple[str, dict]:
        from odf import opendocument

        document = opendocument.load(str(path))
        for node in document.text.childNodes:
            _block(writer, node, 0)
        return "", {}


def _text(node) -> str:
    from odf import teletype

    return teletype.extractText(node)


def _block(writer: MarkdownWriter, node, depth: int) -> None:
    kind = getattr(node, "qname", (None, None))[1]
    if kind == "h":
        writer.heading(_text(node), int(node.getAttribute("outlinelevel") or 1))
    elif kind == "p":
        writer.paragraph(_text(node))
    elif kind == "list":
        for item in node.childNodes:
            for inner in getattr(item, "childNodes", ()):
                if getattr(inner, "qname", (None, None))[1] == "list":
                    _block(writer, inner, depth + 1)
                else:
                    writer.item(_text(inner), level=depth)
    elif kind == "table":
        writer.table(_table_rows(node))
    elif kind == "section":
        for inner in node.childNodes:
            _block(writer, inner, depth)


def _table_rows(table):
    for row in table.getElementsByType(_row_type()):
        yield [_text(cell) for cell in row.childNodes if getattr(cell, "qname", (None, None))[1] == "table-cell"]


def _row_type():
    from odf.table import TableRow

    return TableRow


class RtfLoader(Loader):
    name = "rtf"
    extensions = (".rtf",)

    def load(self, path: Path, source: str) -> LoadResult:
        data = path.read_bytes()
        if looks_binary(data) or not data.lstrip().startswith(b"{\\rtf"):
            raise CorruptDocumentError(
                f"{source} is not an RTF file (it does not start with {{\\rtf}}); re-save it as RTF or rename it"
            )
        from striprtf.striprtf import rtf_to_text

        raw, warnings = decode_bytes(data, source)
        try:
            text = rtf_to_text(raw, errors="ignore")
        except MemoryError:
            raise  # over the file's memory budget: never a damaged file (ingest/sandbox.py)
        except Exception as exc:  # striprtf raises on malformed control words
            raise library_error(source, "RTF", exc) from exc
        if not text.strip():
            return empty_result(source)
        return LoadResult([single_document(text.strip(), path, source, title=path.stem)], warnings)
