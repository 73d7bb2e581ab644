"""Communities of the entity graph (Louvain, networkx) and their summaries, for global
questions ("what are the main themes?") that no single chunk answers.

Louvain is global, so communities are recomputed whole whenever the graph changed, but
that is cheap next to extraction: it reads only the entity and relation tables. A summary
is written by the LLM from the community's entities and strongest relations when
``summarizer`` is ``llm``; otherwise it lists them (no model needed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..optional import require
from .graph import Graph

if TYPE_CHECKING:
    from ..models.llm import LLM

#: Communities smaller than this are not kept (pairs and singletons say little).
MIN_SIZE = 3
_PROMPT = """These entities form one community of a knowledge graph built from a document collection.
Write a title (a few words) on the first line, then a summary of 2-4 sentences of what ties them together.

Entities: %s
Relations: %s"""


@dataclass(frozen=True)
class Community:
    id: int
    title: str
    summary: str
    size: int


def build_communities(graph: Graph, llm: Callable[[], LLM] | None = None, seed: int = 0) -> list[Community]:
    """Detect and store the communities; return them, largest first."""
    nx = require("networkx", extra="graph", feature="graph communities")
    network = graph.to_networkx()
    found = [c for c in nx.community.louvain_communities(network, weight="weight", seed=seed) if len(c) >= MIN_SIZE]
    found.sort(key=lambda c: (-len(c), min(c)))
    communities = []
    for number, members in enumerate(found, start=1):
        ranked = sorted(members, key=lambda e: (-network.nodes[e]["mentions"], network.nodes[e]["label"]))
        names = [network.nodes[e]["label"] for e in ranked]
        edges = sorted(network.subgraph(members).edges(data=True), key=lambda e: -e[2]["weight"])[:10]
        relations = [f"{network.nodes[a]['label']} - {network.nodes[b]['label']}" for a, b, _ in edges]
        title, summary = ", ".join(names[:3]), f"{len(names)} entities: {', '.join(names[:12])}" + (
            f"; strongest links: {'; '.join(relations[:5])}" if relations else "")
        if llm is not None:
            answer = llm().complete(_PROMPT % (", ".join(names[:30]), "; ".join(relations)), max_tokens=200).strip()
            if answer:
                first, _, rest = answer.partition("\n")
                title, summary = first.strip("# ").strip()[:120] or title, rest.strip() or summary
        communities.append(Community(number, title, summary, len(members)))
    with graph.tables.transaction() as db:
        db.execute("DELETE FROM kg_communities")
        db.execute("DELETE FROM kg_community_summaries")
        for community, members in zip(communities, found):
            db.executemany("INSERT INTO kg_communities(id, entity_id) VALUES (?, ?)",
                           [(community.id, int(e)) for e in members])
            db.execute("INSERT INTO kg_community_summaries(id, title, summary, size) VALUES (?, ?, ?, ?)",
                       (community.id, community.title, community.summary, community.size))
    return communities


def read_communities(graph: Graph) -> list[Community]:
    return [Community(*row) for row in graph.tables.execute(
        "SELECT id, title, summary, size FROM kg_community_summaries ORDER BY size DESC, id")]
