"""Adapters that let other frameworks use a ragloom index as their retriever.

``ragloom.integrations.langchain.RagloomRetriever`` (``pip install 'ragloom[langchain]'``)
and ``ragloom.integrations.llamaindex.RagloomRetriever`` (``'ragloom[llamaindex]'``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from ..index import Index
from ..types import Hit


def chunk_metadata(hit: Hit) -> dict[str, Any]:
    """What a hit's chunk is, the same whichever query or retriever found it: its metadata, source and id."""
    return {**hit.metadata, "source": hit.source, "chunk_id": hit.chunk_id}


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """The chunk's metadata plus where this search ranked it and how it scored (a LangChain
    ``Document`` has no other place for them)."""
    return {**chunk_metadata(hit), "score": hit.score, "rank": hit.rank, "scores": dict(hit.scores)}


class LockedSearch:
    """An index searched from any thread: one search at a time (an Index is single-threaded)."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self._lock = threading.Lock()

    def __call__(self, query: str, k: int, where: Mapping[str, Any] | None, mode: str | None) -> list[Hit]:
        with self._lock:
            return self.index.search(query, k, where=where, mode=mode)
