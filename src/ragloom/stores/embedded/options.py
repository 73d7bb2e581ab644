"""The embedded store's options (``store.embedded``), apart from ``store.py`` so that reading the config
imports neither the store nor its engines: ``EmbeddedStore.Options`` is ``EmbeddedStoreConfig``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...options import Options


class AnnConfig(Options):
    threshold: int = Field(
        200_000, ge=1,
        description="chunks from which the embedded store searches an approximate index (faiss IVF, pip extra `ann`)",
    )
    nprobe: int = Field(0, ge=0, description="IVF lists searched per query; 0 = one in 16, at least 32")
    exact_rows: int = Field(20_000, ge=0, description="a filter leaving at most this many chunks is searched exactly")
    codec: Literal["SQ8", "Flat"] = Field(
        "SQ8", description="how the index keeps vectors: SQ8 (1 byte a number) or Flat; hits are rescored exactly"
    )


class EmbeddedStoreConfig(Options):
    ann: AnnConfig = Field(default_factory=AnnConfig)
