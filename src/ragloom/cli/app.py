"""The typer application, its global options and its error handling."""

from __future__ import annotations

import errno
import os
import re
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.text import Text

from ..config import Config
from ..errors import DiskFullError, RagloomError, RagloomWarning
from .arguments import hoist_global_options

app = typer.Typer(
    name="ragloom",
    help="Search your own documents by meaning, with sources. Runs offline.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _console(stderr: bool = False) -> Console:
    # Nothing printed is ever read as rich markup or emoji codes: paths, snippets, queries and
    # messages are user or library text and may hold brackets (`x[/y].txt`, `ragloom[eval]`).
    # Styles are given as Text spans instead (see ``notice``).
    out = Console(stderr=stderr, markup=False, emoji=False)
    if not out.is_terminal:
        out.soft_wrap = True  # in logs and pipes, one message is one line
    return out


console = _console()
err_console = _console(stderr=True)
#: Set by --debug (or RAGLOOM_DEBUG=1): errors also print their Python traceback.
_debug = {"on": os.environ.get("RAGLOOM_DEBUG", "") not in ("", "0")}


@dataclass
class State:
    """Global options, resolved into a Config on first use."""

    index: Optional[str] = None
    config_file: Optional[str] = None
    overrides: dict[str, Any] = field(default_factory=dict)
    _config: Optional[Config] = None

    def config(self, **overrides: Any) -> Config:
        from ..config import deep_merge

        merged = deep_merge(self.overrides, overrides)
        if self.index:
            merged["index"] = self.index
        return Config.load(self.config_file, overrides=merged)

    def open_index(self, create: bool = False, read_only: Optional[bool] = None, **overrides: Any):
        """Open the configured index; only commands that write may create it, and commands
        that only read pass ``read_only=True`` (None: read-only when the index is not writable)."""
        from ..index import Index

        config = self.config(**overrides)
        return Index.open(config.index, config, create=create, read_only=read_only)


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
        _debug["on"] = True
    overrides: dict[str, Any] = {}
    if embedder:
        from ..config import parse_model_spec

        provider, model = parse_model_spec(embedder)
        overrides["embedder"] = {"provider": provider, "model": model}
    ctx.obj = State(index=index, config_file=str(config) if config else None, overrides=overrides)


def state(ctx: typer.Context) -> State:
    return ctx.obj if isinstance(ctx.obj, State) else State()


def _register_commands() -> None:
    from . import admin, ingest, knowledge, search, serve

    for module in (ingest, search, admin, serve, knowledge):
        module.register(app)
    for optional in ("migrate", "eval", "providers", "answer", "maintenance", "models"):
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
        warnings.showwarning = _show_warning
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
    if _debug["on"]:
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
        hint = "" if _debug["on"] else "; run it again with --debug to see the traceback, and please report it"
        notice("error:", "bold red", f"unexpected {type(exc).__name__}: {exc}{hint}")
    return 1


def notice(label: str, style: str, message: str = "") -> None:
    """One line on stderr: a styled label, then ``message`` printed exactly as it is."""
    text = Text(label, style=style)
    if message:
        if not err_console.is_terminal:
            message = _LINE_BREAKS.sub(" ", message)
        text.append(" " + printable(message))
    err_console.print(text, highlight=False)


def printable(text: str) -> str:
    """``text`` with undecodable bytes of file names (lone surrogates) shown as ``\\xff`` escapes."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        raw = text.encode("utf-8", errors="surrogateescape") if _only_escapes(text) else text.encode(
            "utf-8", errors="backslashreplace")
        return raw.decode("utf-8", errors="backslashreplace")


def _only_escapes(text: str) -> bool:
    return all(not 0xD800 <= ord(c) <= 0xDFFF or 0xDC80 <= ord(c) <= 0xDCFF for c in text)


_LINE_BREAKS = re.compile(r"\s*\n\s*")


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
    notice("warning:", "yellow", str(message))


def display_path(path: str) -> str:
    """A source path as the user would type it: relative to the current folder when inside it, a name
    that differs from its twin only in Unicode normalisation told apart (``distinguishable``)."""
    from ..ingest.files import distinguishable

    try:
        return distinguishable(str(Path(path).relative_to(Path.cwd())))
    except ValueError:
        return distinguishable(path)


if __name__ == "__main__":
    main()
