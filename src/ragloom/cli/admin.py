"""``ragloom status``, ``ragloom init`` and ``ragloom audit``."""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from ..config import CONFIG_FILENAME, annotated_yaml
from ..audit import AuditEvent
from ..errors import RagloomError, RagloomWarning
from ..stores.base import AuditEntry
from .shared import console, display_path, state


def status_command(
    ctx: typer.Context,
    sources: bool = typer.Option(False, "--sources", help="List every source file."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Show what the index holds: sources, chunks, embedding model, size on disk.

    Example: ragloom status --sources
    """
    with state(ctx).open_index(read_only=True) as index:
        stats = index.stats()
        records = index.sources() if sources else []
        cache = index.cache_stats()
        from ..knowledge.sync import status as knowledge_status

        knowledge = knowledge_status(index)
    if as_json:
        console.print_json(json.dumps({**stats.__dict__, "cache": cache, "source_list": [r.__dict__ for r in records],
                                       **knowledge.to_dict()}))
        return
    table = Table(show_header=False, title=f"index {stats.path}", title_justify="left")
    table.add_row("sources", str(stats.sources))
    table.add_row("chunks", str(stats.chunks))
    table.add_row("embedder", f"{stats.embedder} ({stats.dimension}-d)")
    if stats.languages:
        table.add_row("languages", ", ".join(f"{code} {n}" for code, n in stats.languages.items()))
    table.add_row("store", stats.store)
    table.add_row("chunking", stats.chunking_policy or "-")
    table.add_row("size on disk", _size(stats.disk_bytes))
    for name, c in cache.items():  # a long-lived process (server, notebook) fills these
        table.add_row(f"query cache ({name})", f"{c['size']}/{c['capacity']} kept, {c['hits']} hits, {c['misses']} misses")

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
    """Write an annotated ragloom.yaml with every setting and its default.

    Example: ragloom init
    """
    if path.is_dir():
        path = path / CONFIG_FILENAME
    if not path.parent.is_dir():
        raise RagloomError(f"cannot write {path}: the folder {path.parent} does not exist; create it first")
    if path.exists() and not force:
        raise RagloomError(f"{path} already exists; pass --force to overwrite it")
    path.write_text(annotated_yaml(), encoding="utf-8")
    console.print(f"wrote {path}")


def audit_command(
    ctx: typer.Context,
    last: int = typer.Option(10, "--last", "-n", min=1, help="How many recent entries."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
    verify: bool = typer.Option(False, "--verify", help="Check the log's hash chain; name the first broken entry."),
    kind: str = typer.Option("all", "--kind", help="all, search (searches only) or write (ingest, remove, migrate)."),
) -> None:
    """List recent searches and writes (ingest, remove, migrate) with their parameters.

    Example: ragloom audit --last 5
    """
    if kind not in ("all", "search", "write"):
        raise RagloomError(f"--kind {kind!r}: use all, search or write")
    selection = {"all": {}, "search": {"kinds": ["search"]}, "write": {"exclude": ["search"]}}[kind]
    with state(ctx).open_index() as index:  # read-write when it may: searches logged by an older ragloom are chained
        report = index.verify_audit()
        entries = [] if verify else index.audit_events(last, **selection)
    if verify:
        if not report.ok:
            raise RagloomError(report.describe())
        console.print(report.describe(), highlight=False)
        return
    if not report.ok:
        warnings.warn(f"{report.describe()}; the entries below may have been tampered with", RagloomWarning)
    if as_json:
        console.print_json(json.dumps([_event_dict(e) for e in entries], default=str))
        return
    if not entries:
        console.print("nothing recorded yet")
        return
    for event in entries:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(event.created_at))
        if event.kind != "search":
            console.print(Text.assemble((when, "bold"), f"  #{event.seq}  {event.kind}  {_write_summary(event.entry)}"),
                          highlight=False)
            continue
        entry = AuditEntry.from_event(event)
        console.print(Text.assemble((when, "bold"), f"  #{event.seq}  search  {entry.mode}  k={entry.k}  "
                                    f"{entry.elapsed_ms:.1f} ms  filters={json.dumps(entry.filters)}  ",
                                    (entry.query, "cyan")), highlight=False)
        for hit in entry.hits:
            console.print(f"    {hit['rank']:>3}  {hit['score']:.4f}  {display_path(hit['source'])}  {hit['chunk_id'][:12]}",
                          highlight=False)


def _event_dict(event: AuditEvent) -> dict:
    if event.kind == "search":
        return {"kind": "search", "seq": event.seq, **AuditEntry.from_event(event).__dict__}
    return {"seq": event.seq, "hash": event.hash, **event.entry}


def _write_summary(entry: dict) -> str:
    if entry.get("model_id"):
        return f"{entry['model_id']} ({entry.get('dimension')}-d)"
    if "path" in entry:
        count = f"  {entry['chunk_count']} chunks" if entry.get("chunk_count") is not None else ""
        digest = f"  sha256 {str(entry.get('content_hash'))[:12]}" if entry.get("content_hash") else ""
        return f"{display_path(entry['path'])}{digest}{count}"
    details = entry.get("parameters") or entry.get("summary") or {k: v for k, v in entry.items() if k == "error"}
    return json.dumps(details, default=str)


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
