"""The specification's graph boost: hits connected to the query's entities score ×factor.

A hit is connected when it mentions an entity named in the query or one up to ``hops``
relations away from one. The factor 1.2 is the specification's; benchmarks/quality/knowledge.py
measures others.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from ...types import Hit
from ..base import Configured, QueryPlan, SearchContext, ranked, with_score
from ..retrievers.graph import query_graph


class GraphBoostOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    factor: float = Field(1.2, gt=0.0, description="score multiplier of graph-connected hits")
    hops: int = Field(1, ge=0, le=2, description="relations away from the query's entities that still count")


class GraphBoost(Configured[GraphBoostOptions]):
    name: ClassVar[str] = "graph-boost"
    Options = GraphBoostOptions

    def wants(self, k: int) -> int:
        return max(k, 30)  # room for connected hits below the cut to move up

    def process(self, plan: QueryPlan, hits: list[Hit], context: SearchContext) -> list[Hit]:
        graph, weights = query_graph(context, plan.text, self.options.hops)
        if not weights or not hits:
            return hits
        mentioned = graph.entities_of_chunks([h.chunk_id for h in hits])
        boosted = [with_score(hit, hit.score * self.options.factor, "graph-boost")
                   if mentioned.get(hit.chunk_id, set()) & weights.keys() else hit for hit in hits]
        return ranked(boosted)
