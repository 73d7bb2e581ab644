"""Meta, the sources registry and the generation, in PostgreSQL: a ``SourceCatalog``
(``stores/catalog_backed.py``), as the embedded store's SQLite ``Catalog`` is, so ``CatalogBacked``
answers for both.

A source is replaced in one transaction (registry row, chunks, vectors, postings, lexical
statistics, audit entry, generation): a crash or a lost connection rolls all of it back,
so the transaction is the write journal. Two replicas writing the same source are
serialized by the index's write lock and leave the last version, whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

import numpy as np

from ...audit import AuditEvent, ChainReport, new_entry
from ...errors import StoreError
from ...types import Chunk, SourceRecord
from ..base import AuditEntry
from . import audit as chain
from . import chunks as chunk_rows
from .address import parse_address
from .database import Database, exists
from .jobs import PostgresJobs
from .sync_state import PostgresSyncState

_SOURCE_COLUMNS = "path, content_hash, mtime, size, chunk_count, ingested_at, loader, policy"


class _Aborted(Exception):
    """Thrown into a part-by-part write's transaction to roll it back."""


class PostgresSourceWrite:
    """A source written part by part in one transaction (``stores.base.SourceWrite``): every call
    comes from the thread that began it, whose transaction it joins."""

    def __init__(self, catalog: PostgresCatalog, record: SourceRecord) -> None:
        self.catalog = catalog
        self.path = record.path
        self._stack = ExitStack()
        self.connection = self._stack.enter_context(catalog.transaction())
        try:
            self.before = self.connection.execute(
                "SELECT content_hash FROM sources WHERE path = %s", (record.path,)).fetchone()
            chunk_rows.remove(self.connection, record.path)
            self._write_record(record)
        except BaseException:
            self.abort()
            raise

    def _write_record(self, record: SourceRecord) -> None:
        self.connection.execute(
            f"INSERT INTO sources({_SOURCE_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (path) DO UPDATE SET content_hash = excluded.content_hash, mtime = excluded.mtime,"
            " size = excluded.size, chunk_count = excluded.chunk_count, ingested_at = excluded.ingested_at,"
            " loader = excluded.loader, policy = excluded.policy",
            (record.path, record.content_hash, record.mtime, record.size, record.chunk_count,
             record.ingested_at, record.loader, record.policy),
        )

    def add(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        if len(chunks) != len(vectors):
            raise StoreError(f"{self.path}: {len(chunks)} chunks but {len(vectors)} vectors")
        chunk_rows.write(self.connection, self.path, chunks, vectors, self.catalog.database.language)

    def commit(self, record: SourceRecord) -> int:
        try:
            self._write_record(record)
            self.catalog.audit_write(
                "source.updated" if self.before else "source.added", path=record.path,
                content_hash=record.content_hash, chunk_count=record.chunk_count,
                previous_hash=self.before[0] if self.before else None,
            )
            generation = self.catalog._bump_generation(self.connection)
        except BaseException:
            self.abort()
            raise
        self._stack.close()
        return generation

    def abort(self) -> None:
        self._stack.__exit__(_Aborted, _Aborted(), None)


class PostgresCatalog:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.read_only = database.read_only
        #: The operation (ingest, remove, migrate) the writes belong to, for the audit log.
        self.operation: dict[str, Any] | None = None

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        with self.database.transaction() as connection:
            yield connection

    # -- meta ---------------------------------------------------------------------------------
    def get_meta(self, key: str) -> Any:
        with self.database.connection() as connection:
            row = connection.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, key: str, value: Any) -> None:
        with self.database.transaction() as connection:
            connection.execute(
                "INSERT INTO meta(key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, json.dumps(value)),
            )

    def generation(self) -> int:
        return int(self.get_meta("generation") or 0)

    def _bump_generation(self, connection: Any) -> int:
        row = connection.execute(
            "UPDATE meta SET value = to_jsonb(value::text::bigint + 1) WHERE key = 'generation' RETURNING value"
        ).fetchone()
        return int(row[0])

    # -- sources ------------------------------------------------------------------------------
    def get_source(self, path: str) -> SourceRecord | None:
        with self.database.connection() as connection:
            row = connection.execute(f"SELECT {_SOURCE_COLUMNS} FROM sources WHERE path = %s", (path,)).fetchone()
        return None if row is None else SourceRecord(*row)

    def list_sources(self) -> list[SourceRecord]:
        with self.database.connection() as connection:
            rows = connection.execute(f"SELECT {_SOURCE_COLUMNS} FROM sources ORDER BY path").fetchall()
        return [SourceRecord(*row) for row in rows]

    def replace_source(self, record: SourceRecord, chunks: Sequence[Chunk], vectors: np.ndarray) -> int:
        """Replace a source, its chunks and their vectors in one transaction; return the generation."""
        write = self.begin_source(record)
        try:
            write.add(chunks, vectors)
        except BaseException:
            write.abort()
            raise
        return write.commit(record)

    def begin_source(self, record: SourceRecord) -> PostgresSourceWrite:
        """Replace a source part by part, in one transaction kept open (on this thread) until ``commit``."""
        return PostgresSourceWrite(self, record)

    def delete_source(self, path: str) -> tuple[int, int]:
        """Delete a source and its chunks; return (chunks removed, generation)."""
        with self.transaction() as connection:
            before = connection.execute(
                "SELECT content_hash, chunk_count FROM sources WHERE path = %s", (path,)).fetchone()
            removed = chunk_rows.remove(connection, path)
            connection.execute("DELETE FROM sources WHERE path = %s", (path,))
            if before is not None:
                self.audit_write("source.removed", path=path, content_hash=before[0], chunk_count=before[1])
            return removed, self._bump_generation(connection)

    # -- audit --------------------------------------------------------------------------------
    def audit_write(self, kind: str, **fields: Any) -> AuditEvent:
        """Chain an entry about a write, inside the transaction that makes it."""
        with self.transaction() as connection:
            embedder = (self.get_meta("embedder") or {}).get("model_id", "")
            operation = self.operation or {}
            entry = new_entry(kind, embedder=embedder, operation=operation.get("id"), **fields)
            return chain.append(connection, entry, self.database.audit_key)

    def log_event(self, kind: str, **fields: Any) -> AuditEvent:
        return self.audit_write(kind, **fields)

    def log_search(self, entry: AuditEntry) -> str:
        with self.database.audit_transaction() as connection:
            return chain.append(connection, entry.chain_fields(), self.database.audit_key).id

    def recent_searches(self, limit: int) -> list[AuditEntry]:
        return [AuditEntry.from_event(event) for event in self.audit_events(limit, ["search"])]

    def audit_events(self, limit: int, kinds: Sequence[str] | None = None, exclude: Sequence[str] = ()) -> list[AuditEvent]:
        with self.database.connection() as connection:
            return chain.recent(connection, limit, kinds, exclude)

    def verify_audit(self) -> ChainReport:
        with self.database.connection() as connection:
            return chain.verify(connection)

    def catalog_database(self) -> None:
        """No SQLite database: the derived structures live in this schema (``structures_database``)."""
        return None

    def structures_database(self) -> Database:
        """The index's schema, whose tables include the derived structures' (``schema.py``)."""
        return self.database

    def close(self) -> None:
        self.database.close()

    def sync_state(self) -> PostgresSyncState:
        """Remote sources' cursors, in tables of this schema (``stores/sync_state.py``)."""
        return PostgresSyncState(self.database)


def open_postgres_catalog(url: str, read_only: bool = False) -> PostgresCatalog:
    """A catalog in PostgreSQL for a store whose chunks live elsewhere (Qdrant, Chroma)."""
    return PostgresCatalog(Database(parse_address(url), read_only=read_only))


def catalog_exists(url: str) -> bool:
    return exists(parse_address(url))


def catalog_jobs(url: str) -> PostgresJobs:
    return PostgresJobs(url, parse_address(url).index)
