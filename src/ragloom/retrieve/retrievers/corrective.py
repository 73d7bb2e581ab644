"""Corrective RAG (Yan et al. 2024) around any retriever.

A retrieval evaluator (the packaged cross-encoder over the top passages) labels the
result by its best score:

- **correct** (best >= ``upper``): the result is kept;
- **incorrect** (best < ``lower``): the LLM rewrites the question into a search query and
  the wrapped retriever runs again; if that is still incorrect, lexical search on the
  original question is the fallback;
- **ambiguous** (in between): both, the original and the rewritten query's results fused
  with RRF.

Knowledge refinement (keeping only the relevant sentences) is the ``compress`` stage;
the ``corrective`` preset is this retriever followed by it. The evaluator's scores are
recorded under ``crag`` in each hit's scores, the verdict as a flag (``crag_correct``,
``crag_ambiguous``, ``crag_incorrect_rewritten``, ``crag_incorrect_fallback``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..base import Configured, QueryPlan, Retrieved, SearchContext
from ..fusion import reciprocal_rank_fusion
from ...models.cross_encoder import shared_cross_encoder
from .transforms import StepSpec, base_retriever, prompts, transform_llm


class CorrectiveOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    base: StepSpec = Field("hybrid", description="the retriever wrapped, e.g. hybrid or {dense: {}}")
    upper: float = Field(0.5, ge=0.0, le=1.0, description="best evaluator score (0..1) at or above which: correct")
    lower: float = Field(0.05, ge=0.0, le=1.0, description="best evaluator score below which: incorrect")
    evaluate: int = Field(5, ge=1, description="top passages the evaluator reads")
    fallback: StepSpec = Field("lexical", description="retriever used when the rewritten query is still incorrect")

    @model_validator(mode="after")
    def _ordered(self) -> CorrectiveOptions:
        if self.lower > self.upper:
            raise ValueError(f"lower ({self.lower}) must not be above upper ({self.upper})")
        return self


class CorrectiveRetriever(Configured[CorrectiveOptions]):
    name: ClassVar[str] = "corrective"
    Options = CorrectiveOptions
    needs_llm = True

    def __init__(self, options: CorrectiveOptions | None = None) -> None:
        super().__init__(options)
        self.base = base_retriever(self.options.base)
        self.fallback = base_retriever(self.options.fallback)

    def retrieve(self, plan: QueryPlan, context: SearchContext, depth: int) -> Retrieved:
        first = self.base.retrieve(plan, context, depth)
        best, scores = self.evaluate(plan.text, first, context)
        label = self.label(best)
        if label == "correct":
            return self._with_scores(first, scores, label)
        rewritten = self.rewrite(plan.text, context)
        second = self.base.retrieve(replace(plan, text=rewritten), context, depth)
        if label == "ambiguous":
            fused = Retrieved(reciprocal_rank_fusion([first.candidates, second.candidates]), dict(first.components))
            _, fused_scores = self.evaluate(plan.text, fused, context)
            return self._with_scores(fused, fused_scores, label)
        best_again, again_scores = self.evaluate(plan.text, second, context)
        if self.label(best_again) != "incorrect":
            return self._with_scores(second, again_scores, "incorrect, rewritten")
        third = self.fallback.retrieve(plan, context, depth)
        _, third_scores = self.evaluate(plan.text, third, context)
        return self._with_scores(third, third_scores, "incorrect, fallback")

    def label(self, best: float) -> str:
        if best >= self.options.upper:
            return "correct"
        return "incorrect" if best < self.options.lower else "ambiguous"

    def evaluate(self, question: str, retrieved: Retrieved, context: SearchContext) -> tuple[float, dict[str, float]]:
        """The evaluator's scores of the top passages, and the best of them."""
        top = [c.chunk_id for c in retrieved.candidates[: self.options.evaluate]]
        chunks = context.store.get_chunks(top)
        if not chunks:
            return 0.0, {}
        scores = shared_cross_encoder(context).score(question, [c.text for c in chunks])
        by_id = {c.id: float(s) for c, s in zip(chunks, scores)}
        return max(by_id.values()), by_id

    def rewrite(self, question: str, context: SearchContext) -> str:
        llm = transform_llm(context, "corrective RAG")
        reply = llm.complete(prompts(context).render("rewrite", question=question), max_tokens=32).strip()
        line = reply.splitlines()[0].strip().strip('"') if reply else ""
        return line or question

    @staticmethod
    def _with_scores(retrieved: Retrieved, scores: dict[str, float], label: str) -> Retrieved:
        components = dict(retrieved.components)
        components["crag"] = scores
        # The evaluator's verdict, as a flag every hit carries in its scores (``crag_correct`` ...).
        flag = "crag_" + label.replace(", ", "_")
        components[flag] = {c.chunk_id: 1.0 for c in retrieved.candidates}
        return Retrieved(retrieved.candidates, components)
