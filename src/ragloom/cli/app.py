"""The typer application, its global options and its error handling."""

from __future__ import annotations

import errno
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Optional

import typer

from ..errors import DiskFullError, RagloomError, RagloomWarning
from .arguments import hoist_global_options
from .help import PlainHelpGroup
from .shared import State, debug_mode, err_console, notice, show_warning

app = typer.Typer(
    name="ragloom",
    help="Search your own documents by meaning, with sources. Runs offline.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=PlainHelpGroup,
)


@app.callback()
def _global(
    ctx: typer.Context,
    index: Optional[str] = typer.Option(
        None, "--index", "-i", help="Index directory (default: .ragloom, or `index` in ragloom.yaml)."
    ),
    config: Optional[Path] = typer.Option(
        None, "--config", "-c", help="Config file (default: ./ragloom.yaml if present).", envvar="RAGLOOM_CONFIG"
    ),
    embedder: Optional[str] = typer.Option(
        None, "--embedder", "-e",
        help="Embedding model as PROVIDER[:MODEL], e.g. onnx, ollama:nomic-embed-text, openai:text-embedding-3-small.",
    ),
    debug: bool = typer.Option(False, "--debug", help="On an error, also print the Python traceback."),
) -> None:
    if debug:
        debug_mode["on"] = True
    overrides: dict[str, Any] = {}
    if embedder:
        from ..config import parse_model_spec

        provider, model = parse_model_spec(embedder)
        overrides["embedder"] = {"provider": provider, "model": model}
    ctx.obj = State(index=index, config_file=str(config) if config else None, overrides=overrides)


def _register_commands() -> None:
    from . import admin, ingest, keys, knowledge, search, serve, sync

    for module in (ingest, search, admin, serve, knowledge, keys, sync):
        module.register(app)
    for optional in ("migrate", "eval", "providers", "answer", "chat", "maintenance", "models"):
        try:
            module = __import__(f"ragloom.cli.{optional}", fromlist=["register"])
        except ImportError:
            continue
        module.register(app)


def main(argv: Optional[list[str]] = None) -> None:
    """Entry point of the ``ragloom`` command."""
    _register_commands()
    args = hoist_global_options(list(sys.argv[1:] if argv is None else argv), typer.main.get_command(app))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.simplefilter("always", RagloomWarning)
        warnings.showwarning = show_warning
        try:
            code = app(args=args, standalone_mode=False, prog_name="ragloom")
        except (typer.Abort, KeyboardInterrupt):
            notice("interrupted", "yellow")
            sys.exit(130)
        except Exception as exc:
            sys.exit(_report_error(exc))
        # Without standalone mode, typer.Exit(n) and Ctrl-C (typer's Exit(130)) come back as a return value.
        if code == 130:
            notice("interrupted", "yellow")
        if isinstance(code, int) and code:
            sys.exit(code)


def _report_error(exc: Exception) -> int:
    """Print ``exc`` as one line (and its traceback with --debug); the exit status to use."""
    import click

    # Newer typer raises its vendored copy of click's exceptions (typer._click), another class.
    vendored = type(exc).__module__.startswith("typer.") and hasattr(exc, "show")
    if isinstance(exc, click.ClickException) or vendored:
        context = getattr(exc, "ctx", None)
        if err_console.is_terminal or context is None:
            exc.show()
        else:  # in logs, a usage error is one line too
            notice("error:", "bold red", f"{exc.format_message()} (see `{context.command_path} --help`)")
        return int(getattr(exc, "exit_code", 2))
    if isinstance(exc, BrokenPipeError):  # `ragloom search x | head -1`: the reader has all it wants
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the flush at exit does not fail again
        return 141
    if debug_mode["on"]:
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    if isinstance(exc, RagloomError):
        notice("error:", "bold red", str(exc))
    elif isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        notice("error:", "bold red", str(DiskFullError(exc.filename or "the index")))
    elif isinstance(exc, OSError) and exc.strerror:
        # A path the user gave that cannot be read or written: the OS says why.
        where = f"{exc.filename}: " if exc.filename is not None else ""
        notice("error:", "bold red", f"{where}{exc.strerror}")
    else:
        hint = "" if debug_mode["on"] else "; run it again with --debug to see the traceback, and please report it"
        notice("error:", "bold red", f"unexpected {type(exc).__name__}: {exc}{hint}")
    return 1


if __name__ == "__main__":
    main()
