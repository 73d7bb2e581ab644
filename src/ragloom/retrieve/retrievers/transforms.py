"""LLM query transforms as retrievers: HyDE and multi-query (RAG-Fusion).

- ``hyde`` (Gao et al. 2022): the LLM writes a hypothetical passage that answers the
  question; its document embedding (alone, or averaged with the query's) drives the
  search, dense or hybrid.
- ``multi-query``: the LLM writes ``n`` rephrasings; the question and each rephrasing
  are retrieved by the wrapped retriever and the rankings fused with RRF.

Both need an LLM (``llm`` section) and fail with an error naming the setting without one.
HyDE reported 0.691 nDCG@10 on SciFact with Contriever, below our hybrid: both are off
by default, and ``benchmarks/quality/answers.py --transforms`` measures them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ...errors import ConfigError
from ..base import Configured, QueryPlan, Retrieved, Retriever, SearchContext
from ..fusion import reciprocal_rank_fusion
from .basic import hybrid_search

StepSpec = str | dict[str, Any]


def transform_llm(context: SearchContext, technique: str):  # noqa: ANN201 - an LLM
    """The configured LLM, loaded once per process; a clear error when none can be used."""
    from ...models.llm import llm_unavailable, shared_llm

    config = context.config.llm
    reason = llm_unavailable(config)
    if reason is not None:
        raise ConfigError(
            f"{technique} needs an LLM, but {reason}. Set llm.provider/llm.model in ragloom.yaml "
            "(or RAGLOOM_LLM__PROVIDER), or take it out of search.pipeline"
        )
    return context.component(f"llm:{config.model_dump_json()}", lambda: shared_llm(config))


def prompts(context: SearchContext):  # noqa: ANN201 - Prompts
    from ...generate.prompts import Prompts

    return Prompts(context.config.answer.prompts)


def base_retriever(spec: StepSpec) -> Retriever:
    """The retriever a wrapper runs, from a step as written in config (``hybrid`` or ``{dense: {}}``)."""
    from ..pipeline import build_pipeline

    pipeline = build_pipeline([spec])
    return pipeline.retriever


class HydeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mix: Literal["average", "replace"] = Field(
        "average", description="average: mean of the query's and the passage's vectors; replace: the passage's only"
    )
    search: Literal["dense", "hybrid"] = Field("dense", description="dense, or hybrid with BM25 on the question")
    max_tokens: int = Field(96, ge=8, description="length of the hypothetical passage")


class HydeRetriever(Configured[HydeOptions]):
    """Dense retrieval driven by an LLM-written hypothetical answer passage."""

    name: ClassVar[str] = "hyde"
    Options = HydeOptions
    needs_llm = True

    def retrieve(self, plan: QueryPlan, context: SearchContext, depth: int) -> Retrieved:
        llm = transform_llm(context, "HyDE")
        passage = llm.complete(prompts(context).render("hyde", question=plan.text),
                               max_tokens=self.options.max_tokens).strip()
        vector = context.embedder.embed_documents([passage or plan.text])[0]
        if self.options.mix == "average":
            vector = vector + context.query_vector(plan.text)
            vector = (vector / (np.linalg.norm(vector) or 1.0)).astype(np.float32)
        if self.options.search == "hybrid":
            settings = context.config.search
            fused, components = hybrid_search(context.store, vector, plan.text, max(settings.candidates, depth),
                                              plan.conditions, settings)
            return Retrieved(fused, components)
        found = context.store.search_dense(vector, depth, plan.conditions)
        return Retrieved(found, {"hyde": {c.chunk_id: c.score for c in found}})


class MultiQueryOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: int = Field(3, ge=1, le=10, description="rephrasings the LLM writes")
    base: StepSpec = Field("hybrid", description="the retriever run for each query, e.g. hybrid or {dense: {}}")
    rrf_k: int = Field(60, ge=1, description="reciprocal rank fusion constant")


class MultiQueryRetriever(Configured[MultiQueryOptions]):
    """The question and ``n`` LLM rephrasings, each retrieved, fused with reciprocal rank fusion."""

    name: ClassVar[str] = "multi-query"
    Options = MultiQueryOptions
    needs_llm = True

    def __init__(self, options: MultiQueryOptions | None = None) -> None:
        super().__init__(options)
        self.base = base_retriever(self.options.base)

    def retrieve(self, plan: QueryPlan, context: SearchContext, depth: int) -> Retrieved:
        queries = [plan.text, *self.rephrasings(plan.text, context)]
        rankings = [self.base.retrieve(replace(plan, text=query), context, depth).candidates for query in queries]
        fused = reciprocal_rank_fusion(rankings, self.options.rrf_k)
        return Retrieved(fused, {"multi-query": {c.chunk_id: c.score for c in fused}})

    def rephrasings(self, question: str, context: SearchContext) -> list[str]:
        llm = transform_llm(context, "multi-query")
        reply = llm.complete(prompts(context).render("multi_query", question=question, n=self.options.n),
                             max_tokens=40 * self.options.n)
        lines = [line.strip().lstrip("-*0123456789.) ").strip().strip('"') for line in reply.splitlines()]
        unique = dict.fromkeys(line for line in lines if line and line.lower() != question.lower())
        return list(unique)[: self.options.n]
