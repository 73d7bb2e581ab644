"""The tables of one index, in its own schema (``ragloom_<name>``), and their version.

``meta``: key -> JSON (schema version, generation, embedder, ingest roots, the audit head,
the lexical statistics). ``sources``: the registry. ``chunks``: one row per chunk, its
metadata as JSONB (filtered with jsonpath, GIN-indexed). ``vectors``: (chunk, vector) in a
narrow table of their own, so an exact scan reads vectors and nothing else (pgvector; an
approximate index, ``ann``, is built once the index is large enough for it to pay). ``postings``: (chunk,
lexeme, term frequency, the chunk's length) from PostgreSQL's own text analysis, which BM25
is computed from, with each posting's impact (its BM25 term weight when written) so that a
term's best postings are read first; ``terms``: each lexeme's document frequency.
Rows of one chunk are deleted by ``chunks.remove`` (no foreign keys: a check for each posting
would slow the bulk write). ``audit_log``: the hash chain of ``ragloom.audit``.
"""

from __future__ import annotations

import json
from typing import Any

from ...errors import ConfigError

SCHEMA_VERSION = 2

_TABLES = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value JSONB NOT NULL);
CREATE TABLE sources (
    path TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    mtime DOUBLE PRECISION NOT NULL,
    size BIGINT NOT NULL,
    chunk_count INTEGER NOT NULL,
    ingested_at DOUBLE PRECISION NOT NULL,
    loader TEXT NOT NULL DEFAULT '',
    policy TEXT NOT NULL DEFAULT ''
);
CREATE TABLE chunks (
    rid BIGSERIAL PRIMARY KEY,
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
    metadata JSONB NOT NULL
);
CREATE INDEX chunks_source ON chunks(source, doc_id, chunk_index);
CREATE INDEX chunks_hash ON chunks(content_hash);
CREATE INDEX chunks_metadata ON chunks USING gin (metadata jsonb_path_ops);
CREATE TABLE vectors (rid BIGINT PRIMARY KEY, embedding vector NOT NULL);
CREATE TABLE postings (
    rid BIGINT NOT NULL,
    lexeme TEXT COLLATE "C" NOT NULL,
    tf INTEGER NOT NULL,
    doc_len INTEGER NOT NULL,
    impact REAL NOT NULL,
    PRIMARY KEY (rid, lexeme) INCLUDE (tf, doc_len)
);
CREATE INDEX postings_impact ON postings(lexeme, impact DESC) INCLUDE (rid, tf, doc_len);
CREATE TABLE terms (lexeme TEXT COLLATE "C" PRIMARY KEY, df INTEGER NOT NULL);
CREATE TABLE audit_log (
    seq BIGINT PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    entry TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX audit_kind ON audit_log(kind, seq)
"""


def create_schema(connection: Any, schema: str, language: str) -> None:
    """Create the index's schema and tables (inside the caller's transaction)."""
    from psycopg import errors, sql

    try:
        with connection.transaction():
            connection.execute("SELECT %s::regconfig", (language,))
    except errors.UndefinedObject:
        raise ConfigError(
            f"PostgreSQL has no text search configuration {language!r} (store.postgres.language); "
            "list them with `\\dF` in psql (english, german, french, simple, ...)"
        ) from None
    connection.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
    connection.execute(sql.SQL("SET LOCAL search_path = {}, public").format(sql.Identifier(schema)))
    for statement in _TABLES.split(";"):
        connection.execute(statement)
    connection.execute(
        "INSERT INTO meta(key, value) VALUES ('schema_version', %s), ('generation', '0'), ('language', %s),"
        " ('lexical_docs', '0'), ('lexical_length', '0')",
        (str(SCHEMA_VERSION), json.dumps(language)),
    )
