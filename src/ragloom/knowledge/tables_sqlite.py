"""The structures' tables in an index's SQLite database (embedded, and the SQLite catalog of
chroma and qdrant), created on first use beside the store's own tables."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..stores.embedded.connection import immediate_transaction, select_in
from .tables_base import Rows, Tables

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


def sqlite_has_rows(db: sqlite3.Connection, table: str) -> bool:
    """Whether ``table`` exists in ``db`` and holds a row (no table is created)."""
    exists = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    return bool(exists) and db.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is not None


class SqliteTables(Tables):
    """The tables in one index database (one connection, shared with the store)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        with self.transaction():
            for statement in (s.strip() for s in _SCHEMA.split(";")):
                if statement:
                    db.execute(statement)

    def execute(self, query: str, params: Sequence[Any] = ()) -> Rows:
        return self.db.execute(query, tuple(params))

    def executemany(self, query: str, rows: Iterable[Sequence[Any]]) -> None:
        self.db.executemany(query, rows)

    @contextmanager
    def transaction(self) -> Iterator[Tables]:
        with immediate_transaction(self.db, join=True):
            yield self

    def select_in(self, query: str, keys: Sequence[Any], *before: Any) -> Iterator[tuple[Any, ...]]:
        return select_in(self.db, query, keys, *before)

    def has_rows(self, table: str) -> bool:
        return sqlite_has_rows(self.db, table)
