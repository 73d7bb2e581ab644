"""The chunk rows of an index: written with their vectors and postings, read back as ``Chunk``.

Postings are PostgreSQL's own analysis of each chunk (``to_tsvector`` in the index's text
search configuration): one row per (lexeme, chunk) with the term's frequency; a chunk's
length is the sum of its frequencies. The index's document count and total length are
kept in ``meta`` and changed in the same transaction as the chunks, so BM25 statistics are
always those of the committed chunks.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ...types import Chunk

COLUMNS = 'id, source, doc_id, chunk_index, start, "end", policy, content_hash, token_count, text, metadata'


def remove(connection: Any, source: str) -> int:
    """Delete a source's chunks (their postings go with them); return how many went."""
    row = connection.execute(
        "SELECT count(*), coalesce(sum(doc_len), 0) FROM chunks WHERE source = %s", (source,)).fetchone()
    count, length = int(row[0]), int(row[1])
    if count:
        connection.execute("DELETE FROM chunks WHERE source = %s", (source,))
        _add_statistics(connection, -count, -length)
    return count


def write(connection: Any, source: str, chunks: Sequence[Chunk], vectors: np.ndarray, language: str) -> None:
    """Insert a source's chunks with their vectors and postings (its old ones are gone)."""
    if not len(chunks):
        return
    from psycopg.types.json import Jsonb

    matrix = np.asarray(vectors, dtype=np.float32)
    with connection.cursor().copy(f"COPY chunks ({COLUMNS}, embedding) FROM STDIN") as copy:
        for chunk, vector in zip(chunks, matrix):
            copy.write_row((chunk.id, source, chunk.doc_id, chunk.chunk_index, chunk.start, chunk.end, chunk.policy,
                            chunk.content_hash, chunk.token_count, chunk.text, Jsonb(chunk.metadata), vector))
    row = connection.execute(
        "WITH p AS (INSERT INTO postings(lexeme, rid, tf)"
        "  SELECT t.lexeme, c.rid, coalesce(array_length(t.positions, 1), 1)"
        "  FROM chunks c, unnest(to_tsvector(%s::regconfig, c.text)) t WHERE c.source = %s RETURNING rid, tf),"
        " l AS (SELECT rid, sum(tf) AS len FROM p GROUP BY rid),"
        " u AS (UPDATE chunks c SET doc_len = l.len FROM l WHERE c.rid = l.rid RETURNING l.len)"
        " SELECT coalesce(sum(len), 0) FROM u",
        (language, source),
    ).fetchone()
    _add_statistics(connection, len(chunks), int(row[0]))


def _add_statistics(connection: Any, documents: int, length: int) -> None:
    connection.execute(
        "UPDATE meta SET value = to_jsonb(value::text::bigint + CASE key WHEN 'lexical_docs' THEN %s ELSE %s END)"
        " WHERE key IN ('lexical_docs', 'lexical_length')",
        (documents, length),
    )


def as_array(vector: Any) -> np.ndarray:
    """A pgvector value as float32 numpy (the adapter hands back a ``Vector``)."""
    return np.asarray(vector.to_numpy() if hasattr(vector, "to_numpy") else vector, dtype=np.float32)


def chunk_from_row(row: Sequence[Any]) -> Chunk:
    cid, source, doc_id, index, start, end, policy, digest, tokens, text, metadata = row[:11]
    return Chunk(id=cid, text=text, source=source, doc_id=doc_id, chunk_index=index, start=start, end=end,
                 policy=policy, content_hash=digest, token_count=tokens, metadata=metadata)


def get(connection: Any, chunk_ids: Sequence[str]) -> list[Chunk]:
    rows = connection.execute(f"SELECT {COLUMNS} FROM chunks WHERE id = ANY(%s)", (list(chunk_ids),)).fetchall()
    by_id = {row[0]: chunk_from_row(row) for row in rows}
    return [by_id[i] for i in chunk_ids if i in by_id]


def of_source(connection: Any, source: str, vectors: bool = False) -> list[tuple[Chunk, np.ndarray | None]]:
    """A source's chunks in document order (with their vectors when asked)."""
    extra = ", embedding" if vectors else ""
    rows = connection.execute(
        f"SELECT {COLUMNS}{extra} FROM chunks WHERE source = %s ORDER BY doc_id, chunk_index, id", (source,)
    ).fetchall()
    return [(chunk_from_row(row), as_array(row[11]) if vectors else None) for row in rows]


def scan(connection: Any, batch: int = 2000) -> Iterator[Chunk]:
    """Every chunk in storage order, read in batches through a server-side cursor."""
    with connection.transaction(), connection.cursor(name="ragloom_chunk_scan") as cursor:
        cursor.execute(f"SELECT {COLUMNS} FROM chunks ORDER BY rid")
        while rows := cursor.fetchmany(batch):
            yield from (chunk_from_row(row) for row in rows)


def count(connection: Any) -> int:
    row = connection.execute("SELECT value FROM meta WHERE key = 'lexical_docs'").fetchone()
    return int(row[0]) if row else 0


def cached_vectors(connection: Any, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
    rows = connection.execute(
        "SELECT DISTINCT ON (content_hash) content_hash, embedding FROM chunks"
        " WHERE content_hash = ANY(%s) AND embedding IS NOT NULL",
        (list(dict.fromkeys(content_hashes)),),
    ).fetchall()
    return {digest: as_array(vector) for digest, vector in rows}


#: jsonb_typeof names -> ``filters.kind_of``'s.
_KINDS = {"number": "number", "string": "text", "boolean": "boolean"}


def metadata_kinds(connection: Any) -> dict[str, frozenset[str]]:
    """``filters.value_kinds`` over every chunk, asked of PostgreSQL."""
    rows = connection.execute(
        "SELECT j.key, jsonb_typeof(j.value) FROM chunks, jsonb_each(chunks.metadata) j GROUP BY 1, 2"
        " UNION SELECT j.key, jsonb_typeof(e) FROM chunks, jsonb_each(chunks.metadata) j,"
        " jsonb_array_elements(j.value) e WHERE jsonb_typeof(j.value) = 'array' GROUP BY 1, 2"
    ).fetchall()
    found: dict[str, set[str]] = {}
    for key, kind in rows:
        found.setdefault(key, set())
        if kind in _KINDS:
            found[key].add(_KINDS[kind])
    return {key: frozenset(kinds) for key, kinds in found.items()}
