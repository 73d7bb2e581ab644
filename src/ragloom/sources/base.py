"""What a connector is: one class per kind of remote source, which walks the remote and says, item
by item, what changed. The sync (``sources/sync.py``) does the rest for every kind alike: fetched
items go through the ingest's loaders (``ingest/staged.py``), cursors are committed after them,
and what is gone is removed, only once the remote was listed whole.

A connector yields entries:

- ``Fetched``: a new or changed item, its body already in a file of the ``Stage``;
- ``Unchanged``: seen, the same version as committed (no body was downloaded);
- ``Failed``: seen but not read now (a 500, a timeout): its indexed version is kept;
- ``Skipped``: seen, not to be indexed (unsupported type, too large, disallowed by robots.txt);
- ``Gone``: known, and the remote says it no longer exists (a page answering 404 or 410).

and sets ``complete`` once the remote was listed whole: only then are items it did not see removed.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from typing import Any

from ..config import SourcesConfig
from ..errors import RemoteSourceError
from ..stores.sync_state import RemoteItemState
from .secrets import Secrets
from .uri import RemoteSpec


@dataclass
class Fetched:
    key: str
    source: str
    version: str
    path: Path
    metadata: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Unchanged:
    key: str
    #: New connector data to keep (a page's Last-Modified), or None to keep what is committed.
    data: dict[str, Any] | None = None


@dataclass
class Failed:
    key: str
    reason: str


@dataclass
class Skipped:
    key: str
    reason: str


@dataclass
class Gone:
    key: str


Entry = Fetched | Unchanged | Failed | Skipped | Gone


class TooLarge(RemoteSourceError):
    """A body passed the size limit while it was streamed."""


class Stage:
    """A private folder the bodies of one batch are streamed into, with the sync's byte budget."""

    def __init__(self, max_item_bytes: int, max_total_bytes: int) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="ragloom-sync-"))
        self.max_item_bytes, self.max_total_bytes = max_item_bytes, max_total_bytes
        self.bytes_downloaded = 0
        self.requests = 0
        self._count = 0

    def file_for(self, name: str, suffix: str = "") -> Path:
        """A new file named after the item (loaders may show its name), with ``suffix`` if it has none."""
        self._count += 1
        base = re.sub(r"[^A-Za-z0-9._-]+", "_", PurePosixPath(name).name)[-80:].lstrip(".") or "item"
        if suffix and not base.lower().endswith(suffix.lower()):
            base += suffix
        folder = self.folder / str(self._count)
        folder.mkdir()
        return folder / base

    def write(self, path: Path, chunks: Iterator[bytes]) -> int:
        """Stream ``chunks`` into ``path`` (counted); TooLarge past the item's or the sync's limit."""
        written = 0
        with open(path, "wb") as out:
            for chunk in chunks:
                written += len(chunk)
                self.bytes_downloaded += len(chunk)
                if written > self.max_item_bytes:
                    raise TooLarge(f"larger than {self.max_item_bytes / 1e6:g} MB (sources.max_item_mb); "
                                   "not read")
                out.write(chunk)
        return written

    def over_budget(self) -> bool:
        return self.bytes_downloaded >= self.max_total_bytes

    def clear(self) -> None:
        """Remove the batch's files (after they were ingested)."""
        for child in self.folder.iterdir():
            shutil.rmtree(child, ignore_errors=True)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


class Connector(ABC):
    """One kind of remote source. ``scan`` yields entries; ``complete`` and ``cursor`` are read after it."""

    kind: str = ""

    def __init__(self, spec: RemoteSpec, settings: SourcesConfig, stage: Stage, secrets: Secrets) -> None:
        self.spec, self.settings, self.stage, self.secrets = spec, settings, stage, secrets
        #: Set once the remote was listed whole (then items not seen are removed).
        self.complete = False
        #: The source-level cursor to commit (a commit id).
        self.cursor: dict[str, Any] = {}

    @abstractmethod
    def scan(self, known: Mapping[str, RemoteItemState], cursor: Mapping[str, Any]) -> Iterator[Entry]:
        """Walk the remote; RemoteSourceError when it cannot be reached or listed at all."""

    def selected(self, key: str) -> bool:
        """Whether the source's include/exclude globs keep ``key`` (a path-like key)."""
        settings = self.spec.settings
        if settings.include and not any(_glob(key, pattern) for pattern in settings.include):
            return False
        return not any(_glob(key, pattern) for pattern in settings.exclude)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release clients and connections."""


def _glob(key: str, pattern: str) -> bool:
    """gitignore-like: ``**`` crosses folders, a pattern without a slash matches the name anywhere."""
    if "/" not in pattern:
        return fnmatchcase(PurePosixPath(key).name, pattern)
    return PurePosixPath(key).match(pattern) or fnmatchcase(key, pattern.replace("**/", "*"))
