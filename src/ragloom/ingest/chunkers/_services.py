"""What the model-driven chunkers need from the index: the embedder, the LLM, a cache.

``Index.chunker_for`` calls a chunker's ``bind(services)`` when it has one, so the
chunker interface stays (config, token counter) for every other strategy.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import RagloomError, RagloomWarning

if TYPE_CHECKING:
    from ...embed.base import Embedder
    from ...generate.base import LLM
    from ...knowledge.tables import Tables


@dataclass
class ChunkerServices:
    embedder: Callable[[], Embedder]
    llm: Callable[[], LLM]
    #: Cache of model outputs in the index database, or None (no caching).
    cache: Callable[[], Tables | None]

    @classmethod
    def of_index(cls, index: Any) -> ChunkerServices:
        from ...knowledge.sync import knowledge_llm
        from ...knowledge.tables import tables

        def cache() -> Tables | None:
            try:
                return tables(index.store)
            except RagloomError:
                return None

        return cls(lambda: index.embedder, lambda: knowledge_llm(index), cache)


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
