"""A search over one index: the plan, the pipeline (built once per preset), the cache, the audit entry.

``Index.search`` and ``Index.retrieve`` delegate here; the searcher is given the index's
parts (store, config, embedder, loaded models), never the ``Index``.
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .. import registry
from ..audit import CALLER
from ..errors import FilterWarning, QueryError, RagloomWarning
from ..filters import SOURCE_KEY, filter_warnings, parse_where
from ..stores.base import AuditEntry, sources_matching
from ..tracing import set_attributes, span
from .base import QueryPlan, SearchContext, SearchResult, mark_weak
from .cache import QueryCache
from .languages import is_multilingual, weak_cosine, with_language_fusion
from .pipeline import Pipeline, build_pipeline
from .understand import plan_query

if TYPE_CHECKING:
    from ..parts import IndexParts


def preset_notes(preset: str, model_id: str | None) -> list[str]:
    """A line when a preset was measured with another embedder than the index's."""
    from .presets import QUALITY_EMBEDDER

    if preset != "quality" or model_id is None or model_id.partition(":")[0] == QUALITY_EMBEDDER:
        return []
    return [f"the quality preset is hybrid search over an index embedded with EmbeddingGemma-300m; this index "
            f"embeds with {model_id}, so it searches as hybrid does. For the better model: `ragloom models install "
            "embeddinggemma-300m --accept-licence`, then `ragloom --index NEW --embedder embeddinggemma ingest PATH`"]


def analysis_notes(analysis: str, query: str, preset: str) -> list[str]:
    """A line when the store's lexical side reads text in a way that does not read the query's
    language (a PostgreSQL index made with one text search configuration, say)."""
    if analysis == "ragloom" or preset == "dense":
        return []
    from ..lang import detect_language
    from ..lang.analysis import STEMMED

    language = detect_language(query)[0]
    reads = analysis.partition(":")[2]
    if language in ("und", "en") and reads in ("english", "simple") or STEMMED.get(language) == reads:
        return []
    return [f"this index's BM25 reads text with {analysis}, not as ragloom reads {language} text: keyword matches "
            "may be missed; an index made with store.postgres.language: ragloom (the default) reads every language "
            "(copy it with `ragloom migrate`)"]


class Searcher:
    """Runs searches over an index's parts; the caller's frame is where warnings point."""

    def __init__(self, parts: IndexParts) -> None:
        self.parts = parts
        self._pipelines: dict[str, Pipeline] = {}
        self._cache = QueryCache(parts.config.search.cache)
        self._warned_read_only = False
        self._kinds: tuple[object, dict[str, frozenset[str]]] | None = None
        self._languages: tuple[object, dict[str, int]] | None = None
        self._model_id: str | None = None

    def retrieve(
        self, query: str, k: int | None, where: Mapping[str, Any] | None, mode: str | None,
        min_score: float | None, stacklevel: int = 2,
    ) -> SearchResult:
        started = time.perf_counter()
        store, settings = self.parts.store, self.parts.config.search
        if not isinstance(query, str) or not query.strip():
            raise QueryError("the query is empty; give some words to search for")
        pipeline = self.pipeline(mode)
        # Source names (a source: operator, a relative path or glob in the filter) resolve among the
        # sources the rest of the filter lets through (a server ANDs a key's filter), and so do the
        # warnings about names that match nothing: another tenant's file names stay unseen.
        others = [c for c in parse_where(where) if c.key != "source"]
        sources = functools.cache(lambda: [r.path for r in sources_matching(store, others)])  # listed once, if at all
        plan = plan_query(query, self.clamp_k(k, stacklevel + 1), where, min_score, pipeline.name, settings, sources)
        model_id = self.model_id()
        # The index's languages matter to the multilingual embedder only (cross-lingual queries).
        plan = with_language_fusion(plan, model_id, settings, self.languages() if is_multilingual(model_id) else None)
        notes = self.filter_warnings(plan, sources) if plan.conditions and store.count() else []
        for note in notes:
            warnings.warn(note, FilterWarning, stacklevel=stacklevel + 1)
        for note in [*preset_notes(pipeline.name, model_id), *analysis_notes(store.abilities.analysis, query,
                                                                            pipeline.name)]:
            warnings.warn(note, RagloomWarning, stacklevel=stacklevel + 1)
            notes.append(note)
        with span("ragloom.search", **{"ragloom.preset": pipeline.name, "ragloom.k": plan.k}) as current:
            if store.count() == 0:
                warnings.warn(
                    f"the index at {self.parts.path} is empty; add documents with `ragloom ingest PATH`",
                    RagloomWarning, stacklevel=stacklevel + 1,
                )
                result = SearchResult([], plan)
            else:
                result = self._cached_run(pipeline, plan)
                result.hits = mark_weak(result.hits, weak_cosine(model_id, settings),
                                        self.parts.config.answer.unanswerable_below)
            set_attributes(current, **{"ragloom.hits": len(result.hits)})
        result.elapsed_ms = (time.perf_counter() - started) * 1000
        result.warnings = notes
        if self.parts.config.audit.enabled:
            self._audit(result, k, pipeline, stacklevel + 1)
        return result

    def filter_warnings(self, plan: QueryPlan, sources: Callable[[], list[str]]) -> list[str]:
        """What the plan's filters cannot match, from the kinds of metadata the index holds
        (read once per write: the store's generation and count key it)."""
        store = self.parts.store
        key = (store.generation(), store.count())
        if self._kinds is None or self._kinds[0] != key:
            self._kinds = (key, store.metadata_kinds())
        # The sources only when a condition names one: listing those a key may see reads chunks.
        named = any(c.key == SOURCE_KEY for c in plan.conditions)
        return filter_warnings(plan.conditions, self._kinds[1], sources() if named else ())

    def model_id(self) -> str | None:
        """The embedder the index records (read once it is recorded: it never changes after)."""
        if self._model_id is None:
            self._model_id = (self.parts.store.embedder_info() or {}).get("model_id")
        return self._model_id

    def languages(self) -> dict[str, int]:
        """Chunks per language (``lang``), read once per write; empty where the store cannot count them."""
        store = self.parts.store
        if not store.abilities.value_counts:
            return {}
        key = (store.generation(), store.count())
        if self._languages is None or self._languages[0] != key:
            self._languages = (key, store.value_counts("lang"))
        return self._languages[1]

    def _cached_run(self, pipeline: Pipeline, plan: QueryPlan) -> SearchResult:
        settings = self.parts.config.search
        fallback = None if settings.fallback == "none" else registry.resolve("retriever", settings.fallback)()
        return self._cache.run(pipeline, plan, self.parts.store.generation(), settings,
                               lambda: pipeline.run(plan, self.search_context(), fallback))

    def cache_stats(self) -> dict[str, dict[str, int]]:
        return self._cache.stats()

    def pipeline(self, mode: str | None = None) -> Pipeline:
        """The search pipeline for a preset name (None: the configured pipeline), built once."""
        settings = self.parts.config.search
        key = mode or ("" if settings.pipeline is not None else settings.mode)
        if key not in self._pipelines:
            if key:
                self._pipelines[key] = build_pipeline(preset=key, custom_presets=settings.presets)
            else:
                self._pipelines[key] = build_pipeline(settings.pipeline)
        return self._pipelines[key]

    def search_context(self) -> SearchContext:
        """What the pipeline's steps may use; models loaded by a step are kept for the next search."""
        parts = self.parts
        return SearchContext(parts.store, lambda: parts.embedder, parts.config, parts.components,
                             lambda text, task: self._cache.query_vector(
                                 text, lambda: parts.embedder.embed_query_for(text, task), task))

    def clamp_k(self, k: int | None, stacklevel: int = 2) -> int:
        settings = self.parts.config.search
        if k is None:
            k = settings.k
        clamped = min(max(int(k), settings.k_min), settings.k_max)
        if clamped != k:
            warnings.warn(
                f"k={k} is outside the allowed range {settings.k_min}..{settings.k_max}; using k={clamped}",
                RagloomWarning, stacklevel=stacklevel + 1,
            )
        return clamped

    def _audit(self, result: SearchResult, k_requested: int | None, pipeline: Pipeline, stacklevel: int) -> None:
        store, plan = self.parts.store, result.plan
        parameters = {
            "k_requested": k_requested, "min_score": plan.min_score, "pipeline": pipeline.steps,
            # Each step with the options it ran with (hybrid's fusion resolved against the search section).
            "steps": pipeline.options_ran(plan, self.parts.config),
        }
        if plan.text != plan.original:
            parameters["query_text"] = plan.text
        if CALLER.get() is not None:
            parameters["key"] = CALLER.get()
        if store.read_only:
            if not self._warned_read_only:
                warnings.warn(
                    f"the index at {self.parts.path} is open read-only; searches are not written to its audit log",
                    RagloomWarning, stacklevel=stacklevel + 1,
                )
                self._warned_read_only = True
            return
        info = store.embedder_info() or {}
        store.log_search(AuditEntry(
            query=plan.original, mode=pipeline.name, k=plan.k, filters=dict(plan.where), parameters=parameters,
            hits=[{"rank": h.rank, "chunk_id": h.chunk_id, "score": h.score, "source": h.source} for h in result.hits],
            elapsed_ms=result.elapsed_ms, created_at=time.time(), embedder=str(info.get("model_id", "")),
        ))
