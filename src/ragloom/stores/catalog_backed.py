"""The ``Store`` methods that a SQLite ``Catalog`` answers the same way for every backend."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..types import SourceRecord
from .base import AuditEntry

if TYPE_CHECKING:  # the embedded package imports this module
    from .embedded.catalog import Catalog


class CatalogBacked:
    """Embedder identity, sources registry and audit log, read from ``self.catalog``."""

    catalog: Catalog

    def embedder_info(self) -> dict[str, Any] | None:
        return self.catalog.get_meta("embedder")

    def set_embedder_info(self, info: dict[str, Any]) -> None:
        with self.catalog.transaction():
            self.catalog.set_meta("embedder", info)

    @property
    def dimension(self) -> int:
        return int((self.embedder_info() or {}).get("dimension", 0))

    def get_source(self, path: str) -> SourceRecord | None:
        return self.catalog.get_source(path)

    def list_sources(self) -> list[SourceRecord]:
        return self.catalog.list_sources()

    def generation(self) -> int | None:
        return self.catalog.generation()

    def log_search(self, entry: AuditEntry) -> str:
        return self.catalog.log_search(entry)

    def recent_searches(self, limit: int) -> list[AuditEntry]:
        return self.catalog.recent_searches(limit)
