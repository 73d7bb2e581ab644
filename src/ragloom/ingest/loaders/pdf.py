"""PDF files through pypdfium2 (PDFium, the PDF engine of Chromium): one document per file.

Pages are joined by a blank line and their start offsets kept, so every chunk knows its page.
What the page text goes through, in order:

- **Scanned pages** (no text layer; every page with ``ingest.ocr: always``) are rendered and read
  by Tesseract (``ingest/ocr.py``); the mean OCR confidence is kept per page and per chunk.
- **Tables** are written as Markdown tables in their place, their header row repeated above every
  block of rows: ruled ones (on pages that draw lines) found by pdfplumber, those without lines
  from how their text lines up in columns (``_pdf_tables.py``).
- **Running headers and footers** (a line at the top or bottom of most pages, page numbers
  included) are dropped, and words hyphenated across a line break are joined.

PDFium reads text in the order the page draws it, which is column by column for the PDFs that
LaTeX, Word and most typesetters write. pypdf, which ragloom read PDFs with before, was 3.3x
slower on the same pages (BENCHMARKS.md "Documents").
"""

from __future__ import annotations

import io
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import CorruptDocumentError
from ...types import Document
from .. import ocr
from ._markdown import MarkdownWriter
from ._pdf_tables import page_tables
from .base import Loader, LoaderOptions, LoadResult

PAGE_SEPARATOR = "\n\n"
#: A page with fewer visible characters than this has no usable text layer.
MIN_TEXT_CHARS = 20
#: Pages drawing at least this many path objects (lines, rectangles) are searched for tables.
TABLE_PATHS = 4
_HYPHENATED = re.compile(r"\b(\w*[a-z])-\n([a-z]\w*)")
#: Words as the document writes them, hyphenated compounds whole.
_WORD = re.compile(r"\w+(?:-\w+)*")
_DIGITS = re.compile(r"\d+")


class PdfLoader(Loader):
    name = "pdf"
    extensions = (".pdf",)
    version = 4  # tables without ruling lines keep their cells apart

    def policy(self) -> str:
        return f"pdf/v{self.version}/ocr={self.options.ocr}"

    def load(self, path: Path, source: str) -> LoadResult:
        return self.load_bytes(path.read_bytes(), path, source)

    def load_bytes(self, data: bytes, path: Path, source: str) -> LoadResult:
        read = read_pdf(data, source, self.options)
        text, page_starts = join_pages(read.pages)
        missing = "tesseract" if read.scanned_without_ocr and self.options.ocr != "never" else None
        if not text.strip():
            return LoadResult([], [*read.notes, _no_text_message(source, read)], incomplete=missing)
        metadata: dict = {"pages": len(read.pages)}
        if read.ocr_pages:
            metadata["ocr_pages"] = len(read.ocr_pages)
        document = Document(
            text=text,
            source=source,
            doc_id=path.name,
            title=read.title or path.stem,
            metadata=metadata,
            page_starts=page_starts,
            page_metadata=tuple({"ocr_confidence": read.ocr_pages[n]} if n in read.ocr_pages else {}
                                for n in range(len(read.pages))) if read.ocr_pages else (),
        )
        return LoadResult([document], read.notes, stats={"ocr_pages": len(read.ocr_pages), "tables": read.tables},
                          incomplete=missing)


@dataclass
class PdfText:
    pages: list[str]
    title: str = ""
    #: Page index -> OCR confidence, for the pages that were read by OCR.
    ocr_pages: dict[int, float] = field(default_factory=dict)
    tables: int = 0
    notes: list[str] = field(default_factory=list)
    scanned_without_ocr: int = 0


def _no_text_message(source: str, read: PdfText) -> str:
    if read.scanned_without_ocr:
        if not ocr.available():
            return f"{source} has no extractable text (scanned pages); {ocr.INSTALL_HINT}"
        return f"{source} has no extractable text and ingest.ocr is never; set ingest.ocr: auto to read scans"
    return f"{source} has no extractable text"


def read_pdf(data: bytes, source: str, options: LoaderOptions) -> PdfText:
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise CorruptDocumentError(
                f"{source} is encrypted with a password; decrypt it (e.g. qpdf --decrypt) and ingest again"
            ) from exc
        raise CorruptDocumentError(
            f"{source} could not be parsed as a PDF ({exc}); the file may be damaged or not a PDF — re-export or repair it"
        ) from exc
    try:
        result = PdfText(pages=[], title=_title(pdf))
        scans: list[int] = []
        table_pages: list[int] = []
        unruled: dict[int, list] = {}
        for number in range(len(pdf)):
            page = pdf[number]
            try:
                text, found = _page_text(page)
                if options.ocr == "always" or (len(text.strip()) < MIN_TEXT_CHARS and _has_images(page)):
                    scans.append(number)
                elif _path_count(page) >= TABLE_PATHS:
                    table_pages.append(number)
                    unruled[number] = found
                elif found:
                    text = _text_around_tables(page, found)
                    result.tables += len(found)
            finally:
                page.close()
            result.pages.append(text)
        if table_pages:
            _insert_tables(pdf, data, table_pages, result, unruled)
        if scans:
            _ocr_pages(pdf, scans, result, options, source)
    finally:
        pdf.close()
    result.pages = clean_pages(result.pages)
    return result


def _title(pdf) -> str:
    try:
        title = pdf.get_metadata_dict().get("Title", "")
    except MemoryError:
        raise  # over the file's memory budget: never a damaged file (ingest/sandbox.py)
    except Exception:  # a damaged /Info dictionary should not lose the text
        return ""
    return title.strip() if isinstance(title, str) else ""


def _page_text(page) -> tuple[str, list]:
    """The page's text, and the tables without ruling lines on it."""
    textpage = page.get_textpage()
    try:
        text = _normalise(textpage.get_text_range())
        found = page_tables(textpage, page.get_height()) if len(text) >= MIN_TEXT_CHARS else []
        return text, found
    finally:
        textpage.close()


def _normalise(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x02", "").replace("\ufffe", "").strip()


def _has_images(page) -> bool:
    import pypdfium2.raw as raw

    return any(True for _ in page.get_objects(filter=[raw.FPDF_PAGEOBJ_IMAGE], max_depth=2))


def _path_count(page) -> int:
    import pypdfium2.raw as raw

    count = 0
    for _ in page.get_objects(filter=[raw.FPDF_PAGEOBJ_PATH], max_depth=2):
        count += 1
        if count >= TABLE_PATHS:
            break
    return count


def _ocr_pages(pdf, numbers: list[int], result: PdfText, options: LoaderOptions, source: str) -> None:
    if options.ocr == "never" or not ocr.available():
        result.scanned_without_ocr = len(numbers)
        if options.ocr != "never" and any(not result.pages[n].strip() for n in numbers):
            result.notes.append(f"{source}: {len(numbers)} scanned page(s) left unread; {ocr.INSTALL_HINT}")
        return
    # Render and read a few pages at a time, so memory holds a few page images, not the whole scan.
    step = max(1, ocr.workers()) * 2
    for first in range(0, len(numbers), step):
        batch = numbers[first : first + step]
        images = []
        for number in batch:
            page = pdf[number]
            try:
                images.append(page.render(scale=options.ocr_dpi / 72, grayscale=True).to_pil())
            finally:
                page.close()
        for number, read in zip(batch, ocr.recognize(images, options.ocr_languages)):
            if len(read.text.strip()) >= len(result.pages[number].strip()):
                result.pages[number] = read.text
                result.ocr_pages[number] = read.confidence


def _insert_tables(pdf, data: bytes, numbers: list[int], result: PdfText, unruled: dict[int, list]) -> None:
    """Replace the text of each ruled table with a Markdown table, in the table's place; a table
    without lines is kept where no ruled one covers it."""
    import pdfplumber

    with pdfplumber.open(io.BytesIO(data)) as plumber:
        for number in numbers:
            found = plumber.pages[number].find_tables()
            ruled = [(t.bbox, t.extract()) for t in found if len(t.rows) >= 2]
            plumber.pages[number].flush_cache()
            aligned = unruled.get(number, [])
            ruled = [r for r in ruled if not any(_overlap(a[0], r[0]) and _misread(r[1], a[1]) for a in aligned)]
            tables = ruled + [a for a in aligned if not any(_overlap(a[0], r[0]) for r in ruled)]
            if not tables:
                continue
            page = pdf[number]
            try:
                result.pages[number] = _text_around_tables(page, tables)
            finally:
                page.close()
            result.tables += len(tables)


def _misread(ruled: list[list[str | None]], aligned: list[list[str]]) -> bool:
    """Whether pdfplumber's grid of a partly ruled table lost what the cells' alignment found: it
    has fewer columns (only inner lines drawn), or a row whose every cell holds the same number of
    lines, two or more (no lines between rows: the rows run together)."""
    if max(len(row) for row in ruled) < len(aligned[0]):
        return True
    for row in ruled:
        counts = {len(cell.splitlines()) for cell in row if cell}
        if len(counts) == 1 and min(counts) >= 2 and sum(1 for cell in row if cell) >= 2:
            return True
    return False


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _text_around_tables(page, tables) -> str:
    height = page.get_height()
    boxes = [(x0, height - bottom, x1, height - top) for (x0, top, x1, bottom), _ in tables]
    textpage = page.get_textpage()
    try:
        owners: list[int | None] = []
        for index in range(textpage.count_chars()):
            left, bottom, right, top = textpage.get_charbox(index)
            x, y = (left + right) / 2, (bottom + top) / 2
            owners.append(next((k for k, (x0, y0, x1, y1) in enumerate(boxes) if x0 <= x <= x1 and y0 <= y <= y1), None))
        parts: list[str] = []
        written: set[int] = set()
        start = 0
        for index in range(len(owners) + 1):
            owner = owners[index] if index < len(owners) else -1
            previous = owners[index - 1] if index > 0 else -1
            if index == len(owners) or owner != previous:
                if previous is None and index > start:
                    parts.append(textpage.get_text_range(start, index - start))
                elif previous not in (-1, None) and previous not in written:
                    parts.append("\n\n" + _markdown_table(tables[previous][1]) + "\n\n")
                    written.add(previous)
                start = index
    finally:
        textpage.close()
    return re.sub(r"\n{3,}", "\n\n", _normalise("".join(parts)))


def _markdown_table(rows: list[list[str | None]]) -> str:
    writer = MarkdownWriter()
    writer.table([[(cell or "").replace("\n", " ") for cell in row] for row in rows])
    return writer.text


def clean_pages(pages: list[str]) -> list[str]:
    """Drop running headers and footers, join words hyphenated across lines."""
    pages = _drop_running_lines(pages)
    vocabulary = set(_WORD.findall(_HYPHENATED.sub(" ", "\n".join(pages)).lower()))  # the broken words left out
    return [_HYPHENATED.sub(lambda m: _join_hyphenated(m, vocabulary), page) for page in pages]


def _join_hyphenated(match: re.Match[str], vocabulary: set[str]) -> str:
    """A word broken at a line end: joined ("compu-" "ter" -> "computer"), unless its hyphen is the
    word's own ("chat-optimized"): the document writes it so elsewhere, or writes both halves as words
    and never the two joined."""
    left, right = match.group(1), match.group(2)
    joined = (left + right).lower()
    if joined in vocabulary:
        return left + right
    if f"{left}-{right}".lower() in vocabulary or (left.lower() in vocabulary and right.lower() in vocabulary):
        return f"{left}-{right}"
    return left + right


def _drop_running_lines(pages: list[str], edge: int = 2) -> list[str]:
    """Lines among the first or last ``edge`` of most pages (digits ignored: page numbers) are dropped."""
    if len(pages) < 2:
        return pages
    split = [page.split("\n") for page in pages]
    counts: Counter[str] = Counter()
    for lines in split:
        counts.update({_key(line) for line in _edges(lines, edge) if _key(line)})
    threshold = max(2, -(-len(pages) * 3 // 5))  # on at least 60% of the pages, and on two
    running = {key for key, count in counts.items() if count >= threshold}
    if not running:
        return pages
    cleaned = []
    for lines in split:
        edges = set(range(min(edge, len(lines)))) | set(range(max(0, len(lines) - edge), len(lines)))
        kept = [line for i, line in enumerate(lines) if not (i in edges and _key(line) in running)]
        cleaned.append("\n".join(kept).strip())
    return cleaned


def _edges(lines: list[str], edge: int) -> list[str]:
    return lines[:edge] + lines[max(edge, len(lines) - edge):]


def _key(line: str) -> str:
    return _DIGITS.sub("#", " ".join(line.lower().split()))


def join_pages(pages: list[str]) -> tuple[str, tuple[int, ...]]:
    """The pages' text joined by PAGE_SEPARATOR, and the offset where each page starts."""
    starts: list[int] = []
    offset = 0
    for page in pages:
        starts.append(offset)
        offset += len(page) + len(PAGE_SEPARATOR)
    return PAGE_SEPARATOR.join(pages), tuple(starts)
