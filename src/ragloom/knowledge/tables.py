"""The SQLite tables of the derived structures, and a small cache of model outputs.

The tables sit in the index's own database so that a source's graph rows and tree
leaves are removed in the same place its chunks are. A store without a SQLite catalog
cannot hold them; ``database`` says so.
"""

from __future__ import annotations

import json
import sqlite3
import weakref
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ..errors import StoreError
from ..stores.embedded.connection import immediate_transaction, select_in
from ..types import sha256_hex

if TYPE_CHECKING:
    from ..stores.base import Store

_SCHEMA = """
CREATE TABLE IF NOT EXISTS knowledge_cache (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS kg_entities (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    type TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS kg_mentions (
    chunk_id TEXT NOT NULL,
    source TEXT NOT NULL,
    entity_id INTEGER NOT NULL REFERENCES kg_entities(id),
    count INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (chunk_id, entity_id)
);
CREATE INDEX IF NOT EXISTS kg_mentions_entity ON kg_mentions(entity_id);
CREATE INDEX IF NOT EXISTS kg_mentions_source ON kg_mentions(source);
CREATE TABLE IF NOT EXISTS kg_relations (
    head INTEGER NOT NULL REFERENCES kg_entities(id),
    tail INTEGER NOT NULL REFERENCES kg_entities(id),
    chunk_id TEXT NOT NULL,
    source TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    weight REAL NOT NULL DEFAULT 1.0,
    PRIMARY KEY (head, tail, chunk_id)
);
CREATE INDEX IF NOT EXISTS kg_relations_tail ON kg_relations(tail);
CREATE INDEX IF NOT EXISTS kg_relations_source ON kg_relations(source);
CREATE TABLE IF NOT EXISTS kg_sources (
    path TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    extractor TEXT NOT NULL,
    chunks INTEGER NOT NULL,
    skipped INTEGER NOT NULL DEFAULT 0,
    seconds REAL NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS kg_communities (
    id INTEGER NOT NULL,
    entity_id INTEGER NOT NULL REFERENCES kg_entities(id),
    PRIMARY KEY (id, entity_id)
);
CREATE TABLE IF NOT EXISTS kg_community_summaries (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    summary TEXT NOT NULL,
    size INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS raptor_leaves (
    chunk_id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    content_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS raptor_leaves_source ON raptor_leaves(source);
CREATE TABLE IF NOT EXISTS raptor_sources (path TEXT PRIMARY KEY, content_hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS raptor_nodes (
    id TEXT PRIMARY KEY,
    level INTEGER NOT NULL,
    text TEXT NOT NULL,
    children TEXT NOT NULL,
    leaves TEXT NOT NULL,
    vector BLOB NOT NULL,
    dirty INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS raptor_nodes_level ON raptor_nodes(level);
"""


class Tables:
    """The structures' tables in one index database (one connection, shared with the store)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        with self.transaction():
            for statement in (s.strip() for s in _SCHEMA.split(";")):
                if statement:
                    db.execute(statement)

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """A write transaction, or the caller's when one is open (knowledge writes join the store's)."""
        return immediate_transaction(self.db, join=True)

    def select_in(self, query: str, keys: Sequence[Any], *before: Any) -> Iterator[tuple[Any, ...]]:
        """Rows of ``query + " IN (...)"`` over the distinct ``keys``, in batches SQLite accepts."""
        return select_in(self.db, query, keys, *before)

    # -- cache of model outputs (agentic boundaries, propositions, LLM extractions) ---------------
    def cached(self, *key_parts: object) -> Any:
        row = self.db.execute("SELECT value FROM knowledge_cache WHERE key = ?", (sha256_hex(*key_parts),)).fetchone()
        return None if row is None else json.loads(row[0])

    def cache(self, value: Any, *key_parts: object) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO knowledge_cache(key, value) VALUES (?, ?)",
                       (sha256_hex(*key_parts), json.dumps(value)))


def database(store: Store, feature: str = "the entity graph and the RAPTOR tree") -> sqlite3.Connection:
    """The store's SQLite connection, or a StoreError saying the backend cannot hold ``feature``."""
    db = store.catalog_database()
    if db is None:
        raise StoreError(
            f"{feature} needs an index with a SQLite catalog (the embedded, chroma and qdrant stores have one); "
            f"the {getattr(store, 'name', type(store).__name__)} store has none"
        )
    return db


#: Each open store's tables, created once (and forgotten with the store).
_OPENED: weakref.WeakKeyDictionary[Store, Tables] = weakref.WeakKeyDictionary()


def tables(store: Store) -> Tables:
    """The structures' tables of this store, created on first use."""
    if store not in _OPENED:
        _OPENED[store] = Tables(database(store))
    return _OPENED[store]
