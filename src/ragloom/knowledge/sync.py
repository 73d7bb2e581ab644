"""Keeping the structures in step with the sources, and saying how stale they are.

``sync(parts)`` runs at the end of every ingest and removal. A structure is kept up to
date when it is enabled in the config or already built (so a plain ``ragloom ingest``
does not let a graph built with ``--graph`` drift). It compares the content hash each
source had when the structure last saw it with the store's: removed sources are taken
out, changed and new ones put in, untouched ones are not read at all.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..types import Chunk, SourceRecord
from .extract import Extraction, create_extractor
from .graph import Graph
from .names import alias_keys
from .structures import StructureState, has_table_rows, knowledge_llm, source_chunks
from .tables import Tables, tables

if TYPE_CHECKING:
    from ..parts import IndexParts

#: Chunks extracted together (spaCy batches them; the LLM goes one by one anyway).
_EXTRACT_BATCH = 512


@dataclass
class KnowledgeStatus:
    graph: StructureState
    raptor: StructureState

    def to_dict(self) -> dict[str, Any]:
        return {name: {**state.__dict__, "fresh": state.fresh} for name, state in
                (("graph", self.graph), ("raptor", self.raptor))}


def graph_wanted(parts: IndexParts) -> bool:
    return parts.config.graph.enabled or has_table_rows(parts, "kg_sources")


def raptor_wanted(parts: IndexParts) -> bool:
    return parts.config.raptor.enabled or has_table_rows(parts, "raptor_sources")


def sync(parts: IndexParts) -> list[str]:
    """Bring the graph and the tree up to the store's sources; return warnings for the report."""
    notes: list[str] = []
    if graph_wanted(parts):
        notes += sync_graph(parts, tables(parts.store))
    if raptor_wanted(parts):
        from .raptor import sync_raptor

        notes += sync_raptor(parts, tables(parts.store))
    return notes


def graph_state(parts: IndexParts, sources: dict[str, SourceRecord] | None = None) -> tuple[StructureState, str]:
    """The graph's state against the store, and the id of the extractor the config asks for."""
    config = parts.config.graph
    built = has_table_rows(parts, "kg_sources")
    state = StructureState(built=built, enabled=config.enabled)
    if not built:
        return state, ""
    graph = Graph(tables(parts.store))
    sources = sources if sources is not None else {r.path: r for r in parts.store.list_sources()}
    have = graph.built_sources()
    wanted = _extractor_id(parts)
    state.stale_sources = sorted(p for p, r in sources.items()
                                 if have.get(p, ("", ""))[0] != r.content_hash or have[p][1] != wanted)
    state.removed_sources = sorted(set(have) - set(sources))
    state.counts = graph.counts()
    return state, wanted


def _extractor_id(parts: IndexParts) -> str:
    config = parts.config.graph
    if config.extractor == "llm":
        settings = parts.config.llm
        return f"llm/{settings.provider}:{settings.model or 'default'}/max={config.max_entities_per_chunk}"
    return create_extractor(config, lambda: knowledge_llm(parts)).id


def sync_graph(parts: IndexParts, store_tables: Tables) -> list[str]:
    """Remove the graph rows of removed sources; (re)extract changed and new ones."""
    config = parts.config.graph
    sources = {r.path: r for r in parts.store.list_sources()}
    graph = Graph(store_tables)
    have = graph.built_sources()
    wanted = _extractor_id(parts)
    removed = sorted(set(have) - set(sources))
    for path in removed:
        graph.remove_source(path)
    stale = [r for p, r in sorted(sources.items()) if have.get(p, ("", ""))[0] != r.content_hash or have[p][1] != wanted]
    notes = _extract_stale(parts, store_tables, graph, stale, wanted) if stale else []
    if config.communities and (stale or removed or not graph.counts()["communities"]) and graph.counts()["entities"]:
        from .communities import build_communities

        build_communities(graph, (lambda: knowledge_llm(parts)) if config.extractor == "llm" else None)
    return notes


def _extract_stale(parts: IndexParts, store_tables: Tables, graph: Graph, stale: list[SourceRecord], wanted: str) -> list[str]:
    config = parts.config.graph
    extractor = create_extractor(config, lambda: knowledge_llm(parts))
    aliases = alias_keys(config.aliases)
    notes = []
    for group in _batches(parts, stale):
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


def _batches(parts: IndexParts, stale: list[SourceRecord]) -> Iterator[list[tuple[SourceRecord, list[Chunk]]]]:
    group: list[tuple[SourceRecord, list[Chunk]]] = []
    size = 0
    for record in stale:
        chunks = source_chunks(parts, record.path)
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


def status(parts: IndexParts) -> KnowledgeStatus:
    from .raptor import raptor_state

    graph, _ = graph_state(parts)
    return KnowledgeStatus(graph, raptor_state(parts))
