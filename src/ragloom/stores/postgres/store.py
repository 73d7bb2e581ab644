"""PostgresStore: every piece of an index in one PostgreSQL database (pgvector for the vectors).

Sources registry, chunks with JSONB metadata, vectors, BM25 postings and statistics, the
generation, the audit chain, the vector cache (by content hash) and the derived structures
(the entity graph, its communities, the RAPTOR tree, the model-output cache) are tables of the index's
schema; nothing is kept beside the process, so any number of replicas can serve one index.
The index is named by ``store.postgres.url`` and ``store.postgres.index`` (or
``--index postgresql://USER@HOST/DB?index=NAME``); the local index directory is not used.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ...config import Config
from ...errors import ConfigError, StoreError
from ...filters import Condition
from ...types import Chunk, SourceRecord
from ..base import Abilities, Candidate, SourceWrite, Store
from ..catalog_backed import CatalogBacked
from . import chunks as chunk_rows
from . import ann, search
from .address import Address, parse_address
from .catalog import PostgresCatalog
from .database import Database, exists
from .jobs import PostgresJobs
from .options import PostgresStoreConfig


def address_of(settings: PostgresStoreConfig) -> Address:
    if not settings.url:
        raise ConfigError(
            "the postgres store needs a database: pass --index postgresql://USER@HOST:5432/DB?index=NAME "
            "or set store.postgres.url in ragloom.yaml"
        )
    return parse_address(settings.url, settings.index)


class PostgresStore(CatalogBacked[PostgresCatalog], Store):
    name = "postgres"
    Options = PostgresStoreConfig  # store.postgres

    def __init__(self, path: Path, config: Config, read_only: bool = False) -> None:
        self.path = path
        self.settings = config.store.postgres
        self.address = address_of(self.settings)
        self.database = Database(self.address, language=self.settings.language, pool_size=self.settings.pool_size,
                                 connect_timeout=self.settings.connect_timeout, read_only=read_only)
        self.catalog = PostgresCatalog(self.database)
        self.language = str(self.catalog.get_meta("language") or self.settings.language)
        self.database.language = self.language  # the index keeps the configuration it was made with
        self.abilities = Abilities(
            analysis="ragloom" if self.language == chunk_rows.OWN_ANALYSIS else f"postgresql:{self.language}",
            server_bm25=True, transactions=True, structures=True, sync_state=True, shared_jobs=True,
        )
        self._ann: ann.Approximate | None = None
        #: Runs the BM25 half of a hybrid search while the caller runs the dense half.
        self._halves = ThreadPoolExecutor(max_workers=self.settings.pool_size, thread_name_prefix="ragloom-pg-bm25")

    @classmethod
    def open(cls, path: Path, config: Config, read_only: bool = False) -> PostgresStore:
        return cls(path, config, read_only=read_only)

    @classmethod
    def exists(cls, path: Path, config: Config) -> bool:
        settings = config.store.postgres
        return exists(address_of(settings), settings.connect_timeout)

    def ingest_jobs(self) -> PostgresJobs:
        return PostgresJobs(self.settings.url or "", self.address.index)

    @contextmanager
    def _read(self) -> Iterator[Any]:
        with self.database.connection() as connection:
            yield connection

    # -- sources ------------------------------------------------------------------------------
    def set_embedder_info(self, info: dict[str, Any]) -> None:
        with self.catalog.transaction() as connection:
            super().set_embedder_info(info)
            if int(info.get("dimension") or 0) and chunk_rows.count(connection) == 0:
                ann.set_dimension(connection, int(info["dimension"]))

    def replace_source(self, record: SourceRecord, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        vectors = np.asarray(vectors, dtype=np.float32).reshape(len(chunks), -1) if len(chunks) else vectors
        dimension = self.dimension
        if len(chunks) and dimension and vectors.shape[1] != dimension:
            raise StoreError(
                f"{record.path}: vectors have dimension {vectors.shape[1]}, the index holds {dimension}"
            )
        self.catalog.replace_source(record, chunks, vectors)

    def begin_source(self, record: SourceRecord) -> SourceWrite:
        return _PostgresSourceWrite(self, record)

    def delete_source(self, path: str) -> int:
        if self.catalog.get_source(path) is None:
            return 0
        removed, _ = self.catalog.delete_source(path)
        return removed

    def cached_vectors(self, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        if not content_hashes:
            return {}
        with self._read() as connection:
            return chunk_rows.cached_vectors(connection, content_hashes)

    def flush(self) -> None:
        """Build the approximate index once exact search stops being the cheaper one (and
        rebuild an IVFFlat index the chunks have outgrown)."""
        rows = self.count()
        if self.read_only or not self.dimension or not ann.needs_build(self._approximate(), rows, self.settings):
            return
        with self.catalog.transaction() as connection:  # under the write lock: another replica may have built it
            self._ann = ann.present(connection)
            if ann.needs_build(self._ann, rows, self.settings):
                self._ann = ann.build(connection, self.dimension, rows, self.settings)

    def optimize(self) -> dict[str, object]:
        self.flush()
        with self._read() as connection:
            for table in ("chunks", "vectors", "postings", "terms"):
                connection.execute(f"ANALYZE {table}")
        found = self._approximate()
        return {"chunks": self.count(), "generation": self.generation(),
                "approximate_index": f"{found.kind} (pgvector)" if found else
                f"none (exact search up to {self.settings.exact_rows:,} chunks)"}

    def _approximate(self) -> ann.Approximate | None:
        """The approximate index (looked up until there is one; another replica may build it)."""
        if self._ann is None:
            with self._read() as connection:
                self._ann = ann.present(connection)
        return self._ann

    # -- reading ------------------------------------------------------------------------------
    def count(self) -> int:
        with self._read() as connection:
            return chunk_rows.count(connection)

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        if not chunk_ids:
            return []
        with self._read() as connection:
            return chunk_rows.get(connection, chunk_ids)

    def source_chunks(self, path: str) -> list[Chunk]:
        with self._read() as connection:
            return [chunk for chunk, _ in chunk_rows.of_source(connection, path)]

    def export_source(self, path: str) -> tuple[list[Chunk], np.ndarray]:
        with self._read() as connection:
            pairs = chunk_rows.of_source(connection, path, vectors=True)
        vectors = [v for _, v in pairs if v is not None]  # every chunk has one (``vectors`` is an inner join)
        if not vectors:
            return [], np.zeros((0, max(self.dimension, 1)), dtype=np.float32)
        return [c for c, _ in pairs], np.stack(vectors)

    def iter_chunks(self) -> Iterator[Chunk]:
        with self._read() as connection:
            yield from chunk_rows.scan(connection)

    def metadata_kinds(self) -> dict[str, frozenset[str]]:
        with self._read() as connection:
            return chunk_rows.metadata_kinds(connection)

    def sources_where(self, conditions: Sequence[Condition]) -> set[str]:
        """One statement for every source (not one per source, reading its chunks)."""
        with self._read() as connection:
            return search.sources(connection, conditions)

    def search_dense(self, vector: np.ndarray, k: int, conditions: Sequence[Condition] = ()) -> list[Candidate]:
        rows = self.count()
        found = self._approximate() if rows > self.settings.exact_rows else None
        breadth = None if found is None else (lambda fetch: ann.setting(found, fetch, self.settings))
        with self._read() as connection:
            return search.dense(connection, vector, k, conditions, rows, self.settings.exact_rows, breadth)

    def search_lexical(self, query: str, k: int, conditions: Sequence[Condition] = ()) -> list[Candidate]:
        with self._read() as connection:
            return search.lexical(connection, query, k, conditions, self.language, self.settings.bm25_depth)

    def search_both(self, vector: np.ndarray, query: str, k: int, conditions: Sequence[Condition] = ()
                    ) -> tuple[list[Candidate], list[Candidate]]:
        """Both halves at once, each on its own connection: PostgreSQL runs them in two backends,
        so a hybrid search takes as long as its slower half, not the sum of the two."""
        lexical = self._halves.submit(self.search_lexical, query, k, conditions)
        try:
            dense = self.search_dense(vector, k, conditions)
        except BaseException:
            wait([lexical])  # the BM25 half holds a connection: not left running behind the error
            raise
        return dense, lexical.result()

    def dense_scores(self, vector: np.ndarray, chunk_ids: Sequence[str]) -> dict[str, float]:
        if not chunk_ids:
            return {}
        with self._read() as connection:
            return search.scores(connection, vector, chunk_ids)

    # -- housekeeping -------------------------------------------------------------------------
    @contextmanager
    def write_lock(self, folder: Path, wait: bool = True) -> Iterator[None]:
        """The index's writer lock in the database (every replica sees it): waited for, or with
        ``wait=False`` IndexLockedError at once while another holds it."""
        with self.database.writer_session(wait):
            yield

    def disk_bytes(self) -> int:
        with self._read() as connection:
            row = connection.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
                " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
                (self.address.schema,),
            ).fetchone()
        return int(row[0])

    def close(self) -> None:
        self._halves.shutdown(wait=True)
        self.catalog.close()


class _PostgresSourceWrite(SourceWrite):
    """A source written part by part in one PostgreSQL transaction (``PostgresCatalog.begin_source``)."""

    def __init__(self, store: PostgresStore, record: SourceRecord) -> None:
        super().__init__(store, record)
        self.store = store
        self.write = store.catalog.begin_source(record)

    def add(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        vectors = np.asarray(vectors, dtype=np.float32).reshape(len(chunks), -1) if len(chunks) else vectors
        dimension = self.store.dimension
        if len(chunks) and dimension and vectors.shape[1] != dimension:
            self.write.abort()
            raise StoreError(f"{self.write.path}: vectors have dimension {vectors.shape[1]}, the index holds {dimension}")
        self.write.add(chunks, vectors)

    def commit(self, record: SourceRecord) -> None:
        self.write.commit(record)

    def abort(self) -> None:
        self.write.abort()
