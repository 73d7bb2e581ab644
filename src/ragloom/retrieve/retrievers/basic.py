"""The three first-stage retrievers: dense (cosine), lexical (BM25) and their hybrid fusion."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from pydantic import ConfigDict, Field, create_model

from ...config import Config, FusionSettings, overrides_of

from ..base import Configured, NoOptions, QueryPlan, Retrieved, SearchContext
from ..fusion import convex_combination, reciprocal_rank_fusion

if TYPE_CHECKING:
    from ...filters import Condition
    from ...stores.base import Candidate, Store


class DenseRetriever(Configured[NoOptions]):
    """Nearest chunks to the query's embedding, by cosine similarity."""

    name: ClassVar[str] = "dense"
    Options = NoOptions
    #: Dense search is the embedding's ranking alone: chunks holding the query's identifiers are
    #: not lifted first (the default hybrid and lexical do that). Lifting them here cost SciFact's
    #: dense ranking 0.0055 nDCG@10: gene names such as "H3K4me3" and "FoxO3a" are written like code.
    lifts_identifiers: ClassVar[bool] = False

    def retrieve(self, plan: QueryPlan, context: SearchContext, depth: int) -> Retrieved:
        found = context.store.search_dense(context.query_vector(plan.text), depth, plan.conditions)
        return Retrieved(found, {"dense": {c.chunk_id: c.score for c in found}})


class LexicalRetriever(Configured[NoOptions]):
    """BM25 over the chunk texts."""

    name: ClassVar[str] = "lexical"
    Options = NoOptions

    def retrieve(self, plan: QueryPlan, context: SearchContext, depth: int) -> Retrieved:
        found = context.store.search_lexical(plan.text, depth, plan.conditions)
        return Retrieved(found, {"lexical": {c.chunk_id: c.score for c in found}})


#: The fusion settings as a hybrid step's options: each unset one takes the ``search`` section's value.
FusionOverrides = create_model(
    "FusionOverrides", __config__=ConfigDict(extra="forbid"), **overrides_of(FusionSettings))


class HybridOptions(FusionOverrides):  # type: ignore[misc,valid-type]
    """The fusion settings (unset: the ``search`` section's), and pseudo-relevance feedback."""

    model_config = ConfigDict(extra="forbid")
    prf_docs: int = Field(0, ge=0, description="pseudo-relevance feedback: move the query vector towards the "
                          "best N chunks of a first pass (Rocchio), then search again; 0 = off")
    prf_weight: float = Field(0.3, ge=0.0, le=1.0, description="Rocchio: weight of the feedback centroid")
    query_task: Literal["code"] | None = Field(
        None, description="embed the query for this search task with an embedder that has a prompt for it "
        "(code: EmbeddingGemma's 'task: code retrieval', CoSQA dev 0.787 against 0.747); others embed it as always")


class HybridRetriever(Configured[HybridOptions]):
    """Dense and BM25 candidates fused into one ranking.

    Convex fusion is min-max normalised (Bruch et al. 2023); chunks that only one side
    found get the other side's exact score, so both signals are known for every candidate.
    A plan hint ``alpha`` (from query understanding) overrides the dense weight.
    """

    name: ClassVar[str] = "hybrid"
    Options = HybridOptions

    def fusion(self, plan: QueryPlan, config: Config) -> FusionSettings:
        """What this step fuses with: the ``search`` defaults, its options over them, and last
        a query's own dense weight (query understanding's ``alpha`` hint)."""
        chosen = {key: getattr(self.options, key) for key in FusionSettings.model_fields
                  if getattr(self.options, key) is not None}
        if plan.hint("alpha") is not None:
            chosen["alpha"] = plan.hint("alpha")
        defaults = {key: getattr(config.search, key) for key in FusionSettings.model_fields}
        return FusionSettings(**{**defaults, **chosen})

    def ran_with(self, plan: QueryPlan, config: Config) -> dict[str, Any]:
        return {**self.fusion(plan, config).model_dump(mode="json"),
                "prf_docs": self.options.prf_docs, "prf_weight": self.options.prf_weight,
                **({"query_task": self.options.query_task} if self.options.query_task else {})}

    def retrieve(self, plan: QueryPlan, context: SearchContext, depth: int) -> Retrieved:
        settings = self.fusion(plan, context.config)
        width = max(settings.candidates, depth)
        vector = context.query_vector(plan.text, self.options.query_task)
        fused, components = hybrid_search(context.store, vector, plan.text, width, plan.conditions, settings)
        if self.options.prf_docs and fused:
            vector = rocchio(vector, _vectors_of(context.store, [c.chunk_id for c in fused[: self.options.prf_docs]]),
                             self.options.prf_weight)
            fused, components = hybrid_search(context.store, vector, plan.text, width, plan.conditions, settings)
        return Retrieved(fused, components)


def rocchio(query: np.ndarray, feedback: np.ndarray, weight: float) -> np.ndarray:
    """``(1 - weight) · q + weight · centroid(feedback)``, unit length (Rocchio 1971, positive feedback only)."""
    if not len(feedback):
        return query
    moved = (1.0 - weight) * query + weight * feedback.mean(axis=0)
    norm = np.linalg.norm(moved)
    return (moved / norm).astype(np.float32) if norm else query


def _vectors_of(store: Store, chunk_ids: Sequence[str]) -> np.ndarray:
    chunks = store.get_chunks(chunk_ids)
    found = store.cached_vectors([c.content_hash for c in chunks])
    rows = [found[c.content_hash] for c in chunks if c.content_hash in found]
    return np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)


def hybrid_search(
    store: Store, vector: np.ndarray, query: str, depth: int, conditions: Sequence[Condition],
    settings: FusionSettings,
) -> tuple[list[Candidate], dict[str, dict[str, float]]]:
    """Dense and BM25 candidates, ``depth`` of each, fused as ``settings`` say; with each side's scores."""
    dense, lexical = store.search_both(vector, query, depth, conditions)
    dense_scores = {c.chunk_id: c.score for c in dense}
    missing = [c.chunk_id for c in lexical if c.chunk_id not in dense_scores]
    dense_scores.update(store.dense_scores(vector, missing))
    lexical_scores = {c.chunk_id: c.score for c in lexical}
    if settings.fusion == "rrf":
        fused = reciprocal_rank_fusion([dense, lexical], settings.rrf_k)
    else:
        fused = convex_combination(dense_scores, lexical_scores, settings.alpha)
    return fused, {"dense": dense_scores, "lexical": lexical_scores}
