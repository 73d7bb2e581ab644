"""RAPTOR retrieval over the collapsed tree: chunks and summaries of every level together.

Chunks come from hybrid search as usual; summary nodes are ranked by cosine similarity
to the query and enter the fused list with their dense score scaled like the chunks'
(min-max over the union of both dense score sets), since a summary has no BM25 score.
A summary hit carries its text, its ``raptor_level``, its children and the leaf chunks it
covers (``leaf_chunks``, ``leaf_sources``): those are what it cites. Its ``doc_id`` is its
leaf document nearest the query, so document-level evaluation credits that document.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import ConfigDict, Field

from ...knowledge.raptor import Node, tree_view
from ...stores.base import Candidate, rank_candidates
from ...types import Chunk
from ..base import Configured, QueryPlan, Retrieved, SearchContext
from ..fusion import min_max
from .basic import HybridOptions, HybridRetriever

if TYPE_CHECKING:
    from ...config import Config


class RaptorOptions(HybridOptions):
    model_config = ConfigDict(extra="forbid")
    summaries: int = Field(3, ge=0, description="summary nodes allowed into the candidates, at most")
    weight: float = Field(1.0, ge=0.0, le=2.0, description="multiplier of a summary's scaled dense score")


class RaptorRetriever(Configured[RaptorOptions]):
    name: ClassVar[str] = "raptor"
    Options = RaptorOptions

    def __init__(self, options: RaptorOptions | None = None) -> None:
        super().__init__(options)
        hybrid = {k: v for k, v in self.options.model_dump().items() if k in HybridOptions.model_fields}
        self.hybrid = HybridRetriever(HybridOptions(**hybrid))

    def ran_with(self, plan: QueryPlan, config: Config) -> dict[str, Any]:
        return {**super().ran_with(plan, config), **self.hybrid.ran_with(plan, config)}

    def retrieve(self, plan: QueryPlan, context: SearchContext, depth: int) -> Retrieved:
        view = tree_view(context.store)
        base = self.hybrid.retrieve(plan, context, depth)
        if plan.conditions or not self.options.summaries:  # summaries carry no filterable metadata
            return base
        vector = context.query_vector(plan.text)
        found = view.search(vector, self.options.summaries)
        dense = base.components.get("dense", {})
        scale = min_max({**dense, **{n.id: s for n, s in found}})
        scores = {c.chunk_id: c.score for c in base.candidates}
        extra = {}
        for node, _ in found:
            scores[node.id] = self.options.weight * scale[node.id]
            extra[node.id] = summary_chunk(node, context, vector)
        components = dict(base.components)
        components["raptor"] = {n.id: s for n, s in found}
        return Retrieved(rank_candidates([Candidate(c, s) for c, s in scores.items()]), components, extra)


def summary_chunk(node: Node, context: SearchContext, vector) -> Chunk:
    """A summary node as a chunk-like record that cites its leaves."""
    leaves = context.store.get_chunks(node.leaves[:500])
    closeness = context.store.dense_scores(vector, [c.id for c in leaves]) if leaves else {}
    lead = max(leaves, key=lambda c: closeness.get(c.id, -1.0)) if leaves else None
    metadata = {
        "raptor_level": node.level, "children": node.children, "leaf_chunks": node.leaves,
        "leaf_sources": sorted({c.source for c in leaves}),
        "doc_id": lead.doc_id if lead else "", "title": f"RAPTOR summary (level {node.level})",
    }
    return Chunk(id=node.id, text=node.text, source=lead.source if lead else "raptor", doc_id=metadata["doc_id"],
                 chunk_index=0, start=0, end=len(node.text), policy="raptor", content_hash="",
                 token_count=0, metadata=metadata)
