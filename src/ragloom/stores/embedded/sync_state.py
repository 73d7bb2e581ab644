"""Remote sources' cursors (``stores/sync_state.py``) in an index's SQLite catalog: the embedded
store's, and Chroma's and Qdrant's when their catalog is a file. The two tables are created on first
use beside the catalog's own; each call opens its own short connection (WAL), so a sync in a server's
worker thread and a status request in another never share one.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

from ..sync_state import RemoteItemState, RemoteSourceState, SyncState
from .connection import connect, immediate_transaction

_SCHEMA = """
CREATE TABLE IF NOT EXISTS remote_sources (
    name TEXT PRIMARY KEY,
    uri TEXT NOT NULL,
    state TEXT NOT NULL,
    scheduled_at REAL,
    holder TEXT,
    lease_until REAL
);
CREATE TABLE IF NOT EXISTS remote_items (
    remote TEXT NOT NULL,
    key TEXT NOT NULL,
    source TEXT NOT NULL,
    version TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (remote, key)
)
"""

#: The fields kept in the ``state`` JSON column (the others have columns of their own).
_COLUMNS = ("name", "uri", "scheduled_at", "holder", "lease_until")


def state_json(state: RemoteSourceState) -> str:
    return json.dumps({k: v for k, v in asdict(state).items() if k not in _COLUMNS}, sort_keys=True, default=str)


def state_from(name: str, uri: str, raw: str | dict, scheduled_at: float | None, holder: str | None,
               lease_until: float | None) -> RemoteSourceState:
    fields = json.loads(raw) if isinstance(raw, str) else dict(raw)
    return RemoteSourceState(name=name, uri=uri, scheduled_at=scheduled_at, holder=holder, lease_until=lease_until,
                             **fields)


#: Catalogs whose tables exist (made by this process, or found).
_CREATED: set[Path] = set()


class SqliteSyncState(SyncState):
    def __init__(self, path: Path, read_only: bool = False) -> None:
        self.path, self.read_only = path, read_only

    @contextmanager
    def _db(self, write: bool = False) -> Iterator[sqlite3.Connection | None]:
        """A connection in a transaction (``write``), or for reading: None when the tables were
        never made (nothing was synced into this index), so that reading never writes."""
        db = connect(self.path, read_only=self.read_only and not write)
        try:
            if self.path not in _CREATED:
                if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'remote_items'").fetchone() is not None:
                    _CREATED.add(self.path)
                elif not write:
                    yield None
                    return
                else:
                    with immediate_transaction(db):
                        for statement in _SCHEMA.split(";"):
                            db.execute(statement)
                    _CREATED.add(self.path)
            if write:
                with immediate_transaction(db):
                    yield db
            else:
                yield db
        finally:
            db.close()

    def now(self) -> float:
        return time.time()

    def remote_sources(self) -> list[RemoteSourceState]:
        with self._db() as db:
            if db is None:
                return []
            rows = db.execute("SELECT name, uri, state, scheduled_at, holder, lease_until FROM remote_sources"
                              " ORDER BY name").fetchall()
        return [state_from(*row) for row in rows]

    def remote_source(self, name: str) -> RemoteSourceState | None:
        with self._db() as db:
            if db is None:
                return None
            row = db.execute("SELECT name, uri, state, scheduled_at, holder, lease_until FROM remote_sources"
                             " WHERE name = ?", (name,)).fetchone()
        return None if row is None else state_from(*row)

    def save_remote_source(self, state: RemoteSourceState) -> None:
        with self._db(write=True) as db:
            db.execute(
                "INSERT INTO remote_sources(name, uri, state, scheduled_at, holder, lease_until)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET uri = excluded.uri,"
                " state = excluded.state, scheduled_at = excluded.scheduled_at, holder = excluded.holder,"
                " lease_until = excluded.lease_until",
                (state.name, state.uri, state_json(state), state.scheduled_at, state.holder, state.lease_until))

    def remote_items(self, name: str) -> dict[str, RemoteItemState]:
        with self._db() as db:
            if db is None:
                return {}
            rows = db.execute("SELECT key, source, version, data FROM remote_items WHERE remote = ?", (name,))
            return {key: RemoteItemState(key, source, version, json.loads(data)) for key, source, version, data in rows}

    def put_remote_items(self, name: str, items: Sequence[RemoteItemState]) -> None:
        if not items:
            return
        with self._db(write=True) as db:
            db.executemany(
                "INSERT OR REPLACE INTO remote_items(remote, key, source, version, data) VALUES (?, ?, ?, ?, ?)",
                [(name, i.key, i.source, i.version, json.dumps(i.data, sort_keys=True)) for i in items])

    def delete_remote_items(self, name: str, keys: Collection[str]) -> None:
        if not keys:
            return
        with self._db(write=True) as db:
            db.executemany("DELETE FROM remote_items WHERE remote = ? AND key = ?", [(name, key) for key in keys])

    def forget_remote_source(self, name: str) -> None:
        with self._db(write=True) as db:
            db.execute("DELETE FROM remote_items WHERE remote = ?", (name,))
            db.execute("DELETE FROM remote_sources WHERE name = ?", (name,))

    def claim_schedule(self, name: str, uri: str, interval: float) -> bool:
        now = self.now()
        with self._db(write=True) as db:
            row = db.execute("SELECT scheduled_at, lease_until FROM remote_sources WHERE name = ?", (name,)).fetchone()
            if row is None:
                fresh = RemoteSourceState(name, uri, scheduled_at=now)
                db.execute("INSERT INTO remote_sources(name, uri, state, scheduled_at) VALUES (?, ?, ?, ?)",
                           (name, uri, state_json(fresh), now))
                return True
            scheduled_at, lease_until = row
            if (scheduled_at is not None and scheduled_at + interval > now) or (lease_until or 0) > now:
                return False
            db.execute("UPDATE remote_sources SET scheduled_at = ? WHERE name = ?", (now, name))
            return True

    def begin_sync(self, name: str, uri: str, holder: str, lease: float) -> RemoteSourceState | None:
        now = self.now()
        with self._db(write=True) as db:
            row = db.execute("SELECT name, uri, state, scheduled_at, holder, lease_until FROM remote_sources"
                             " WHERE name = ?", (name,)).fetchone()
            state = RemoteSourceState(name, uri) if row is None else state_from(*row)
            if state.holder not in (None, holder) and (state.lease_until or 0) > now:
                return None
            state.uri, state.holder, state.lease_until = uri, holder, now + lease
            state.status, state.started_at, state.error = "running", now, None
            db.execute(
                "INSERT INTO remote_sources(name, uri, state, scheduled_at, holder, lease_until)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET uri = excluded.uri,"
                " state = excluded.state, holder = excluded.holder, lease_until = excluded.lease_until",
                (name, uri, state_json(state), state.scheduled_at, holder, state.lease_until))
            return state

    def renew_sync(self, name: str, holder: str, lease: float) -> bool:
        with self._db(write=True) as db:
            return db.execute("UPDATE remote_sources SET lease_until = ? WHERE name = ? AND holder = ?",
                              (self.now() + lease, name, holder)).rowcount == 1

    def end_sync(self, state: RemoteSourceState, holder: str) -> bool:
        with self._db(write=True) as db:
            return db.execute(
                "UPDATE remote_sources SET state = ?, holder = NULL, lease_until = NULL WHERE name = ? AND holder = ?",
                (state_json(state), state.name, holder)).rowcount == 1
