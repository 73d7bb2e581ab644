"""A small, dependency-free PDF writer for tests and sample corpora.

It writes real PDFs — one page per string, Helvetica, long lines wrapped — that any
PDF reader (pypdf included) extracts text from, so the PDF loader is tested on the
real parser rather than on a fake.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

PAGE_WIDTH, PAGE_HEIGHT = 612, 792  # US Letter, in points
MARGIN = 72
FONT_SIZE = 11
LEADING = 14
#: Helvetica at 11 pt fits about this many average characters in the text width.
WRAP_COLUMNS = 90
MAX_LINES = (PAGE_HEIGHT - 2 * MARGIN) // LEADING


def write_pdf(path: str | Path, pages: list[str], title: str | None = None) -> Path:
    """Write ``pages`` as a PDF, one string per page.

    Each page's text is reflowed like Markdown: blank lines separate paragraphs, and the
    lines of a paragraph are joined and wrapped to the page width.
    """
    if not pages:
        raise ValueError("a PDF needs at least one page")
    page_count = len(pages)
    font_id, pages_id, first_page_id = 3, 2, 4
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        font_id: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    }
    kids = []
    for number, page_text in enumerate(pages):
        page_id = first_page_id + 2 * number
        content_id = page_id + 1
        kids.append(f"{page_id} 0 R")
        stream = _content_stream(_wrap(page_text, number + 1))
        objects[page_id] = (
            f"<< /Type /Page /Parent {pages_id} 0 R /MediaBox [0 0 {PAGE_WIDTH} {PAGE_HEIGHT}] "
            f"/Resources << /Font << /F1 {font_id} 0 R >> >> /Contents {content_id} 0 R >>"
        ).encode("ascii")
        objects[content_id] = b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"
    objects[pages_id] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {page_count} >>".encode("ascii")
    info_id = first_page_id + 2 * page_count
    title_entry = b" /Title " + _pdf_string(title) if title else b""
    objects[info_id] = b"<< /Producer (ragloom.testing)" + title_entry + b" >>"
    out = Path(path)
    out.write_bytes(_assemble(objects, root_id=1, info_id=info_id))
    return out


def write_corrupt_pdf(path: str | Path) -> Path:
    """A file that starts like a PDF but has no valid structure: loaders must reject it."""
    out = Path(path)
    out.write_bytes(b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R\nstream\n\x00\xff\xfe garbage")
    return out


def _wrap(page_text: str, page_number: int) -> list[str]:
    lines: list[str] = []
    for paragraph in re.split(r"\n\s*\n", page_text.strip()):
        if lines:
            lines.append(" ")  # a blank line that text extraction keeps
        lines.extend(textwrap.wrap(" ".join(paragraph.split()), WRAP_COLUMNS))
    if len(lines) > MAX_LINES:
        raise ValueError(
            f"page {page_number} has {len(lines)} lines after wrapping; at most {MAX_LINES} fit — "
            "split its text over more pages"
        )
    return lines


def _content_stream(lines: list[str]) -> bytes:
    parts = [b"BT", b"/F1 %d Tf" % FONT_SIZE, b"%d TL" % LEADING, b"%d %d Td" % (MARGIN, PAGE_HEIGHT - MARGIN)]
    for line in lines:
        parts.append(_pdf_string(line) + b" Tj T*")
    parts.append(b"ET")
    return b"\n".join(parts)


def _pdf_string(text: str) -> bytes:
    """A literal string in WinAnsi (cp1252), escaping what PDF syntax requires."""
    out = bytearray(b"(")
    for byte in text.encode("cp1252", errors="replace"):
        if byte in b"()\\":
            out += b"\\" + bytes([byte])
        elif byte < 32 or byte > 126:
            out += b"\\%03o" % byte
        else:
            out.append(byte)
    return bytes(out + b")")


def _assemble(objects: dict[int, bytes], root_id: int, info_id: int) -> bytes:
    body = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets: dict[int, int] = {}
    for number in sorted(objects):
        offsets[number] = len(body)
        body += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    xref_at = len(body)
    size = max(objects) + 1
    body += b"xref\n0 %d\n0000000000 65535 f \n" % size
    for number in range(1, size):
        body += b"%010d 00000 n \n" % offsets[number]
    body += b"trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R >>\n" % (size, root_id, info_id)
    body += b"startxref\n%d\n%%%%EOF\n" % xref_at
    return bytes(body)
