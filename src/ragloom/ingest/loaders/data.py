"""Data and configuration files: JSON, YAML, TOML, INI/CFG, each value with the keys that lead to it.

A value means little without its keys (``timeout: 30`` of what?), so every value is written on
a line of its own after its full key path (``server.tls.timeout: 30``), and each top-level key
is a section: a chunk of a long file still says which part of the file it is from. Parsed with
the standard library (json, tomllib, configparser) and PyYAML. A file that does not parse is
read as plain text, with a warning. Lock files (package-lock.json, Cargo.lock, poetry.lock …)
are generated: skipped, with the reason.
"""

from __future__ import annotations

import configparser
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...types import Document
from ._markdown import MarkdownWriter
from .base import LoadResult
from .text import TextFileLoader, single_document

#: Files written by package managers: generated, not read.
LOCK_FILES = frozenset({
    "package-lock.json", "npm-shrinkwrap.json", "composer.lock", "cargo.lock", "poetry.lock", "pipfile.lock",
    "pdm.lock", "uv.lock", "pnpm-lock.yaml", "gemfile.lock",
})
#: Values longer than this are cut, with an ellipsis (an embedded blob is not text to search).
MAX_VALUE_CHARS = 2_000


#: Lines (``key.path: value``) written of one file before the rest is cut, with a line in the report.
MAX_LINES = 200_000
#: Times a value already written (a YAML alias, ``*name``) is written again before the file is cut:
#: nested aliases (a "billion laughs" file) would otherwise expand a few hundred bytes to gigabytes.
MAX_REPEATS = 1_000
#: Keys of a path kept (the innermost ones) below this depth; deeper values are still written.
MAX_PATH_KEYS = 32


class DataLoader(TextFileLoader):
    name = "data"
    extensions = (".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".lock")

    def parse(self, text: str, path: Path, source: str) -> LoadResult:
        if path.name.lower() in LOCK_FILES:
            return LoadResult([], skip_reason="skipped: generated (a package manager's lock file)")
        if path.suffix.lower() == ".lock":  # another tool's lock file: plain text
            return LoadResult([single_document(text, path, source, title=path.name, has_lines=True)])
        try:
            data = _parse(text, path.suffix.lower())
        except MemoryError:
            raise  # over the file's memory budget: never a damaged file (ingest/sandbox.py)
        except Exception as exc:  # each parser raises its own errors  # noqa: BLE001
            why = "nested too deeply" if isinstance(exc, RecursionError) else type(exc).__name__
            note = f"{source} could not be parsed as {path.suffix.lstrip('.').upper()} ({why}); read as plain text"
            return LoadResult([single_document(text, path, source, title=path.name, has_lines=True)], [note])
        writer = MarkdownWriter()
        budget = _Budget()
        _write(writer, data, budget)
        if not writer.text.strip():
            return LoadResult([single_document(text, path, source, title=path.name, has_lines=True)])
        document: Document = writer.document(path, source, title=path.name, metadata={"format": path.suffix.lstrip(".")})
        return LoadResult([document], budget.notes(source))


def _parse(text: str, suffix: str) -> Any:
    if suffix == ".json":
        return json.loads(text)
    if suffix in (".yaml", ".yml"):
        import yaml

        documents = [d for d in yaml.safe_load_all(text) if d is not None]
        return documents[0] if len(documents) == 1 else documents
    if suffix == ".toml":
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover - Python 3.10
            import tomli as tomllib
        return tomllib.loads(text)
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.read_string(text if text.lstrip().startswith("[") else "[DEFAULT]\n" + text)
    sections: dict[str, Any] = {name: dict(parser.items(name, raw=True)) for name in parser.sections()}
    return {**dict(parser.defaults()), **sections}


class _Budget:
    """What one file may write: lines, repeats of shared values; and what was cut."""

    def __init__(self) -> None:
        self.lines = 0
        self.repeats = 0
        self.long_values = 0
        self.cut: str | None = None
        self._written: set[int] = set()

    def enter(self, value: Any) -> bool:
        """Whether the container ``value`` may be written (again)."""
        if self.cut is not None:
            return False
        if id(value) in self._written:
            self.repeats += 1
            if self.repeats > MAX_REPEATS:
                self.cut = (f"it repeats shared values (YAML aliases) more than {MAX_REPEATS:,} times; the rest "
                            "was cut, as expanding them would not end")
                return False
        self._written.add(id(value))
        return True

    def line(self) -> bool:
        if self.cut is not None:
            return False
        self.lines += 1
        if self.lines > MAX_LINES:
            self.cut = f"it has more than {MAX_LINES:,} values; the rest was cut"
            return False
        return True

    def notes(self, source: str) -> list[str]:
        notes = [f"{source}: {self.cut}"] if self.cut else []
        if self.long_values:
            notes.append(f"{source}: {self.long_values:,} values longer than {MAX_VALUE_CHARS:,} characters were cut")
        return notes


def _write(writer: MarkdownWriter, data: Any, budget: _Budget) -> None:
    if not isinstance(data, dict):
        writer.paragraph("\n".join(_lines(data, "", budget)))
        return
    loose = [(key, value) for key, value in data.items() if not isinstance(value, (dict, list))]
    if loose:
        writer.paragraph("\n".join(line for key, value in loose for line in _lines(value, str(key), budget)))
    for key, value in data.items():
        if isinstance(value, (dict, list)):
            writer.heading(str(key), 2)
            writer.paragraph("\n".join(_lines(value, str(key), budget)) or f"{key}: (empty)")


def _lines(value: Any, path: str, budget: _Budget) -> Iterator[str]:
    """``key.path: value`` for every leaf under ``value``, depth first, without recursion (a file
    nested thousands deep is read like a flat one) and within ``budget``."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(value, (path,) if path else ())]
    while stack:
        value, keys = stack.pop()
        if isinstance(value, (dict, list)):
            if not budget.enter(value):
                continue
            items = value.items() if isinstance(value, dict) else ((f"[{n}]", v) for n, v in enumerate(value))
            children = [(inner, _deeper(keys, str(key), isinstance(value, list))) for key, inner in items]
            stack.extend(reversed(children))
            continue
        if not budget.line():
            return
        text = "" if value is None else str(value)
        if len(text) > MAX_VALUE_CHARS:
            text = text[:MAX_VALUE_CHARS] + "…"
            budget.long_values += 1
        where = _joined(keys)
        yield f"{where}: {' '.join(text.split())}" if where else text


def _deeper(keys: tuple[str, ...], key: str, indexed: bool) -> tuple[str, ...]:
    if indexed and keys:
        keys = (*keys[:-1], keys[-1] + key)
    else:
        keys = (*keys, key)
    return keys if len(keys) <= MAX_PATH_KEYS else ("…", *keys[-MAX_PATH_KEYS + 1:])


def _joined(keys: tuple[str, ...]) -> str:
    return ".".join(keys)
