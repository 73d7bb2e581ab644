"""What the derived structures (the entity graph, the RAPTOR tree) share: how stale each is,
the LLM they use, and the chunks of a source.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..types import Chunk
from .tables import has_rows_in

if TYPE_CHECKING:
    from ..models.llm import LLM
    from ..parts import IndexParts
    from ..stores.base import Store


@dataclass
class StructureState:
    """Whether a structure is built, and how far behind the sources it is."""

    built: bool = False
    enabled: bool = False
    stale_sources: list[str] = field(default_factory=list)
    removed_sources: list[str] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)

    @property
    def fresh(self) -> bool:
        return self.built and not self.stale_sources and not self.removed_sources and not self.counts.get("dirty")


def knowledge_llm(parts: IndexParts) -> LLM:
    """The index's LLM (the ``llm`` section), loaded once and shared by every knowledge step."""
    from ..models.llm import create_llm

    return parts.component("llm", lambda: create_llm(parts.config.llm))


def has_table_rows(parts: IndexParts, table: str) -> bool:
    """Whether ``table`` exists in the index database and holds a row (no tables are created)."""
    return has_table_rows_in(parts.store, table)


def has_table_rows_in(store: Store, table: str) -> bool:
    return has_rows_in(store, table)


def source_chunks(parts: IndexParts, path: str) -> list[Chunk]:
    """A source's chunks in document order, from whichever store holds them."""
    return parts.store.source_chunks(path)
