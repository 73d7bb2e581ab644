"""The Chroma store's options (``store.chroma``), apart from ``chroma.py`` so that reading the config
imports neither the store nor chromadb: ``ChromaStore.Options`` is this model."""

from __future__ import annotations

from pydantic import Field

from ..options import Options


class ChromaStoreConfig(Options):
    path: str | None = Field(
        None, description="persist directory of the embedded client; empty = <index>/chroma (ignored when host is set)"
    )
    host: str | None = Field(None, description="Chroma server host; set it to use the HTTP client instead of a directory")
    port: int = Field(8000, ge=1, le=65535, description="Chroma server port")
    ssl: bool = Field(False, description="use https to reach the Chroma server")
    headers: dict[str, str] = Field(default_factory=dict, description="extra HTTP headers for the server (e.g. auth)")
    collection: str = Field("ragloom", description="collection holding the chunks (3-512 chars of [a-zA-Z0-9._-])")
    catalog: str | None = Field(
        None, description="postgresql://USER@HOST/DB?index=NAME: keep the sources registry, write journal, generation, "
        "audit chain, entity graph and RAPTOR tree in that database (shared by every replica) instead of "
        "<index>/chroma/ragloom.sqlite")
