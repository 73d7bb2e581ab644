"""``ragloom sync [NAME...]``: remote sources synced once; and what ``ragloom ingest URI`` prints."""

from __future__ import annotations

import json
import time
from typing import Any, Optional

import typer
from rich.table import Table

from ..errors import RagloomError
from ..sources import SyncReport
from .shared import console, notice, state

#: Skipped items named one by one; the rest are counted.
SKIPPED_SHOWN = 10


def print_sync(report: SyncReport) -> None:
    """A sync's outcome: its one-line error, each item that failed or was skipped with why, the counts."""
    if report.error:
        notice("failed:", "red", f"{report.name}: {report.error} (nothing was removed)")
    for warning in report.warnings:
        notice("warning:", "yellow", warning)
    for failure in report.failed:
        notice("failed:", "red", f"{failure.path}: {failure.error}")
    for entry in report.skipped_files()[:SKIPPED_SHOWN]:
        console.print(f"skipped {entry['path']}: {entry['reason']}", style="dim", markup=False, highlight=False)
    if len(report.skipped) > SKIPPED_SHOWN:
        console.print(f"skipped {len(report.skipped) - SKIPPED_SHOWN} more (--json lists them)", style="dim")
    table = Table(title=f"sync of {report.name}", show_header=False, title_justify="left")
    summary = report.summary()
    for key in ("seen", "added", "updated", "unchanged", "removed", "failed", "skipped", "chunks_written",
                "chunks_embedded", "requests", "bytes_downloaded"):
        table.add_row(key.replace("_", " "), f"{summary[key]:,}")
    table.add_row("time", f"{report.seconds:.2f} s")
    console.print(table)
    listing = "the remote was listed whole" if report.complete else "the listing was incomplete: nothing removed"
    console.print(f"{report.name}: {report.status}; {report.seen} items seen, {report.requests} requests, "
                  f"{report.bytes_downloaded:,} bytes downloaded; {listing}", markup=False, highlight=False)


def sync_sources(ctx: typer.Context, names: list[str], as_json: bool, wait: float) -> list[SyncReport]:
    reports: list[SyncReport] = []
    with state(ctx).open_index(create=True) as index:
        targets = names or list(index.config.sources.remote)
        if not targets:
            raise RagloomError("no remote source is configured; add one under sources.remote in ragloom.yaml, "
                               "or name a URI: ragloom sync s3://BUCKET/PREFIX")
        for name in targets:
            report = index.sync(name, wait=wait)
            reports.append(report)
            if not as_json:
                print_sync(report)
    if as_json:
        console.print_json(json.dumps([_json(r) for r in reports]))
    return reports


def _json(report: SyncReport) -> dict[str, Any]:
    return {**report.summary(), "failures": [f.__dict__ for f in report.failed],
            "skipped_files": report.skipped_files(), "removed_sources": report.removed, "warnings": report.warnings}


def sync_command(
    ctx: typer.Context,
    names: Optional[list[str]] = typer.Argument(None, help="Sources to sync: names under sources.remote, or URIs "
                                                "(default: every configured source)."),
    status: bool = typer.Option(False, "--status", help="Show each remote source's last sync instead of syncing."),
    as_json: bool = typer.Option(False, "--json", help="Print the reports (or the status) as JSON."),
    wait: float = typer.Option(0.0, "--wait", help="Seconds to wait while another process or replica syncs the source."),
) -> None:
    """Sync remote sources once: new and changed items read, items gone from the remote removed.

    Example: ragloom sync handbook
    """
    if status:
        show_status(ctx, as_json)
        return
    reports = sync_sources(ctx, list(names or []), as_json, wait)
    if any(report.status == "failed" for report in reports):
        raise typer.Exit(1)


def show_status(ctx: typer.Context, as_json: bool) -> None:
    with state(ctx).open_index(create=False) as index:
        rows = index.remote_sources()
    if as_json:
        console.print_json(json.dumps(rows))
        return
    table = Table(title="remote sources", title_justify="left")
    for column in ("name", "status", "last sync", "cursor age", "seen", "error"):
        table.add_column(column)
    now = time.time()
    for row in rows:
        finished = row["last_finished"]
        age = row["cursor_age_seconds"]
        table.add_row(row["name"], row["status"], f"{_ago(now - finished)} ago" if finished else "never",
                      _ago(age) if age is not None else "-", str(row["report"].get("seen", "-")), row["error"] or "")
    console.print(table)


def _ago(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"


def register(app: typer.Typer) -> None:
    app.command("sync")(sync_command)
