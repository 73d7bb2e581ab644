"""The loader interface: one module per file format.

A loader turns one file into documents. It raises ``CorruptDocumentError`` when the
file cannot be parsed; an empty file gives no documents and a warning.
"""

from __future__ import annotations

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
