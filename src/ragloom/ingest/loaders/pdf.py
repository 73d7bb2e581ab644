"""PDF files: one document per file, pages joined by a blank line, page starts kept."""

from __future__ import annotations

import io
import logging
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import CorruptDocumentError
from ...types import Document
from .base import Loader, LoadResult

if TYPE_CHECKING:
    from pypdf import PdfReader

PAGE_SEPARATOR = "\n\n"


class PdfLoader(Loader):
    name = "pdf"
    extensions = (".pdf",)

    def load(self, path: Path, source: str) -> LoadResult:
        return self.load_bytes(path.read_bytes(), path, source)

    def load_bytes(self, data: bytes, path: Path, source: str) -> LoadResult:
        with library_messages() as messages:
            try:
                pages, title = _read_pages(data, source)
            except CorruptDocumentError as exc:
                if not messages:
                    raise
                said = "; ".join(collapse(messages))
                raise CorruptDocumentError(f"{exc} (pypdf said: {said})") from exc
        notes = [f"{source}: {message}" for message in collapse(messages)]
        text, page_starts = join_pages(pages)
        if not text.strip():
            return LoadResult(
                [],
                [
                    *notes,
                    f"{source} has no extractable text; it may be scanned images — "
                    "run OCR on it (e.g. ocrmypdf) and ingest the result",
                ],
            )
        document = Document(
            text=text,
            source=source,
            doc_id=path.name,
            title=title or path.stem,
            metadata={"pages": len(pages)},
            page_starts=page_starts,
        )
        return LoadResult([document], notes)


@contextmanager
def library_messages() -> Iterator[list[str]]:
    """Collect what pypdf logs or warns while a file is read, so the report can name the file.

    Printed directly ("EOF marker not found") these lines do not say which file they concern.
    """
    messages: list[str] = []

    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(" ".join(record.getMessage().split()))

    logger = logging.getLogger("pypdf")
    handler, propagate = _Collect(logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield messages
        messages.extend(" ".join(str(w.message).split()) for w in caught)
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


#: A dictionary dumped into a message (pypdf prints whole font dictionaries, hundreds of characters).
_DUMP = re.compile(r"\{.*\}")
#: Longest library message kept in a report.
MESSAGE_CHARS = 300


def collapse(messages: list[str]) -> list[str]:
    """The library's messages, one line per kind: dumps elided, repeats counted, long ones cut
    (pypdf says the same thing once per font, e.g. that fontTools would read CFF fonts better)."""
    counts: dict[str, int] = {}
    for message in messages:
        short = _DUMP.sub("{...}", message)
        short = short if len(short) <= MESSAGE_CHARS else short[: MESSAGE_CHARS - 3] + "..."
        counts[short] = counts.get(short, 0) + 1
    return [message if n == 1 else f"{message} ({n} times)" for message, n in counts.items()]


def join_pages(pages: list[str]) -> tuple[str, tuple[int, ...]]:
    """The pages' text joined by PAGE_SEPARATOR, and the offset where each page starts."""
    starts: list[int] = []
    offset = 0
    for page in pages:
        starts.append(offset)
        offset += len(page) + len(PAGE_SEPARATOR)
    return PAGE_SEPARATOR.join(pages), tuple(starts)


def _read_pages(data: bytes, source: str) -> tuple[list[str], str]:
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise CorruptDocumentError(
                f"{source} is encrypted with a password; decrypt it (e.g. qpdf --decrypt) and ingest again"
            )
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        title = _metadata_title(reader)
    except CorruptDocumentError:
        raise
    except Exception as exc:  # pypdf raises many kinds of errors on damaged files
        raise CorruptDocumentError(
            f"{source} could not be parsed as a PDF ({type(exc).__name__}: {exc}); "
            "the file may be damaged or not a PDF — re-export or repair it"
        ) from exc
    return pages, title


def _metadata_title(reader: PdfReader) -> str:
    try:
        info = reader.metadata
        title = info.title if info is not None else None
    except Exception:  # a damaged /Info dictionary should not lose the text
        return ""
    return title.strip() if isinstance(title, str) else ""
