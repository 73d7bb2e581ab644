"""What one sync of a remote source did."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..types import IngestReport


@dataclass
class SyncReport(IngestReport):
    """An ``IngestReport`` of the items a sync read (``added``, ``updated``, ``unchanged``, ``removed``,
    ``failed`` with each reason, ``skipped`` with each reason), plus what the sync itself did."""

    name: str = ""
    uri: str = ""
    #: Items the remote listed (or the crawl reached) this time.
    seen: int = 0
    #: Requests sent to the remote and bytes of bodies downloaded.
    requests: int = 0
    bytes_downloaded: int = 0
    #: Whether the remote was listed whole (only then are items it no longer has removed).
    complete: bool = False
    #: ok | partial (some items failed, or the listing was incomplete) | failed (see ``error``)
    status: str = ""
    #: The one line saying why the source could not be listed or reached (secrets masked).
    error: str | None = None

    def summary(self) -> dict[str, Any]:
        return {"name": self.name, "uri": self.uri, "status": self.status, "seen": self.seen, **super().summary(),
                "requests": self.requests, "bytes_downloaded": self.bytes_downloaded, "complete": self.complete,
                **({"error": self.error} if self.error else {})}
