"""``ragloom ingest`` and ``ragloom remove``."""

from __future__ import annotations

import json
import sys
from typing import Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..errors import IngestInterrupted, UsageError
from ..ingest.runner import IngestProgress
from ..types import IngestReport
from .interrupt import stops_on_ctrl_c
from .shared import console, display_path, err_console, notice, state


class _RichProgress(IngestProgress):
    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.files_task = progress.add_task("files", total=None)
        self.embed_task = progress.add_task("embedding chunks", total=0, visible=False)

    def files(self, total: int) -> None:
        self.progress.update(self.files_task, total=total)

    def file_done(self, path: str, status: str) -> None:
        self.progress.update(self.files_task, advance=1, description=f"files ({display_path(path)[-40:]})")

    def embedding(self, chunks: int) -> None:
        task = self.progress.tasks[self.embed_task]
        self.progress.update(self.embed_task, total=(task.total or 0) + chunks, visible=True)

    def embedded(self, chunks: int) -> None:
        self.progress.update(self.embed_task, advance=chunks)


def progress_bars(quiet: bool = False) -> Progress:
    """Transient progress bars on stderr (none when ``quiet``)."""
    columns = (TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    return Progress(*columns, console=err_console, transient=True, disable=quiet)


def ingest_command(
    ctx: typer.Context,
    paths: list[str] = typer.Argument(..., help="Files and folders to index (folders recursively), and remote sources: "
                                      "s3://BUCKET/PREFIX, https://HOST/PATH, git+https://HOST/REPO@REF, ./repo@REF."),
    glob: Optional[list[str]] = typer.Option(None, "--glob", "-g", help="Only files matching this pattern, e.g. '**/*.md' (repeatable)."),
    chunker: Optional[str] = typer.Option(None, "--chunker", help="Chunking strategy for every file: recursive, paragraph, sentence, markdown, semantic, agentic, proposition."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
    rebuild: bool = typer.Option(
        False, "--rebuild", help="Move the index aside (kept as INDEX.damaged-TIME) and build it anew from PATHS."
    ),
    graph: bool = typer.Option(False, "--graph", help="Also build the entity graph (as graph.enabled: true)."),
    raptor: bool = typer.Option(False, "--raptor", help="Also build the RAPTOR summary tree (as raptor.enabled: true)."),
) -> None:
    """Index documents: unchanged files are skipped, changed ones replaced, deleted ones removed.

    Example: ragloom ingest ./docs --glob '**/*.md'
    """
    from ..sources import is_remote, local_repository

    remote = [local_repository(p) or p for p in paths if is_remote(p) or ("@" in p and local_repository(p))]
    paths = [p for p in paths if not (is_remote(p) or ("@" in p and local_repository(p)))]
    if remote:
        from .sync import sync_sources

        reports = sync_sources(ctx, remote, as_json, wait=0.0)
        if not paths:
            if any(report.status == "failed" for report in reports):
                raise typer.Exit(1)
            return
    overrides: dict = {"chunking": {"strategy": chunker, "by_extension": {}}} if chunker else {}
    if graph:
        overrides["graph"] = {"enabled": True}
    if raptor:
        overrides["raptor"] = {"enabled": True}
    if rebuild:
        from ..parts import set_aside_index

        moved = set_aside_index(state(ctx).config(**overrides).index)
        if moved is not None:
            err_console.print(f"moved the old index to {moved}", highlight=False, markup=False)
    try:
        # Ctrl-C or SIGTERM: the ingest stops reading, keeps what it finished and says so; a second
        # one (or a wrap-up longer than INTERRUPT_GRACE seconds) ends the process at once.
        with stops_on_ctrl_c(INTERRUPT_GRACE, terminate=True), state(ctx).open_index(create=True, **overrides) as index:
            if quiet or as_json:
                report = index.ingest(paths, glob=glob)
            else:
                with progress_bars() as progress:
                    report = index.ingest(paths, glob=glob, progress=_RichProgress(progress))
    except IngestInterrupted as stopped:
        _report_interrupted(stopped, as_json)
        raise typer.Exit(130) from None
    if as_json:
        console.print_json(json.dumps({**report.summary(), "failures": [f.__dict__ for f in report.failed],
                                       "skipped_files": report.skipped_files(), "warnings": report.warnings}))
    else:
        print_report(report)
    if report.failed:
        raise typer.Exit(1 if not (report.added or report.updated or report.unchanged) else 0)


#: Seconds an interrupted ingest has to write what it finished before the process is ended.
INTERRUPT_GRACE = 30.0


def _report_interrupted(stopped: IngestInterrupted, as_json: bool) -> None:
    report = stopped.report
    if as_json:
        console.print_json(json.dumps({**report.summary(), "interrupted": True, "kept": stopped.kept,
                                       "failures": [f.__dict__ for f in report.failed], "warnings": report.warnings}))
    else:
        for failure in report.failed:
            notice("failed:", "red", f"{display_path(failure.path)}: {failure.error}")
    notice("kept", "yellow", f"{stopped.kept} files; run again to finish")


def print_report(report: IngestReport) -> None:
    for warning in report.warnings:
        notice("warning:", "yellow", warning)
    for failure in report.failed:
        notice("failed:", "red", f"{display_path(failure.path)}: {failure.error}")
    table = Table(title="ingest summary", show_header=False, title_justify="left")
    summary = report.summary()
    for key in ("added", "updated", "unchanged", "removed", "failed", "skipped"):
        table.add_row(f"files {key}", str(summary[key]))
    table.add_row("chunks written", str(report.chunks_written))
    table.add_row("chunks embedded", str(report.chunks_embedded))
    table.add_row("tokens embedded", str(report.tokens_embedded))
    if report.ocr_pages:
        table.add_row("pages read by OCR", str(report.ocr_pages))
    table.add_row("time", f"{report.seconds:.2f} s")
    console.print(table)
    for line in skipped_lines(report):
        console.print(line, style="dim", markup=False, highlight=False)


#: Paths named per group of skipped files; the rest are counted.
SKIPPED_SHOWN = 5


def skipped_lines(report: IngestReport) -> list[str]:
    """The skipped files grouped by reason (unsupported types by extension), a few named in each group."""
    groups: dict[str, list[str]] = {}
    for entry in report.skipped_files():
        groups.setdefault(_skip_group(entry["reason"]), []).append(display_path(entry["path"]))
    lines = []
    for reason, paths in sorted(groups.items(), key=lambda item: -len(item[1])):
        more = f", and {len(paths) - SKIPPED_SHOWN} more" if len(paths) > SKIPPED_SHOWN else ""
        noun = "file" if len(paths) == 1 else "files"
        lines.append(f"skipped {len(paths)} {noun}, {reason}: {', '.join(paths[:SKIPPED_SHOWN])}{more}")
    return lines


def _skip_group(reason: str) -> str:
    """What skipped files are grouped under: the reason without its per-file detail."""
    return reason.removeprefix("skipped: ").split(" (", 1)[0] if not reason.startswith("unsupported") else reason


def remove_command(
    ctx: typer.Context,
    path: str = typer.Argument(..., help="A file, or a folder whose files are all removed."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Remove several sources without asking."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only list what would be removed."),
) -> None:
    """Remove a source (or every source under a folder) and its chunks from the index.

    Example: ragloom remove docs/old-notes.md
    """
    with state(ctx).open_index() as index:
        matched = index.sources_under(path)
        if dry_run or (len(matched) > 1 and not yes):
            for source in matched:
                console.print(f"{'would remove' if dry_run else 'matches'} {display_path(source)}")
            if dry_run:
                return
            if not (sys.stdin.isatty() and typer.confirm(f"remove these {len(matched)} sources?")):
                raise UsageError(f"{path} matches {len(matched)} sources (listed above); pass --yes to remove them all")
        removed = index.remove(path)
    for source in removed:
        console.print(f"removed {display_path(source)}")


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest_command)
    app.command("remove")(remove_command)
