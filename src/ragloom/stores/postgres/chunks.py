"""The chunk rows of an index: written with their vectors and postings, read back as ``Chunk``.

Postings are one row per (chunk, term) with the term's frequency. An index reads its chunks as
the embedded store does (``store.postgres.language: ragloom``, the default): each chunk by its
language's analyser (``lang/analysis.py``), its terms kept as ``family:term`` keys, its
identifiers whole and its camelCase words' parts beside them (``sparse_bm25.SparseBM25``), so
Thai, Chinese, Hindi or code are read here as they are everywhere. An index made with a
PostgreSQL text search configuration instead (``english``, ``german``, ... and every index
made before ragloom's analysis came here) keeps PostgreSQL's own analysis (``to_tsvector``).
A chunk's length is the sum of its terms' frequencies (identifiers whole not counted). The
index's document count and total length are kept in ``meta`` and changed in the same
transaction as the chunks, so BM25 statistics are always those of the committed chunks.

Most of a write's time is the postings' two indexes, each posting inserted into both (about
10 us a posting on this machine, against 2 us for the row itself): a write at least as large
as the index it joins (a first ingest, a migration) builds them after its rows instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ...types import Chunk
from ..sparse_bm25 import B, K1
from .schema import POSTINGS_INDEXES

COLUMNS = 'id, source, doc_id, chunk_index, start, "end", policy, content_hash, token_count, text, metadata'


def remove(connection: Any, source: str) -> int:
    """Delete a source's chunks with their vectors and postings; return how many went."""
    rids = [row[0] for row in connection.execute("SELECT rid FROM chunks WHERE source = %s", (source,)).fetchall()]
    if not rids:
        return 0
    # Each chunk's length in each of its fields: what its postings say (one doc_len per field).
    rows = connection.execute(
        "WITH p AS (DELETE FROM postings WHERE rid = ANY(%s) RETURNING rid, lexeme, tf, doc_len),"
        " d AS (SELECT lexeme, count(*) AS n FROM p GROUP BY lexeme),"
        " u AS (UPDATE terms t SET df = t.df - d.n FROM d WHERE t.lexeme = d.lexeme),"
        " f AS (SELECT DISTINCT rid, split_part(lexeme, ':', 1) AS field, doc_len FROM p)"
        " SELECT 'tf', coalesce(sum(tf), 0) FROM p UNION ALL SELECT field, sum(doc_len) FROM f GROUP BY field",
        (rids,),
    ).fetchall()
    connection.execute("DELETE FROM vectors WHERE rid = ANY(%s)", (rids,))
    connection.execute("DELETE FROM chunks WHERE source = %s", (source,))
    if field_lengths(connection) is None:  # PostgreSQL's analysis: a chunk's length is its postings' tf
        _add_statistics(connection, -len(rids), -int(rows[0][1]))
    else:
        fields = {field: -int(total) for field, total in rows[1:]}
        _add_statistics(connection, -len(rids), sum(n for f, n in fields.items() if f != _IDENTIFIERS))
        _add_field_lengths(connection, fields)
    return len(rids)


#: A source's postings from PostgreSQL's analysis of its chunks, each with its chunk's length and
#: its BM25 term weight under the average length of the index with the source in it. They come in
#: (rid, lexeme) order, which the primary key's inserts go fastest in, without a sort: the chunks by
#: their key, a tsvector's lexemes in byte order (the "C" collation's), and the hash join keeps the
#: order of its probe side (SciFact's one source: the sort was 0.3 s of 2.6).
_POSTINGS = """
WITH t AS ({terms}),
l AS ({lengths}),
a AS (SELECT greatest((m.total + (SELECT coalesce(sum(len), 0) FROM l)) / (m.n + %(count)s), 1e-9) AS avg
      FROM (SELECT (SELECT value::text::float8 FROM meta WHERE key = 'lexical_docs') AS n,
                   (SELECT value::text::float8 FROM meta WHERE key = 'lexical_length') AS total) m),
p AS (INSERT INTO postings(rid, lexeme, tf, doc_len, impact)
      SELECT t.rid, t.lexeme, t.tf, l.len, t.tf / (t.tf + %(k1)s * (1 - %(b)s + %(b)s * l.len / a.avg))
      FROM t JOIN l USING (rid) CROSS JOIN a),
d AS (INSERT INTO terms(lexeme, df) SELECT lexeme, count(*) FROM t GROUP BY lexeme
      ON CONFLICT (lexeme) DO UPDATE SET df = terms.df + excluded.df)
SELECT coalesce(sum(len), 0) FROM l
"""


#: The postings' source: PostgreSQL's analysis of each chunk (a chunk's length: its terms' tf).
_TSVECTOR_TERMS = ("SELECT c.rid, t.lexeme, coalesce(array_length(t.positions, 1), 1) AS tf FROM chunks c,"
                   " unnest(to_tsvector(%(language)s::regconfig, c.text)) t WHERE c.rid = ANY(%(rids)s)")
_TSVECTOR_LENGTHS = "SELECT rid, sum(tf)::int AS len FROM t GROUP BY rid"
#: The postings ragloom read (``_copy_terms``), each with its chunk's length in the term's field. The
#: impact (an order for reading a term's postings best first) takes the index's mean length.
_OWN_POSTINGS = """
WITH a AS (SELECT greatest((m.total + %(added)s) / (m.n + %(count)s), 1e-9) AS avg
           FROM (SELECT (SELECT value::text::float8 FROM meta WHERE key = 'lexical_docs') AS n,
                        (SELECT value::text::float8 FROM meta WHERE key = 'lexical_length') AS total) m),
p AS (INSERT INTO postings(rid, lexeme, tf, doc_len, impact)
      SELECT t.rid, t.lexeme, t.tf, t.len, t.tf / (t.tf + %(k1)s * (1 - %(b)s + %(b)s * t.len / a.avg))
      FROM pg_temp.ragloom_terms t CROSS JOIN a)
INSERT INTO terms(lexeme, df) SELECT lexeme, count(*) FROM pg_temp.ragloom_terms GROUP BY lexeme
ON CONFLICT (lexeme) DO UPDATE SET df = terms.df + excluded.df
"""
#: The ``language`` of an index that reads its chunks with ragloom's analysers.
OWN_ANALYSIS = "ragloom"
#: The field of identifiers read whole (not part of a chunk's length, as in the tantivy index).
_IDENTIFIERS = "id"

#: A write of at least this many chunks, and at least as many as the index holds, drops the postings'
#: indexes and builds them again once its rows are in: inserting SciFact's 562,345 postings into both
#: indexes row by row took 5.8 s, into the bare table 1.3 s and building the two indexes 1.2-1.6 s
#: (under load). Inside the source's transaction, so a failed write leaves the indexes as they were;
#: searches meanwhile wait for the commit (the drop locks the table), as they would for the rows.
BULK_ROWS = 1_000
#: The postings statement's sorts and hashes in memory: SciFact's one source spilled 40 MB to disk at
#: PostgreSQL's default 4 MB. Set for the write's transaction only.
WORK_MEM_MB = 64


def write(connection: Any, source: str, chunks: Sequence[Chunk], vectors: np.ndarray, language: str) -> None:
    """Insert a source's chunks with their vectors and postings (its old ones are gone): rows by
    COPY (the vectors in binary), the postings computed by PostgreSQL in one statement (around which
    a large write rebuilds the postings' indexes, ``BULK_ROWS``)."""
    if not len(chunks):
        return
    from psycopg.types.json import Jsonb

    matrix = np.asarray(vectors, dtype=np.float32)
    rids = [row[0] for row in connection.execute(
        "SELECT nextval('chunks_rid_seq') FROM generate_series(1, %s)", (len(chunks),)).fetchall()]
    cursor = connection.cursor()
    with cursor.copy(f"COPY chunks (rid, {COLUMNS}) FROM STDIN") as copy:
        for rid, chunk in zip(rids, chunks):
            copy.write_row((rid, chunk.id, source, chunk.doc_id, chunk.chunk_index, chunk.start, chunk.end,
                            chunk.policy, chunk.content_hash, chunk.token_count, chunk.text, Jsonb(chunk.metadata)))
    with cursor.copy("COPY vectors (rid, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(["int8", "vector"])
        for rid, vector in zip(rids, matrix):
            copy.write_row((rid, vector))
    bulk = len(chunks) >= max(BULK_ROWS, count(connection))
    for _, drop in POSTINGS_INDEXES if bulk else ():
        connection.execute(drop)
    connection.execute(f"SET LOCAL work_mem = '{WORK_MEM_MB}MB'")
    if language == OWN_ANALYSIS:
        fields = _copy_terms(connection, rids, chunks)
        length = sum(n for field, n in fields.items() if field != _IDENTIFIERS)
        connection.execute(_OWN_POSTINGS, {"added": length, "count": len(rids), "k1": K1, "b": B})
        _add_field_lengths(connection, fields)
    else:
        row = connection.execute(_POSTINGS.format(terms=_TSVECTOR_TERMS, lengths=_TSVECTOR_LENGTHS),
                                 {"language": language, "rids": rids, "count": len(rids), "k1": K1, "b": B}).fetchone()
        length = int(row[0])
    for create, _ in POSTINGS_INDEXES if bulk else ():
        connection.execute(create)
    _add_statistics(connection, len(chunks), length)


def _copy_terms(connection: Any, rids: Sequence[int], chunks: Sequence[Chunk]) -> dict[str, int]:
    """Each chunk's terms as ragloom reads them into a temporary table the postings statement reads
    (gone at the end of the transaction), each with the chunk's length in the term's field (its
    family's, ``en`` for camelCase parts, ``id`` for identifiers: the tantivy index's fields); return
    the fields' lengths summed over the chunks. Rows go in (rid, term) order, the order the postings'
    key is inserted fastest in. The families met are added to ``meta``."""
    from ..sparse_bm25 import SparseBM25

    reader = SparseBM25()
    connection.execute("CREATE TEMPORARY TABLE IF NOT EXISTS ragloom_terms (rid bigint, lexeme text, tf int, len int)"
                       " ON COMMIT DROP")
    connection.execute("TRUNCATE pg_temp.ragloom_terms")
    totals: Counter[str] = Counter()
    with connection.cursor().copy("COPY pg_temp.ragloom_terms (rid, lexeme, tf, len) FROM STDIN") as copy:
        for rid, chunk in zip(rids, chunks):
            counts = reader.chunk_terms(chunk)
            lengths: Counter[str] = Counter()
            for key, n in counts.items():
                lengths[key.partition(":")[0]] += n
            totals.update(lengths)
            for key in sorted(counts, key=lambda term: term.encode("utf-8")):
                copy.write_row((rid, key, counts[key], lengths[key.partition(":")[0]]))
    add_families(connection, reader.families(chunks))
    return dict(totals)


def field_lengths(connection: Any) -> dict[str, int] | None:
    """Each field's length summed over the index's chunks (a term's BM25 normalises by its field's
    mean, as tantivy does); None for an index read with PostgreSQL's analysis (one length)."""
    row = connection.execute("SELECT value FROM meta WHERE key = 'lexical_lengths'").fetchone()
    return dict(row[0]) if row else None


def _add_field_lengths(connection: Any, added: dict[str, int]) -> None:
    from psycopg.types.json import Jsonb

    totals = Counter(field_lengths(connection) or {})
    totals.update(added)
    connection.execute("INSERT INTO meta(key, value) VALUES ('lexical_lengths', %s)"
                       " ON CONFLICT (key) DO UPDATE SET value = excluded.value", (Jsonb(dict(totals)),))


def families(connection: Any) -> list[str]:
    """The language families the index's chunks are read by (a query is read by each of them)."""
    row = connection.execute("SELECT value FROM meta WHERE key = 'lexical_families'").fetchone()
    return sorted(row[0]) if row else []


def add_families(connection: Any, found: set[str]) -> None:
    new = found - set(families(connection))
    if new:
        from psycopg.types.json import Jsonb

        connection.execute(
            "INSERT INTO meta(key, value) VALUES ('lexical_families', %s)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (Jsonb(sorted(set(families(connection)) | new)),))


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
    extra, join = (", v.embedding", " JOIN vectors v USING (rid)") if vectors else ("", "")
    rows = connection.execute(
        f"SELECT {COLUMNS}{extra} FROM chunks{join} WHERE source = %s ORDER BY doc_id, chunk_index, id", (source,)
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
        "SELECT DISTINCT ON (content_hash) content_hash, v.embedding FROM chunks JOIN vectors v USING (rid)"
        " WHERE content_hash = ANY(%s)",
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
