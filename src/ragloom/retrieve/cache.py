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
from typing import Any, Generic, TypeVar

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
