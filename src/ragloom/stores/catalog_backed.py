"""The catalog role, and the ``Store`` methods a catalog answers the same way for every backend.

A catalog (``SourceCatalog``) keeps the embedder identity and other meta, the sources registry,
the generation and the audit log: the embedded store's SQLite ``Catalog``
(``stores/embedded/catalog.py``), or ``PostgresCatalog`` (``stores/postgres/catalog.py``), which the
postgres store uses and a vector database's store may use instead of SQLite. ``CatalogBacked``
answers those parts of the ``Store`` interface from whichever catalog a store holds.

That includes the audit log: every store keeps its hash chain (``ragloom.audit``) in its catalog,
and every write to the sources registry is chained in the transaction that makes it, so a write
is never in the index without its audit entry.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from ..audit import AuditEvent, ChainReport
from ..types import Chunk, SourceRecord
from .base import AuditEntry
from .sync_state import SyncState


class SourceCatalog(Protocol):
    """Meta, the sources registry, the generation and the audit chain of one index, in one database."""

    #: Opened read-only: every write raises IndexReadOnlyError.
    read_only: bool
    #: The operation (ingest, remove, migrate) the writes belong to, for the audit log.
    operation: dict[str, Any] | None

    def transaction(self) -> contextlib.AbstractContextManager[Any]:
        """One transaction of the catalog's database; the audit entries of the writes inside join it."""

    def get_meta(self, key: str) -> Any: ...

    def set_meta(self, key: str, value: Any) -> None: ...

    def generation(self) -> int:
        """A number every write of the registry bumps."""

    def get_source(self, path: str) -> SourceRecord | None: ...

    def list_sources(self) -> list[SourceRecord]: ...

    def replace_source(self, record: SourceRecord, chunks: Sequence[Chunk], vectors: np.ndarray) -> int:
        """Replace a source (and the chunks the catalog holds of it) in one transaction; return the generation."""

    def delete_source(self, path: str) -> tuple[int, int]:
        """Delete a source and its chunks; return (chunks removed, generation)."""

    def audit_write(self, kind: str, **fields: Any) -> AuditEvent:
        """Chain an entry about a write, inside the transaction that makes it."""

    def log_event(self, kind: str, **fields: Any) -> AuditEvent:
        """Chain an entry in a transaction of its own (an operation's start or end)."""

    def log_search(self, entry: AuditEntry) -> str: ...

    def recent_searches(self, limit: int) -> list[AuditEntry]: ...

    def audit_events(
        self, limit: int, kinds: Sequence[str] | None = None, exclude: Sequence[str] = ()
    ) -> list[AuditEvent]: ...

    def verify_audit(self) -> ChainReport: ...

    def sync_state(self) -> SyncState:
        """Remote sources' cursors, beside the registry."""

    def catalog_database(self) -> sqlite3.Connection | None:
        """The SQLite database, or None for a catalog kept elsewhere (PostgreSQL)."""

    def structures_database(self) -> Any:
        """Where the derived structures keep their tables: the SQLite connection or the PostgreSQL ``Database``."""

    def close(self) -> None: ...


CatalogT = TypeVar("CatalogT", bound=SourceCatalog)


class CatalogBacked(Generic[CatalogT]):
    """Embedder identity, sources registry and audit log, read from ``self.catalog`` (any
    ``SourceCatalog``; a store names its own, ``CatalogBacked[PostgresCatalog]``, to use more of it)."""

    catalog: CatalogT

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

    def catalog_database(self) -> sqlite3.Connection | None:
        return self.catalog.catalog_database()

    def structures_database(self) -> Any:
        """The catalog's database: SQLite, or the PostgreSQL one every replica shares."""
        return self.catalog.structures_database()

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
