"""``ragloom serve``, ``ragloom mcp`` and ``ragloom watch``."""

from __future__ import annotations

import re
from typing import Optional

import typer

from ..stores.location import is_remote, shown
from .interrupt import stops_on_ctrl_c
from .shared import console, display_path, err_console, notice, state


def serve_command(
    ctx: typer.Context,
    host: Optional[str] = typer.Option(None, "--host", help="Address to listen on (default: server.host, 127.0.0.1)."),
    port: Optional[int] = typer.Option(None, "--port", "-p", help="Port (default: server.port, 8000)."),
    watch: Optional[list[str]] = typer.Option(
        None, "--watch", "-w", help="Also watch this folder and ingest its changes (repeatable)."),
    index: Optional[list[str]] = typer.Option(
        None, "--index", "-i", help="NAME=PATH: serve this index as NAME (repeatable; the first is the default, "
        "at /v1/...; each at /v1/indexes/NAME/...). A PATH alone: the one index to serve. PATH may be a database "
        "URL: NAME=postgresql://USER@HOST/DB?index=NAME."),
    keys_file: Optional[str] = typer.Option(
        None, "--keys-file", help="Scoped API keys (`ragloom keys add`); every request then needs a key."),
) -> None:
    """Serve the index over HTTP: the /v1 API, its docs at /docs, and a search page at /.

    Example: ragloom serve --port 8000 --watch ./docs
    """
    from ..server.runner import serve

    config = indexes_config(ctx, index or [])
    host = host or config.server.host
    port = port or config.server.port
    from ..server.security import API_KEY_ENV, configured_key

    where = ", ".join(f"{n}={_shown(p)}" for n, p in config.server.indexes.items()) or _shown(config.index)
    err_console.print(f"serving {where} at http://{host}:{port}/  (API docs: /docs)")
    if keys_file:
        err_console.print(f"keys: {_shown(keys_file)} (re-read at every request)" if is_remote(keys_file) else
                          f"keys: {display_path(keys_file)} (re-read when it changes)")
    elif configured_key(config.server) is None:
        err_console.print(f"writes (ingest, delete) are off: set {API_KEY_ENV} or server.api_key to allow them")
    elif host not in ("127.0.0.1", "localhost", "::1") and not config.server.require_key_for_reads:
        notice("warning:", "yellow", "anyone who can reach this address can search the index; "
               "set server.require_key_for_reads: true to ask for the key")
    serve(config, host=host, port=port, watch=watch or [], keys_file=keys_file)


def indexes_config(ctx: typer.Context, values: list[str]):  # noqa: ANN201 - a Config
    """The config with ``--index NAME=PATH`` values as ``server.indexes`` (a bare PATH: the one index)."""
    from ..errors import UsageError

    named = [v for v in values if _names_index(v)]
    bare = [v for v in values if not _names_index(v)]
    if bare and (named or len(bare) > 1):
        raise UsageError("give either one --index PATH, or --index NAME=PATH for each index to serve")
    if bare:
        return state(ctx).config(index=bare[0])
    config = state(ctx).config()
    if named:
        indexes = {}
        for value in named:
            name, _, path = value.partition("=")
            if not name or not path or name in indexes:
                raise UsageError(f"--index {value!r}: write NAME=PATH, each NAME once")
            indexes[name] = path
        config.server.indexes = indexes
    return config


def _shown(where: str) -> str:
    return shown(where) if is_remote(where) else display_path(where)


def _names_index(value: str) -> bool:
    """Whether ``--index`` is NAME=PATH (a database URL's own ``host=...`` is not a name)."""
    name, sep, _ = value.partition("=")
    return bool(sep) and re.fullmatch(r"[A-Za-z0-9._-]+", name) is not None


def mcp_command(
    ctx: typer.Context,
    transport: str = typer.Option("stdio", "--transport", "-t", help="stdio (for a local client) or http (streamable HTTP)."),
    host: Optional[str] = typer.Option(None, "--host", help="With --transport http: address (default: server.host)."),
    port: Optional[int] = typer.Option(None, "--port", "-p", help="With --transport http: port (default: server.port)."),
    index: Optional[list[str]] = typer.Option(
        None, "--index", "-i", help="NAME=PATH: offer this index as NAME (repeatable); a PATH alone: the one index."),
    keys_file: Optional[str] = typer.Option(
        None, "--keys-file", help="Scoped API keys; over stdio the session acts as the key in $RAGLOOM_MCP_KEY."),
) -> None:
    """Serve the index to MCP clients (Claude Desktop, IDEs, agents).

    Tools: search, ask, get_context, list_sources; with server.mcp.ingest on, also ingest.
    Each source is a resource, ragloom://source/{id}.

    Example: ragloom mcp --transport http --port 8765
    """
    from ..errors import ConfigError
    from ..server.mcp import run_mcp

    if transport not in ("stdio", "http"):
        raise ConfigError(f"unknown transport {transport!r}; use stdio or http")
    config = indexes_config(ctx, index or [])
    run_mcp(config, transport=transport, host=host or config.server.host, port=port or config.server.port,
            keys_file=keys_file)


def watch_command(
    ctx: typer.Context,
    folders: list[str] = typer.Argument(..., help="Folders to keep the index in step with."),
) -> None:
    """Ingest the folders, then keep following their changes (adds, edits, renames, deletes) until Ctrl-C.

    Example: ragloom watch ./docs ./notes
    """
    from ..server.watch import FolderWatcher, apply_to_index

    with stops_on_ctrl_c(), state(ctx).open_index(create=True) as index:
        def report(batch, result, error) -> None:  # noqa: ANN001
            if error is not None:
                notice("warning:", "yellow", str(error))
                return
            summary = result.summary()
            console.print(f"added {summary['added']}, updated {summary['updated']}, removed {summary['removed']}, "
                          f"unchanged {summary['unchanged']}, failed {summary['failed']}", highlight=False)

        watcher = FolderWatcher(folders, index.config, apply_to_index(index), ignore=[index.path], on_batch=report)
        err_console.print(f"watching {', '.join(display_path(str(f)) for f in watcher.folders)} (Ctrl-C to stop)")
        try:
            watcher.run()
        except KeyboardInterrupt:
            pass


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_command)
    app.command("mcp")(mcp_command)
    app.command("watch")(watch_command)
