"""The chunkers of one index, and what the model-driven ones need: the embedder, the LLM, a cache.

``Chunkers.for_path`` calls a chunker's ``bind(services)`` when it has one, so the
chunker interface stays (config, token counter) for every other strategy.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import RagloomError, RagloomWarning

from .base import Chunker, create_chunker

if TYPE_CHECKING:
    from pathlib import Path

    from ...embed.base import Embedder
    from ...models.llm import LLM
    from ...knowledge.tables import Tables
    from ...parts import IndexParts


@dataclass
class ChunkerServices:
    embedder: Callable[[], Embedder]
    llm: Callable[[], LLM]
    #: Cache of model outputs in the index database, or None (no caching).
    cache: Callable[[], Tables | None]

    @classmethod
    def of_parts(cls, parts: IndexParts) -> ChunkerServices:
        from ...knowledge.structures import knowledge_llm
        from ...knowledge.tables import tables

        def cache() -> Tables | None:
            try:
                return tables(parts.store)
            except RagloomError:
                return None

        return cls(lambda: parts.embedder, lambda: knowledge_llm(parts), cache)


class Chunkers:
    """The index's chunkers, one per strategy, built when first needed."""

    def __init__(self, parts: IndexParts) -> None:
        self.parts = parts
        self._made: dict[str, Chunker] = {}

    def for_path(self, path: Path | None) -> Chunker:
        """The chunker for a file: ``chunking.by_extension`` may name another strategy."""
        settings = self.parts.config.chunking
        strategy = settings.strategy
        if path is not None:
            strategy = settings.by_extension.get(path.suffix.lower(), strategy)
        if strategy not in self._made:
            embedder = self.parts.embedder
            chunker = create_chunker(
                settings.model_copy(update={"strategy": strategy}), embedder.count_tokens, embedder.token_offsets,
                embedder.max_input_tokens, embedder.model_id,
            )
            if hasattr(chunker, "bind"):  # model-driven chunkers (semantic, agentic, proposition)
                chunker.bind(ChunkerServices.of_parts(self.parts))
            self._made[strategy] = chunker
        return self._made[strategy]


class LLMChunkerMixin:
    """The LLM of a bound chunker, or None (said once) when there is none."""

    services: ChunkerServices | None = None
    _llm_failed: str = ""

    def bind(self, services: ChunkerServices) -> None:
        self.services = services

    def llm(self) -> LLM | None:
        if self.services is None or self._llm_failed:
            return None
        try:
            return self.services.llm()
        except RagloomError as exc:
            self._llm_failed = str(exc)
            warnings.warn(f"{getattr(self, 'name', 'chunker')} chunking has no LLM ({exc}); "
                          "falling back to recursive chunking", RagloomWarning, stacklevel=2)
            return None

    def cache(self) -> Tables | None:
        return self.services.cache() if self.services is not None else None
