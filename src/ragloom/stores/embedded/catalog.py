"""SQLite, the single source of truth of an index.

Holds the embedder identity, the sources registry, chunks, vectors (keyed by chunk
content hash, so identical text is embedded once and a changed file re-embeds only the
chunks that changed), and the audit log. Every write bumps ``generation``; the
derived indexes (vector matrix, BM25) remember the generation they were built at.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ... import audit
from ...errors import IndexReadOnlyError, StoreError
from ...types import Chunk, SourceRecord
from ..base import AuditEntry
from .connection import connect

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sources (
    path TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    mtime REAL NOT NULL,
    size INTEGER NOT NULL,
    chunk_count INTEGER NOT NULL,
    ingested_at REAL NOT NULL,
    loader TEXT NOT NULL DEFAULT '',
    policy TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS chunks (
    row INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    source TEXT NOT NULL REFERENCES sources(path) ON DELETE CASCADE,
    doc_id TEXT NOT NULL,
    chunk_index INTEGER NOT NULL,
    start INTEGER NOT NULL,
    "end" INTEGER NOT NULL,
    policy TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    token_count INTEGER NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_source ON chunks(source);
CREATE INDEX IF NOT EXISTS chunks_hash ON chunks(content_hash);
CREATE TABLE IF NOT EXISTS embeddings (content_hash TEXT PRIMARY KEY, vector BLOB NOT NULL);
"""

_CHUNK_COLUMNS = 'row, id, source, doc_id, chunk_index, start, "end", policy, content_hash, token_count, text, metadata'


class Catalog:
    """A SQLite database in WAL mode; one connection per Catalog."""

    def __init__(self, path: Path, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        #: The operation (ingest, remove, migrate) the writes belong to, for the audit log.
        self.operation: dict[str, Any] | None = None
        self.db = connect(path, read_only)
        if read_only:
            self.db.execute("PRAGMA foreign_keys=ON")
            self._check_version(self.get_meta("schema_version") if self._has_table("meta") else None)
            return
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        with self.transaction():
            for statement in _split(_SCHEMA) + _split(audit.SCHEMA):
                self.db.execute(statement)
            found = self.get_meta("schema_version")
            if found is None:
                self.set_meta("schema_version", SCHEMA_VERSION)
                self.set_meta("generation", 0)
            self._check_version(found)
            self._import_legacy_searches()

    def _check_version(self, found: Any) -> None:
        if found is not None and int(found) > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer ragloom (schema {found}); upgrade ragloom to read it"
            )

    def _has_table(self, name: str) -> bool:
        return self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() \
            is not None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        if self.read_only:
            raise IndexReadOnlyError(
                f"the index at {self.path.parent} is open read-only; writing needs write permission on it"
            )
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        else:
            self.db.execute("COMMIT")

    # -- meta ---------------------------------------------------------------------------
    def get_meta(self, key: str) -> Any:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def set_meta(self, key: str, value: Any) -> None:
        self.db.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value)),
        )

    def generation(self) -> int:
        return int(self.get_meta("generation") or 0)

    def _bump_generation(self) -> int:
        generation = self.generation() + 1
        self.set_meta("generation", generation)
        return generation

    # -- sources ------------------------------------------------------------------------
    def get_source(self, path: str) -> SourceRecord | None:
        row = self.db.execute("SELECT * FROM sources WHERE path = ?", (path,)).fetchone()
        return None if row is None else SourceRecord(*row)

    def list_sources(self) -> list[SourceRecord]:
        return [SourceRecord(*row) for row in self.db.execute("SELECT * FROM sources ORDER BY path")]

    def replace_source(self, record: SourceRecord, chunks: Sequence[Chunk], vectors: np.ndarray) -> int:
        """Replace a source, its chunks and their vectors in one transaction; return the generation."""
        if len(chunks) != len(vectors):
            raise StoreError(f"{record.path}: {len(chunks)} chunks but {len(vectors)} vectors")
        with self.transaction() as db:
            before = db.execute("SELECT content_hash FROM sources WHERE path = ?", (record.path,)).fetchone()
            db.execute("DELETE FROM chunks WHERE source = ?", (record.path,))
            db.execute(
                "INSERT OR REPLACE INTO sources VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (record.path, record.content_hash, record.mtime, record.size, record.chunk_count,
                 record.ingested_at, record.loader, record.policy),
            )
            db.executemany(
                "INSERT INTO chunks(id, source, doc_id, chunk_index, start, \"end\", policy, content_hash,"
                " token_count, text, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(c.id, record.path, c.doc_id, c.chunk_index, c.start, c.end, c.policy, c.content_hash,
                  c.token_count, c.text, json.dumps(c.metadata, sort_keys=True, default=str))
                 for c in chunks],
            )
            db.executemany(
                "INSERT OR IGNORE INTO embeddings(content_hash, vector) VALUES (?, ?)",
                [(c.content_hash, np.asarray(v, dtype=np.float32).tobytes()) for c, v in zip(chunks, vectors)],
            )
            self.audit_write(
                "source.updated" if before else "source.added", path=record.path, content_hash=record.content_hash,
                chunk_count=record.chunk_count, previous_hash=before[0] if before else None,
            )
            return self._bump_generation()

    def delete_source(self, path: str) -> tuple[int, int]:
        """Delete a source and its chunks; return (chunks removed, generation)."""
        with self.transaction() as db:
            removed = db.execute("SELECT COUNT(*) FROM chunks WHERE source = ?", (path,)).fetchone()[0]
            before = db.execute("SELECT content_hash, chunk_count FROM sources WHERE path = ?", (path,)).fetchone()
            db.execute("DELETE FROM chunks WHERE source = ?", (path,))
            db.execute("DELETE FROM sources WHERE path = ?", (path,))
            if before is not None:
                self.audit_write("source.removed", path=path, content_hash=before[0], chunk_count=before[1])
            return removed, self._bump_generation()

    def prune_embeddings(self) -> int:
        """Drop vectors no chunk uses any more."""
        with self.transaction() as db:
            cursor = db.execute(
                "DELETE FROM embeddings WHERE content_hash NOT IN (SELECT content_hash FROM chunks)"
            )
            return cursor.rowcount

    def cached_vectors(self, content_hashes: Sequence[str], dimension: int) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        query = "SELECT content_hash, vector FROM embeddings WHERE content_hash"
        for digest, blob in self._select_in(query, content_hashes):
            vector = np.frombuffer(blob, dtype=np.float32)
            if vector.shape[0] == dimension:
                found[digest] = vector
        return found

    # -- chunks -------------------------------------------------------------------------
    def count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        rows = self._select_in(f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE id", chunk_ids)
        by_id = {row[1]: _chunk_from_row(row) for row in rows}
        return [by_id[i] for i in chunk_ids if i in by_id]

    def _select_in(self, query: str, keys: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        """Rows of ``query + " IN (...)"`` over the distinct ``keys``, in batches SQLite accepts."""
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            batch = unique[start : start + 500]
            yield from self.db.execute(f"{query} IN ({','.join('?' * len(batch))})", batch)

    def iter_chunks(self, source: str | None = None) -> Iterator[tuple[int, Chunk]]:
        """(row, chunk) pairs in row order, of one source or of all."""
        if source is None:
            cursor = self.db.execute(f"SELECT {_CHUNK_COLUMNS} FROM chunks ORDER BY row")
        else:
            cursor = self.db.execute(
                f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE source = ? ORDER BY row", (source,)
            )
        for row in cursor:
            yield row[0], _chunk_from_row(row)

    def iter_vectors(self, batch: int = 20000) -> Iterator[tuple[np.ndarray, list[str], np.ndarray]]:
        """(rows, chunk ids, vectors) in row order, in batches."""
        cursor = self.db.execute(
            "SELECT c.row, c.id, e.vector FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash"
            " ORDER BY c.row"
        )
        while True:
            part = cursor.fetchmany(batch)
            if not part:
                return
            rows = np.fromiter((r[0] for r in part), dtype=np.int64, count=len(part))
            ids = [r[1] for r in part]
            vectors = np.frombuffer(b"".join(r[2] for r in part), dtype=np.float32).reshape(len(part), -1)
            yield rows, ids, vectors

    # -- audit --------------------------------------------------------------------------
    def audit_write(self, kind: str, **fields: Any) -> audit.AuditEvent:
        """Chain an entry about a write; call inside the transaction that makes the write."""
        embedder = (self.get_meta("embedder") or {}).get("model_id", "")
        operation = self.operation or {}
        return audit.append(self.db, audit.new_entry(
            kind, embedder=embedder, operation=operation.get("id"), **fields))

    def log_event(self, kind: str, **fields: Any) -> audit.AuditEvent:
        """Chain an entry in a transaction of its own (an operation's start or end)."""
        with self.transaction():
            return self.audit_write(kind, **fields)

    def log_search(self, entry: AuditEntry) -> str:
        with self.transaction() as db:
            return audit.append(db, _search_entry(entry)).id

    def recent_searches(self, limit: int) -> list[AuditEntry]:
        return [search_from_event(event) for event in self.audit_events(limit, ["search"])]

    def audit_events(
        self, limit: int, kinds: Sequence[str] | None = None, exclude: Sequence[str] = ()
    ) -> list[audit.AuditEvent]:
        if not self._has_table("audit_log"):  # an index from before the chain, opened read-only
            return []
        return audit.recent(self.db, limit, kinds, exclude)

    def verify_audit(self) -> audit.ChainReport:
        if not self._has_table("audit_log"):
            return audit.ChainReport(0, audit.GENESIS)
        return audit.verify_chain(self.db, self.get_meta(audit.HEAD_KEY))

    def _import_legacy_searches(self) -> None:
        """Move searches logged before the hash chain existed into it, oldest first."""
        if not self._has_table("searches"):
            return
        rows = self.db.execute(
            "SELECT id, created_at, query, mode, k, filters, parameters, embedder, elapsed_ms FROM searches"
            " ORDER BY created_at, rowid"
        ).fetchall()
        for sid, created, query, mode, k, filters, params, embedder, elapsed in rows:
            hits = [
                {"rank": r, "chunk_id": c, "score": sc, "source": src}
                for r, c, sc, src in self.db.execute(
                    "SELECT rank, chunk_id, score, source FROM search_hits WHERE search_id = ? ORDER BY rank", (sid,)
                ).fetchall()
            ]
            audit.append(self.db, _search_entry(AuditEntry(
                query=query, mode=mode, k=k, filters=json.loads(filters), parameters=json.loads(params), hits=hits,
                elapsed_ms=elapsed, created_at=created, id=sid, embedder=embedder, extra={"imported": True})))
        if rows:
            self.db.execute("DELETE FROM search_hits")
            self.db.execute("DELETE FROM searches")

    def close(self) -> None:
        self.db.close()


def _split(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _chunk_from_row(row: Sequence[Any]) -> Chunk:
    _, cid, source, doc_id, index, start, end, policy, digest, tokens, text, metadata = row
    return Chunk(id=cid, text=text, source=source, doc_id=doc_id, chunk_index=index, start=start, end=end,
                 policy=policy, content_hash=digest, token_count=tokens, metadata=json.loads(metadata))


def _search_entry(entry: AuditEntry) -> dict[str, Any]:
    fields = audit.new_entry(
        "search", embedder=entry.embedder, query=entry.query, mode=entry.mode, k=entry.k, filters=entry.filters,
        parameters=entry.parameters, hits=entry.hits, elapsed_ms=entry.elapsed_ms, extra=entry.extra,
    )
    if entry.id:
        fields["id"] = entry.id
    if entry.created_at:
        fields["created_at"] = entry.created_at
    return fields


def search_from_event(event: audit.AuditEvent) -> AuditEntry:
    e = event.entry
    return AuditEntry(
        query=e.get("query", ""), mode=e.get("mode", ""), k=int(e.get("k", 0)), filters=e.get("filters") or {},
        parameters=e.get("parameters") or {}, hits=e.get("hits") or [], elapsed_ms=float(e.get("elapsed_ms", 0.0)),
        created_at=event.created_at, id=event.id, embedder=e.get("embedder", ""), extra=e.get("extra") or {},
    )
