"""Items from elsewhere (an object, a web page, a file of a commit) read like files.

A remote source (``ragloom/sources/``) fetches each changed item into a local file, streamed and
size-limited, whose suffix picks the loader, and hands the runner a ``StagedBatch``. The runner reads
those files as it reads any file (``read_regular_file``, the loaders, the parser sandbox, the per-file
limits, one transaction per source), under the item's own address instead of the local path, with the
item's metadata stamped on its chunks. This is the one seam between remote sources and the ingest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class StagedItem:
    """One fetched item: its local copy, the address it is indexed under, what its chunks carry."""

    path: Path
    source: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class StagedBatch:
    """Items of one remote source, ingested together; ``origin`` (the source's URI) is audited."""

    origin: str
    items: list[StagedItem] = field(default_factory=list)

    def by_path(self) -> dict[Path, StagedItem]:
        return {item.path: item for item in self.items}
