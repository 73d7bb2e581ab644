"""Plain text files, and the shared base of every loader that reads text."""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path

from ...types import Document
from .base import LoadResult, Loader
from .decode import decode_text, empty_result


class TextFileLoader(Loader):
    """Decodes the file, refuses binary content, reports empty files; subclasses parse."""

    sandboxed = False

    def load(self, path: Path, source: str) -> LoadResult:
        return self.load_bytes(path.read_bytes(), path, source)

    def load_bytes(self, data: bytes, path: Path, source: str) -> LoadResult:
        text, warnings = decode_text(data, path, source)
        if not text.strip():
            return empty_result(source)
        result = self.parse(text, path, source)
        result.warnings[:0] = warnings
        return result

    @abstractmethod
    def parse(self, text: str, path: Path, source: str) -> LoadResult:
        """Documents of the decoded, non-empty ``text``."""


class TextLoader(TextFileLoader):
    name = "text"
    #: Plain text, and text formats read as written: logs. (Subtitles: ``subtitles.py``.)
    extensions = (".txt", ".text", ".rst", ".log")
    version = 2  # chunks carry start_line and end_line

    def parse(self, text: str, path: Path, source: str) -> LoadResult:
        return LoadResult([single_document(text, path, source, title=path.stem, has_lines=True)])


def single_document(text: str, path: Path, source: str, title: str, has_lines: bool = False) -> Document:
    """The one document of a single-document file; its id is the file name. ``has_lines``: the
    text keeps the file's lines (so chunks get line numbers)."""
    return Document(text=text, source=source, doc_id=path.name, title=title, has_lines=has_lines)
