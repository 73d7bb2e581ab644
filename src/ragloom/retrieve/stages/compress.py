"""Contextual compression: keep only the sentences of each hit that score well against the query.

Each sentence is scored by the packaged cross-encoder; a hit keeps the sentences at or
above ``threshold`` (at least its ``keep_min`` best, in their original order). The kept
character ranges are recorded in the hit's metadata (``kept_spans``, relative to the
chunk; ``kept_offsets``, in the source document when the chunk's ``start`` is known), so
a citation still points at the exact text; ``compression`` in the hit's scores is the
share of characters kept.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from ...types import Hit
from ..base import Configured, QueryPlan, SearchContext
from ...models.cross_encoder import shared_cross_encoder


class CompressOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    threshold: float = Field(0.1, ge=0.0, le=1.0, description="cross-encoder score (0..1) a sentence needs to stay")
    keep_min: int = Field(1, ge=1, description="sentences every hit keeps, its best ones, whatever their score")


class CompressStage(Configured[CompressOptions]):
    name: ClassVar[str] = "compress"
    Options = CompressOptions

    def wants(self, k: int) -> int:
        return k

    def process(self, plan: QueryPlan, hits: list[Hit], context: SearchContext) -> list[Hit]:
        from ...context import sentence_spans

        spans = [sentence_spans(hit.text) or [(0, len(hit.text))] for hit in hits]
        texts = [hit.text[s:e] for hit, ranges in zip(hits, spans) for s, e in ranges]
        if not texts:
            return hits
        scores = shared_cross_encoder(context).score(plan.text, texts)
        out, offset = [], 0
        for hit, ranges in zip(hits, spans):
            mine = scores[offset : offset + len(ranges)]
            offset += len(ranges)
            out.append(compress_hit(hit, ranges, list(map(float, mine)), self.options))
        return out


def compress_hit(hit: Hit, ranges: list[tuple[int, int]], scores: list[float], options: CompressOptions) -> Hit:
    """``hit`` with only its relevant sentences; offsets and the kept share recorded."""
    best = set(sorted(range(len(ranges)), key=lambda i: -scores[i])[: options.keep_min])
    kept = [ranges[i] for i in range(len(ranges)) if scores[i] >= options.threshold or i in best]
    text = " ".join(hit.text[s:e] for s, e in kept)
    ratio = len(text) / len(hit.text) if hit.text else 1.0
    metadata = dict(hit.metadata)
    metadata["kept_spans"] = [list(span) for span in kept]
    start = metadata.get("start")
    if isinstance(start, int):
        metadata["kept_offsets"] = [[start + s, start + e] for s, e in kept]
    metadata["compression_ratio"] = round(ratio, 4)
    return replace(hit, text=text, metadata=metadata, scores={**hit.scores, "compression": ratio})
