"""Remote sources' cursors (``stores/sync_state.py``) in the index's PostgreSQL schema, which every
replica over it shares (also Chroma's and Qdrant's with a PostgreSQL catalog): any replica continues
a sync another began, and the lease of the one syncing is on the database's clock.

The two tables are created on first use under an advisory lock (replicas starting at once create
them once); an index without them is as before, so no schema version changes. The statements take
no index write lock: a cursor is saved beside a long ingest transaction, never behind it.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..sync_state import RemoteItemState, RemoteSourceState, SyncState
from ..embedded.sync_state import state_from, state_json
from .database import Database, lock_key

_NOW = "extract(epoch FROM clock_timestamp())::float8"
_TABLES = """
CREATE TABLE IF NOT EXISTS remote_sources (
    name TEXT PRIMARY KEY,
    uri TEXT NOT NULL,
    state JSONB NOT NULL,
    scheduled_at DOUBLE PRECISION,
    holder TEXT,
    lease_until DOUBLE PRECISION
);
CREATE TABLE IF NOT EXISTS remote_items (
    remote TEXT NOT NULL,
    key TEXT NOT NULL,
    source TEXT NOT NULL,
    version TEXT NOT NULL,
    data JSONB NOT NULL,
    PRIMARY KEY (remote, key)
)
"""
_SELECT = "SELECT name, uri, state, scheduled_at, holder, lease_until FROM remote_sources"


#: Schemas whose tables exist (made by this process, or found).
_CREATED: set[str] = set()


class PostgresSyncState(SyncState):
    def __init__(self, database: Database) -> None:
        self.database = database

    @contextmanager
    def _transaction(self, write: bool = True) -> Iterator[Any]:
        """A transaction (the tables made first when missing), or for reading (``write=False``):
        None when the tables were never made, so that reading never writes."""
        schema = self.database.address.schema
        with self.database.connection() as connection, connection.transaction():
            if schema not in _CREATED:
                if connection.execute("SELECT to_regclass('remote_items')").fetchone()[0] is not None:
                    _CREATED.add(schema)
                elif not write:
                    yield None
                    return
                else:
                    connection.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(schema, "remote_sources"),))
                    for statement in _TABLES.split(";"):
                        connection.execute(statement)
                    _CREATED.add(schema)
            yield connection

    def now(self) -> float:
        with self.database.connection() as connection:
            return float(connection.execute(f"SELECT {_NOW}").fetchone()[0])

    def remote_sources(self) -> list[RemoteSourceState]:
        with self._transaction(write=False) as connection:
            rows = [] if connection is None else connection.execute(f"{_SELECT} ORDER BY name").fetchall()
        return [state_from(*row) for row in rows]

    def remote_source(self, name: str) -> RemoteSourceState | None:
        with self._transaction(write=False) as connection:
            row = None if connection is None else connection.execute(f"{_SELECT} WHERE name = %s", (name,)).fetchone()
        return None if row is None else state_from(*row)

    def save_remote_source(self, state: RemoteSourceState) -> None:
        with self._transaction() as connection:
            connection.execute(
                "INSERT INTO remote_sources(name, uri, state, scheduled_at, holder, lease_until)"
                " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (name) DO UPDATE SET uri = excluded.uri,"
                " state = excluded.state, scheduled_at = excluded.scheduled_at, holder = excluded.holder,"
                " lease_until = excluded.lease_until",
                (state.name, state.uri, state_json(state), state.scheduled_at, state.holder, state.lease_until))

    def remote_items(self, name: str) -> dict[str, RemoteItemState]:
        with self._transaction(write=False) as connection:
            rows = [] if connection is None else connection.execute(
                "SELECT key, source, version, data FROM remote_items WHERE remote = %s", (name,)).fetchall()
        return {key: RemoteItemState(key, source, version, dict(data)) for key, source, version, data in rows}

    def put_remote_items(self, name: str, items: Sequence[RemoteItemState]) -> None:
        if not items:
            return
        with self._transaction() as connection, connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO remote_items(remote, key, source, version, data) VALUES (%s, %s, %s, %s, %s)"
                " ON CONFLICT (remote, key) DO UPDATE SET source = excluded.source, version = excluded.version,"
                " data = excluded.data",
                [(name, i.key, i.source, i.version, json.dumps(i.data, sort_keys=True)) for i in items])

    def delete_remote_items(self, name: str, keys: Collection[str]) -> None:
        if not keys:
            return
        with self._transaction() as connection:
            connection.execute("DELETE FROM remote_items WHERE remote = %s AND key = ANY(%s)", (name, list(keys)))

    def forget_remote_source(self, name: str) -> None:
        with self._transaction() as connection:
            connection.execute("DELETE FROM remote_items WHERE remote = %s", (name,))
            connection.execute("DELETE FROM remote_sources WHERE name = %s", (name,))

    def claim_schedule(self, name: str, uri: str, interval: float) -> bool:
        with self._transaction() as connection:
            connection.execute(
                "INSERT INTO remote_sources(name, uri, state) VALUES (%s, %s, %s) ON CONFLICT (name) DO NOTHING",
                (name, uri, state_json(RemoteSourceState(name, uri))))
            row = connection.execute(
                f"UPDATE remote_sources SET scheduled_at = {_NOW} WHERE name = %s"
                f" AND (scheduled_at IS NULL OR scheduled_at + %s <= {_NOW})"
                f" AND (lease_until IS NULL OR lease_until <= {_NOW}) RETURNING name", (name, interval)).fetchone()
        return row is not None

    def begin_sync(self, name: str, uri: str, holder: str, lease: float) -> RemoteSourceState | None:
        with self._transaction() as connection:
            connection.execute(
                "INSERT INTO remote_sources(name, uri, state) VALUES (%s, %s, %s) ON CONFLICT (name) DO NOTHING",
                (name, uri, state_json(RemoteSourceState(name, uri))))
            row = connection.execute(f"{_SELECT} WHERE name = %s FOR UPDATE", (name,)).fetchone()
            state = state_from(*row)
            now = float(connection.execute(f"SELECT {_NOW}").fetchone()[0])
            if state.holder not in (None, holder) and (state.lease_until or 0) > now:
                return None
            state.uri, state.holder, state.lease_until = uri, holder, now + lease
            state.status, state.started_at, state.error = "running", now, None
            connection.execute(
                "UPDATE remote_sources SET uri = %s, state = %s, holder = %s, lease_until = %s WHERE name = %s",
                (uri, state_json(state), holder, state.lease_until, name))
            return state

    def renew_sync(self, name: str, holder: str, lease: float) -> bool:
        with self._transaction() as connection:
            row = connection.execute(
                f"UPDATE remote_sources SET lease_until = {_NOW} + %s WHERE name = %s AND holder = %s RETURNING name",
                (lease, name, holder)).fetchone()
        return row is not None

    def end_sync(self, state: RemoteSourceState, holder: str) -> bool:
        with self._transaction() as connection:
            row = connection.execute(
                "UPDATE remote_sources SET state = %s, holder = NULL, lease_until = NULL"
                " WHERE name = %s AND holder = %s RETURNING name", (state_json(state), state.name, holder)).fetchone()
        return row is not None
