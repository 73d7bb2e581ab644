"""Loaders: one module per file format, chosen by file extension.

The extension table is built from the loader classes in the registry (built-ins and
plugins alike), so error messages that list the supported formats never go stale.
"""

from __future__ import annotations

from pathlib import Path

from ... import registry
from ...errors import SourceNotFoundError, UnsupportedFormatError
from .base import LoadResult, Loader, LoaderOptions
from .decode import empty_result

__all__ = ["LoadResult", "Loader", "LoaderOptions", "is_supported", "load_file", "loader_for", "supported_extensions"]


def _extension_table() -> dict[str, type[Loader]]:
    table: dict[str, type[Loader]] = {}
    for name in registry.names("loader"):
        cls = registry.resolve("loader", name)
        for extension in cls.extensions:
            table.setdefault(extension.lower(), cls)
    return table


def supported_extensions() -> list[str]:
    return sorted(_extension_table())


def is_supported(path: str | Path) -> bool:
    return Path(path).suffix.lower() in _extension_table()


def loader_for(path: str | Path, options: LoaderOptions | None = None) -> Loader:
    """The loader for ``path``'s extension; UnsupportedFormatError lists the ones there are."""
    table = _extension_table()
    cls = table.get(Path(path).suffix.lower())
    if cls is None:
        raise UnsupportedFormatError(str(path), table)
    return cls(options) if options is not None else cls()


def load_file(path: Path, source: str, data: bytes | None = None, options: LoaderOptions | None = None) -> LoadResult:
    """Documents of one file, or an empty result with a warning when there is nothing to read.
    ``data``: the file's bytes, already read (then the file itself is not opened again)."""
    path = Path(path)
    loader = loader_for(path, options)
    if data is None:
        if not path.exists():
            raise SourceNotFoundError(str(path))
        data = path.read_bytes()
    if not data:
        return empty_result(source)
    return loader.load_bytes(data, path, source)
