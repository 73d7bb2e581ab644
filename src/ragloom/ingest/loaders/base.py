"""The loader interface: one module per file format.

A loader turns one file into documents. It raises ``CorruptDocumentError`` when the
file cannot be parsed; an empty file gives no documents and a warning.

An ingest reads each file once and hands its bytes to ``load_bytes``, so the text indexed is
the text of the bytes whose hash is recorded, even when the file is replaced meanwhile.
"""

from __future__ import annotations

import tempfile
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ...types import Document


@dataclass
class LoadResult:
    documents: list[Document]
    warnings: list[str] = field(default_factory=list)
    #: Counts an ingest adds up and reports (``ocr_pages``, ``tables``).
    stats: dict[str, int] = field(default_factory=dict)
    #: Set when the file is not worth indexing (minified, generated): the ingest reports it as
    #: skipped, with this reason, and stores nothing for it.
    skip_reason: str | None = None
    #: What the read lacked (``tesseract``, ``module:<name>``): the text is incomplete until it is
    #: installed, and the file is read again at the first ingest after it is (``ingest/incomplete.py``).
    incomplete: str | None = None


@dataclass(frozen=True)
class LoaderOptions:
    """The ``ingest`` settings loaders read (OCR of scans and images)."""

    ocr: Literal["auto", "always", "never"] = "auto"
    ocr_languages: str = "eng"
    ocr_dpi: int = 200


class Loader(ABC):
    #: Registry name.
    name: str = ""
    #: Lower-case extensions, with the dot, that this loader reads.
    extensions: tuple[str, ...] = ()
    #: Raised when the text a loader makes of the same file changes, so files are read again.
    version: int = 1
    #: Parsed in a worker process under ``ingest.parse_memory_mb`` and ``parse_timeout_s``
    #: (``ingest/sandbox.py``): every format a library parses. Plain text is decoded in-process.
    sandboxed: bool = True

    def __init__(self, options: LoaderOptions | None = None) -> None:
        self.options = options or LoaderOptions()

    def policy(self) -> str:
        """What, besides the file's bytes, decides the text: part of every source's policy."""
        return f"{self.name}/v{self.version}" if self.version > 1 else ""

    @abstractmethod
    def load(self, path: Path, source: str) -> LoadResult:
        """Read ``path``; ``source`` is the id the documents carry (the resolved path)."""

    def load_bytes(self, data: bytes, path: Path, source: str) -> LoadResult:
        """Documents of ``data``, the content of ``path`` as already read. A loader that only
        reads files is given a private copy of ``data`` under the same file name."""
        with tempfile.TemporaryDirectory(prefix="ragloom-load-") as folder:
            copy = Path(folder) / path.name
            copy.write_bytes(data)
            return self.load(copy, source)
