"""Keeping the structures in step with the sources, and saying how stale they are.

``sync(index)`` runs at the end of every ingest and removal. A structure is kept up to
date when it is enabled in the config or already built (so a plain ``ragloom ingest``
does not let a graph built with ``--graph`` drift). It compares the content hash each
source had when the structure last saw it with the store's: removed sources are taken
out, changed and new ones put in, untouched ones are not read at all.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..types import Chunk, SourceRecord
from .extract import Extraction, create_extractor
from .graph import Graph
from .names import alias_keys
from .tables import Tables, tables

if TYPE_CHECKING:
    from ..generate.base import LLM
    from ..index import Index

#: Chunks extracted together (spaCy batches them; the LLM goes one by one anyway).
_EXTRACT_BATCH = 512


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


@dataclass
class KnowledgeStatus:
    graph: StructureState
    raptor: StructureState

    def to_dict(self) -> dict[str, Any]:
        return {name: {**state.__dict__, "fresh": state.fresh} for name, state in
                (("graph", self.graph), ("raptor", self.raptor))}


def knowledge_llm(index: Index) -> LLM:
    """The index's LLM (the ``llm`` section), loaded once and shared by every knowledge step."""
    from ..generate.base import create_llm

    if "llm" not in index._components:
        index._components["llm"] = create_llm(index.config.llm)
    return index._components["llm"]


def has_table_rows(index: Index, table: str) -> bool:
    """Whether ``table`` exists in the index database and holds a row (no tables are created)."""
    return has_table_rows_in(index.store, table)


def has_table_rows_in(store: Any, table: str) -> bool:
    db = getattr(getattr(store, "catalog", None), "db", None)
    if not isinstance(db, sqlite3.Connection):
        return False
    exists = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    return bool(exists) and db.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is not None


def graph_wanted(index: Index) -> bool:
    return index.config.graph.enabled or has_table_rows(index, "kg_sources")


def raptor_wanted(index: Index) -> bool:
    return index.config.raptor.enabled or has_table_rows(index, "raptor_sources")


def sync(index: Index) -> list[str]:
    """Bring the graph and the tree up to the store's sources; return warnings for the report."""
    notes: list[str] = []
    if graph_wanted(index):
        notes += sync_graph(index, tables(index.store))
    if raptor_wanted(index):
        from .raptor import sync_raptor

        notes += sync_raptor(index, tables(index.store))
    return notes


def source_chunks(index: Index, path: str) -> list[Chunk]:
    """A source's chunks in document order, from whichever store holds them."""
    catalog = getattr(index.store, "catalog", None)
    if index.store.name == "embedded" and catalog is not None:
        return [chunk for _, chunk in catalog.iter_chunks(source=path)]
    return index.store.export_source(path)[0]


def graph_state(index: Index, sources: dict[str, SourceRecord] | None = None) -> tuple[StructureState, str]:
    """The graph's state against the store, and the id of the extractor the config asks for."""
    config = index.config.graph
    built = has_table_rows(index, "kg_sources")
    state = StructureState(built=built, enabled=config.enabled)
    if not built:
        return state, ""
    graph = Graph(tables(index.store))
    sources = sources if sources is not None else {r.path: r for r in index.store.list_sources()}
    have = graph.built_sources()
    wanted = _extractor_id(index)
    state.stale_sources = sorted(p for p, r in sources.items()
                                 if have.get(p, ("", ""))[0] != r.content_hash or have[p][1] != wanted)
    state.removed_sources = sorted(set(have) - set(sources))
    state.counts = graph.counts()
    return state, wanted


def _extractor_id(index: Index) -> str:
    config = index.config.graph
    if config.extractor == "llm":
        settings = index.config.llm
        return f"llm/{settings.provider}:{settings.model or 'default'}/max={config.max_entities_per_chunk}"
    return create_extractor(config, lambda: knowledge_llm(index)).id


def sync_graph(index: Index, store_tables: Tables) -> list[str]:
    """Remove the graph rows of removed sources; (re)extract changed and new ones."""
    config = index.config.graph
    sources = {r.path: r for r in index.store.list_sources()}
    graph = Graph(store_tables)
    have = graph.built_sources()
    wanted = _extractor_id(index)
    removed = sorted(set(have) - set(sources))
    for path in removed:
        graph.remove_source(path)
    stale = [r for p, r in sorted(sources.items()) if have.get(p, ("", ""))[0] != r.content_hash or have[p][1] != wanted]
    notes = _extract_stale(index, store_tables, graph, stale, wanted) if stale else []
    if config.communities and (stale or removed or not graph.counts()["communities"]) and graph.counts()["entities"]:
        from .communities import build_communities

        build_communities(graph, (lambda: knowledge_llm(index)) if config.extractor == "llm" else None)
    return notes


def _extract_stale(index: Index, store_tables: Tables, graph: Graph, stale: list[SourceRecord], wanted: str) -> list[str]:
    config = index.config.graph
    extractor = create_extractor(config, lambda: knowledge_llm(index))
    aliases = alias_keys(config.aliases)
    notes = []
    for group in _batches(index, stale):
        texts = [c.text for _, chunks in group for c in chunks]
        started = time.perf_counter()
        found = _extract_cached(store_tables, extractor, [c for _, chunks in group for c in chunks], texts)
        seconds = (time.perf_counter() - started) / max(len(texts), 1)
        offset = 0
        for record, chunks in group:
            part = found[offset : offset + len(chunks)]
            offset += len(chunks)
            skipped = graph.replace_source(record.path, record.content_hash, wanted, chunks, part, aliases,
                                           seconds * len(chunks))
            if skipped:
                reasons = sorted({x.skipped for x in part if x.skipped})
                notes.append(f"{record.path}: graph extraction skipped {skipped} of {len(chunks)} chunks: {reasons[0]}")
    return notes


def _batches(index: Index, stale: list[SourceRecord]) -> Iterator[list[tuple[SourceRecord, list[Chunk]]]]:
    group: list[tuple[SourceRecord, list[Chunk]]] = []
    size = 0
    for record in stale:
        chunks = source_chunks(index, record.path)
        group.append((record, chunks))
        size += len(chunks)
        if size >= _EXTRACT_BATCH:
            yield group
            group, size = [], 0
    if group:
        yield group


def _extract_cached(store_tables: Tables, extractor: Any, chunks: list[Chunk], texts: list[str]) -> list[Extraction]:
    """LLM extractions are kept by chunk content hash, so re-ingesting unchanged text costs nothing
    (spaCy is fast enough to run again)."""
    if extractor.name != "llm":
        return extractor.extract(texts)
    out: list[Extraction] = []
    for chunk, text in zip(chunks, texts):
        cached = store_tables.cached("kg-extract", extractor.id, chunk.content_hash)
        if cached is not None:
            out.append(Extraction.from_json(cached))
            continue
        extraction = extractor.extract([text])[0]
        if not extraction.skipped:  # a skipped chunk is tried again when its source changes
            store_tables.cache(extraction.to_json(), "kg-extract", extractor.id, chunk.content_hash)
        out.append(extraction)
    return out


def status(index: Index) -> KnowledgeStatus:
    from .raptor import raptor_state

    graph, _ = graph_state(index)
    return KnowledgeStatus(graph, raptor_state(index))
