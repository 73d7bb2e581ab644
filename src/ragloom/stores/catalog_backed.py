"""The ``Store`` methods that a SQLite ``Catalog`` answers the same way for every backend.

That includes the audit log: every store keeps its hash chain (``ragloom.audit``) in
its catalog, and every write to the sources registry is chained in the transaction
that makes it, so a write is never in the index without its audit entry.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..audit import AuditEvent, ChainReport
from ..types import SourceRecord
from .base import AuditEntry
from .sync_state import SyncState

if TYPE_CHECKING:  # the embedded package imports this module
    from .embedded.catalog import Catalog


class CatalogBacked:
    """Embedder identity, sources registry and audit log, read from ``self.catalog``."""

    catalog: Catalog

    @property
    def read_only(self) -> bool:
        return self.catalog.read_only

    def embedder_info(self) -> dict[str, Any] | None:
        return self.catalog.get_meta("embedder")

    def set_embedder_info(self, info: dict[str, Any]) -> None:
        with self.catalog.transaction():
            self.catalog.set_meta("embedder", info)
            self.catalog.audit_write("embedder.set", model_id=info.get("model_id"), dimension=info.get("dimension"))

    @property
    def dimension(self) -> int:
        return int((self.embedder_info() or {}).get("dimension", 0))

    def get_source(self, path: str) -> SourceRecord | None:
        return self.catalog.get_source(path)

    def ingest_roots(self) -> list[str]:
        return list(self.catalog.get_meta("ingest_roots") or [])

    def add_ingest_roots(self, roots: Sequence[str]) -> None:
        known = self.ingest_roots()
        new = [root for root in roots if root not in known]
        if new:
            with self.catalog.transaction():
                self.catalog.set_meta("ingest_roots", known + new)

    def list_sources(self) -> list[SourceRecord]:
        return self.catalog.list_sources()

    def catalog_database(self) -> sqlite3.Connection:
        return self.catalog.db

    def sync_state(self) -> SyncState:
        """Remote sources' cursors, beside the sources registry (SQLite, or the PostgreSQL schema)."""
        return self.catalog.sync_state()

    def generation(self) -> int | None:
        return self.catalog.generation()

    def log_search(self, entry: AuditEntry) -> str:
        return self.catalog.log_search(entry)

    def recent_searches(self, limit: int) -> list[AuditEntry]:
        return self.catalog.recent_searches(limit)

    def audit_events(
        self, limit: int, kinds: Sequence[str] | None = None, exclude: Sequence[str] = ()
    ) -> list[AuditEvent]:
        return self.catalog.audit_events(limit, kinds, exclude)

    def verify_audit(self) -> ChainReport:
        return self.catalog.verify_audit()

    @contextlib.contextmanager
    def audited(self, kind: str, parameters: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """Group the writes made inside under one operation of the audit log: an entry ``kind``
        with the parameters first, then ``kind.done`` with the summary the caller fills in
        (the yielded dict), or ``kind.failed`` with the error."""
        start = self.catalog.log_event(kind, parameters=dict(parameters))
        self.catalog.operation = {"id": start.id, "kind": kind}
        summary: dict[str, Any] = {}
        try:
            yield summary
        except BaseException as exc:
            with contextlib.suppress(Exception):
                self.catalog.log_event(f"{kind}.failed", error=f"{type(exc).__name__}: {exc}")
            raise
        else:
            self.catalog.log_event(f"{kind}.done", summary=summary)
        finally:
            self.catalog.operation = None
