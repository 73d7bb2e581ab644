"""The PostgreSQL store's options (``store.postgres``), apart from ``store.py`` so that reading the
config imports neither the store nor psycopg: ``PostgresStore.Options`` is this model."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...options import Options


class PostgresStoreConfig(Options):
    url: str | None = Field(
        None, description="libpq URL or conninfo of the database, e.g. postgresql://USER@HOST:5432/DB "
        "(postgresql://USER@/DB?host=/socket/dir for a unix socket); a query parameter index=NAME names the index",
    )
    index: str = Field("default", description="name of the index in the database (several live side by side)")
    language: str = Field(
        "ragloom", description="how BM25 reads text: ragloom (each chunk by its language's analyser, identifiers "
        "whole, as the embedded store, Qdrant and Chroma read it) or a PostgreSQL text search configuration "
        "(english, german, simple, ...); an index keeps what it was made with")
    pool_size: int = Field(
        8, ge=1, description="connections the store keeps open to the database (shared by the searches of one process)")
    exact_rows: int = Field(
        20_000, ge=0, description="an index of at most this many chunks is searched exactly (dense); above, through "
        "the approximate index (a filter is applied to what it finds, exact when too few pass)")
    bm25_depth: int = Field(
        1000, ge=1, description="BM25: postings read per query term, best first (at least 4 k); the chunks found are "
        "then scored exactly on every term")
    ann_index: Literal["ivfflat", "hnsw"] = Field(
        "ivfflat", description="pgvector's approximate index above exact_rows: ivfflat (sqrt(chunks) lists, rebuilt "
        "when the index has grown 4x) or hnsw")
    ivfflat_probes: int = Field(0, ge=0, description="IVFFlat lists searched per query; 0 = one in 32, at least 20")
    hnsw_m: int = Field(16, ge=2, le=100, description="HNSW graph degree (pgvector `m`)")
    hnsw_ef_construction: int = Field(64, ge=4, le=1000, description="HNSW build breadth (pgvector `ef_construction`)")
    hnsw_ef_search: int = Field(100, ge=1, le=1000, description="HNSW search breadth, raised for larger k")
    connect_timeout: int = Field(10, ge=1, description="seconds to wait for the database when connecting")
