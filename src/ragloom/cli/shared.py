"""What every command shares: the consoles, the global options' state, one-line notices.

Command modules import these from here, and ``app.py`` imports the command modules, so
no command imports the application back.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.text import Text

from .. import registry
from ..config import Config


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
debug_mode = {"on": os.environ.get("RAGLOOM_DEBUG", "") not in ("", "0")}


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


def names_of(role: str) -> str:
    """The registered names of a role (built-ins and plugins), for a help text that lists them."""
    return ", ".join(registry.names(role))


def state(ctx: typer.Context) -> State:
    return ctx.obj if isinstance(ctx.obj, State) else State()


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


def show_warning(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
    notice("warning:", "yellow", str(message))


def display_path(path: str) -> str:
    """A source path as the user would type it: relative to the current folder when inside it, a name
    that differs from its twin only in Unicode normalisation told apart (``distinguishable``)."""
    from ..ingest.files import distinguishable

    try:
        return distinguishable(str(Path(path).relative_to(Path.cwd())))
    except ValueError:
        return distinguishable(path)
