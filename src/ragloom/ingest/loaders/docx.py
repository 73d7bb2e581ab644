"""Word files (``.docx``) through python-docx: headings become sections, lists and tables keep their shape."""

from __future__ import annotations

import re
from pathlib import Path

from ._archive import ArchiveDocumentLoader
from ._markdown import MarkdownWriter

_HEADING_STYLE = re.compile(r"heading\s*(\d)", re.IGNORECASE)


class DocxLoader(ArchiveDocumentLoader):
    name = "docx"
    extensions = (".docx",)
    kind, noun = "Word (.docx)", "a Word document"

    def read(self, path: Path, writer: MarkdownWriter) -> tuple[str, dict]:
        import docx

        document = docx.Document(str(path))
        for block in document.iter_inner_content():
            if isinstance(block, docx.table.Table):
                writer.table(_table_rows(block))
            else:
                _paragraph(writer, block)
        return (document.core_properties.title or "").strip() or _first_heading(writer.text), {}


def _paragraph(writer: MarkdownWriter, paragraph) -> None:
    text = paragraph.text
    if not text.strip():
        return
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    heading = _HEADING_STYLE.match(style)
    if heading:
        writer.heading(text, int(heading.group(1)))
    elif style.lower() == "title":
        writer.heading(text, 1)
    elif _is_list_item(paragraph, style):
        writer.item(text, level=_list_level(paragraph), ordered="number" in style.lower())
    else:
        writer.paragraph(text)


def _is_list_item(paragraph, style: str) -> bool:
    if "list" in style.lower():
        return True
    properties = paragraph._p.pPr
    return properties is not None and properties.numPr is not None


def _list_level(paragraph) -> int:
    properties = paragraph._p.pPr
    if properties is None or properties.numPr is None or properties.numPr.ilvl is None:
        return 0
    return int(properties.numPr.ilvl.val or 0)


def _table_rows(table):
    for row in table.rows:
        cells = []
        previous = None
        for cell in row.cells:
            # A merged cell appears once per grid column it spans: keep it once.
            if cell._tc is previous:
                continue
            previous = cell._tc
            cells.append(cell.text)
        yield cells


def _first_heading(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return ""
