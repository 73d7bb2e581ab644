"""``ragloom status``, ``ragloom init`` and ``ragloom audit``."""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer
from rich.table import Table

from ..config import CONFIG_FILENAME, annotated_yaml
from ..errors import RagloomError
from .app import console, display_path, state


def status_command(
    ctx: typer.Context,
    sources: bool = typer.Option(False, "--sources", help="List every source file."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Show what the index holds: sources, chunks, embedding model, size on disk."""
    with state(ctx).open_index() as index:
        stats = index.stats()
        records = index.sources() if sources else []
        from ..knowledge.sync import status as knowledge_status

        knowledge = knowledge_status(index)
    if as_json:
        console.print_json(json.dumps({**stats.__dict__, "source_list": [r.__dict__ for r in records],
                                       **knowledge.to_dict()}))
        return
    table = Table(show_header=False, title=f"index {stats.path}", title_justify="left")
    table.add_row("sources", str(stats.sources))
    table.add_row("chunks", str(stats.chunks))
    table.add_row("embedder", f"{stats.embedder} ({stats.dimension}-d)")
    table.add_row("store", stats.store)
    table.add_row("chunking", stats.chunking_policy or "-")
    table.add_row("size on disk", _size(stats.disk_bytes))
    from .knowledge import structure_rows

    for name, value in structure_rows(knowledge):
        table.add_row(name, value)
    console.print(table)
    if records:
        listing = Table("source", "chunks", "ingested")
        for record in records:
            listing.add_row(display_path(record.path), str(record.chunk_count),
                            time.strftime("%Y-%m-%d %H:%M", time.localtime(record.ingested_at)))
        console.print(listing)


def init_command(
    path: Path = typer.Argument(Path(CONFIG_FILENAME), help="Where to write the config."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """Write an annotated ragloom.yaml with every setting and its default."""
    if path.exists() and not force:
        raise RagloomError(f"{path} already exists; pass --force to overwrite it")
    path.write_text(annotated_yaml(), encoding="utf-8")
    console.print(f"wrote {path}")


def audit_command(
    ctx: typer.Context,
    last: int = typer.Option(10, "--last", "-n", help="How many recent searches."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """List recent searches with their parameters and hits."""
    with state(ctx).open_index() as index:
        entries = index.audit(last)
    if as_json:
        console.print_json(json.dumps([e.__dict__ for e in entries], default=str))
        return
    if not entries:
        console.print("no searches recorded yet")
        return
    for entry in entries:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry.created_at))
        console.print(f"[bold]{when}[/]  {entry.mode}  k={entry.k}  {entry.elapsed_ms:.1f} ms  "
                      f"filters={json.dumps(entry.filters)}  [cyan]{entry.query}[/]", highlight=False)
        for hit in entry.hits:
            console.print(f"    {hit['rank']:>3}  {hit['score']:.4f}  {display_path(hit['source'])}  {hit['chunk_id'][:12]}",
                          highlight=False)


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def register(app: typer.Typer) -> None:
    app.command("status")(status_command)
    app.command("init")(init_command)
    app.command("audit")(audit_command)
