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
        except Exception as exc:  # each parser raises its own errors  # noqa: BLE001
            note = f"{source} could not be parsed as {path.suffix.lstrip('.').upper()} ({type(exc).__name__}); read as plain text"
            return LoadResult([single_document(text, path, source, title=path.name, has_lines=True)], [note])
        writer = MarkdownWriter()
        _write(writer, data)
        if not writer.text.strip():
            return LoadResult([single_document(text, path, source, title=path.name, has_lines=True)])
        document: Document = writer.document(path, source, title=path.name, metadata={"format": path.suffix.lstrip(".")})
        return LoadResult([document])


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


def _write(writer: MarkdownWriter, data: Any) -> None:
    if not isinstance(data, dict):
        writer.paragraph("\n".join(_lines(data, "")))
        return
    loose = [(key, value) for key, value in data.items() if not isinstance(value, (dict, list))]
    if loose:
        writer.paragraph("\n".join(line for key, value in loose for line in _lines(value, str(key))))
    for key, value in data.items():
        if isinstance(value, (dict, list)):
            writer.heading(str(key), 2)
            writer.paragraph("\n".join(_lines(value, str(key))) or f"{key}: (empty)")


def _lines(value: Any, path: str) -> Iterator[str]:
    """``key.path: value`` for every leaf under ``value``."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _lines(inner, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for number, inner in enumerate(value):
            yield from _lines(inner, f"{path}[{number}]")
    else:
        text = "" if value is None else str(value)
        if len(text) > MAX_VALUE_CHARS:
            text = text[:MAX_VALUE_CHARS] + "…"
        yield f"{path}: {' '.join(text.split())}" if path else text
