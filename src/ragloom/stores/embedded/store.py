"""EmbeddedStore: SQLite is the truth; the vector matrix and BM25 index follow it.

Writes go to SQLite first, one transaction per source. The derived indexes are
brought up to date by ``flush`` (at the end of an ingest). Whenever their generation
stamp disagrees with SQLite's, for instance after a crash mid-ingest, they are
rebuilt from SQLite, so nothing SQLite committed is lost and nothing it rolled back
is seen.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ...config import Config
from ...errors import MissingDependencyError, RagloomWarning, StoreError
from ...filters import Condition
from ...types import Chunk, SourceRecord
from ..base import Abilities, Candidate, SourceWrite, Store, folder_bytes, write_lock_if_free
from ..catalog_backed import CatalogBacked
from .ann import AnnIndex
from ..derived import is_damage, run_or_rebuild, warn_rebuilding
from .catalog import Catalog
from .columns import MetadataColumns
from .lexical import LexicalIndex
from .matrix import VectorMatrix
from .options import EmbeddedStoreConfig


FILTERS_KEPT = 8
# Hybrid searches of stores this large run their two halves on two threads.
PARALLEL_ROWS = 200_000


@functools.cache
def _workers() -> ThreadPoolExecutor:
    """Threads for the BM25 half of hybrid searches, shared by every store in the process."""
    return ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1), thread_name_prefix="ragloom-bm25")


class EmbeddedStore(CatalogBacked[Catalog], Store):
    name = "embedded"
    Options = EmbeddedStoreConfig  # store.embedded
    abilities = Abilities(value_counts=True, transactions=True, structures=True, sync_state=True)

    def __init__(self, path: Path, config: Config, read_only: bool = False) -> None:
        self.path = path
        if not read_only:
            path.mkdir(parents=True, exist_ok=True)
        self.catalog = Catalog(path / "ragloom.sqlite", read_only=read_only)
        self.matrix = VectorMatrix(path / "vectors")
        try:
            self.lexical = LexicalIndex(path / "bm25", threads=config.embedder.threads, read_only=read_only)
        except BaseException:
            self.catalog.close()
            raise
        self.columns = MetadataColumns(self.catalog)
        self.ann = AnnIndex(path / "ann", config.store.embedded.ann)
        self._ann_checked = -1  # the generation the approximate index was last brought to
        self._pending_lexical: dict[str, bool] = {}
        self._lexical_base = -1
        # Allowed rows of the last few filters at the matrix's generation: a hybrid search asks
        # twice (dense and BM25 halves), and users repeat filters.
        self._allowed: dict[tuple[int, str], np.ndarray] = {}
        #: (generation, rows, source number of each row, source paths): ``sources_where``'s table.
        self._row_source_table: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None
        #: (generation, chunks): ``count``'s last answer.
        self._count: tuple[int, int] | None = None

    @classmethod
    def open(cls, path: Path, config: Config, read_only: bool = False) -> EmbeddedStore:
        return cls(path, config, read_only=read_only)

    @classmethod
    def exists(cls, path: Path, config: Config) -> bool:
        return (path / "ragloom.sqlite").is_file()

    def replace_source(self, record: SourceRecord, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        dimension = self.dimension
        if len(chunks) and dimension and np.asarray(vectors).shape[1] != dimension:
            raise StoreError(
                f"{record.path}: vectors have dimension {np.asarray(vectors).shape[1]}, the index holds {dimension}"
            )
        self._note_pending(record.path, present=True)
        self.catalog.replace_source(record, chunks, vectors)

    def begin_source(self, record: SourceRecord) -> SourceWrite:
        return _EmbeddedSourceWrite(self, record)

    def delete_source(self, path: str) -> int:
        self._note_pending(path, present=False)
        removed, _ = self.catalog.delete_source(path)
        return removed

    def _note_pending(self, source: str, present: bool) -> None:
        """Remember a write the BM25 index must replay; the first one records its base generation."""
        if not self._pending_lexical:
            self._lexical_base = self.catalog.generation()
        self._pending_lexical[source] = present

    def cached_vectors(self, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        return self.catalog.cached_vectors(content_hashes, self.dimension)

    def flush(self) -> None:
        """Bring the BM25 index and the vector matrix up to SQLite's generation."""
        generation = self.catalog.generation()
        if self._pending_lexical and self.lexical.generation() == self._lexical_base:
            # The index was current before this batch: replay just the changed sources.
            try:
                for source, present in sorted(self._pending_lexical.items()):
                    if present:
                        self.lexical.replace_source(source, self.catalog.iter_chunks(source=source))
                    else:
                        self.lexical.delete_source(source)
                self.lexical.commit(generation)
            except BaseException as exc:
                if not is_damage(exc):
                    raise
                warn_rebuilding(f"the BM25 index at {self.lexical.folder}", exc)
                self.lexical.reset()  # stale now: _ensure_fresh rebuilds it below
        self._pending_lexical.clear()
        self.catalog.prune_embeddings()
        self.catalog.compact_vectors()
        self.catalog.tidy_vector_files()
        self._ensure_fresh(persist=True)

    # -- freshness ----------------------------------------------------------------------------
    def _ensure_fresh(self, persist: bool = False) -> None:
        """Rebuild stale derived indexes; only saved when no other process is writing."""
        generation = self.catalog.generation()
        matrix_stale = self.matrix.generation != generation and not self._load_matrix(generation)
        lexical_stale = self.lexical.generation() != generation
        ann_due = self._ann_checked != generation
        if not (matrix_stale or lexical_stale or ann_due):
            return
        with self._write_lock_if_free(held=persist) as writable:
            if matrix_stale:
                self.matrix.build(self.catalog, generation, self.dimension)
                if writable:
                    self.matrix.save()
            if lexical_stale and (writable or self.lexical.in_memory):
                self.lexical.rebuild(self.catalog.iter_chunks(), generation)
            elif lexical_stale and self.read_only:
                # No one can be writing an index this process may not write: build it in memory.
                self.lexical.reset(in_memory=True)
                self.lexical.rebuild(self.catalog.iter_chunks(), generation)
            if ann_due:
                self._refresh_ann(writable)

    def _load_matrix(self, generation: int) -> bool:
        try:
            return self.matrix.load(generation, self.catalog)
        except Exception as exc:  # damaged files: treated as stale, so rebuilt
            warn_rebuilding(f"the vector matrix at {self.matrix.folder}", exc)
            return False

    def _rebuild_lexical(self) -> None:
        generation = self.catalog.generation()
        with self._write_lock_if_free(held=False) as writable:
            self.lexical.reset(in_memory=not writable)
            self.lexical.rebuild(self.catalog.iter_chunks(), generation)

    def _rebuild_matrix(self) -> None:
        generation = self.catalog.generation()
        with self._write_lock_if_free(held=False) as writable:
            self.matrix.build(self.catalog, generation, self.dimension)
            if writable:
                self.matrix.save()

    def _refresh_ann(self, writable: bool, retrain: bool = False) -> None:
        """Bring the approximate index to the matrix's generation: load it, catch it up by
        rows added and removed, train it when there is none (or the store grew or shrank by
        half), drop it below the threshold. Only a writer trains or saves (once enough rows
        changed); a reader catches a saved index up in memory, or searches exactly."""
        self._ann_checked = self.matrix.generation
        ann = self.ann
        if len(self.matrix) < ann.settings.threshold:
            if writable and (ann.ready or ann.folder.is_dir()):
                ann.drop()
            ann.index = None
            return
        try:
            if not ann.ready:
                ann.load()
            if writable and (retrain or ann.needs_training(len(self.matrix))):
                ann.build(self.matrix)
            elif ann.ready and ann.generation != self.matrix.generation:
                ann.sync(self.matrix)
            else:
                return
        except MissingDependencyError as exc:
            warnings.warn(f"{exc}; searching every vector exactly meanwhile", RagloomWarning, stacklevel=2)
            return
        if writable and ann.worth_saving:
            ann.save()

    def optimize(self) -> dict[str, object]:
        """Drop every dead vector slot, rebuild the row map and BM25 index from SQLite and retrain
        the approximate index from scratch. The caller holds the index's write lock."""
        self.catalog.prune_embeddings()
        dropped = self.catalog.compact_vectors(force=True)
        self.catalog.tidy_vector_files()
        generation = self.catalog.generation()
        self.matrix.build(self.catalog, generation, self.dimension)
        self.matrix.save()
        self.lexical.rebuild(self.catalog.iter_chunks(), generation)
        self._pending_lexical.clear()
        self._refresh_ann(writable=True, retrain=True)
        report: dict[str, object] = {"chunks": len(self.matrix), "generation": generation,
                                     "dead_vector_slots_dropped": dropped}
        if self.ann.ready:
            report["approximate_index"] = f"IVF{self.ann.index.nlist},{self.ann.settings.codec}"
        else:
            report["approximate_index"] = f"none (exact search below {self.ann.settings.threshold:,} chunks)"
        return report

    @contextmanager
    def _write_lock_if_free(self, held: bool) -> Iterator[bool]:
        """Yield True while this process may write derived files: it already holds the
        index's write lock (``held``), or it could take it without waiting."""
        if self.read_only:
            yield False
            return
        if held:
            yield True
            return
        with write_lock_if_free(self.path) as free:
            yield free

    # -- reading ------------------------------------------------------------------------------
    def count(self) -> int:
        """Chunks in the index, counted once per generation: SQLite's COUNT(*) reads every row
        (2.3 ms at 100k chunks), and a search asks up to four times (a filtered one, for its warnings)."""
        # The generation first: a write between the two reads can only cache a newer count under
        # the older generation, which the next call finds outdated.
        generation = self.catalog.generation()
        if self._count is None or self._count[0] != generation:
            self._count = (generation, self.catalog.count())
        return self._count[1]

    def source_chunks(self, path: str) -> list[Chunk]:
        return [chunk for _, chunk in self.catalog.iter_chunks(source=path)]

    def export_source(self, path: str) -> tuple[list[Chunk], np.ndarray]:
        chunks = self.source_chunks(path)
        found = self.cached_vectors([c.content_hash for c in chunks])
        missing = [c.id for c in chunks if c.content_hash not in found]
        if missing:
            raise StoreError(f"{path}: {len(missing)} chunks have no stored vector; re-ingest the file, then migrate")
        vectors = np.stack([found[c.content_hash] for c in chunks]) if chunks else np.zeros((0, 1), dtype=np.float32)
        return chunks, vectors

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        return self.catalog.get_chunks(chunk_ids)

    def iter_chunks(self) -> Iterator[Chunk]:
        for _, chunk in self.catalog.iter_chunks():
            yield chunk

    def metadata_kinds(self) -> dict[str, frozenset[str]]:
        return self.columns.kinds()

    def value_counts(self, key: str) -> dict[str, int]:
        rows = self.catalog.db.execute(
            "SELECT json_extract(metadata, '$.\"' || ? || '\"') AS value, count(*) FROM chunks"
            " WHERE value IS NOT NULL GROUP BY value ORDER BY 2 DESC, 1", (key,))
        return {str(value): int(n) for value, n in rows}

    def search_dense(self, vector: np.ndarray, k: int, conditions: Sequence[Condition] = ()) -> list[Candidate]:
        self._ensure_fresh()
        return self._dense(vector, k, self._allowed_rows(conditions))

    def search_lexical(self, query: str, k: int, conditions: Sequence[Condition] = ()) -> list[Candidate]:
        self._ensure_fresh()
        return self._lexical(query, k, conditions)

    def search_both(
        self, vector: np.ndarray, query: str, k: int, conditions: Sequence[Condition] = ()
    ) -> tuple[list[Candidate], list[Candidate]]:
        """From ``PARALLEL_ROWS`` chunks the BM25 half runs on a worker thread while this one
        searches the vectors (tantivy and faiss/numpy release the GIL). Measured at 1M chunks:
        hybrid p50 15.6 -> 11.3 ms, 10%-filtered 21.7 -> 14.1 ms; at 100k the threads' hand-offs
        cost about what they save, and below that more (BENCHMARKS.md "Scale")."""
        self._ensure_fresh()
        allowed = self._allowed_rows(conditions)
        if len(self.matrix) < PARALLEL_ROWS:
            return self._dense(vector, k, allowed), self._lexical(query, k, conditions, allowed)
        lexical = _workers().submit(self._lexical, query, k, conditions, allowed)
        try:
            dense = self._dense(vector, k, allowed)
        finally:
            found = lexical.result()
        return dense, found

    def _dense(self, vector: np.ndarray, k: int, allowed: np.ndarray | None) -> list[Candidate]:
        if self._ann_current() and (allowed is None or len(allowed) > self.ann.settings.exact_rows):
            return self.ann.search(vector, k, self.matrix, allowed)
        # Selective filters (and stores below the threshold) search every allowed vector.
        return run_or_rebuild(
            f"the vector matrix at {self.matrix.folder}",
            lambda: self.matrix.search(vector, k, allowed), self._rebuild_matrix,
        )

    def _lexical(self, query: str, k: int, conditions: Sequence[Condition],
                 allowed: np.ndarray | None = None) -> list[Candidate]:
        """BM25 among the chunks passing ``conditions``: inside tantivy by their metadata terms
        where it can (a tenant's equalities), else among the allowed rows (read here if not given)."""
        def search() -> list[Candidate]:
            rows = allowed
            if conditions and rows is None and self.lexical.metadata_filter(conditions) is None:
                rows = self._allowed_rows(conditions)
            return self.lexical.search(query, k, rows, conditions)

        return run_or_rebuild(
            f"the BM25 index at {self.lexical.folder}", search, self._rebuild_lexical,
        )

    def _ann_current(self) -> bool:
        return self.ann.ready and self.ann.generation == self.matrix.generation

    def _allowed_rows(self, conditions: Sequence[Condition]) -> np.ndarray | None:
        """SQLite rows matching every condition, or None for no filter."""
        if not conditions:
            return None
        key = (self.matrix.generation, repr(list(conditions)))
        allowed = self._allowed.pop(key, None)
        if allowed is None:
            rows = self.matrix.rows
            allowed = rows[self.columns.mask(conditions, rows, self.matrix.generation)]
            allowed.flags.writeable = False  # shared by the searches that reuse it
            if len(self._allowed) >= FILTERS_KEPT:
                del self._allowed[next(iter(self._allowed))]
        self._allowed[key] = allowed  # most recently used last
        return allowed

    def sources_where(self, conditions: Sequence[Condition]) -> set[str]:
        """The filter's rows (cached per filter and generation, as searches use them) mapped to
        their sources through a row -> source table read once per generation: no chunk is read."""
        self._ensure_fresh()
        allowed = self._allowed_rows(conditions)
        if allowed is None:
            return {r.path for r in self.list_sources()}
        rows, codes, names = self._row_sources()
        found = codes[np.searchsorted(rows, allowed)] if len(allowed) else codes[:0]
        return {str(names[code]) for code in np.unique(found)}

    def _row_sources(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rows ascending, each row's source number, the source paths), for this generation."""
        generation = self.matrix.generation
        if self._row_source_table is None or self._row_source_table[0] != generation:
            pairs = self.catalog.db.execute("SELECT row, source FROM chunks ORDER BY row").fetchall()
            rows = np.fromiter((row for row, _ in pairs), dtype=np.int64, count=len(pairs))
            names, codes = np.unique(np.array([source for _, source in pairs], dtype=object), return_inverse=True)
            self._row_source_table = (generation, rows, codes, names)
        return self._row_source_table[1:]

    def show_latest_writes(self) -> None:
        self.lexical.reload()

    def dense_scores(self, vector: np.ndarray, chunk_ids: Sequence[str]) -> dict[str, float]:
        self._ensure_fresh()
        return run_or_rebuild(
            f"the vector matrix at {self.matrix.folder}",
            lambda: self.matrix.scores_for_ids(vector, chunk_ids), self._rebuild_matrix,
        )

    # -- housekeeping ---------------------------------------------------------------------------
    def disk_bytes(self) -> int:
        return folder_bytes(self.path)

    def close(self) -> None:
        self.lexical.close()
        self.catalog.close()


class _EmbeddedSourceWrite(SourceWrite):
    """A source written part by part in one SQLite transaction (``Catalog.begin_source``); the BM25
    index replays it at the next flush, like any other write."""

    def __init__(self, store: EmbeddedStore, record: SourceRecord) -> None:
        super().__init__(store, record)
        self.store = store
        self.write = store.catalog.begin_source(record)

    def add(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        dimension = self.store.dimension
        if len(chunks) and dimension and np.asarray(vectors).shape[1] != dimension:
            self.write.abort()
            raise StoreError(f"{self.write.path}: vectors have dimension {np.asarray(vectors).shape[1]}, "
                             f"the index holds {dimension}")
        self.write.add(chunks, vectors)

    def commit(self, record: SourceRecord) -> None:
        self.store._note_pending(record.path, present=True)
        self.write.commit(record)

    def abort(self) -> None:
        self.write.abort()
