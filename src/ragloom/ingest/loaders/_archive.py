"""Checks for the zip-based formats (Office Open XML, OpenDocument, EPUB) before a library opens them.

A ``.docx`` is a zip: a damaged one, a password-protected one (Office then writes an OLE
compound file, not a zip) and a zip bomb each become one clear error for that file, never a
traceback or gigabytes of memory.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from ...errors import CorruptDocumentError
from ._markdown import MarkdownWriter
from .base import LoadResult, Loader
from .decode import empty_result

#: The most entries and uncompressed bytes a document archive may hold.
MAX_ENTRIES = 10_000
MAX_UNCOMPRESSED_BYTES = 512 * 1024 * 1024
#: An entry that expands more than this many times over is a bomb, not a document.
MAX_RATIO = 200
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def check_archive(path: Path, source: str, kind: str) -> None:
    """Raise CorruptDocumentError unless ``path`` is a zip archive of a safe size."""
    with open(path, "rb") as handle:
        magic = handle.read(8)
    if magic == _OLE_MAGIC:
        raise CorruptDocumentError(
            f"{source} is password-protected or in the old binary Office format, not {kind}; "
            "remove the password or save it again as a current document, then ingest it again"
        )
    try:
        with zipfile.ZipFile(path) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise CorruptDocumentError(
            f"{source} is not a readable {kind} file (its zip container is damaged: {exc}); re-save or repair it"
        ) from exc
    if len(entries) > MAX_ENTRIES:
        raise CorruptDocumentError(
            f"{source} holds {len(entries):,} archive entries (at most {MAX_ENTRIES:,} are read); skipped as unsafe"
        )
    total = sum(entry.file_size for entry in entries)
    if total > MAX_UNCOMPRESSED_BYTES:
        raise CorruptDocumentError(
            f"{source} would expand to {total / 2**20:,.0f} MB (at most {MAX_UNCOMPRESSED_BYTES // 2**20} MB "
            "are read); skipped as a possible zip bomb"
        )
    for entry in entries:
        if entry.file_size > 10 * 2**20 and entry.file_size > MAX_RATIO * max(entry.compress_size, 1):
            raise CorruptDocumentError(
                f"{source}: the entry {entry.filename} expands {entry.file_size // max(entry.compress_size, 1):,} "
                "times over; skipped as a possible zip bomb"
            )


def library_error(source: str, kind: str, exc: Exception) -> CorruptDocumentError:
    """The error for a file the format's library could not read."""
    return CorruptDocumentError(
        f"{source} could not be read as {kind} ({type(exc).__name__}: {exc}); "
        "the file may be damaged or of another type — re-save or repair it"
    )


class ArchiveDocumentLoader(Loader):
    """A zip-based document read into Markdown: the archive is checked first, and any error of
    the format's library becomes one CorruptDocumentError naming the file."""

    #: How the format is named in messages ("Word (.docx)") and what a document of it is called.
    kind = ""
    noun = ""

    def load(self, path: Path, source: str) -> LoadResult:
        check_archive(path, source, self.kind)
        writer = MarkdownWriter()
        try:
            title, metadata = self.read(path, writer)
        except CorruptDocumentError:
            raise
        except MemoryError:
            raise  # over the file's memory budget: never a damaged file (ingest/sandbox.py)
        except Exception as exc:  # the libraries raise KeyError, ValueError, lxml and zip errors on damaged parts
            raise library_error(source, self.noun, exc) from exc
        if not writer.text.strip():
            return empty_result(source)
        return LoadResult([writer.document(path, source, title=title or path.stem, metadata=metadata,
                                           page_label=self.page_label)])

    #: What ``page`` metadata counts, when ``read`` marks pages with ``writer.new_page()``.
    page_label = "page"

    def read(self, path: Path, writer: MarkdownWriter) -> tuple[str, dict]:
        """Write the document's blocks; return its title (or "") and its metadata."""
        raise NotImplementedError
