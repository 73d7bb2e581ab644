"""The sync state role: where a remote source's sync keeps its cursors, in the index's own store.

A remote source (``s3://``, ``https://``, ``git+…``: ``ragloom/sources/``) is synced by whichever
process or replica runs its job; what it knows of the remote lives here, so another can continue:

- ``RemoteSourceState``: one row per source name: its URI, its source-level cursor (a commit id),
  the last sync's start, end, outcome, report and error, and when a sync of it was last scheduled;
- ``RemoteItemState``: one row per item the source has seen: its key in the remote (an object key,
  a page URL, a path in the repository), the source id it is indexed under, its version (an ETag,
  a blob id, a page's ETag or Last-Modified) and the connector's own data (a page's links).

Two homes implement it: ``stores/embedded/sync_state.py`` (the SQLite catalog of the embedded,
Chroma and Qdrant stores) and ``stores/postgres/sync_state.py`` (the index's schema in PostgreSQL,
which every replica over it shares, also for Chroma and Qdrant with a PostgreSQL catalog). Both
create their two tables on first use and pass ``ragloom.testing.conformance.SyncStateConformance``.
Nothing here is a secret: credentials never reach a cursor.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RemoteItemState:
    """What a source's last sync knew of one item."""

    key: str
    #: The source id the item is indexed under ('' when nothing of it is: it failed to read).
    source: str
    #: What tells a changed item from an unchanged one: an ETag, a blob id, a page's validator.
    version: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class RemoteSourceState:
    """A remote source as its syncs left it."""

    name: str
    uri: str
    #: The source-level cursor (a commit id, a mailbox's UIDVALIDITY); per-item ones are items.
    cursor: dict[str, Any] = field(default_factory=dict)
    #: running | ok | partial (some items failed) | failed (nothing could be listed or fetched)
    status: str = ""
    started_at: float | None = None
    finished_at: float | None = None
    #: The end of the last sync that listed the remote whole (the cursor's age counts from it).
    succeeded_at: float | None = None
    error: str | None = None
    report: dict[str, Any] = field(default_factory=dict)
    #: When a scheduler last queued a sync of it (``claim_schedule``).
    scheduled_at: float | None = None
    #: Who syncs it now, and until when that holds without a renewal (``begin_sync``).
    holder: str | None = None
    lease_until: float | None = None


class SyncState(ABC):
    """The remote sources of one index and their cursors."""

    @abstractmethod
    def now(self) -> float:
        """The clock the states are stamped with (the database's, where replicas share one)."""

    @abstractmethod
    def remote_sources(self) -> list[RemoteSourceState]:
        """Every remote source synced into this index, by name."""

    @abstractmethod
    def remote_source(self, name: str) -> RemoteSourceState | None: ...

    @abstractmethod
    def save_remote_source(self, state: RemoteSourceState) -> None:
        """Create or replace a source's row (its items are left as they are)."""

    @abstractmethod
    def remote_items(self, name: str) -> dict[str, RemoteItemState]:
        """The items a source's syncs have committed, by key."""

    @abstractmethod
    def put_remote_items(self, name: str, items: Sequence[RemoteItemState]) -> None:
        """Create or replace these items' rows, in one transaction."""

    @abstractmethod
    def delete_remote_items(self, name: str, keys: Collection[str]) -> None: ...

    @abstractmethod
    def forget_remote_source(self, name: str) -> None:
        """Drop a source's row and its items (its indexed sources are removed by the caller)."""

    @abstractmethod
    def claim_schedule(self, name: str, uri: str, interval: float) -> bool:
        """Atomically: True, and the source's ``scheduled_at`` set to now, when no sync of ``name``
        was scheduled in the last ``interval`` seconds and none holds a live lease; else False.
        Every replica's scheduler asks, and only one of them queues each due sync."""

    @abstractmethod
    def begin_sync(self, name: str, uri: str, holder: str, lease: float) -> RemoteSourceState | None:
        """Atomically take the source for ``holder`` for ``lease`` seconds (status ``running``) and
        return its state; None when another holder's lease has not run out (it syncs it now).
        A source whose holder died is taken once its lease runs out."""

    @abstractmethod
    def renew_sync(self, name: str, holder: str, lease: float) -> bool:
        """Extend ``holder``'s lease; False when it no longer holds the source."""

    @abstractmethod
    def end_sync(self, state: RemoteSourceState, holder: str) -> bool:
        """Save the sync's outcome (``state``) and release the source; False, and nothing
        saved, when ``holder`` no longer holds it."""
