"""Caches of recent searches and query embeddings, least recently used first out.

A result is keyed by the normalised query, every parameter of the search and the
index's generation, so any write to the index makes older entries unreachable (they
age out). Query embeddings are keyed by the exact text the embedder sees.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    import numpy as np

    from ..config import CacheConfig, SearchConfig
    from .base import QueryPlan, SearchResult
    from .pipeline import Pipeline

V = TypeVar("V")


@dataclass(frozen=True)
class CacheStats:
    size: int
    capacity: int
    hits: int
    misses: int

    def to_dict(self) -> dict[str, int]:
        return {"size": self.size, "capacity": self.capacity, "hits": self.hits, "misses": self.misses}


class LRUCache(Generic[V]):
    """A bounded mapping; ``capacity`` 0 keeps nothing (every lookup misses)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> V | None:
        value = self._items.get(key)
        if value is None:
            self.misses += 1
            return None
        self._items.move_to_end(key)
        self.hits += 1
        return value

    def put(self, key: Hashable, value: V) -> None:
        if self.capacity <= 0:
            return
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def get_or_compute(self, key: Hashable, compute: Callable[[], V]) -> V:
        value = self.get(key)
        if value is None:
            value = compute()
            self.put(key, value)
        return value

    def clear(self) -> None:
        self._items.clear()

    def stats(self) -> CacheStats:
        return CacheStats(len(self._items), self.capacity, self.hits, self.misses)


def normalise_query(text: str) -> str:
    """Case and runs of whitespace do not change what a query means to the cache."""
    return " ".join(text.split()).casefold()


def result_key(query: str, generation: int, **parameters: Any) -> str:
    """One string for the query and every parameter (JSON, keys sorted, so dict order does not matter)."""
    return json.dumps({"q": normalise_query(query), "generation": generation, **parameters},
                      sort_keys=True, default=str)


class QueryCache:
    """An index's two caches: search results (keyed with the index generation) and query embeddings."""

    def __init__(self, settings: CacheConfig) -> None:
        self.results: LRUCache[SearchResult] = LRUCache(settings.size)
        self.embeddings: LRUCache[np.ndarray] = LRUCache(settings.embeddings)

    def run(
        self, pipeline: Pipeline, plan: QueryPlan, generation: int | None, settings: SearchConfig,
        execute: Callable[[], SearchResult],
    ) -> SearchResult:
        """``execute()``'s result, or the one kept from the same search since the last write."""
        import time

        from .base import SearchResult, StageTrace

        if generation is None or self.results.capacity <= 0:
            return execute()
        began = time.perf_counter()
        key = result_key(
            plan.original, generation, k=plan.k, where=plan.where, min_score=plan.min_score, steps=pipeline.steps,
            preset=pipeline.name, search=settings.model_dump(mode="json", exclude={"cache"}),
        )
        cached = self.results.get(key)
        if cached is not None:
            step = StageTrace("cache", (time.perf_counter() - began) * 1000, len(cached.hits), len(cached.hits),
                              {h.chunk_id: h.score for h in cached.hits}, "hit")
            return SearchResult(list(cached.hits), cached.plan, [step, *cached.trace],
                                cache={"hit": True, **self.results.stats().to_dict()})
        result = execute()
        if not any(step.note.startswith("fallback") for step in result.trace):  # retry the real search next time
            self.results.put(key, result)
        result.cache = {"hit": False, **self.results.stats().to_dict()}
        return result

    def query_vector(self, text: str, embed: Callable[[], np.ndarray], task: str | None = None) -> np.ndarray:
        """``text``'s query embedding (for a search ``task``), computed by ``embed()`` when not kept."""
        return self.embeddings.get_or_compute(text if task is None else f"{task}\x00{text}", embed)

    def stats(self) -> dict[str, dict[str, int]]:
        return {"results": self.results.stats().to_dict(), "embeddings": self.embeddings.stats().to_dict()}
