"""``rerank``: rescore the best ``top_n`` hits with a cross-encoder, replacing or blending the score.

The local provider runs the packaged ms-marco-MiniLM-L-12-v2 (INT8 ONNX) on every core (a
single-threaded session per core);
``cohere`` calls Cohere's rerank API through the same stage. ``mode: blend`` (the
default) is the convex combination of the min-max normalised cross-encoder score and the
min-max normalised incoming score, ``weight`` being the cross-encoder's share; hits below
``top_n`` are not read by the model and score as if it gave them its lowest value, so
they stay below every reranked hit with a higher incoming score. ``mode: replace`` ranks
the reranked hits by the model alone, the rest after them in their incoming order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ...lang import UNDETERMINED
from ...types import PROBABILITY, Hit
from ..base import Configured, QueryPlan, SearchContext, with_score
from ..fusion import min_max

#: Cross-encoder share of the blended score: best alone on 120 SciFact train queries over the top 20
#: (0.7342 vs hybrid 0.7289; replacing the score fell to 0.6928). See BENCHMARKS.md.
DEFAULT_WEIGHT = 0.3


class RerankOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    provider: Literal["local", "cohere"] = Field("local", description="local: packaged ONNX cross-encoder; cohere: API")
    model: str | None = Field(None, description="local: packaged name or a folder with model.onnx; cohere: model name")
    top_n: int = Field(20, ge=1, description="hits rescored by the model; the rest keep their order below")
    mode: Literal["blend", "replace"] = Field("blend", description="blend with the incoming score, or replace it")
    weight: float = Field(DEFAULT_WEIGHT, ge=0.0, le=1.0, description="blend: the cross-encoder's share")
    batch_size: int = Field(
        1, ge=1, description="pairs per model call (local); 1 = each pair on its own: faster, and a pair's score "
        "does not depend on the others (BENCHMARKS.md)")
    max_tokens: int = Field(320, ge=16, description="query + passage tokens the local model reads")
    threads: int = Field(0, ge=0, description="CPU threads for the local model; 0 = all cores")
    sessions: int = Field(0, ge=0, description="local: sessions sharing the threads; 0 = one single-threaded per thread")
    base_url: str | None = Field(None, description="cohere: API URL (default https://api.cohere.com)")
    api_key_env: str | None = Field(None, description="cohere: variable holding the key (default COHERE_API_KEY)")
    timeout: float = Field(60.0, gt=0, description="cohere: seconds per request")
    max_retries: int = Field(4, ge=0, description="cohere: retries on 429/5xx")
    retry_base_delay: float = Field(0.5, ge=0, description="cohere: first retry delay, doubled each time")


class RerankStage(Configured[RerankOptions]):
    name: ClassVar[str] = "rerank"
    Options = RerankOptions

    def wants(self, k: int) -> int:
        return max(k, self.options.top_n)

    def note(self, plan: QueryPlan, hits: list[Hit]) -> str:
        """Why the cross-encoder is skipped for this query, or ""."""
        if self.options.provider != "local" or self.options.model is not None:
            return ""
        language = foreign_language(plan, hits[: self.options.top_n])
        return f"skipped: the packaged cross-encoder reads English only, and this is {language}" if language else ""

    def process(self, plan: QueryPlan, hits: list[Hit], context: SearchContext) -> list[Hit]:
        if not hits or self.note(plan, hits):
            return hits
        top = hits[: self.options.top_n]
        model = context.component(self._key(), self._load)
        # The local cross-encoder's raw logits (what the blend weight was tuned on); Cohere's 0..1 scores.
        relevance = getattr(model, "logits", model.score)
        raw = np.asarray(relevance(plan.text, [hit.text for hit in top]), dtype=np.float64)
        # What a reranked hit's relevance is (``Hit.relevance``): a probability, the same scale for every query.
        probability = 1.0 / (1.0 + np.exp(-raw)) if relevance is not model.score else raw
        chance = {hit.chunk_id: float(p) for hit, p in zip(top, probability)}
        return [replace(hit, scores={**hit.scores, PROBABILITY: chance[hit.chunk_id]}) if hit.chunk_id in chance
                else hit for hit in rerank_scores(hits, raw, self.options.mode, self.options.weight)]

    def _key(self) -> str:
        o = self.options
        return f"rerank:{o.provider}:{o.model}:{o.max_tokens}:{o.threads}:{o.sessions}:{o.batch_size}:{o.base_url}"

    def _load(self) -> Any:
        o = self.options
        if o.provider == "cohere":
            from ...providers.cohere import CohereClient
            from ..rerankers.cohere import CohereReranker

            client = CohereClient(o.base_url, api_key_env=o.api_key_env, timeout=o.timeout,
                                  max_retries=o.max_retries, retry_base_delay=o.retry_base_delay)
            return CohereReranker(o.model, client=client)
        from ...models.cross_encoder import CrossEncoder

        return CrossEncoder(o.model, threads=o.threads, sessions=o.sessions, batch_size=o.batch_size,
                            max_length=o.max_tokens)


def foreign_language(plan: QueryPlan, hits: Sequence[Hit]) -> str | None:
    """The language of the query, or else of most passages, when it is not English; else None."""
    query = plan.hint("lang")
    if query not in (None, "en", UNDETERMINED):
        return f"a {query} query"
    languages = Counter(str(hit.metadata.get("lang", UNDETERMINED)) for hit in hits)
    known = {code: n for code, n in languages.items() if code != UNDETERMINED}
    if known and sum(n for code, n in known.items() if code != "en") > len(hits) / 2:
        return f"mostly {max(known, key=lambda code: known[code])} passages"
    return None


def rerank_scores(hits: Sequence[Hit], model_scores: np.ndarray, mode: str, weight: float) -> list[Hit]:
    """Hits reordered by the model's scores of the first ``len(model_scores)`` of them (pure)."""
    n = len(model_scores)
    model_n = min_max({str(i): float(s) for i, s in enumerate(model_scores)})
    incoming = min_max({str(i): hit.score for i, hit in enumerate(hits)})
    if mode == "replace":
        top = [with_score(hits[i], float(model_scores[i]), "rerank") for i in range(n)]
        top.sort(key=lambda h: -h.score)
        floor = min((h.score for h in top), default=0.0)
        # The rest stay in incoming order, each below the lowest reranked score.
        rest = [with_score(hit, floor - 1.0 - i, None) for i, hit in enumerate(hits[n:])]
        return top + rest
    out = []
    for i, hit in enumerate(hits):
        cross = model_n[str(i)] if i < n else 0.0
        blended = weight * cross + (1.0 - weight) * incoming[str(i)]
        scored = with_score(hit, blended, None)
        if i < n:
            scored.scores["rerank"] = float(model_scores[i])
        out.append(scored)
    return sorted(out, key=lambda h: -h.score)
