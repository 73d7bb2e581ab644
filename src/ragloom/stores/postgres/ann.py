"""pgvector's approximate index on ``vectors``: which one there is, building it, and the
setting a search runs with.

IVFFlat (the default) partitions the vectors into ``sqrt(chunks)`` lists by k-means and
scans the lists nearest the query: it builds in seconds where HNSW takes minutes, and on the
clustered synthetic benchmark it reached recall@10 0.997 with 20 of 316 lists where HNSW
(m 16, ef_search 1000) stopped at 0.87 (BENCHMARKS.md, issue 30). Its lists are fixed when it
is built, so ``flush`` rebuilds it once the index has grown fourfold. HNSW is kept as a choice
(``store.postgres.ann_index``). A rebuild makes the new index under another name and swaps it
in, so searches are blocked only for the swap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .options import PostgresStoreConfig

NAME = "vectors_embedding"


@dataclass(frozen=True)
class Approximate:
    """The approximate index present: its kind (``ivfflat`` / ``hnsw``) and IVFFlat's lists."""

    kind: str
    lists: int = 0


def present(connection: Any) -> Approximate | None:
    row = connection.execute(
        "SELECT am.amname, c.reloptions FROM pg_class c JOIN pg_am am ON am.oid = c.relam"
        " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relname = %s",
        (NAME,),
    ).fetchone()
    if row is None:
        return None
    options = dict(option.split("=", 1) for option in row[1] or [])
    return Approximate(str(row[0]), int(options.get("lists", 0)))


def lists_for(rows: int) -> int:
    return max(1, round(math.sqrt(rows)))


def ivfflat_build_mb(lists: int, dimension: int) -> int:
    """The memory pgvector's IVFFlat build asks for, with a quarter to spare: its k-means sample of
    50 vectors a list, and a float per (sample, list) pair for the bounds of Elkan's k-means. At 1M
    chunks (1,000 lists of 384-d) that is 272 MB, over the 256 MB set before, and the build failed."""
    samples = 50 * lists
    needed = samples * (4 * dimension + 8) + 4 * samples * lists + 4 * lists * (dimension + lists)
    return math.ceil(needed * 1.25 / 2**20)


def needs_build(found: Approximate | None, rows: int, settings: PostgresStoreConfig) -> bool:
    """Whether ``flush`` should (re)build: none yet, another kind asked for, or IVFFlat's lists
    made for a quarter of the chunks there are now."""
    if rows <= settings.exact_rows:
        return False
    if found is None or found.kind != settings.ann_index:
        return True
    return found.kind == "ivfflat" and rows >= 4 * found.lists ** 2


def build(connection: Any, dimension: int, rows: int, settings: PostgresStoreConfig) -> Approximate:
    """Build the index settings ask for (cosine) and swap it in, inside the caller's transaction."""
    typmod = connection.execute(
        "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'vectors'::regclass AND attname = 'embedding'").fetchone()[0]
    if typmod != int(dimension):  # set when the embedder was recorded, unless the index predates that
        set_dimension(connection, dimension)
    if settings.ann_index == "hnsw":
        made = Approximate("hnsw")
        method = (f"hnsw (embedding vector_cosine_ops) WITH (m = {int(settings.hnsw_m)},"
                  f" ef_construction = {int(settings.hnsw_ef_construction)})")
    else:
        made = Approximate("ivfflat", lists_for(rows))
        method = f"ivfflat (embedding vector_cosine_ops) WITH (lists = {made.lists})"
    memory = max(256, ivfflat_build_mb(made.lists, int(dimension))) if made.kind == "ivfflat" else 256
    connection.execute(f"SET LOCAL maintenance_work_mem = '{memory}MB'")  # IVFFlat's k-means sample must fit
    connection.execute(f"DROP INDEX IF EXISTS {NAME}_new")
    connection.execute(f"CREATE INDEX {NAME}_new ON vectors USING {method}")
    connection.execute(f"DROP INDEX IF EXISTS {NAME}")
    connection.execute(f"ALTER INDEX {NAME}_new RENAME TO {NAME}")
    return made


def set_dimension(connection: Any, dimension: int) -> None:
    """Give the (still empty) vector column its dimension, which the index needs."""
    connection.execute(f"ALTER TABLE vectors ALTER COLUMN embedding TYPE vector({int(dimension)})")


def setting(found: Approximate, fetch: int, settings: PostgresStoreConfig) -> tuple[str, str]:
    """The search breadth for ``fetch`` results: IVFFlat's probes or HNSW's ef_search."""
    if found.kind == "ivfflat":
        # One list in 32, at least 20: at 1M chunks (1,000 lists) 31 probes gave recall@10 0.987 at
        # dense p95 36 ms, where one in 16 (62) gave 0.998 at 69 ms (BENCHMARKS.md, issue 30, quiet).
        probes = settings.ivfflat_probes or max(20, found.lists // 32)
        return "ivfflat.probes", str(min(found.lists, probes))
    return "hnsw.ef_search", str(min(1000, max(settings.hnsw_ef_search, 2 * fetch)))
