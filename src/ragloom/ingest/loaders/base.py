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

from ...types import Document


@dataclass
class LoadResult:
    documents: list[Document]
    warnings: list[str] = field(default_factory=list)


class Loader(ABC):
    #: Registry name.
    name: str = ""
    #: Lower-case extensions, with the dot, that this loader reads.
    extensions: tuple[str, ...] = ()

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
