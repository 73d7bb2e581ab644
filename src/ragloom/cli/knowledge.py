"""``ragloom graph`` and ``ragloom raptor``: look at and maintain the derived structures."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from ..errors import MissingStructureError
from ..knowledge.structures import StructureState
from ..knowledge.sync import KnowledgeStatus
from .shared import console, display_path, state

raptor_app = typer.Typer(help="The RAPTOR tree of cluster summaries.\n\nExample: ragloom raptor show", no_args_is_help=True)

_NO_GRAPH = ("this index has no entity graph; build it with `ragloom ingest --graph PATH` "
             "(or set graph.enabled: true in ragloom.yaml and ingest again)")


def structure_rows(status: KnowledgeStatus) -> list[tuple[str, str]]:
    """Lines for ``ragloom status``: is each structure built, and how stale is it."""
    return [("entity graph", _graph_line(status.graph)), ("raptor tree", _raptor_line(status.raptor))]


def _behind(state: StructureState) -> str:
    parts = []
    if state.stale_sources:
        parts.append(f"{len(state.stale_sources)} changed sources not yet in it")
    if state.removed_sources:
        parts.append(f"{len(state.removed_sources)} removed sources still in it")
    return "; ".join(parts) + " (run `ragloom ingest` to catch up)" if parts else "up to date"


def _graph_line(state: StructureState) -> str:
    if not state.built:
        return "not built" + (" (enabled: built at the next ingest)" if state.enabled else " (ragloom ingest --graph)")
    c = state.counts
    skipped = f", {c['skipped_chunks']} chunks skipped" if c.get("skipped_chunks") else ""
    return f"{c['entities']} entities, {c['relations']} relations over {c['sources']} sources{skipped}; {_behind(state)}"


def _raptor_line(state: StructureState) -> str:
    if not state.built:
        return "not built" + (" (enabled: built at the next ingest)" if state.enabled else " (ragloom ingest --raptor)")
    c = state.counts
    levels = ", ".join(f"L{level}: {n}" for level, n in sorted(c["levels"].items()))
    line = f"{c['nodes']} summaries ({levels}) over {c['leaves']} chunks; {_behind(state)}"
    if c["dirty"]:
        line += f"; {c['dirty']} summaries dirty"
    changed, built = c["leaves_changed_since_build"], c["leaves_at_build"]
    if changed:
        share = changed / max(built, 1)
        line += f"; {changed} chunks came or went since the last full build ({share:.0%})"
        if share > 0.3:
            line += ", consider `ragloom raptor rebuild`"
    return line


def graph_command(
    ctx: typer.Context,
    entity: str | None = typer.Argument(None, help="An entity to show with its neighbours and chunks."),
    export: Path | None = typer.Option(None, "--export", help="Write the graph as GraphML (Gephi, yEd, networkx)."),
    limit: int = typer.Option(10, "--limit", "-n", help="Neighbours and chunks shown."),
    communities: bool = typer.Option(False, "--communities", help="List the communities and their summaries "
                                     "(computed now if graph.communities is off)."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Show the entity graph: the most mentioned entities, or one entity's neighbourhood.

    Example: ragloom graph "Marie Curie"
    """
    from ..knowledge.graph import Graph
    from ..knowledge.names import alias_keys
    from ..knowledge.structures import has_table_rows
    from ..knowledge.tables import tables

    with state(ctx).open_index() as index:
        if not has_table_rows(index, "kg_sources"):
            raise MissingStructureError(_NO_GRAPH)
        graph = Graph(tables(index.store))
        if export is not None:
            nodes, edges = graph.export_graphml(export)
            console.print(f"wrote {export}: {nodes} entities, {edges} relations")
            return
        if communities:
            from ..knowledge.communities import build_communities, read_communities

            found_communities = read_communities(graph)
            if not found_communities:
                with index.store.write_lock(index.path):
                    found_communities = build_communities(graph)
            _communities(found_communities, limit, as_json)
            return
        if entity is None:
            _overview(graph, limit, as_json)
            return
        found = graph.find(entity, alias_keys(index.config.graph.aliases))
        if found is None:
            close = graph.search_names(entity, limit)
            hint = f"; similar: {', '.join(e.name for e in close)}" if close else ""
            raise MissingStructureError(f"no entity named {entity!r} in the graph{hint}")
        neighbours = graph.neighbours(found.id, limit)
        chunk_ids = graph.chunks_of([found.id]).get(found.id, [])[:limit]
        chunks = index.store.get_chunks(chunk_ids)
    if as_json:
        console.print_json(json.dumps({
            "entity": found.__dict__, "neighbours": [{**n.__dict__, "weight": w, "relation": d} for n, w, d in neighbours],
            "chunks": [{"chunk_id": c.id, "source": c.source, "text": c.text} for c in chunks]}))
        return
    console.print(f"[bold]{found.name}[/] ({found.type or 'entity'}, mentioned in {found.mentions} chunks)"
                  + (f": {found.description}" if found.description else ""), highlight=False)
    table = Table("neighbour", "type", "weight", "relation", title="neighbours", title_justify="left")
    for other, weight, description in neighbours:
        table.add_row(other.name, other.type, f"{weight:g}", description)
    console.print(table)
    for chunk in chunks:
        console.print(f"[cyan]{display_path(chunk.source)}[/] {chunk.id[:12]}: {chunk.text[:160]!r}", highlight=False)


def _communities(found, limit: int, as_json: bool) -> None:
    if as_json:
        console.print_json(json.dumps([c.__dict__ for c in found[:limit]]))
        return
    if not found:
        console.print("no communities of 3 or more entities")
    for community in found[:limit]:
        console.print(f"[bold]{community.id}. {community.title}[/] ({community.size} entities): {community.summary}",
                      highlight=False)


def _overview(graph, limit: int, as_json: bool) -> None:
    counts = graph.counts()
    top = graph.top_entities(limit)
    if as_json:
        console.print_json(json.dumps({**counts, "top": [e.__dict__ for e in top]}))
        return
    console.print(f"{counts['entities']} entities, {counts['relations']} relations, "
                  f"{counts['mentions']} mentions over {counts['sources']} sources")
    table = Table("entity", "type", "chunks", title="most mentioned", title_justify="left")
    for info in top:
        table.add_row(info.name, info.type, str(info.mentions))
    console.print(table)


@raptor_app.command("rebuild")
def raptor_rebuild(ctx: typer.Context) -> None:
    """Re-cluster and re-summarise the whole tree from the current chunks.

    Example: ragloom raptor rebuild
    """
    from ..knowledge.raptor import rebuild

    with state(ctx).open_index(raptor={"enabled": True}) as index:
        if index.store.count() == 0:
            raise MissingStructureError("the index is empty; add documents with `ragloom ingest PATH` first")
        with index.store.write_lock(index.path):  # a file lock, or the database's for a postgres index
            counts = rebuild(index)
    levels = ", ".join(f"level {level}: {n}" for level, n in sorted(counts["levels"].items()))
    console.print(f"built {counts['nodes']} summaries over {counts['leaves']} chunks ({levels or 'none'})")


@raptor_app.command("show")
def raptor_show(
    ctx: typer.Context,
    level: int | None = typer.Option(None, "--level", help="Only this level."),
    limit: int = typer.Option(10, "--limit", "-n", help="Summaries shown."),
) -> None:
    """Print the tree's summaries, top level first.

    Example: ragloom raptor show
    """
    from ..knowledge.raptor import tree_view

    with state(ctx).open_index() as index:
        view = tree_view(index.store)
    nodes = sorted(view.nodes, key=lambda n: (-n.level, n.id))
    if level is not None:
        nodes = [n for n in nodes if n.level == level]
    for node in nodes[:limit]:
        console.print(f"[bold]L{node.level}[/] {node.id} ({len(node.children)} children, {len(node.leaves)} chunks): "
                      f"{node.text[:300]}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("graph")(graph_command)
    app.add_typer(raptor_app, name="raptor")
