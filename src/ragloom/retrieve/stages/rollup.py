"""``rollup``: a chunk also scores a share of its document's other matching chunks.

A document that several retrieved chunks come from is more likely relevant than one
with a single lucky chunk: each hit's min-max normalised score gains ``share`` × the sum
of the normalised scores of the other hits with the same ``key`` (``doc_id``) — at most the best ``limit`` of them,
so that a long file with many middling chunks does not outrank a short one that answers.
With ``share`` 0 this is the usual "a document scores as its best chunk".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from ...types import Hit
from ..base import Configured, QueryPlan, SearchContext, with_score
from ..fusion import min_max


class RollupOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    share: float = Field(0.1, ge=0.0, le=1.0, description="weight of the document's other chunks' scores")
    key: str = Field("doc_id", description="metadata field naming a chunk's document")
    limit: int = Field(2, ge=1, description="other chunks of a document counted at most (its best ones)")


class RollupStage(Configured[RollupOptions]):
    name: ClassVar[str] = "rollup"
    Options = RollupOptions

    def wants(self, k: int) -> int:
        return k

    def process(self, plan: QueryPlan, hits: list[Hit], context: SearchContext) -> list[Hit]:
        keys = [str(h.metadata.get(self.options.key, h.chunk_id)) for h in hits]
        scores = rolled_up(keys, [h.score for h in hits], self.options.share, self.options.limit)
        out = [with_score(hit, score, "rollup") for hit, score in zip(hits, scores)]
        return sorted(out, key=lambda h: -h.score)


def rolled_up(keys: Sequence[str], scores: Sequence[float], share: float, limit: int | None = None) -> list[float]:
    """Each normalised score plus ``share`` × the best ``limit`` other same-key normalised scores (pure)."""
    normal = [min_max({str(i): s for i, s in enumerate(scores)})[str(i)] for i in range(len(scores))]
    by_key: dict[str, list[float]] = {}
    for i, key in enumerate(keys):
        by_key.setdefault(key, []).append(normal[i])
    for values in by_key.values():
        values.sort(reverse=True)
    out = []
    for i, key in enumerate(keys):
        values = by_key[key]
        others = list(values)
        others.remove(normal[i])
        out.append(normal[i] + share * sum(others[:limit] if limit is not None else others))
    return out
