"""``rollup``: a chunk also scores a share of its document's other matching chunks.

A document that several retrieved chunks come from is more likely relevant than one
with a single lucky chunk: each hit's min-max normalised score gains ``share`` × the sum
of the normalised scores of the other hits with the same ``key`` (``doc_id``). With
``share`` 0 this is the usual "a document scores as its best chunk".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from ...types import Hit
from ..base import QueryPlan, SearchContext, with_score
from ..fusion import min_max


class RollupOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    share: float = Field(0.2, ge=0.0, le=1.0, description="weight of the document's other chunks' scores")
    key: str = Field("doc_id", description="metadata field naming a chunk's document")


class RollupStage:
    name: ClassVar[str] = "rollup"
    Options = RollupOptions

    def __init__(self, options: RollupOptions | None = None) -> None:
        self.options = options or RollupOptions()

    def wants(self, k: int) -> int:
        return k

    def process(self, plan: QueryPlan, hits: list[Hit], context: SearchContext) -> list[Hit]:
        keys = [str(h.metadata.get(self.options.key, h.chunk_id)) for h in hits]
        scores = rolled_up(keys, [h.score for h in hits], self.options.share)
        out = [with_score(hit, score, "rollup") for hit, score in zip(hits, scores)]
        return sorted(out, key=lambda h: -h.score)


def rolled_up(keys: Sequence[str], scores: Sequence[float], share: float) -> list[float]:
    """Each normalised score plus ``share`` × the other same-key normalised scores (pure)."""
    normal = min_max({str(i): s for i, s in enumerate(scores)})
    totals: dict[str, float] = {}
    for i, key in enumerate(keys):
        totals[key] = totals.get(key, 0.0) + normal[str(i)]
    return [normal[str(i)] + share * (totals[key] - normal[str(i)]) for i, key in enumerate(keys)]
