"""``ragloom migrate``: copy an index to another store backend without re-embedding."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer
import yaml

from .. import registry
from ..config import Config
from ..errors import RagloomError
from ..stores.base import create_store, store_exists
from ..stores.location import is_remote, locate
from ..stores.location import shown as shown_index
from .shared import console, state


def migrate_command(
    ctx: typer.Context,
    to: str = typer.Option(..., "--to", help="Store backend to copy the index into: chroma, qdrant, postgres (or embedded)."),
    origin: Optional[str] = typer.Option(
        None, "--from", help="Backend the index is in now (default: store.backend of the config)."
    ),
    from_index: Optional[str] = typer.Option(
        None, "--from-index", help="Index directory (or postgresql://... URL) to read (default: the configured index)."),
    index_out: Optional[Path] = typer.Option(
        None, "--index-out", help="Index directory for the copy (default: the same one; each backend keeps its own files)."
    ),
    collection: Optional[str] = typer.Option(None, "--collection", help="Collection name in the target database."),
    path: Optional[str] = typer.Option(None, "--path", help="Chroma persist directory, or Qdrant local-mode folder."),
    url: Optional[str] = typer.Option(
        None, "--url", help="Qdrant server URL (http://localhost:6333), or PostgreSQL's: postgresql://USER@HOST/DB?index=NAME."),
    api_key: Optional[str] = typer.Option(None, "--api-key", help="Qdrant API key (default: $QDRANT_API_KEY)."),
    host: Optional[str] = typer.Option(None, "--host", help="Chroma server host."),
    port: Optional[int] = typer.Option(None, "--port", help="Chroma server port."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Copy chunks, vectors, metadata, the sources registry and the derived structures (entity graph,
    RAPTOR tree) to another store — no re-embedding, no re-extraction.

    Running it again brings the copy up to date (unchanged sources are skipped). Then switch
    ragloom.yaml to the new backend, as the command prints.

    Example: ragloom migrate --to qdrant
    """
    from ..knowledge.copy import copy_structures
    from ..stores.migrate import migrate

    config = state(ctx).config()
    source_dir, source_config = locate(from_index or config.index, config)
    origin_backend = origin or source_config.store.backend
    options = _backend_options(to, collection=collection, path=path, url=url, api_key=api_key, host=host, port=port)
    target_config = _with_backend(config, to, options)
    if is_remote(from_index or config.index) and to != "postgres" and not index_out:
        raise RagloomError(f"the index is in a database; pass --index-out DIR for the {to} copy")
    target_dir = Path(index_out).expanduser() if index_out else source_dir
    if to == "postgres":
        target_dir, target_config = locate(target_config.store.postgres.url or "", target_config) \
            if is_remote(target_config.store.postgres.url) else (target_dir, target_config)
    origin_config = _with_backend(source_config, origin_backend, {})
    if not store_exists(source_dir, origin_config):
        where = shown_index(from_index or config.index)
        raise RagloomError(f"there is no {origin_backend} index at {where}; pass --from-index DIR (or --from BACKEND)")
    if origin_backend == to and source_dir.resolve() == target_dir.resolve() and not options:
        raise RagloomError(f"the index is already in the {to} store; pass --index-out DIR or backend options")
    origin_store = create_store(source_dir, origin_config)
    try:
        target_store = create_store(target_dir, target_config)
        try:
            with target_store.write_lock(target_dir):  # no ingest into the copy meanwhile
                report = migrate(origin_store, target_store, progress=None if as_json else
                                 lambda p, n: console.print(f"  {p}: {n} chunks", highlight=False))
                structures = copy_structures(origin_store, target_store)
        finally:
            target_store.close()
    finally:
        origin_store.close()
    if as_json:
        console.print_json(json.dumps({**report.summary(), "structures": structures.copied,
                                       **({"warning": structures.note} if structures.note else {})}))
        return
    console.print(
        f"copied {len(report.copied)} sources ({report.chunks} chunks) to {to} in {report.seconds:.1f} s; "
        f"{len(report.unchanged)} unchanged, {len(report.removed)} removed", highlight=False,
    )
    if structures.copied:
        console.print(f"copied the {' and the '.join(structures.copied)} ({structures.rows} rows)", highlight=False)
    if structures.note:
        console.print(f"[yellow]warning:[/] {structures.note}", highlight=False)
    console.print("To search the copy, set in ragloom.yaml:", highlight=False)
    console.print(_yaml_hint(to, options, target_dir, source_dir), highlight=False, markup=False)


def _backend_options(backend: str, **given: Any) -> dict[str, Any]:
    """The options that apply to ``backend``; an error for ones that do not."""
    if backend not in registry.names("store"):
        raise RagloomError(f"no store named {backend!r}; choose one of: {', '.join(registry.names('store'))}")
    valid = {"chroma": {"collection", "path", "host", "port"}, "qdrant": {"collection", "path", "url", "api_key"},
             "postgres": {"url"}}
    chosen = {key: value for key, value in given.items() if value is not None}
    wrong = sorted(set(chosen) - valid.get(backend, set()))
    if wrong:
        raise RagloomError(f"--{wrong[0].replace('_', '-')} does not apply to the {backend} store")
    return chosen


def _with_backend(config: Config, backend: str, options: dict[str, Any]) -> Config:
    data = config.model_dump()
    data["store"]["backend"] = backend
    if options:
        data["store"][backend].update(options)
    return Config.from_dict(data, "the migrate options")


def _yaml_hint(backend: str, options: dict[str, Any], target_dir: Path, source_dir: Path) -> str:
    shown = {k: v for k, v in options.items() if k != "api_key"}
    store: dict[str, Any] = {"backend": backend, **({backend: shown} if shown else {})}
    hint: dict[str, Any] = {"store": store}
    if backend == "postgres":
        return f"index: {shown_index(options.get('url', ''))}  (or pass --index with that URL)"
    if target_dir.resolve() != source_dir.resolve():
        hint["index"] = str(target_dir)
    return yaml.safe_dump(hint, sort_keys=False).rstrip()


def register(app: typer.Typer) -> None:
    app.command("migrate")(migrate_command)
