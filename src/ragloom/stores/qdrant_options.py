"""The Qdrant store's options (``store.qdrant``), apart from ``qdrant.py`` so that reading the config
imports neither the store nor qdrant-client: ``QdrantStore.Options`` is this model."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..options import Options


class QdrantStoreConfig(Options):
    path: str | None = Field(
        None, description="folder for local mode (no server); empty = <index>/qdrant (ignored when url is set)"
    )
    url: str | None = Field(None, description="Qdrant server or cluster URL, e.g. http://localhost:6333")
    api_key: str | None = Field(None, description="API key for the server; empty = the QDRANT_API_KEY environment variable")
    collection: str = Field("ragloom", description="collection holding the chunks")
    prefer_grpc: bool = Field(False, description="talk gRPC (port 6334) instead of REST to the server")
    timeout: int = Field(60, ge=1, description="seconds to wait for the server on each request")
    catalog: str | None = Field(
        None, description="postgresql://USER@HOST/DB?index=NAME: keep the sources registry, write journal, generation, "
        "audit chain, entity graph and RAPTOR tree in that database (shared by every replica) instead of "
        "<index>/qdrant/ragloom.sqlite")
    lexical: Literal["server", "local"] = Field(
        "server", description="where a new collection's BM25 lives: server = sparse vectors with Qdrant's IDF "
        "modifier (nothing kept on this disk), local = ragloom's tantivy index beside the collection; a collection "
        "keeps what it was created with")
