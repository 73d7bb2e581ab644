"""Dense and BM25 search in PostgreSQL.

Dense: cosine distance (pgvector ``<=>``). An index of up to ``exact_rows`` chunks is ranked
exactly, ordered by (distance, chunk id), which is the store interface's tie rule; above that
the approximate index answers (``ann``: IVFFlat or HNSW, with its search breadth set for the
query), its candidates re-sorted by the same rule. A filter is applied to the rows the index
scan yields (pgvector 0.6 has no filtered scan); when too few of them pass, the search is
exact over the chunks the filter leaves (found through the GIN index on the metadata).

Lexical: Okapi BM25 (k1 = 1.2, b = 0.75, idf = ln(1 + (N - df + 0.5) / (df + 0.5)), as
tantivy and Lucene score) from the ``postings`` and ``terms`` tables and the statistics in
``meta``, in one SQL statement. A common term is in most chunks, and summing all its postings
made a query cost a scan of the index: instead each query term contributes its ``depth`` best
postings (``store.postgres.bm25_depth``, by impact: the BM25 term weight when written, an
index order), and those candidate chunks are scored exactly on every query term (a term read
in part is looked up for each candidate). A chunk outside every term's best postings is not
ranked, so results are exact whenever each term's list is read whole (``df <= depth``), and
otherwise miss only chunks whose best term was not among the ``depth`` best. A filtered search
first ranks the unfiltered top ``OVER_FETCH * k`` (at least ``depth / 4``, which reads no more
postings) and keeps those that pass; when fewer than ``k`` pass, the filter restricts which
postings are read (so ``depth`` matching chunks per term), tested on each posting's chunk so that
the planner sees the filter's real selectivity. A filter never changes the scores.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from functools import lru_cache

from ...filters import Condition
from ..base import Candidate, rank_candidates
from ..sparse_bm25 import B, K1, SparseBM25
from . import chunks, where
from .chunks import OWN_ANALYSIS


_BM25 = """
WITH q AS ({query}),
stats AS (SELECT (SELECT value::text::float8 FROM meta WHERE key = 'lexical_docs') AS n,
                 (SELECT value::text::float8 FROM meta WHERE key = 'lexical_length') AS total,
                 (SELECT value FROM meta WHERE key = 'lexical_lengths') AS fields),
w AS MATERIALIZED (SELECT t.lexeme, t.df, q.qw * ln(1 + (stats.n - t.df + 0.5) / (t.df + 0.5)) AS idf,
                          greatest(coalesce((stats.fields ->> split_part(t.lexeme, ':', 1))::float8, stats.total)
                                   / greatest(stats.n, 1), 1e-9) AS avg
                   FROM terms t JOIN q USING (lexeme) CROSS JOIN stats WHERE t.df > 0),
hits AS MATERIALIZED (SELECT w.lexeme, x.rid, x.tf, x.doc_len FROM w CROSS JOIN LATERAL (
    SELECT p.rid, p.tf, p.doc_len FROM postings p WHERE p.lexeme = w.lexeme {where}
    ORDER BY p.impact DESC LIMIT %(depth)s) x),
cand AS MATERIALIZED (SELECT DISTINCT rid FROM hits),
rest AS (SELECT p.* FROM w CROSS JOIN cand CROSS JOIN LATERAL (  -- a term read in part: probe the others
    SELECT p.lexeme, p.rid, p.tf, p.doc_len FROM postings p WHERE p.rid = cand.rid AND p.lexeme = w.lexeme
    OFFSET 0) p
    WHERE w.df > %(depth)s AND NOT EXISTS (SELECT 1 FROM hits h WHERE h.lexeme = w.lexeme AND h.rid = cand.rid)),
s AS (SELECT a.rid, sum(w.idf * a.tf * (%(k1)s + 1) / (a.tf + %(k1)s * (1 - %(b)s + %(b)s * a.doc_len / w.avg))
                        ORDER BY a.lexeme) AS score
      FROM (SELECT * FROM hits UNION ALL SELECT * FROM rest) a JOIN w USING (lexeme) GROUP BY a.rid)
SELECT c.id, s.score FROM s JOIN chunks c USING (rid)
WHERE s.score >= (SELECT min(score) FROM (SELECT score FROM s ORDER BY score DESC LIMIT %(k)s) top)
ORDER BY s.score DESC, c.id LIMIT %(k)s
"""


#: The query's terms: PostgreSQL's analysis of it (each term once), or the ``family:term`` keys
#: ragloom read it as, each weighted by how often the query says it (as tantivy boosts them).
_TSVECTOR_QUERY = ('SELECT DISTINCT t.lexeme COLLATE "C" AS lexeme, 1.0::float8 AS qw'
                   " FROM unnest(to_tsvector(%(language)s::regconfig, %(query)s)) t")
_OWN_QUERY = ('SELECT k.lexeme COLLATE "C" AS lexeme, k.qw'
                  " FROM unnest(%(terms)s::text[], %(weights)s::float8[]) AS k(lexeme, qw)")
#: The most distinct terms of one query read per language family (as the embedded store's).
MAX_QUERY_TERMS = 1024

#: A filtered BM25 search first ranks this many times ``k`` chunks without the filter (at least a
#: quarter of ``depth``: up to there the statement reads no more postings, and a 10% filter keeps
#: about 25 of 250) and keeps those that pass; only when fewer than ``k`` pass does it search with
#: the filter inside the statement. ``OVER_FETCH_MAX`` bounds the first try.
OVER_FETCH, OVER_FETCH_MAX = 10, 2_000


def lexical(connection: Any, query: str, k: int, conditions: Sequence[Condition], language: str,
            depth: int) -> list[Candidate]:
    if k <= 0 or not query.strip():
        return []
    if conditions:
        found = _over_fetched(connection, query, k, conditions, language, depth)
        if found is not None:
            return found
    return _bm25(connection, query, k, conditions, language, depth)


def _bm25(connection: Any, query: str, k: int, conditions: Sequence[Condition], language: str,
          depth: int) -> list[Candidate]:
    sql, params = where.clause(conditions)
    named = {"language": language, "query": query, "k1": K1, "b": B, "k": k, "depth": max(depth, 4 * k)}
    source = _TSVECTOR_QUERY
    if language == OWN_ANALYSIS:
        terms = _reader().query_terms(query, chunks.families(connection) or ["en"], limit=MAX_QUERY_TERMS)
        if not terms:
            return []
        named.update(terms=list(terms), weights=list(terms.values()))
        source = _OWN_QUERY
    named.update({f"w{i}": value for i, value in enumerate(params)})
    test = ""
    if conditions:
        # Tested on each posting's chunk, not against a materialized set of the passing chunks: the
        # planner has no statistics for such a set, took it for 200 rows and probed postings once
        # for each of a 10% filter's 100k chunks (3-24 s a query at 1M chunks). Written this way it
        # walks a term's postings best first and checks their chunks (0.3 s), or collects the
        # passing chunks first when the filter is selective, as the statistics say.
        test = f"AND EXISTS (SELECT 1 FROM chunks c WHERE c.rid = p.rid AND {_named(sql, len(params))})"
    rows = connection.execute(_BM25.format(where=test, query=source), named).fetchall()
    return [Candidate(cid, float(score)) for cid, score in rows]


def _over_fetched(connection: Any, query: str, k: int, conditions: Sequence[Condition], language: str,
                  depth: int) -> list[Candidate] | None:
    """The top ``k`` passing ``conditions`` found among the unfiltered top ``OVER_FETCH * k``; None
    when fewer pass (or the k-th ties the last one read), so the filtered statement must answer."""
    n = min(max(OVER_FETCH * k, depth // 4), OVER_FETCH_MAX)
    if n <= k:
        return None
    ranked = _bm25(connection, query, n, (), language, depth)
    if not ranked:
        return []
    sql, params = where.clause(conditions)
    passing = {row[0] for row in connection.execute(
        f"SELECT c.id FROM chunks c WHERE c.id = ANY(%s) AND {sql}", [[c.chunk_id for c in ranked], *params])}
    kept = rank_candidates([c for c in ranked if c.chunk_id in passing], k)
    if len(ranked) < n:  # every chunk the query matches was read
        return kept
    if len(kept) < k or kept[-1].score <= ranked[-1].score:  # a chunk not read may pass, or tie the k-th
        return None
    return kept


@lru_cache(maxsize=1)
def _reader() -> SparseBM25:
    return SparseBM25()


def _named(sql: str, n: int) -> str:
    """Turn the clause's positional placeholders into the named ones of the BM25 statement."""
    for i in range(n):
        sql = sql.replace("%s", f"%(w{i})s", 1)
    return sql


def dense(connection: Any, vector: np.ndarray, k: int, conditions: Sequence[Condition], rows: int,
          exact_rows: int, breadth: Callable[[int], tuple[str, str]] | None) -> list[Candidate]:
    """Top ``k`` by cosine among chunks matching ``conditions``; ``rows``: how many chunks there are;
    ``breadth``: the setting for an approximate search of n results (None: no approximate index)."""
    if k <= 0 or rows == 0:
        return []
    sql, params = where.clause(conditions)
    query = np.asarray(vector, dtype=np.float32).reshape(-1)
    if breadth is not None and rows > exact_rows:  # a filter is applied during the index scan
        found = _approximate(connection, query, k, sql, params, breadth)
        if found is not None:
            return found
    rows_found = connection.execute(
        f"SELECT c.id, 1 - (v.embedding <=> %s) FROM vectors v JOIN chunks c USING (rid) WHERE {sql}"
        " ORDER BY v.embedding <=> %s, c.id LIMIT %s",
        [query, *params, query, k],
    ).fetchall()
    return [Candidate(cid, float(score)) for cid, score in rows_found]


def _approximate(connection: Any, query: np.ndarray, k: int, sql: str, params: list[Any],
                 breadth: Callable[[int], tuple[str, str]]) -> list[Candidate] | None:
    fetch = k + 16
    with connection.transaction():
        connection.execute("SELECT set_config(%s, %s, true)", breadth(fetch))
        rows = connection.execute(
            f"SELECT c.id, 1 - (v.embedding <=> %s) FROM vectors v JOIN chunks c USING (rid) WHERE {sql}"
            " ORDER BY v.embedding <=> %s LIMIT %s",
            [query, *params, query, fetch],
        ).fetchall()
    if len(rows) < min(fetch, k) or (len(rows) < fetch and sql != "TRUE"):
        return None  # the index scan ran out of matching chunks: search them exactly
    return rank_candidates([Candidate(cid, float(score)) for cid, score in rows], k)


def scores(connection: Any, vector: np.ndarray, chunk_ids: Sequence[str]) -> dict[str, float]:
    query = np.asarray(vector, dtype=np.float32).reshape(-1)
    rows = connection.execute(
        "SELECT c.id, 1 - (v.embedding <=> %s) FROM chunks c JOIN vectors v USING (rid) WHERE c.id = ANY(%s)",
        (query, list(dict.fromkeys(chunk_ids))),
    ).fetchall()
    return {cid: float(score) for cid, score in rows}


def sources(connection: Any, conditions: Sequence[Condition]) -> set[str]:
    """The registered sources with at least one chunk matching ``conditions``, in one statement
    (the filter as dense search applies it; the GIN index on the metadata finds the chunks)."""
    sql, params = where.clause(conditions)
    rows = connection.execute(
        f"SELECT s.path FROM sources s WHERE s.path IN (SELECT c.source FROM chunks c WHERE {sql})", params,
    ).fetchall()
    return {path for (path,) in rows}
