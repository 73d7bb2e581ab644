"""Dense and BM25 search in PostgreSQL.

Dense: cosine distance (pgvector ``<=>``). Up to ``exact_rows`` candidate chunks (all of
them, or those a filter leaves) are ranked exactly, ordered by (distance, chunk id), which
is the store interface's tie rule; above that the HNSW index answers (``hnsw.ef_search``
raised with k), its candidates re-sorted by the same rule. A filtered HNSW search that
returns fewer than asked (pgvector 0.6 filters after the graph walk) falls back to exact.

Lexical: Okapi BM25 (k1 = 1.2, b = 0.75, idf = ln(1 + (N - df + 0.5) / (df + 0.5)), as
tantivy and Lucene score) from the ``postings`` table and the statistics in ``meta``, in
one SQL statement; filters restrict which chunks are ranked, never their scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...filters import Condition
from ..base import Candidate, rank_candidates
from . import where

K1, B = 1.2, 0.75

_BM25 = """
WITH q AS (SELECT DISTINCT t.lexeme FROM unnest(to_tsvector(%(language)s::regconfig, %(query)s)) t),
stats AS (SELECT (SELECT value::text::float8 FROM meta WHERE key = 'lexical_docs') AS n,
                 (SELECT value::text::float8 FROM meta WHERE key = 'lexical_length') AS total),
w AS (SELECT p.lexeme, ln(1 + (stats.n - count(*) + 0.5) / (count(*) + 0.5)) AS idf
      FROM postings p JOIN q USING (lexeme) CROSS JOIN stats GROUP BY p.lexeme, stats.n)
SELECT c.id, sum(w.idf * p.tf * (%(k1)s + 1) / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * c.doc_len
           / greatest(stats.total / greatest(stats.n, 1), 1e-9))) ORDER BY p.lexeme) AS score
FROM w JOIN postings p USING (lexeme) JOIN chunks c ON c.rid = p.rid CROSS JOIN stats
WHERE {where}
GROUP BY c.id ORDER BY score DESC, c.id LIMIT %(k)s
"""


def lexical(connection: Any, query: str, k: int, conditions: Sequence[Condition], language: str) -> list[Candidate]:
    if k <= 0 or not query.strip():
        return []
    sql, params = where.clause(conditions)
    named = {"language": language, "query": query, "k1": K1, "b": B, "k": k}
    named.update({f"w{i}": value for i, value in enumerate(params)})
    rows = connection.execute(_BM25.format(where=_named(sql, len(params))), named).fetchall()
    return [Candidate(cid, float(score)) for cid, score in rows]


def _named(sql: str, n: int) -> str:
    """Turn the clause's positional placeholders into the named ones of the BM25 statement."""
    for i in range(n):
        sql = sql.replace("%s", f"%(w{i})s", 1)
    return sql


def dense(connection: Any, vector: np.ndarray, k: int, conditions: Sequence[Condition], rows: int,
          exact_rows: int, ef_search: int, has_hnsw: bool) -> list[Candidate]:
    """Top ``k`` by cosine among chunks matching ``conditions``; ``rows``: how many chunks there are."""
    if k <= 0 or rows == 0:
        return []
    sql, params = where.clause(conditions)
    query = np.asarray(vector, dtype=np.float32).reshape(-1)
    approximate = has_hnsw and rows > exact_rows
    if approximate and conditions:
        allowed = connection.execute(f"SELECT count(*) FROM chunks c WHERE {sql}", params).fetchone()[0]
        approximate = allowed > exact_rows
    if approximate:
        found = _approximate(connection, query, k, sql, params, ef_search)
        if found is not None:
            return found
    rows_found = connection.execute(
        f"SELECT c.id, 1 - (c.embedding <=> %s) FROM chunks c WHERE {sql} AND c.embedding IS NOT NULL"
        " ORDER BY c.embedding <=> %s, c.id LIMIT %s",
        [query, *params, query, k],
    ).fetchall()
    return [Candidate(cid, float(score)) for cid, score in rows_found]


def _approximate(connection: Any, query: np.ndarray, k: int, sql: str, params: list[Any],
                 ef_search: int) -> list[Candidate] | None:
    fetch = k + 16
    with connection.transaction():
        connection.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(min(1000, max(ef_search, 2 * fetch))),))
        rows = connection.execute(
            f"SELECT c.id, 1 - (c.embedding <=> %s) FROM chunks c WHERE {sql} ORDER BY c.embedding <=> %s LIMIT %s",
            [query, *params, query, fetch],
        ).fetchall()
    if len(rows) < min(fetch, k) or (len(rows) < fetch and sql != "TRUE"):
        return None  # the graph walk ran out of matching chunks: search them exactly
    return rank_candidates([Candidate(cid, float(score)) for cid, score in rows], k)


def scores(connection: Any, vector: np.ndarray, chunk_ids: Sequence[str]) -> dict[str, float]:
    query = np.asarray(vector, dtype=np.float32).reshape(-1)
    rows = connection.execute(
        "SELECT id, 1 - (embedding <=> %s) FROM chunks WHERE id = ANY(%s) AND embedding IS NOT NULL",
        (query, list(dict.fromkeys(chunk_ids))),
    ).fetchall()
    return {cid: float(score) for cid, score in rows}


def has_hnsw(connection: Any) -> bool:
    return connection.execute(
        "SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'chunks_embedding'"
    ).fetchone() is not None


def set_dimension(connection: Any, dimension: int) -> None:
    """Give the (still empty) vector column its dimension, which an HNSW index needs."""
    connection.execute(f"ALTER TABLE chunks ALTER COLUMN embedding TYPE vector({int(dimension)})")


def build_hnsw(connection: Any, dimension: int, m: int, ef_construction: int) -> None:
    """Give the vector column its dimension and build the HNSW index (cosine)."""
    typmod = connection.execute(
        "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'").fetchone()[0]
    if typmod != int(dimension):  # set when the embedder was recorded, unless the index predates that
        connection.execute(f"ALTER TABLE chunks ALTER COLUMN embedding TYPE vector({int(dimension)})")
    connection.execute(
        f"CREATE INDEX IF NOT EXISTS chunks_embedding ON chunks USING hnsw (embedding vector_cosine_ops)"
        f" WITH (m = {int(m)}, ef_construction = {int(ef_construction)})"
    )
