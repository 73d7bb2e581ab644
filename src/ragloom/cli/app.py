"""The typer application, its global options and its error handling."""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console

from ..config import Config
from ..errors import RagloomError, RagloomWarning

app = typer.Typer(
    name="ragloom",
    help="Search your own documents by meaning, with sources. Runs offline.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err_console = Console(stderr=True)


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

    def open_index(self, create: bool = False, **overrides: Any):
        """Open the configured index; only commands that write may create it."""
        from ..index import Index

        config = self.config(**overrides)
        return Index.open(config.index, config, create=create)


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
) -> None:
    overrides: dict[str, Any] = {}
    if embedder:
        from ..config import parse_model_spec

        provider, model = parse_model_spec(embedder)
        overrides["embedder"] = {"provider": provider, "model": model}
    ctx.obj = State(index=index, config_file=str(config) if config else None, overrides=overrides)


def state(ctx: typer.Context) -> State:
    return ctx.obj if isinstance(ctx.obj, State) else State()


def _register_commands() -> None:
    from . import admin, ingest, knowledge, search

    for module in (ingest, search, admin, knowledge):
        module.register(app)
    for optional in ("migrate", "eval", "providers"):
        try:
            module = __import__(f"ragloom.cli.{optional}", fromlist=["register"])
        except ImportError:
            continue
        module.register(app)


def main(argv: Optional[list[str]] = None) -> None:
    """Entry point of the ``ragloom`` command."""
    _register_commands()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.simplefilter("always", RagloomWarning)
        warnings.showwarning = _show_warning
        try:
            code = app(args=argv, standalone_mode=False)
        except RagloomError as exc:
            err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
            sys.exit(1)
        except (typer.Abort, KeyboardInterrupt):
            err_console.print("[yellow]interrupted[/]")
            sys.exit(130)
        except Exception as exc:  # click's usage errors
            import click

            # Newer typer raises its vendored copy of click's exceptions (typer._click), another class.
            vendored = type(exc).__module__.startswith("typer.") and hasattr(exc, "show")
            if isinstance(exc, click.ClickException) or vendored:
                exc.show()
                sys.exit(exc.exit_code)
            raise
        # Without standalone mode, typer.Exit(n) and Ctrl-C (typer's Exit(130)) come back as a return value.
        if code == 130:
            err_console.print("[yellow]interrupted[/]")
        if isinstance(code, int) and code:
            sys.exit(code)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
    err_console.print(f"[yellow]warning:[/] {message}", highlight=False)


def display_path(path: str) -> str:
    """A source path as the user would type it: relative to the current folder when inside it."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


if __name__ == "__main__":
    main()
