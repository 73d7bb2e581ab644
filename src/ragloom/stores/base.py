"""The store interface every backend implements.

A store keeps, for one index: the embedder identity, the registry of ingested sources,
their chunks and vectors, a vector cache keyed by chunk content hash, and the audit
log. Scores are "higher is better": cosine similarity for dense search, BM25 for
lexical search. Ties are broken by chunk id, ascending, so results are deterministic.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from .. import registry
from ..audit import AuditEvent, ChainReport, new_entry
from ..config import Config
from ..errors import IndexLockedError, IndexReadOnlyError, StoreError
from ..filters import Condition, matches, value_kinds
from ..types import Chunk, SourceRecord

if TYPE_CHECKING:
    from .jobs import JobQueue
    from .sync_state import SyncState
    from pydantic import BaseModel


@dataclass(frozen=True, order=True)
class Candidate:
    """A chunk id with one retriever's score."""

    chunk_id: str
    score: float


def rank_candidates(candidates: Sequence[Candidate], k: int | None = None) -> list[Candidate]:
    """Sort by score descending, then chunk id ascending (the tie-break rule)."""
    ordered = sorted(candidates, key=lambda c: (-c.score, c.chunk_id))
    return ordered if k is None else ordered[:k]


@dataclass
class AuditEntry:
    """One search as the audit log records it."""

    query: str
    mode: str
    k: int
    filters: dict[str, Any]
    parameters: dict[str, Any]
    hits: list[dict[str, Any]]  # rank, chunk_id, score, source
    elapsed_ms: float
    created_at: float
    id: str = ""
    embedder: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def chain_fields(self) -> dict[str, Any]:
        """The search as an entry of the audit chain (``audit.new_entry``), whichever store keeps it."""
        fields = new_entry(
            "search", embedder=self.embedder, query=self.query, mode=self.mode, k=self.k, filters=self.filters,
            parameters=self.parameters, hits=self.hits, elapsed_ms=self.elapsed_ms, extra=self.extra,
        )
        if self.id:
            fields["id"] = self.id
        if self.created_at:
            fields["created_at"] = self.created_at
        return fields

    @classmethod
    def from_event(cls, event: AuditEvent) -> AuditEntry:
        """A search read back from the audit chain."""
        e = event.entry
        return cls(
            query=e.get("query", ""), mode=e.get("mode", ""), k=int(e.get("k", 0)), filters=e.get("filters") or {},
            parameters=e.get("parameters") or {}, hits=e.get("hits") or [], elapsed_ms=float(e.get("elapsed_ms", 0.0)),
            created_at=event.created_at, id=event.id, embedder=e.get("embedder", ""), extra=e.get("extra") or {},
        )


class SourceWrite:
    """One source replaced part by part (a file too large to hold whole): ``add`` each part's
    chunks and vectors in order, then ``commit`` the source's record. Until the commit nothing of
    the new version is visible and the earlier one stays; ``abort`` (or a crash) leaves it so. (A
    store without transactions, a vector database, may instead drop the source whole on an abort
    or a crash, so that the next ingest reads it again: never half of it.)

    This default gathers the parts and writes them with ``replace_source`` at the commit, so its
    memory grows with the source; a store that can hold a write open (a transaction, a journal)
    overrides ``SourceRegistry.begin_source`` with one that does not."""

    def __init__(self, registry: SourceRegistry, record: SourceRecord) -> None:
        self.registry = registry
        self._chunks: list[Chunk] = []
        self._vectors: list[np.ndarray] = []

    def add(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        self._chunks.extend(chunks)
        self._vectors.append(np.asarray(vectors, dtype=np.float32).reshape(len(chunks), -1))

    def commit(self, record: SourceRecord) -> None:
        vectors = np.concatenate(self._vectors) if self._vectors else np.zeros((0, 0), dtype=np.float32)
        chunks, self._chunks, self._vectors = self._chunks, [], []
        self.registry.replace_source(record, chunks, vectors)

    def abort(self) -> None:
        self._chunks, self._vectors = [], []


class SourceRegistry(ABC):
    """What an index holds and who made it: the embedder identity, the ingested sources (each
    replaced or deleted whole) and the vectors already computed, by chunk content hash."""

    @abstractmethod
    def embedder_info(self) -> dict[str, Any] | None:
        """The embedder recorded when the index was created (model_id, dimension, config)."""

    @abstractmethod
    def set_embedder_info(self, info: dict[str, Any]) -> None:
        """Record the embedder; called once, when the first source is written."""

    @abstractmethod
    def get_source(self, path: str) -> SourceRecord | None: ...

    @abstractmethod
    def list_sources(self) -> list[SourceRecord]: ...

    @abstractmethod
    def replace_source(
        self, record: SourceRecord, chunks: Sequence[Chunk], vectors: np.ndarray
    ) -> None:
        """Atomically replace everything stored for ``record.path`` with these chunks."""

    def begin_source(self, record: SourceRecord) -> SourceWrite:
        """Start replacing ``record.path`` part by part (see ``SourceWrite``); ``record`` is the
        source as known when its first part is ready (its ``chunk_count`` comes at the commit)."""
        return SourceWrite(self, record)

    @abstractmethod
    def delete_source(self, path: str) -> int:
        """Remove a source and its chunks; return how many chunks went."""

    @abstractmethod
    def cached_vectors(self, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Vectors already computed for chunks with these content hashes."""

    def ingest_roots(self) -> list[str]:
        """The folders ingests were given, which sources are shown relative to (``ragloom.display``)."""
        return []

    def add_ingest_roots(self, roots: Sequence[str]) -> None:  # noqa: B027 - optional hook
        """Remember more such folders; a store that cannot shows its sources' full paths."""


class ChunkSearch(ABC):
    """Reading the chunks back and searching them: by vector, by BM25, or both."""

    @abstractmethod
    def count(self) -> int:
        """Number of chunks."""

    @abstractmethod
    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The chunks with these ids, in the order asked (missing ids are left out)."""

    @abstractmethod
    def search_dense(
        self, vector: np.ndarray, k: int, conditions: Sequence[Condition] = ()
    ) -> list[Candidate]:
        """Top ``k`` chunks by cosine similarity among those matching every condition."""

    @abstractmethod
    def search_lexical(
        self, query: str, k: int, conditions: Sequence[Condition] = ()
    ) -> list[Candidate]:
        """Top ``k`` chunks by BM25 among those matching every condition."""

    @abstractmethod
    def dense_scores(self, vector: np.ndarray, chunk_ids: Sequence[str]) -> dict[str, float]:
        """Cosine similarity of ``vector`` to each of these chunks (for fusion)."""

    def search_both(
        self, vector: np.ndarray, query: str, k: int, conditions: Sequence[Condition] = ()
    ) -> tuple[list[Candidate], list[Candidate]]:
        """Dense and BM25 top ``k`` for one query (hybrid search); a store that can run the two
        at once overrides this."""
        return self.search_dense(vector, k, conditions), self.search_lexical(query, k, conditions)

    def export_source(self, path: str) -> tuple[list[Chunk], np.ndarray]:
        """Every chunk of one source with its vector, in document order (for ``migrate``)."""
        raise StoreError(
            f"the {_name(self)} store cannot list a source's chunks; "
            "give it an export_source(path) method to migrate from it"
        )

    def source_chunks(self, path: str) -> list[Chunk]:
        """Every chunk of one source, in document order (what the derived structures read)."""
        return self.export_source(path)[0]

    def iter_chunks(self) -> Iterator[Chunk]:
        """Every chunk, in storage order (for the grep fallback)."""
        raise StoreError(f"the {_name(self)} store cannot list its chunks; give it an iter_chunks() method")

    def generation(self) -> int | None:
        """A number that changes with every write (the query cache's key); None when unknown."""
        return None

    def metadata_kinds(self) -> dict[str, frozenset[str]]:
        """Each metadata key the chunks hold and the kinds of its values (``filters.value_kinds``),
        for warning about filters that cannot match. Derived from ``iter_chunks``; a store that
        can ask its database directly does so."""
        return value_kinds(chunk.metadata for chunk in self.iter_chunks())

    def value_counts(self, key: str) -> dict[str, int]:
        """How many chunks hold each value of the text field ``key`` (``status`` counts ``lang``),
        most first; only where the store declares ``Abilities.value_counts``."""
        raise StoreError(f"the {_name(self)} store cannot count metadata values (it does not declare value_counts)")

    def show_latest_writes(self) -> None:  # noqa: B027 - optional hook
        """Make the writes committed so far (by this process or another) visible to this object's
        searches now. A store whose search reads a cache that catches up only after a delay (the
        embedded store's tantivy readers reload about half a second after a commit) reloads it here."""


class AuditLog(ABC):
    """The index's log of searches and writes (a hash chain where the store keeps one)."""

    @abstractmethod
    def log_search(self, entry: AuditEntry) -> str:
        """Append a search to the audit log; return its id."""

    @abstractmethod
    def recent_searches(self, limit: int) -> list[AuditEntry]: ...

    def audit_events(
        self, limit: int, kinds: Sequence[str] | None = None, exclude: Sequence[str] = ()
    ) -> list[AuditEvent]:
        """The newest ``limit`` entries of the audit log (searches and writes; of ``kinds``,
        not of ``exclude``), newest first."""
        return []

    def verify_audit(self) -> ChainReport:
        """Check the audit log's hash chain (see ``ragloom.audit``)."""
        raise StoreError(f"the {_name(self)} store keeps no tamper-evident audit log")

    @contextmanager
    def audited(self, kind: str, parameters: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """Record the writes made inside as one operation (ingest, remove, migrate) with its
        parameters; the caller puts a summary in the yielded dict."""
        yield {}


@dataclass(frozen=True)
class Abilities:
    """What a store can do beyond the three roles every store plays, declared once. Callers read
    the declaration instead of probing the store (``getattr(store, "x", None)``), and the conformance
    suite (``ragloom.testing.conformance``) asserts each declared ability and skips, naming the
    declaration, the tests of one a store does not declare. A store sets ``abilities`` on its class,
    or on the instance when an ability depends on what it opened (a collection made without sparse
    vectors, an index made with another text search configuration)."""

    #: How the lexical side reads text, at index and at query time: ``ragloom`` (the analysers of
    #: ``lang/analysis.py``: every language as the embedded store reads it, identifiers whole), or
    #: another reading the store declares (``postgresql:english``); search says so when a query's
    #: language is one such a store does not read, and the conformance suite skips the language cases.
    analysis: str = "ragloom"
    #: BM25 is computed by the engine that holds the chunks (PostgreSQL's postings, Qdrant's sparse
    #: vectors), not by a tantivy index beside them: no local lexical index is written.
    server_bm25: bool = False
    #: ``value_counts(key)`` answers (chunks per value of a metadata field, ``status``'s languages).
    value_counts: bool = False
    #: A source is written in one transaction: an aborted or interrupted write leaves its earlier
    #: version whole. Without, the store drops the source whole instead (the next ingest reads it again).
    transactions: bool = False
    #: ``structures_database()`` gives the derived structures' tables (entity graph, RAPTOR tree).
    structures: bool = False
    #: ``sync_state()`` gives where remote sources keep their cursors (``stores/sync_state.py``).
    sync_state: bool = False
    #: ``ingest_jobs()`` gives a job queue every server over this store shares (``stores/jobs.py``).
    shared_jobs: bool = False


class Store(SourceRegistry, ChunkSearch, AuditLog):
    """Where chunks and vectors live. One backend, one subclass: it opens, implements the three
    roles above (``SourceRegistry``, ``ChunkSearch``, ``AuditLog``: the abstract methods are what a
    backend must write, the rest is derived from them) and declares its ``Abilities``; the
    conformance suite (``ragloom.testing.conformance.StoreConformance``) checks all of it."""

    #: Registry name, e.g. "embedded".
    name: str = ""
    #: The component's settings, declared once: a pydantic model that checks its sub-section of the
    #: config (``store.<name>``) when it is resolved; a plugin reads them with ``config.store.options()``.
    Options: ClassVar[type[BaseModel] | None] = None
    #: What this store can do beyond the three roles (see ``Abilities``).
    abilities: Abilities = Abilities()

    @property
    def read_only(self) -> bool:
        """Opened read-only: every write raises IndexReadOnlyError (see ``open``)."""
        return False

    @classmethod
    @abstractmethod
    def open(cls, path: Path, config: Config, read_only: bool = False) -> Store:
        """Open (creating if needed) the store for the index directory ``path``.

        With ``read_only=True`` it creates and writes nothing, and derived indexes it must
        rebuild stay in memory.
        """

    @classmethod
    def exists(cls, path: Path, config: Config) -> bool:
        """Whether ``path`` holds an index of this store (read-only commands never create one)."""
        return path.is_dir()

    def sources_where(self, conditions: Sequence[Condition]) -> set[str]:
        """The paths of the sources with at least one chunk passing every condition. Here by
        reading each source's chunks; a store that can ask its index for them does so."""
        return {r.path for r in self.list_sources()
                if any(matches(c.metadata, conditions) for c in self.source_chunks(r.path))}

    def catalog_database(self) -> sqlite3.Connection | None:
        """The SQLite database of the sources registry, or None when this store keeps its
        catalog elsewhere (PostgreSQL) or has none."""
        return None

    def structures_database(self) -> Any | None:
        """Where the derived structures (the entity graph, the RAPTOR tree, the model-output
        cache) keep their tables beside the sources registry: the SQLite catalog, or (a store
        whose index or catalog lives in PostgreSQL) that index's ``Database``, whose schema has
        them; None when this store has neither (the structures are then not available, and the store
        does not declare ``Abilities.structures``)."""
        return self.catalog_database()

    def sync_state(self) -> SyncState | None:
        """Where remote sources keep their cursors (``stores/sync_state.py``), in this store so that
        any process or replica over it continues a sync; None: this store cannot sync remote sources
        (and does not declare ``Abilities.sync_state``)."""
        return None

    def ingest_jobs(self) -> JobQueue | None:
        """The job queue every server over this store shares (``stores/jobs.py``; the database's
        table, ``stores/postgres/jobs.py``), or None: a server then keeps its jobs in memory (and the
        store does not declare ``Abilities.shared_jobs``)."""
        return None

    # -- housekeeping -----------------------------------------------------------------
    def flush(self) -> None:  # noqa: B027 - optional hook
        """Bring derived indexes up to date after a batch of writes."""

    def optimize(self) -> dict[str, object]:
        """Rebuild derived indexes from scratch (``ragloom index optimize``); the caller holds
        the write lock. Returns what was done, for the user."""
        self.flush()
        return {"chunks": self.count()}

    def disk_bytes(self) -> int:
        return 0

    def write_lock(self, folder: Path, wait: bool = True) -> contextlib.AbstractContextManager[None]:
        """Held while ingest, removal or migration writes: the index folder's lock file
        (IndexLockedError when another process holds it). A store whose index lives in a
        server takes the server's lock instead, which every replica sees, and waits for it
        unless ``wait`` is False (then IndexLockedError at once)."""
        return exclusive_write_lock(folder)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release files and connections."""


def _name(store: object) -> str:
    return getattr(store, "name", "") or type(store).__name__


@contextmanager
def write_lock_if_free(folder: Path) -> Iterator[bool]:
    """Take the index's write lock (``folder/write.lock``) without waiting; yield whether this
    process holds it. Ingest, removal and migration write only while holding it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / "write.lock", "a")
    except PermissionError as exc:
        raise IndexReadOnlyError(
            f"cannot write to the index at {folder} ({exc.strerror}); writing needs write permission on it"
        ) from None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held = True
        except OSError:
            held = False
        try:
            yield held
        finally:
            if held:
                fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def exclusive_write_lock(folder: Path) -> Iterator[None]:
    """The index's write lock, or IndexLockedError when another process holds it."""
    with write_lock_if_free(folder) as held:
        if not held:
            raise IndexLockedError(f"another process is writing to the index at {folder}; wait for it to finish")
        yield


def folder_bytes(folder: Path) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def sources_matching(store: Store, conditions: Sequence[Condition]) -> list[SourceRecord]:
    """The sources with at least one chunk passing ``conditions`` (all of them without any)."""
    records = store.list_sources()
    if not conditions:
        return records
    passing = store.sources_where(conditions)
    return [r for r in records if r.path in passing]


def create_store(path: Path, config: Config, read_only: bool = False) -> Store:
    cls = _store_class(config)
    if read_only:
        return cls.open(path, config, read_only=True)
    return cls.open(path, config)


def store_exists(path: Path, config: Config) -> bool:
    """Whether ``path`` holds an index of the configured store."""
    return _store_class(config).exists(path, config)


def _store_class(config: Config) -> type[Store]:
    """The configured store's class, once its options (``store.<backend>``) are checked."""
    cls: type[Store] = registry.resolve("store", config.store.backend)
    config.store.options()
    return cls
