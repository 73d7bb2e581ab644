"""``ragloom index optimize``: rebuild an index's derived structures."""

from __future__ import annotations

import json
import time

import typer

from .shared import console, state

index_app = typer.Typer(help="Maintain the index.\n\nExample: ragloom index optimize", no_args_is_help=True)


@index_app.command("optimize")
def optimize_command(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Compact the vector file, rebuild the row map and BM25 index from the database, and
    retrain the approximate vector index on the data the index holds now.

    Example: ragloom index optimize
    """
    started = time.perf_counter()
    with state(ctx).open_index() as index:
        report = index.optimize()
    report["seconds"] = round(time.perf_counter() - started, 2)
    if as_json:
        console.print_json(json.dumps(report))
        return
    for key, value in report.items():
        console.print(f"{key.replace('_', ' ')}: {value}", highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(index_app, name="index")
