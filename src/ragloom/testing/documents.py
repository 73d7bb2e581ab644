"""Write real office documents, e-books, e-mail and notebooks with the formats' own libraries.

Used by the loader tests and by ``benchmarks/ingest/formats.py``: every file is made by the library
that users' tools make it with (python-docx, python-pptx, openpyxl, odfpy, ebooklib, the
standard library's ``email``), never by hand-written XML.

A document is a list of ``Section(title, paragraphs, table)``; a table is a list of rows, the
first of them the header.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path


@dataclass
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)
    table: list[list[str]] | None = None


def write_docx(path: str | Path, sections: Sequence[Section], title: str = "") -> Path:
    import docx

    document = docx.Document()
    if title:
        document.core_properties.title = title
    for section in sections:
        document.add_heading(section.title, level=1)
        for paragraph in section.paragraphs:
            document.add_paragraph(paragraph)
        if section.table:
            rows = section.table
            table = document.add_table(rows=len(rows), cols=len(rows[0]))
            for r, row in enumerate(rows):
                for c, value in enumerate(row):
                    table.cell(r, c).text = str(value)
    document.save(str(path))
    return Path(path)


def write_pptx(path: str | Path, sections: Sequence[Section], notes: Sequence[str] = ()) -> Path:
    from pptx import Presentation
    from pptx.util import Inches

    presentation = Presentation()
    for number, section in enumerate(sections):
        slide = presentation.slides.add_slide(presentation.slide_layouts[1 if not section.table else 5])
        slide.shapes.title.text = section.title
        if section.table:
            rows = section.table
            shape = slide.shapes.add_table(len(rows), len(rows[0]), Inches(0.5), Inches(1.5), Inches(9), Inches(4))
            for r, row in enumerate(rows):
                for c, value in enumerate(row):
                    shape.table.cell(r, c).text = str(value)
        else:
            frame = slide.placeholders[1].text_frame
            frame.text = "\n\n".join(section.paragraphs)
        if number < len(notes):
            slide.notes_slide.notes_text_frame.text = notes[number]
    presentation.save(str(path))
    return Path(path)


def write_xlsx(path: str | Path, sheets: dict[str, list[list[object]]]) -> Path:
    import openpyxl

    workbook = openpyxl.Workbook(write_only=True)
    for name, rows in sheets.items():
        sheet = workbook.create_sheet(name)
        for row in rows:
            sheet.append(list(row))
    workbook.save(str(path))
    return Path(path)


def write_ods(path: str | Path, sheets: dict[str, list[list[object]]]) -> Path:
    from odf.opendocument import OpenDocumentSpreadsheet

    document = OpenDocumentSpreadsheet()
    for name, rows in sheets.items():
        document.spreadsheet.addElement(_odf_table(name, rows))
    document.save(str(path))
    return Path(path)


def _odf_table(name: str, rows: Sequence[Sequence[object]]):
    from odf.table import Table, TableCell, TableColumn, TableRow
    from odf.text import P

    table = Table(name=name)
    if rows:
        table.addElement(TableColumn(numbercolumnsrepeated=max(len(row) for row in rows)))
    for row in rows:
        table_row = TableRow()
        for value in row:
            cell = TableCell()
            cell.addElement(P(text=str(value)))
            table_row.addElement(cell)
        table.addElement(table_row)
    return table


def write_odt(path: str | Path, sections: Sequence[Section]) -> Path:
    from odf.opendocument import OpenDocumentText
    from odf.text import H, P

    document = OpenDocumentText()
    for section in sections:
        document.text.addElement(H(outlinelevel=1, text=section.title))
        for paragraph in section.paragraphs:
            document.text.addElement(P(text=paragraph))
        if section.table:
            document.text.addElement(_odf_table(section.title[:30] or "table", section.table))
    document.save(str(path))
    return Path(path)


def write_epub(path: str | Path, sections: Sequence[Section], title: str = "A book") -> Path:
    from html import escape

    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("ragloom-test-" + Path(path).stem)
    book.set_title(title)
    book.set_language("en")
    chapters = []
    for number, section in enumerate(sections, start=1):
        chapter = epub.EpubHtml(title=section.title, file_name=f"chapter{number}.xhtml", lang="en")
        body = f"<h1>{escape(section.title)}</h1>" + "".join(f"<p>{escape(p)}</p>" for p in section.paragraphs)
        if section.table:
            body += "<table>" + "".join(
                "<tr>" + "".join(f"<td>{escape(str(v))}</td>" for v in row) + "</tr>" for row in section.table
            ) + "</table>"
        chapter.content = f"<html><body>{body}</body></html>"
        book.add_item(chapter)
        chapters.append(chapter)
    book.toc = chapters
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *chapters]
    epub.write_epub(str(path), book)
    return Path(path)


def write_rtf(path: str | Path, paragraphs: Sequence[str]) -> Path:
    def escape(text: str) -> str:
        out = text.replace("\\", "\\\\").replace("{", "\\{").replace("}", "\\}")
        return "".join(c if ord(c) < 128 else f"\\u{ord(c) if ord(c) < 32768 else ord(c) - 65536}?" for c in out)

    body = "".join(f"\\pard {escape(p)}\\par\n" for p in paragraphs)
    Path(path).write_text("{\\rtf1\\ansi\\deff0{\\fonttbl{\\f0 Helvetica;}}\n" + body + "}", encoding="ascii")
    return Path(path)


def email_message(subject: str, body: str, sender: str = "ada@example.org", to: str = "team@example.org",
                  attachments: Sequence[tuple[str, bytes]] = (), html: bool = False) -> EmailMessage:
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = sender, to, subject
    message["Date"] = "Tue, 24 Nov 2026 10:00:00 +0000"
    message.set_content(body, subtype="html" if html else "plain")
    for name, data in attachments:
        message.add_attachment(data, maintype="application", subtype="octet-stream", filename=name)
    return message


def write_eml(path: str | Path, message: EmailMessage) -> Path:
    Path(path).write_bytes(bytes(message))
    return Path(path)


def write_msg(path: str | Path, subject: str, body: str, sender: str = "ada@example.org", to: str = "team@example.org",
              attachments: Sequence[tuple[str, bytes]] = (), html: bool = False, cc: str = "") -> Path:
    """An Outlook ``.msg`` (a real OLE compound file, written by msgforge) holding what
    ``email_message`` puts in an ``.eml``, sent at the same time."""
    import datetime as dt

    from msgforge import Message

    message = Message(subject=subject, html_body=body if html else "", text_body="" if html else body,
                      sender=sender, to=[to], cc=[cc] if cc else [],
                      sent=dt.datetime(2026, 11, 24, 10, 0, tzinfo=dt.timezone.utc))
    for name, data in attachments:
        message.attach_bytes(name, data)
    message.save(str(path))
    return Path(path)


def write_mbox(path: str | Path, messages: Sequence[EmailMessage]) -> Path:
    import mailbox

    box = mailbox.mbox(str(path))
    try:
        for message in messages:
            box.add(message)
        box.flush()
    finally:
        box.close()
    return Path(path)


def write_ipynb(path: str | Path, cells: Sequence[tuple[str, str, str]]) -> Path:
    """Cells as (kind, source, text output); kind is "markdown" or "code"."""
    notebook = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}},
        "cells": [
            {"cell_type": kind, "metadata": {}, "source": source,
             **({"outputs": [{"output_type": "stream", "name": "stdout", "text": output}] if output else [],
                 "execution_count": 1} if kind == "code" else {})}
            for kind, source, output in cells
        ],
    }
    Path(path).write_text(json.dumps(notebook), encoding="utf-8")
    return Path(path)


def _unicode_font() -> Path | None:
    for candidate in ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/dejavu/DejaVuSans.ttf"):
        if Path(candidate).exists():
            return Path(candidate)
    return None


def write_two_column_pdf(path: str | Path, paragraphs: Sequence[str], table: list[list[str]] | None = None,
                         running_header: str = "Journal of Examples", font_size: float = 10,
                         borders: str = "ALL") -> Path:
    """A typeset PDF (fpdf2): a running header, two text columns, a table, "Page N" footers.
    ``borders``: which lines the table draws, as fpdf2's TableBordersLayout names them ("NONE": none).

    With DejaVu Sans installed any text is written; otherwise text is reduced to Latin-1 for Helvetica.
    """
    from fpdf import FPDF

    font = _unicode_font()

    class Journal(FPDF):
        def header(self) -> None:
            self.set_font(family, size=8)
            self.cell(0, 8, running_header, align="C")
            self.ln(10)

        def footer(self) -> None:
            self.set_y(-15)
            self.set_font(family, size=8)
            self.cell(0, 10, f"Page {self.page_no()}", align="C")

    pdf = Journal()
    if font is not None:
        pdf.add_font("body", fname=str(font))
        bold = font.with_name("DejaVuSans-Bold.ttf")
        pdf.add_font("body", style="B", fname=str(bold if bold.exists() else font))
        family = "body"
    else:
        family = "Helvetica"

    def fit(text: str) -> str:
        return text if font is not None else text.encode("latin-1", "replace").decode("latin-1")

    pdf.set_auto_page_break(True, margin=20)
    pdf.add_page()
    pdf.set_font(family, size=font_size)
    with pdf.text_columns(ncols=2, gutter=8) as columns:
        for paragraph in paragraphs:
            columns.write(text=fit(paragraph) + "\n\n")
    if table:
        pdf.ln(4)
        with pdf.table(borders_layout=borders, first_row_as_headings=borders != "NONE") as drawn:
            for row in table:
                cells = drawn.row()
                for value in row:
                    cells.cell(fit(str(value)))
    pdf.output(str(path))
    return Path(path)


def write_scanned_pdf(source_pdf: str | Path, path: str | Path, dpi: int = 200, noise: float = 10.0,
                      seed: int = 0) -> Path:
    """Each page of ``source_pdf`` rendered to a grey image with mild noise and a slight skew, as a
    scanner would give it, then saved as an image-only PDF (no text layer)."""
    import numpy as np
    import pypdfium2 as pdfium
    from PIL import Image

    rng = np.random.default_rng(seed)
    images = []
    document = pdfium.PdfDocument(str(source_pdf))
    try:
        for page in document:
            image = page.render(scale=dpi / 72, grayscale=True).to_pil().convert("L")
            pixels = np.asarray(image, dtype=np.float32) + rng.normal(0, noise, size=(image.height, image.width))
            noisy = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
            images.append(noisy.rotate(0.3, fillcolor=255))
            page.close()
    finally:
        document.close()
    images[0].save(str(path), "PDF", resolution=dpi, save_all=True, append_images=images[1:])
    return Path(path)
