"""SQLite, the single source of truth of an index.

Holds the embedder identity, the sources registry, chunks, where each vector is (keyed by
chunk content hash, so identical text is embedded once and a changed file re-embeds only the
chunks that changed: the vectors themselves are in the file ``vectorlog`` describes, the one
copy on disk), and the audit log (a hash chain, see ``ragloom.audit``; each source write is
chained in its own transaction). Every write bumps ``generation``; the
derived indexes (vector matrix, BM25) remember the generation they were built at.
A Catalog opened ``read_only`` refuses every write (SQLite ``mode=ro``).
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
from ...errors import IndexReadOnlyError, IndexReplacedError, StoreError
from ...types import Chunk, SourceRecord
from ..base import AuditEntry
from . import vectorlog
from .connection import connect, immediate_transaction, select_in
from .sync_state import SqliteSyncState

SCHEMA_VERSION = 2  # 2: vectors moved from blobs in `embeddings` to the vector file

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
CREATE TABLE IF NOT EXISTS embeddings (content_hash TEXT PRIMARY KEY, slot INTEGER NOT NULL, checksum INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS staged_chunks (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    source TEXT NOT NULL,
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
CREATE INDEX IF NOT EXISTS staged_chunks_source ON staged_chunks(source);
"""

_CHUNK_COLUMNS = 'row, id, source, doc_id, chunk_index, start, "end", policy, content_hash, token_count, text, metadata'


class CatalogSourceWrite:
    """A source written part by part (``stores.base.SourceWrite``): each part in a short transaction
    of its own into ``staged_chunks`` (its vectors into the vector file, a cache by content), and
    the commit in one more, which moves the staged rows into ``chunks`` in place of the old ones.
    Until then readers see the old version, and no transaction holds SQLite's write lock while the
    parts are embedded (a server's searches log to the same database meanwhile). Rows a crash left
    staged are removed by the next write of the source, or by ``flush``."""

    def __init__(self, catalog: Catalog, record: SourceRecord) -> None:
        self.catalog = catalog
        self.path = record.path
        self._discard()

    def add(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        if len(chunks) != len(vectors):
            raise StoreError(f"{self.path}: {len(chunks)} chunks but {len(vectors)} vectors")
        if not len(chunks):
            return
        with self.catalog.transaction():
            self.catalog._insert_chunks("staged_chunks", self.path, chunks)
            self.catalog._store_vectors([c.content_hash for c in chunks], vectors)

    def commit(self, record: SourceRecord) -> int:
        """Swap the staged chunks in, write the record, chain the audit entry; return the generation."""
        catalog = self.catalog
        with catalog.transaction() as db:
            before = db.execute("SELECT content_hash FROM sources WHERE path = ?", (record.path,)).fetchone()
            db.execute("DELETE FROM chunks WHERE source = ?", (record.path,))
            catalog._write_record(record)
            db.execute(
                f"INSERT INTO chunks({_STAGED_COLUMNS}) SELECT {_STAGED_COLUMNS} FROM staged_chunks"
                " WHERE source = ? ORDER BY seq", (record.path,))
            db.execute("DELETE FROM staged_chunks WHERE source = ?", (record.path,))
            return catalog._committed(record, before)

    def abort(self) -> None:
        self._discard()

    def _discard(self) -> None:
        with self.catalog.transaction() as db:
            db.execute("DELETE FROM staged_chunks WHERE source = ?", (self.path,))


_STAGED_COLUMNS = 'id, source, doc_id, chunk_index, start, "end", policy, content_hash, token_count, text, metadata'


class Catalog:
    """A SQLite database in WAL mode; one connection per Catalog."""

    def __init__(self, path: Path, read_only: bool = False) -> None:
        self.path = path
        self.folder = path.parent
        self._view: tuple[tuple[str, int, int], np.ndarray] | None = None
        self.read_only = read_only
        #: The operation (ingest, remove, migrate) the writes belong to, for the audit log.
        self.operation: dict[str, Any] | None = None
        self.db = connect(path, read_only)
        self._identity = _identity(path)
        if read_only:
            self.db.execute("PRAGMA foreign_keys=ON")
            found = self.get_meta("schema_version") if self._has_table("meta") else None
            self._check_version(found)
            if found is not None and int(found) == 1:
                raise IndexReadOnlyError(
                    f"the index at {self.folder} was written by an older ragloom and must be upgraded once, "
                    "which needs write access; run any ragloom command on it with write permission"
                )
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
            if found is not None and int(found) == 1:
                self._move_blobs_to_vector_file()
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
        self.check_not_replaced()
        with immediate_transaction(self.db) as db:
            yield db

    def check_not_replaced(self) -> None:
        """IndexReplacedError if the database at ``path`` is no longer the one this catalog opened:
        ``ingest --rebuild`` in another process moved it aside and is building a new index there."""
        if _identity(self.path) != self._identity:
            raise IndexReplacedError(
                f"another process is rebuilding the index at {self.folder} (`ingest --rebuild` moved the one this "
                "command opened aside); wait for it to finish, then run this command again"
            )

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
            self._write_record(record)
            self._insert_chunks("chunks", record.path, chunks)
            self._store_vectors([c.content_hash for c in chunks], vectors)
            return self._committed(record, before)

    def _write_record(self, record: SourceRecord) -> None:
        self.db.execute(
            "INSERT INTO sources VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET"
            " content_hash = excluded.content_hash, mtime = excluded.mtime, size = excluded.size,"
            " chunk_count = excluded.chunk_count, ingested_at = excluded.ingested_at, loader = excluded.loader,"
            " policy = excluded.policy",
            (record.path, record.content_hash, record.mtime, record.size, record.chunk_count,
             record.ingested_at, record.loader, record.policy),
        )

    def _committed(self, record: SourceRecord, before: Any) -> int:
        """Chain the write's audit entry and bump the generation (inside its transaction)."""
        self.audit_write(
            "source.updated" if before else "source.added", path=record.path, content_hash=record.content_hash,
            chunk_count=record.chunk_count, previous_hash=before[0] if before else None,
        )
        return self._bump_generation()

    def begin_source(self, record: SourceRecord) -> CatalogSourceWrite:
        """Replace a source part by part, in one transaction kept open until ``commit``."""
        return CatalogSourceWrite(self, record)

    def _insert_chunks(self, table: str, source: str, chunks: Sequence[Chunk]) -> None:
        self.db.executemany(
            f"INSERT INTO {table}(id, source, doc_id, chunk_index, start, \"end\", policy, content_hash,"
            " token_count, text, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(c.id, source, c.doc_id, c.chunk_index, c.start, c.end, c.policy, c.content_hash,
              c.token_count, c.text, json.dumps(c.metadata, sort_keys=True, default=str))
             for c in chunks],
        )

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
            db.execute("DELETE FROM staged_chunks")  # what an interrupted write left (flush runs between writes)
            cursor = db.execute(
                "DELETE FROM embeddings WHERE content_hash NOT IN (SELECT content_hash FROM chunks)"
            )
            return cursor.rowcount

    def cached_vectors(self, content_hashes: Sequence[str], dimension: int) -> dict[str, np.ndarray]:
        """Stored vectors by content hash; one whose bytes fail their checksum counts as missing."""
        found: dict[str, np.ndarray] = {}
        view = self.vector_view()
        if view.shape[1] != dimension:
            return found
        query = "SELECT content_hash, slot, checksum FROM embeddings WHERE content_hash"
        for digest, slot, crc in self._select_in(query, content_hashes):
            if slot < len(view):
                vector = np.array(view[slot])
                if vectorlog.checksum(vector) == crc:
                    found[digest] = vector
        return found

    # -- the vector file ----------------------------------------------------------------------
    def _store_vectors(self, hashes: Sequence[str], vectors: np.ndarray) -> None:
        """Append the vectors of content not stored yet (``hashes``: each vector's content hash) and
        record their slots (inside the caller's transaction: SQLite's write lock makes this process
        the only appender)."""
        known = {h for (h,) in self._select_in("SELECT content_hash FROM embeddings WHERE content_hash", hashes)}
        first: dict[str, int] = {}
        for i, digest in enumerate(hashes):
            if digest not in known and digest not in first:
                first[digest] = i
        if not first:
            return
        block = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32)[list(first.values())])
        dimension = self.get_meta("vector_dimension")
        if dimension is None:
            self.set_meta("vector_dimension", int(block.shape[1]))
        elif int(dimension) != block.shape[1]:
            raise StoreError(f"vectors have dimension {block.shape[1]}, the index holds {dimension}")
        name = self._vector_file()
        committed = int(self.get_meta("vector_slots") or 0)
        slots = vectorlog.append(self.folder / name, committed, block)
        self.db.executemany(
            "INSERT INTO embeddings(content_hash, slot, checksum) VALUES (?, ?, ?)",
            [(h, int(s), vectorlog.checksum(v)) for h, s, v in zip(first, slots, block)],
        )
        self.set_meta("vector_slots", committed + len(block))

    def _vector_file(self) -> str:
        name = self.get_meta("vector_file")
        if name is None:
            name = vectorlog.file_name(0)
            self.set_meta("vector_file", name)
        return str(name)

    def vector_view(self) -> np.ndarray:
        """Every committed slot of the vector file, memory-mapped (dead slots included)."""
        row = self.db.execute(
            "SELECT (SELECT value FROM meta WHERE key = 'vector_file'), (SELECT value FROM meta WHERE key = 'vector_slots'),"
            " (SELECT value FROM meta WHERE key = 'vector_dimension')"
        ).fetchone()
        key = (json.loads(row[0]) if row[0] else "", int(row[1] or 0), int(row[2] or 0))
        if self._view is None or self._view[0] != key:
            try:
                self._view = (key, vectorlog.open_view(self.folder / key[0], key[1], key[2]))
            except StoreError:
                self.check_not_replaced()  # the vector file of the new index, not of this database
                raise
        return self._view[1]

    def tidy_vector_files(self) -> None:
        """Remove what an interrupted write or compaction left; only with the index's write lock held."""
        name = self._vector_file_name()
        for stale in vectorlog.stale_files(self.folder, name):
            stale.unlink(missing_ok=True)
        vectorlog.trim(self.folder / name, int(self.get_meta("vector_slots") or 0),
                       int(self.get_meta("vector_dimension") or 0))

    def _vector_file_name(self) -> str:
        return str(self.get_meta("vector_file") or vectorlog.file_name(0))

    def compact_vectors(self, min_dead: int = 10_000, force: bool = False) -> int:
        """Copy the live vectors to a new file once dead slots outnumber them (and ``min_dead``),
        or whenever there are any (``force``); return how many dead slots were dropped. Only
        with the index's write lock held."""
        total = int(self.get_meta("vector_slots") or 0)
        live = int(self.db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
        if total - live < (1 if force else max(min_dead, live, 1)):
            return 0
        old = self._vector_file_name()
        new = vectorlog.file_name(vectorlog.epoch_of(old) + 1)
        view = self.vector_view()
        order = self.db.execute("SELECT content_hash, slot FROM embeddings ORDER BY slot").fetchall()
        slots = np.fromiter((s for _, s in order), dtype=np.int64, count=len(order))
        (self.folder / new).unlink(missing_ok=True)
        for start in range(0, len(slots), 100_000):
            vectorlog.append(self.folder / new, start, view[slots[start : start + 100_000]])
        with self.transaction() as db:
            db.executemany("UPDATE embeddings SET slot = ? WHERE content_hash = ?",
                           [(i, digest) for i, (digest, _) in enumerate(order)])
            self.set_meta("vector_file", new)
            self.set_meta("vector_slots", len(order))
            self._bump_generation()  # the matrix's slot map changed
        self._view = None
        (self.folder / old).unlink(missing_ok=True)
        return total - live

    def _move_blobs_to_vector_file(self) -> None:
        """Schema 1 kept each vector as a blob in ``embeddings`` (and the matrix kept a second
        copy); move them to the vector file, inside the opening transaction."""
        columns = {r[1] for r in self.db.execute("PRAGMA table_info(embeddings)")}
        if "vector" in columns:
            old = self.db.execute("SELECT content_hash, vector FROM embeddings ORDER BY rowid").fetchall()
            self.db.execute("ALTER TABLE embeddings RENAME TO embeddings_v1")
            self.db.execute(
                "CREATE TABLE embeddings (content_hash TEXT PRIMARY KEY, slot INTEGER NOT NULL, checksum INTEGER NOT NULL)"
            )
            self.db.execute("DROP TABLE embeddings_v1")
            dimensions = {len(blob) // 4 for _, blob in old}
            if len(dimensions) > 1:  # a vector of another model: keep the index's own
                keep = max(dimensions, key=lambda d: sum(len(b) // 4 == d for _, b in old))
                old = [(h, b) for h, b in old if len(b) // 4 == keep]
            if old:
                (self.folder / vectorlog.file_name(0)).unlink(missing_ok=True)
                self._store_vectors(
                    [h for h, _ in old],
                    np.stack([np.frombuffer(b, dtype=np.float32) for _, b in old]),
                )
        self.set_meta("schema_version", SCHEMA_VERSION)
        self._bump_generation()  # derived caches of schema 1 hold a copy of the vectors: rebuild

    # -- chunks -------------------------------------------------------------------------
    def count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        rows = self._select_in(f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE id", chunk_ids)
        by_id = {row[1]: _chunk_from_row(row) for row in rows}
        return [by_id[i] for i in chunk_ids if i in by_id]

    def _select_in(self, query: str, keys: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        return select_in(self.db, query, keys)

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

    def iter_slots(self, batch: int = 100_000) -> Iterator[tuple[np.ndarray, list[str], np.ndarray]]:
        """(rows, chunk ids, vector slots) in row order, in batches."""
        cursor = self.db.execute(
            "SELECT c.row, c.id, e.slot FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash"
            " ORDER BY c.row"
        )
        while True:
            part = cursor.fetchmany(batch)
            if not part:
                return
            rows = np.fromiter((r[0] for r in part), dtype=np.int64, count=len(part))
            slots = np.fromiter((r[2] for r in part), dtype=np.int64, count=len(part))
            yield rows, [r[1] for r in part], slots

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
            return audit.append(db, entry.chain_fields()).id

    def recent_searches(self, limit: int) -> list[AuditEntry]:
        return [AuditEntry.from_event(event) for event in self.audit_events(limit, ["search"])]

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
            audit.append(self.db, AuditEntry(
                query=query, mode=mode, k=k, filters=json.loads(filters), parameters=json.loads(params), hits=hits,
                elapsed_ms=elapsed, created_at=created, id=sid, embedder=embedder, extra={"imported": True},
            ).chain_fields())
        if rows:
            self.db.execute("DELETE FROM search_hits")
            self.db.execute("DELETE FROM searches")

    def catalog_database(self) -> sqlite3.Connection:
        return self.db

    def structures_database(self) -> sqlite3.Connection:
        """The derived structures' tables are in this database, beside the chunks they come from."""
        return self.db

    def close(self) -> None:
        self.db.close()

    def sync_state(self) -> SqliteSyncState:
        """Remote sources' cursors, in tables of this database (``stores/sync_state.py``)."""
        return SqliteSyncState(self.path, self.read_only)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _split(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _chunk_from_row(row: Sequence[Any]) -> Chunk:
    _, cid, source, doc_id, index, start, end, policy, digest, tokens, text, metadata = row
    return Chunk(id=cid, text=text, source=source, doc_id=doc_id, chunk_index=index, start=start, end=end,
                 policy=policy, content_hash=digest, token_count=tokens, metadata=json.loads(metadata))
