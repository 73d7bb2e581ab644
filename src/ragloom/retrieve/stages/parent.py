"""Return the parent passage of proposition hits (small-to-big retrieval).

A hit whose chunk carries ``parent_id``/``parent_text`` (the proposition chunker's) is
replaced by its passage; several propositions of one passage become one hit with the
best score. Other hits pass through unchanged.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from ...types import Hit
from ..base import Configured, NoOptions, QueryPlan, SearchContext


class ParentPassage(Configured[NoOptions]):
    name: ClassVar[str] = "parent"
    Options = NoOptions

    def wants(self, k: int) -> int:
        return k * 4  # several propositions collapse into one passage

    def process(self, plan: QueryPlan, hits: list[Hit], context: SearchContext) -> list[Hit]:
        out: list[Hit] = []
        seen: set[str] = set()
        for hit in hits:  # best first, so the first proposition of a passage is its best
            parent = hit.metadata.get("parent_id")
            if not parent:
                out.append(hit)
                continue
            if parent in seen:
                continue
            seen.add(parent)
            metadata = {**hit.metadata, "proposition_text": hit.text}
            out.append(replace(hit, chunk_id=str(parent), text=str(hit.metadata.get("parent_text", hit.text)),
                               metadata=metadata))
        return out
