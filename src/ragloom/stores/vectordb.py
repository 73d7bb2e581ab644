"""What every store backed by an external vector database shares (Chroma, Qdrant).

Where the truth lives
---------------------
The database's collection holds the chunks: id, vector, text and metadata, plus the
chunk's own fields, so it reads back exactly. That is the part that grows with the
corpus and the part a server or cluster scales out. Beside it, in ``<index>/<backend>/``:

* ``ragloom.sqlite`` (the embedded store's ``Catalog``, chunks table unused): the
  sources registry, the embedder identity, the audit log and a write journal; or, with
  ``catalog: postgresql://...``, the same in PostgreSQL (``stores/postgres/catalog.py``),
  which every replica over the collection then shares, ingest jobs included;
* ``bm25/``: ragloom's tantivy index of the chunk texts, a cache derived from the
  collection and stamped with the catalog's generation, so hybrid search scores BM25
  the same way on every backend.

Crash consistency
-----------------
A source record in the catalog promises "the collection holds exactly this file's
chunks"; incremental ingest trusts it and skips the file. So it is written last:

1. journal the write (path, new chunk ids, record) in SQLite;
2. upsert the new chunks, then delete the source's other chunks, in the collection;
3. commit the source record (bumping the generation), then clear the journal entry.

Neither side can roll the other back, so the order is what makes it sound. A crash
leaves a journal entry that ``open`` settles: when the collection holds every new
chunk the write is finished (roll forward); otherwise the source's chunks are removed
and its record dropped, so the next ingest sees the file as new. Either way the
registry never claims chunks the collection lacks, and no orphan chunk survives.
"""

from __future__ import annotations

import contextlib
import json
import math
from abc import abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import StoreError
from ..filters import Condition, matches
from ..types import Chunk, SourceRecord, sha256_hex
from .base import Abilities, Candidate, SourceWrite, Store, folder_bytes, rank_candidates
from .catalog_backed import CatalogBacked, SourceCatalog
from .derived import run_or_rebuild
from .embedded.catalog import Catalog
from .embedded.lexical import LexicalIndex
from .jobs import JobQueue

#: A candidate: chunk id, score, metadata (when asked for).
Row = tuple[str, float, dict[str, Any] | None]
#: A hit from the database: chunk id, its stored vector, metadata (when asked for).
Neighbour = tuple[str, np.ndarray, dict[str, Any] | None]
#: Scores closer than this are treated as possibly tied when deciding whether to fetch more.
TIE_EPS = 1e-6

_JOURNAL = "pending_writes"
_STALE = -2  # a base generation no BM25 index has, so the next refresh rebuilds it
#: A source written part by part: BM25 reads its chunks back from the collection at the flush.
_FROM_COLLECTION: Any = ()


class VectorDBStore(CatalogBacked[SourceCatalog], Store):
    """A ``Store`` whose chunks live in a vector database; a backend adds the primitives.

    Embedder identity, sources registry and audit log come from ``CatalogBacked``, whichever
    catalog it is (SQLite beside the collection, or PostgreSQL); so do the derived structures'
    tables and remote sources' cursors. BM25 is ragloom's tantivy index beside the collection,
    unless the backend declares ``Abilities.server_bm25`` and overrides ``search_lexical``.
    """

    #: Where a local vector database keeps its files (a backend sets it); None for a server.
    data_dir: Path | None = None

    def __init__(self, folder: Path, threads: int = 0, read_only: bool = False, catalog_url: str | None = None) -> None:
        self.folder = folder
        self.catalog_url = catalog_url
        if not read_only:
            folder.mkdir(parents=True, exist_ok=True)
        self.catalog = open_catalog(folder, read_only, catalog_url)
        self.abilities = Abilities(structures=True, sync_state=True, shared_jobs=catalog_url is not None)
        self._lexical_index: LexicalIndex | None = None
        self._lexical_options = (folder / "bm25", threads, read_only)
        self._lexical_pending: dict[str, list[Chunk] | None] = {}
        self._lexical_base = -1

    @classmethod
    def exists(cls, path: Path, config: Any) -> bool:
        catalog_url = getattr(getattr(config.store, cls.name), "catalog", None)
        if catalog_url:
            from .postgres.catalog import catalog_exists

            return catalog_exists(catalog_url)
        return (path / cls.name / "ragloom.sqlite").is_file()

    @property
    def lexical(self) -> LexicalIndex:
        """The tantivy index beside the collection, opened on first use (a backend whose engine
        computes BM25 never opens it)."""
        if self._lexical_index is None:
            folder, threads, read_only = self._lexical_options
            self._lexical_index = LexicalIndex(folder, threads=threads, read_only=read_only)
        return self._lexical_index

    def ingest_jobs(self) -> JobQueue | None:
        """With the catalog in PostgreSQL, ingest jobs are there too, shared by every replica."""
        if self.catalog_url is None:
            return None
        from .postgres.catalog import catalog_jobs

        return catalog_jobs(self.catalog_url)

    def _after_connect(self) -> None:
        """Settle writes a crash interrupted; called by a backend once it is connected."""
        if self.read_only:  # settled by the next process that may write
            return
        for path, entry in sorted((self.catalog.get_meta(_JOURNAL) or {}).items()):
            self._settle(path, entry)

    # -- primitives a backend implements -----------------------------------------------------
    @abstractmethod
    def _upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None: ...

    @abstractmethod
    def _remove(self, chunk_ids: Sequence[str]) -> None: ...

    @abstractmethod
    def _ids_of_source(self, source: str) -> list[str]: ...

    @abstractmethod
    def _load(self, chunk_ids: Sequence[str], vectors: bool) -> dict[str, tuple[Chunk, np.ndarray | None]]:
        """The stored chunks with these ids (and their vectors when asked)."""

    @abstractmethod
    def _nearest(self, vector: np.ndarray, n: int, native: Any, want_metadata: bool) -> list[Neighbour]:
        """Up to ``n`` nearest chunks passing the backend filter ``native``, best first."""

    @abstractmethod
    def _translate(self, conditions: Sequence[Condition]) -> tuple[Any, list[Condition]]:
        """Split conditions into a native filter and the rest.

        The native filter must agree with ``filters.matches`` exactly; a condition the
        backend cannot express exactly goes to the rest, which is checked after the
        search (``gather`` fetches more until enough rows pass).
        """

    @abstractmethod
    def _vectors_by_hash(self, content_hashes: Sequence[str]) -> dict[str, np.ndarray]: ...

    @abstractmethod
    def _scan(self) -> Iterator[list[Chunk]]:
        """Every stored chunk, in batches."""

    @abstractmethod
    def _count(self) -> int: ...

    def _prepare(self, chunks: Sequence[Chunk]) -> None:  # noqa: B027 - optional hook
        """Record what the filter translation must know before these chunks are written."""

    # -- sources ----------------------------------------------------------------------------
    def replace_source(self, record: SourceRecord, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        vectors = np.asarray(vectors, dtype=np.float32).reshape(len(chunks), -1)
        dimension = self.dimension
        if len(chunks) and dimension and vectors.shape[1] != dimension:
            raise StoreError(
                f"{record.path}: vectors have dimension {vectors.shape[1]}, the index holds {dimension}"
            )
        self._prepare(chunks)
        self._note_lexical(record.path, list(chunks))
        entry = {"chunks": {c.id: fingerprint(c) for c in chunks}, "record": asdict(record)}
        self._journal(record.path, entry)
        try:
            if chunks:
                self._upsert(chunks, vectors)
            # A source the registry does not know has no chunks here (the journal sees to
            # that), so only a known one is looked up: a scan per new file would make
            # ingest quadratic in local mode.
            if self.catalog.get_source(record.path) is not None:
                keep = entry["chunks"]
                self._remove([cid for cid in self._ids_of_source(record.path) if cid not in keep])
            self._register(record)
        except BaseException:
            self._recover(record.path, entry)
            raise
        self._journal(record.path, None)

    def begin_source(self, record: SourceRecord) -> SourceWrite:
        return _VectorDBSourceWrite(self, record)

    def delete_source(self, path: str) -> int:
        stale = self._ids_of_source(path)
        if self.catalog.get_source(path) is None and not stale:
            return 0
        self._note_lexical(path, None)
        entry: dict[str, Any] = {"chunks": {}, "record": None}
        self._journal(path, entry)
        try:
            self._remove(stale)
            self.catalog.delete_source(path)
        except BaseException:
            self._recover(path, entry)
            raise
        self._journal(path, None)
        return len(stale)

    def export_source(self, path: str) -> tuple[list[Chunk], np.ndarray]:
        """Every chunk of one source with its vector, in document order (for ``migrate``)."""
        found = self._load(self._ids_of_source(path), vectors=True)
        ordered = sorted(found.values(), key=lambda pair: (pair[0].doc_id, pair[0].chunk_index, pair[0].id))
        vectors = [v for _, v in ordered if v is not None]
        matrix = np.stack(vectors) if vectors else np.zeros((0, max(self.dimension, 1)), dtype=np.float32)
        return [c for c, _ in ordered], matrix

    def cached_vectors(self, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        unique = list(dict.fromkeys(content_hashes))
        return self._vectors_by_hash(unique) if unique else {}

    def _chunks_of_source(self, source: str, batch: int = 1_000) -> Iterator[Chunk]:
        ids = self._ids_of_source(source)
        for start in range(0, len(ids), batch):
            found = self._load(ids[start : start + batch], vectors=False)
            yield from (chunk for chunk, _ in found.values())

    def _register(self, record: SourceRecord) -> None:
        self.catalog.replace_source(record, [], np.zeros((0, max(self.dimension, 1)), dtype=np.float32))

    def _journal(self, path: str, entry: dict[str, Any] | None) -> None:
        with self.catalog.transaction():
            pending = self.catalog.get_meta(_JOURNAL) or {}
            if entry is None:
                pending.pop(path, None)
            else:
                pending[path] = entry
            self.catalog.set_meta(_JOURNAL, pending)

    def _recover(self, path: str, entry: dict[str, Any]) -> None:
        """A write failed half-way: settle it now if the database still answers, else on open."""
        self._lexical_base = _STALE  # the replay list no longer describes the collection
        with contextlib.suppress(Exception):
            self._settle(path, entry)

    def _settle(self, path: str, entry: dict[str, Any]) -> None:
        """Finish or undo a write that a crash interrupted (see the module docstring)."""
        wanted: dict[str, str] = entry.get("chunks", {})
        record = entry.get("record")
        stored = self._load(list(wanted), vectors=False) if wanted else {}
        # Chunk ids do not change with the text, so compare content, not just presence.
        if record is not None and {cid: fingerprint(c) for cid, (c, _) in stored.items()} == wanted:
            self._remove([cid for cid in self._ids_of_source(path) if cid not in wanted])
            self._register(SourceRecord(**record))
        else:
            self._remove(self._ids_of_source(path))
            self.catalog.delete_source(path)
        self._journal(path, None)

    # -- reading ----------------------------------------------------------------------------
    def count(self) -> int:
        return self._count()

    def iter_chunks(self) -> Iterator[Chunk]:
        for batch in self._scan():
            yield from batch

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        found = self._load(list(dict.fromkeys(chunk_ids)), vectors=False)
        return [found[cid][0] for cid in chunk_ids if cid in found]

    def search_dense(self, vector: np.ndarray, k: int, conditions: Sequence[Condition] = ()) -> list[Candidate]:
        if k <= 0:
            return []
        query = _unit(vector)
        native, residual = self._translate(conditions)

        def fetch(n: int) -> list[Row]:
            hits = self._nearest(query, n, native, bool(residual))
            scores = exact_cosines(np.stack([v for _, v, _ in hits]), query) if hits else []
            return [(cid, score, meta) for (cid, _, meta), score in zip(hits, scores)]

        return gather(fetch, k, residual, self._count())

    def search_lexical(self, query: str, k: int, conditions: Sequence[Condition] = ()) -> list[Candidate]:
        if k <= 0:
            return []
        self._refresh_lexical()
        conditions = list(conditions)

        def fetch(n: int) -> list[Row]:
            hits = self.lexical.search(query, n)
            if not conditions:
                return [(c.chunk_id, c.score, None) for c in hits]
            found = self._load([c.chunk_id for c in hits], vectors=False)
            return [(c.chunk_id, c.score, found[c.chunk_id][0].metadata) for c in hits if c.chunk_id in found]

        return run_or_rebuild(
            f"the BM25 index at {self.lexical.folder}",
            lambda: gather(fetch, k, conditions, self._count()), self._rebuild_lexical,
        )

    def _rebuild_lexical(self) -> None:
        self.lexical.reset(in_memory=self.read_only)
        self.lexical.rebuild(((0, c) for batch in self._scan() for c in batch), self.catalog.generation())
        self._lexical_pending.clear()

    def dense_scores(self, vector: np.ndarray, chunk_ids: Sequence[str]) -> dict[str, float]:
        query = _unit(vector)
        found = self._load(list(dict.fromkeys(chunk_ids)), vectors=True)
        pairs = [(cid, v) for cid, (_, v) in found.items() if v is not None]
        scores = exact_cosines(np.stack([v for _, v in pairs]), query) if pairs else []
        return {cid: score for (cid, _), score in zip(pairs, scores)}

    # -- the BM25 index beside the collection ------------------------------------------------
    def _note_lexical(self, source: str, chunks: list[Chunk] | None) -> None:
        """Remember a write to replay into BM25; the first one records the base generation."""
        if self.abilities.server_bm25:
            return
        if not self._lexical_pending:
            self._lexical_base = self.catalog.generation()
        self._lexical_pending[source] = chunks

    def _refresh_lexical(self) -> None:
        if self.abilities.server_bm25:
            return
        generation = self.catalog.generation()
        if self.lexical.generation() == generation:
            return
        if self.read_only and not self.lexical.in_memory:
            self.lexical.reset(in_memory=True)  # this process may not write the folder
        try:
            self._catch_up_lexical(generation)
        except ValueError:
            # Another process holds tantivy's writer lock (it is writing and will stamp the
            # index itself); search the index as it is, a cache a few writes behind.
            self.lexical.close()

    def _catch_up_lexical(self, generation: int) -> None:
        if self._lexical_pending and self.lexical.generation() == self._lexical_base:
            for source, chunks in sorted(self._lexical_pending.items()):
                if chunks is None:
                    self.lexical.delete_source(source)
                elif chunks is _FROM_COLLECTION:
                    self.lexical.replace_source(source, ((0, c) for c in self._chunks_of_source(source)))
                else:
                    self.lexical.replace_source(source, ((0, c) for c in chunks))
            self.lexical.commit(generation)
        else:  # the index missed writes (another process, or a crash): rebuild it
            self.lexical.rebuild(((0, c) for batch in self._scan() for c in batch), generation)
        self._lexical_pending.clear()

    def flush(self) -> None:
        self._refresh_lexical()

    def show_latest_writes(self) -> None:
        if self._lexical_index is not None:  # not opened yet: its first search reads the last commit
            self._lexical_index.reload()

    # -- housekeeping -----------------------------------------------------------------------
    def disk_bytes(self) -> int:
        """The index folder, plus the database's own files when they live elsewhere."""
        total = folder_bytes(self.folder)
        if self.data_dir is not None and not self.data_dir.resolve().is_relative_to(self.folder.resolve()):
            total += folder_bytes(self.data_dir)
        return total

    def close(self) -> None:
        if self._lexical_index is not None:
            self._lexical_index.close()
        self.catalog.close()


def open_catalog(folder: Path, read_only: bool, catalog_url: str | None) -> SourceCatalog:
    """The catalog beside the collection: SQLite in the index folder, or tables in PostgreSQL."""
    if catalog_url:
        from .postgres.catalog import open_postgres_catalog

        return open_postgres_catalog(catalog_url, read_only)
    return Catalog(folder / "ragloom.sqlite", read_only=read_only)


def gather(fetch: Callable[[int], list[Row]], k: int, residual: Sequence[Condition], total: int) -> list[Candidate]:
    """Top ``k`` of ``fetch`` that pass ``residual``, with exact recall and tie-breaking.

    Asks for more rows until ``k`` survive the exact check and the last row fetched
    scores strictly below the k-th survivor (so no unseen row can tie or beat it), or
    until the collection is exhausted.
    """
    if total <= 0:
        return []
    n = min(total, k * 4 + 16 if residual else k + 1)
    while True:
        rows = fetch(n)
        kept = [Candidate(cid, score) for cid, score, meta in rows if not residual or matches(meta or {}, residual)]
        if len(rows) < n or n >= total:
            break
        ranked = rank_candidates(kept)
        if len(ranked) >= k and min(score for _, score, _ in rows) < ranked[k - 1].score - TIE_EPS:
            break
        n = min(total, n * 4)
    return rank_candidates(kept, k)


def exact_cosines(vectors: np.ndarray, query: np.ndarray) -> list[float]:
    """Cosine similarity of each row to ``query``, correctly rounded.

    BLAS gives identical rows slightly different dot products depending on where they
    sit in the matrix; summing exactly (``math.fsum``) makes equal vectors score equal,
    so ties really are broken by chunk id.
    """
    rows = np.asarray(vectors, dtype=np.float64)
    q = np.asarray(query, dtype=np.float64)
    q_norm = math.sqrt(math.fsum(q * q)) or 1.0
    scores = []
    for row in rows:
        norm = math.sqrt(math.fsum(row * row)) or 1.0
        scores.append(math.fsum(row * q) / (norm * q_norm))
    return scores


def chunk_fields(chunk: Chunk) -> dict[str, Any]:
    """A chunk's fields but its id and text, JSON-ready (what a backend stores beside them)."""
    return {f.name: getattr(chunk, f.name) for f in dataclass_fields(Chunk) if f.name not in ("id", "text")}


def chunk_from_fields(chunk_id: str, text: str, fields: dict[str, Any]) -> Chunk:
    return Chunk(id=chunk_id, text=text, **fields)


def encode_fields(chunk: Chunk) -> str:
    return json.dumps(chunk_fields(chunk), sort_keys=True, default=str)


def fingerprint(chunk: Chunk) -> str:
    """Digest of everything stored for a chunk but its vector (the journal's proof of a write)."""
    return sha256_hex(chunk.id, chunk.text, encode_fields(chunk))



def _unit(vector: np.ndarray) -> np.ndarray:
    vector = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


class _VectorDBSourceWrite(SourceWrite):
    """A source written part by part to a vector database, which has no transaction to hold open.

    The journal entry made first names no chunk and no record, so a crash before the commit is
    settled (on open) by removing every chunk of the source and its record: the next ingest reads
    the file again. The commit journals the full entry, removes the source's chunks that are not
    new, registers the record and clears the entry, as ``replace_source`` does. Until then the
    new chunks are in the collection (dense search may meet them, BM25 does not: it replays the
    source from the collection at the flush); only the ids are kept here, not the chunks."""

    def __init__(self, store: VectorDBStore, record: SourceRecord) -> None:
        super().__init__(store, record)
        self.store = store
        self.path = record.path
        self.fingerprints: dict[str, str] = {}
        store._journal(record.path, {"chunks": {}, "record": None})

    def add(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        store = self.store
        vectors = np.asarray(vectors, dtype=np.float32).reshape(len(chunks), -1)
        dimension = store.dimension
        if len(chunks) and dimension and vectors.shape[1] != dimension:
            self.abort()
            raise StoreError(f"{self.path}: vectors have dimension {vectors.shape[1]}, the index holds {dimension}")
        if not chunks:
            return
        store._prepare(chunks)
        try:
            store._upsert(chunks, vectors)
        except BaseException:
            self.abort()
            raise
        self.fingerprints.update((c.id, fingerprint(c)) for c in chunks)

    def commit(self, record: SourceRecord) -> None:
        store = self.store
        entry = {"chunks": self.fingerprints, "record": asdict(record)}
        store._journal(record.path, entry)
        store._note_lexical(record.path, _FROM_COLLECTION)
        try:
            if store.catalog.get_source(record.path) is not None:
                store._remove([cid for cid in store._ids_of_source(record.path) if cid not in self.fingerprints])
            store._register(record)
        except BaseException:
            store._recover(record.path, entry)
            raise
        store._journal(record.path, None)

    def abort(self) -> None:
        with contextlib.suppress(Exception):
            self.store._settle(self.path, {"chunks": {}, "record": None})
