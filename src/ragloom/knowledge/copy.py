"""Copying the derived structures with an index (``ragloom migrate``).

The entity graph, its communities, the RAPTOR tree and the model-output cache refer to
chunks by id and to sources by path and content hash, which a migration keeps; the tree's
vectors come from the embedder the migration checks is the same. So their rows are valid
in the copy as they stand, and copying them spares re-extracting the graph and
re-summarising the tree (an LLM's work, when one is configured). The copy is one
transaction on the target: it holds the origin's structures whole, or its own as before.
A source the copy of the chunks did not bring over (``migrate`` failed half-way) shows
as a stale source in ``ragloom status`` and is brought up to date by the next ingest, as
on any index.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .raptor import Tree
from .tables import has_rows_in, tables

if TYPE_CHECKING:
    from ..stores.base import Store

#: Every table of the structures and its columns, in an order both schemas accept.
TABLES: dict[str, tuple[str, ...]] = {
    "knowledge_cache": ("key", "value"),
    "kg_entities": ("id", "key", "name", "type", "description"),
    "kg_mentions": ("chunk_id", "source", "entity_id", "count"),
    "kg_relations": ("head", "tail", "chunk_id", "source", "description", "weight"),
    "kg_sources": ("path", "content_hash", "extractor", "chunks", "skipped", "seconds"),
    "kg_communities": ("id", "entity_id"),
    "kg_community_summaries": ("id", "title", "summary", "size"),
    "raptor_leaves": ("chunk_id", "source", "content_hash"),
    "raptor_sources": ("path", "content_hash"),
    "raptor_nodes": ("id", "level", "text", "children", "leaves", "vector", "dirty"),
}
#: What ``ragloom status`` calls each structure, and the table that says it is built.
STRUCTURES = {"entity graph": "kg_sources", "RAPTOR tree": "raptor_sources"}


@dataclass
class StructuresCopy:
    #: The structures the copy now holds ("entity graph", "RAPTOR tree").
    copied: list[str] = field(default_factory=list)
    rows: int = 0
    #: Why nothing was copied, when the origin had structures the target cannot hold.
    note: str = ""


def copy_structures(origin: Store, target: Store) -> StructuresCopy:
    """Make ``target``'s structure tables hold ``origin``'s (nothing is done when it has none)."""
    report = StructuresCopy()
    built = [name for name, table in STRUCTURES.items() if has_rows_in(origin, table)]
    if not built and not has_rows_in(origin, "knowledge_cache"):
        return report
    if target.structures_database() is None:
        report.note = (f"the {' and the '.join(built) or 'model-output cache'} not copied: the {target.name} store "
                       "keeps no tables; `ragloom ingest --graph/--raptor` builds them again where it can")
        return report
    source, destination = tables(origin), tables(target)
    with destination.transaction():
        seen = int(Tree(destination).meta().get("version", 0))
        for table, columns in TABLES.items():
            rows = source.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall()
            destination.execute(f"DELETE FROM {table}")
            destination.executemany(
                f"INSERT INTO {table}({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", rows)
            report.rows += len(rows)
        destination.identity_follows("kg_entities", "id")
        # A version no replica of the target has seen, so each one reloads the copied tree.
        tree = Tree(destination)
        tree.set_meta(version=max(seen, int(tree.meta().get("version", 0))) + 1)
    report.copied = built
    return report
