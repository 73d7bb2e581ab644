"""``dedup``: near-identical hits collapse into the best of them; optionally a cap per source.

Two hits are duplicates when their texts are the same (content hash) or, with
``threshold`` set, when their stored vectors' cosine is at least ``threshold``. The hit
kept lists what it absorbed under ``metadata["duplicates"]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ...types import Hit, content_hash
from ..base import Configured, QueryPlan, SearchContext


class DedupOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    threshold: float | None = Field(0.95, gt=0.0, le=1.0, description="cosine at which hits are duplicates; "
                                    "None = identical text only")
    max_per_source: int | None = Field(None, ge=1, description="keep at most this many hits of one source")
    fetch: float = Field(2.0, ge=1.0, description="candidates considered per hit returned (k × fetch)")


class DedupStage(Configured[DedupOptions]):
    name: ClassVar[str] = "dedup"
    Options = DedupOptions

    def wants(self, k: int) -> int:
        return int(np.ceil(k * self.options.fetch))

    def process(self, plan: QueryPlan, hits: list[Hit], context: SearchContext) -> list[Hit]:
        if not hits:
            return hits
        vectors = context.chunk_vectors(hits) if self.options.threshold is not None else None
        groups = duplicate_groups([content_hash(h.text) for h in hits], vectors, self.options.threshold)
        kept = []
        per_source: dict[str, int] = {}
        cap = self.options.max_per_source
        for leader, members in groups:
            hit = hits[leader]
            if cap is not None:
                if per_source.get(hit.source, 0) >= cap:
                    continue
                per_source[hit.source] = per_source.get(hit.source, 0) + 1
            if members:
                hit = replace(hit, metadata={**hit.metadata, "duplicates": [hits[m].chunk_id for m in members]})
            kept.append(hit)
        return kept


def duplicate_groups(
    hashes: Sequence[str], vectors: np.ndarray | None, threshold: float | None
) -> list[tuple[int, list[int]]]:
    """Rows grouped with the first (best) row they duplicate: ``[(leader, [members])]`` in input order."""
    leaders: list[int] = []
    members: dict[int, list[int]] = {}
    by_hash: dict[str, int] = {}
    for i, digest in enumerate(hashes):
        leader = by_hash.get(digest)
        if leader is None and vectors is not None and threshold is not None and leaders:
            norms = np.linalg.norm(vectors[i])
            if norms > 0:  # a hit without a stored vector is compared by text only
                similar = vectors[leaders] @ vectors[i]
                best = int(np.argmax(similar))
                if similar[best] >= threshold:
                    leader = leaders[best]
        if leader is None:
            leaders.append(i)
            members[i] = []
            by_hash.setdefault(digest, i)
        else:
            members[leader].append(i)
    return [(leader, members[leader]) for leader in leaders]
