"""GraphRAG retrieval: entities named in the query, their 1-2 hop neighbourhood, and the
chunks that mention them, fused with hybrid search.

Each chunk's graph score is the summed weight of the entities it mentions (seeds weigh
their specificity, neighbours decay by half per hop and by their edge's strength);
the final score is ``(1 - weight) * hybrid + weight * graph``, both min-max normalised.
With a metadata filter the graph only re-scores hybrid's candidates, so a filter is
never bypassed. A query that names no known entity gets hybrid's ranking unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import ConfigDict, Field

from ...errors import MissingStructureError
from ...knowledge.graph import Graph
from ...knowledge.names import alias_keys
from ...knowledge.structures import has_table_rows_in
from ...knowledge.tables import tables
from ...stores.base import Candidate, rank_candidates
from ..base import Configured, QueryPlan, Retrieved, SearchContext
from ..fusion import min_max
from .basic import HybridOptions, HybridRetriever

if TYPE_CHECKING:
    from ...config import Config

_NO_GRAPH = ("this index has no entity graph; build it with `ragloom ingest --graph PATH` "
             "(or set graph.enabled: true in ragloom.yaml and ingest again)")


class GraphOptions(HybridOptions):
    model_config = ConfigDict(extra="forbid")
    hops: int = Field(2, ge=0, le=2, description="relations followed from the query's entities")
    weight: float = Field(0.2, ge=0.0, le=1.0, description="share of the graph score in the fused score")


def query_graph(context: SearchContext, text: str, hops: int) -> tuple[Graph, dict[int, float]]:
    """The index's graph and the query's entity neighbourhood (entity id -> weight)."""
    if not has_table_rows_in(context.store, "kg_sources"):
        raise MissingStructureError(_NO_GRAPH)
    graph = Graph(tables(context.store))
    aliases = context.component("graph-aliases", lambda: alias_keys(context.config.graph.aliases))
    seeds = graph.query_entities(text, aliases)
    return graph, graph.neighbourhood(seeds, hops) if seeds else {}


class GraphRetriever(Configured[GraphOptions]):
    name: ClassVar[str] = "graph"
    Options = GraphOptions

    def __init__(self, options: GraphOptions | None = None) -> None:
        super().__init__(options)
        hybrid = {k: v for k, v in self.options.model_dump().items() if k in HybridOptions.model_fields}
        self.hybrid = HybridRetriever(HybridOptions(**hybrid))

    def ran_with(self, plan: QueryPlan, config: Config) -> dict[str, Any]:
        return {**super().ran_with(plan, config), **self.hybrid.ran_with(plan, config)}

    def retrieve(self, plan: QueryPlan, context: SearchContext, depth: int) -> Retrieved:
        graph, weights = query_graph(context, plan.text, self.options.hops)
        base = self.hybrid.retrieve(plan, context, depth)
        if not weights:
            return base
        chunk_scores = graph.chunk_scores(weights)
        hybrid_scores = {c.chunk_id: c.score for c in base.candidates}
        if plan.conditions:  # the graph does not know the filter: only re-score what passed it
            chunk_scores = {cid: s for cid, s in chunk_scores.items() if cid in hybrid_scores}
        else:
            best = rank_candidates([Candidate(c, s) for c, s in chunk_scores.items()], depth)
            chunk_scores = {c.chunk_id: c.score for c in best}
        fused = fuse_graph(hybrid_scores, chunk_scores, self.options.weight)
        return Retrieved(fused, {**base.components, "graph": chunk_scores})


def fuse_graph(hybrid: dict[str, float], graph: dict[str, float], weight: float) -> list[Candidate]:
    """``(1 - weight) * norm(hybrid) + weight * norm(graph)`` over the union of candidates."""
    h, g = min_max(hybrid), min_max(graph)
    return rank_candidates([Candidate(cid, (1.0 - weight) * h.get(cid, 0.0) + weight * g.get(cid, 0.0))
                            for cid in {*h, *g}])
