"""Word files (``.docx``) through python-docx: headings become sections, lists and tables keep their shape."""

from __future__ import annotations

import re
from pathlib import Path

from ._archive import ArchiveDocumentLoader
from ._markdown import MarkdownWriter
from ._omml import M, W, omml_text

_HEADING_STYLE = re.compile(r"heading\s*(\d)", re.IGNORECASE)


class DocxLoader(ArchiveDocumentLoader):
    name = "docx"
    extensions = (".docx",)
    kind, noun = "Word (.docx)", "a Word document"
    version = 2  # equations and comments are read

    def read(self, path: Path, writer: MarkdownWriter) -> tuple[str, dict]:
        import docx

        document = docx.Document(str(path))
        for block in document.iter_inner_content():
            if isinstance(block, docx.table.Table):
                writer.table(_table_rows(block))
            else:
                _paragraph(writer, block)
        _comments(writer, document)
        return (document.core_properties.title or "").strip() or _first_heading(writer.text), {}


def _comments(writer: MarkdownWriter, document) -> None:
    """The reviewers' comments, after the body, each with its author."""
    comments = [c for c in getattr(document, "comments", ()) if c.text.strip()]
    if not comments:
        return
    writer.heading("Comments", 2)
    for comment in comments:
        author = (comment.author or "").strip()
        writer.item(f"{author}: {comment.text.strip()}" if author else comment.text.strip())


def paragraph_text(paragraph) -> str:
    """A paragraph's text with its equations (OMML) as LaTeX-like ``$…$``, where python-docx's
    ``paragraph.text`` leaves them out."""
    element = paragraph._p
    if element.find(f".//{M}oMath") is None:
        return paragraph.text
    parts: list[str] = []
    for child in element.iterchildren():
        tag = child.tag if isinstance(child.tag, str) else ""
        if tag in (f"{M}oMath", f"{M}oMathPara"):
            parts.append(f"${omml_text(child)}$")
        elif not tag.endswith("}pPr"):
            parts.append("".join(t.text or "" for t in child.iter(f"{W}t")))
    return "".join(parts)


def _paragraph(writer: MarkdownWriter, paragraph) -> None:
    text = paragraph_text(paragraph)
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
