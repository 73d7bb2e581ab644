"""``ragloom serve``, ``ragloom mcp`` and ``ragloom watch``."""

from __future__ import annotations

from typing import Optional

import typer

from .shared import console, display_path, err_console, notice, state


def serve_command(
    ctx: typer.Context,
    host: Optional[str] = typer.Option(None, "--host", help="Address to listen on (default: server.host, 127.0.0.1)."),
    port: Optional[int] = typer.Option(None, "--port", "-p", help="Port (default: server.port, 8000)."),
    watch: Optional[list[str]] = typer.Option(
        None, "--watch", "-w", help="Also watch this folder and ingest its changes (repeatable)."),
) -> None:
    """Serve the index over HTTP: the /v1 API, its docs at /docs, and a search page at /.

    Example: ragloom serve --port 8000 --watch ./docs
    """
    from ..server.runner import serve

    config = state(ctx).config()
    host = host or config.server.host
    port = port or config.server.port
    from ..server.security import API_KEY_ENV, configured_key

    err_console.print(f"serving {display_path(config.index)} at http://{host}:{port}/  (API docs: /docs)")
    if configured_key(config.server) is None:
        err_console.print(f"writes (ingest, delete) are off: set {API_KEY_ENV} or server.api_key to allow them")
    elif host not in ("127.0.0.1", "localhost", "::1") and not config.server.require_key_for_reads:
        notice("warning:", "yellow", "anyone who can reach this address can search the index; "
               "set server.require_key_for_reads: true to ask for the key")
    serve(config, host=host, port=port, watch=watch or [])


def mcp_command(
    ctx: typer.Context,
    transport: str = typer.Option("stdio", "--transport", "-t", help="stdio (for a local client) or http (streamable HTTP)."),
    host: Optional[str] = typer.Option(None, "--host", help="With --transport http: address (default: server.host)."),
    port: Optional[int] = typer.Option(None, "--port", "-p", help="With --transport http: port (default: server.port)."),
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
    config = state(ctx).config()
    run_mcp(config, transport=transport, host=host or config.server.host, port=port or config.server.port)


def watch_command(
    ctx: typer.Context,
    folders: list[str] = typer.Argument(..., help="Folders to keep the index in step with."),
) -> None:
    """Ingest the folders, then keep following their changes (adds, edits, renames, deletes) until Ctrl-C.

    Example: ragloom watch ./docs ./notes
    """
    from ..server.watch import FolderWatcher, apply_to_index

    with state(ctx).open_index(create=True) as index:
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
