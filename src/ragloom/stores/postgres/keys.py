"""API keys in PostgreSQL (``ragloom keys ... --keys-file postgresql://...``): every replica over
the database reads the same table at each request, so a key revoked through one is refused by
all at once, and a key's rate is one token bucket in the database, taken under a row lock, so it
holds across replicas. The bucket's clock is the database server's, not each replica's."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import UsageError
from ..keys import KeyRecord, KeyStore, key_hash, new_key
from .address import mask_password, parse_address
from .shared import open_shared

#: Connections for key checks and rate buckets: each request takes one for a moment, on a worker
#: thread (never the event loop); more requests than this at once wait for one in their thread.
POOL_SIZE = 8


class PostgresKeys(KeyStore):
    def __init__(self, url: str) -> None:
        self.where = mask_password(parse_address(url).conninfo)
        self.database = open_shared(parse_address(url).conninfo, pool_size=POOL_SIZE, role="keys")

    def records(self) -> list[KeyRecord]:
        with self.database.connection() as connection:
            rows = connection.execute("SELECT record FROM ragloom.api_keys ORDER BY record->>'created_at', name").fetchall()
        return [KeyRecord.from_json(row[0]) for row in rows]

    def lookup(self, presented: str) -> KeyRecord | None:
        with self.database.connection() as connection:
            row = connection.execute("SELECT record FROM ragloom.api_keys WHERE hash = %s",
                                     (key_hash(presented),)).fetchone()
        return None if row is None else KeyRecord.from_json(row[0])

    def add(self, name: str, *, scopes: Sequence[str] = (), indexes: Sequence[str] = (),
            where: Mapping[str, Any] | None = None, rate: float | None = None, burst: int | None = None,
            ) -> tuple[str, KeyRecord]:
        with self.database.transaction() as connection:
            existing = [KeyRecord.from_json(row[0]) for row in
                        connection.execute("SELECT record FROM ragloom.api_keys WHERE name = %s", (name,)).fetchall()]
            key, record = new_key(name, existing, scopes=scopes, indexes=indexes, where=where, rate=rate, burst=burst)
            connection.execute("INSERT INTO ragloom.api_keys(name, hash, record) VALUES (%s, %s, %s)",
                               (record.name, record.hash, json.dumps(record.to_json())))
        return key, record

    def revoke(self, name: str) -> None:
        with self.database.transaction() as connection:
            gone = connection.execute("DELETE FROM ragloom.api_keys WHERE name = %s", (name,)).rowcount
            connection.execute("DELETE FROM ragloom.rate_buckets WHERE name = %s", (name,))
        if not gone:
            raise UsageError(f"no key named {name!r} in {self.where}; see `ragloom keys list`")

    def take(self, name: str, rate: float, burst: int) -> float:
        with self.database.connection() as connection, connection.transaction():
            connection.execute(
                "INSERT INTO ragloom.rate_buckets(name, tokens, at) VALUES (%s, %s, extract(epoch FROM clock_timestamp()))"
                " ON CONFLICT (name) DO NOTHING", (name, float(burst)))
            tokens, then, now = connection.execute(
                "SELECT tokens, at, extract(epoch FROM clock_timestamp())::float8 FROM ragloom.rate_buckets"
                " WHERE name = %s FOR UPDATE", (name,)).fetchone()
            tokens = min(float(burst), tokens + (now - then) * rate)
            wait = 0.0 if tokens >= 1.0 else (1.0 - tokens) / rate
            connection.execute("UPDATE ragloom.rate_buckets SET tokens = %s, at = %s WHERE name = %s",
                               (tokens - 1.0 if wait == 0.0 else tokens, now, name))
        return wait

    def close(self) -> None:
        self.database.close()
