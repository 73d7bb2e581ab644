"""``mmr``: maximal marginal relevance (Carbonell & Goldstein 1998) on the stored dense vectors.

Each next hit maximises ``λ · relevance − (1 − λ) · max cosine to the hits already chosen``.
Relevance is the incoming score, min-max normalised (so MMR composes with any retriever
or reranker), or with ``relevance: cosine`` the cosine to the query embedding.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ...types import Hit
from ..base import Configured, QueryPlan, SearchContext, with_score
from ..fusion import min_max


class MMROptions(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    lambda_: float = Field(0.7, ge=0.0, le=1.0, alias="lambda", description="1 = relevance only, 0 = diversity only")
    relevance: Literal["score", "cosine"] = Field("score", description="incoming score (normalised) or query cosine")
    fetch: float = Field(3.0, ge=1.0, description="candidates considered per hit returned (k × fetch)")


class MMRStage(Configured[MMROptions]):
    name: ClassVar[str] = "mmr"
    Options = MMROptions

    def wants(self, k: int) -> int:
        return int(np.ceil(k * self.options.fetch))

    def process(self, plan: QueryPlan, hits: list[Hit], context: SearchContext) -> list[Hit]:
        if len(hits) < 2:
            return hits
        vectors = context.chunk_vectors(hits)
        if self.options.relevance == "cosine":
            relevance = vectors @ context.query_vector(plan.text)
        else:
            normal = min_max({str(i): h.score for i, h in enumerate(hits)})
            relevance = np.array([normal[str(i)] for i in range(len(hits))])
        order, values = maximal_marginal_relevance(relevance, vectors, self.options.lambda_, len(hits))
        return [with_score(hits[i], float(v), "mmr") for i, v in zip(order, values)]


def maximal_marginal_relevance(
    relevance: np.ndarray, vectors: np.ndarray, lam: float, k: int
) -> tuple[list[int], list[float]]:
    """Greedy MMR selection of ``k`` rows; returns their indices in pick order and each one's MMR value.

    ``vectors`` are unit rows (cosine = dot product). Ties go to the earlier row.
    """
    n = len(relevance)
    k = min(k, n)
    chosen: list[int] = []
    values: list[float] = []
    closest = np.full(n, -np.inf)  # max similarity of each row to the chosen set
    free = np.ones(n, dtype=bool)
    for _ in range(k):
        redundancy = np.where(np.isfinite(closest), closest, 0.0)
        score = lam * relevance - (1.0 - lam) * redundancy
        score = np.where(free, score, -np.inf)
        pick = int(np.argmax(score))
        chosen.append(pick)
        values.append(float(score[pick]))
        free[pick] = False
        closest = np.maximum(closest, vectors @ vectors[pick])
    return chosen, values
