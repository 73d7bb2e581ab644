"""The audit log's hash chain in PostgreSQL: the rows and hashes of ``ragloom.audit``.

An entry is appended inside the transaction that makes the change it records (a search's entry
in a transaction of its own), and the append takes the chain's advisory lock, held to the
commit: two replicas appending at once are serialized, so each new entry links to the true
newest one and the chain never forks. A write appends at its end, so it holds the chain's lock
for the last statements of its transaction only; a search does not wait for the rest of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ... import audit
from ...audit import AuditEvent, ChainReport


def append(connection: Any, entry: Mapping[str, Any], lock: int) -> AuditEvent:
    """Chain ``entry`` after the newest one, holding the chain's lock ``lock`` to the end of the
    caller's transaction (a statement after the lock reads the newest committed head)."""
    entry = audit.normalised(dict(entry))
    connection.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))
    row = connection.execute("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1").fetchone()
    seq, prev = (row[0] + 1, row[1]) if row else (1, audit.GENESIS)
    digest = audit.chain_hash(seq, prev, entry)
    connection.execute(
        "INSERT INTO audit_log(seq, id, kind, created_at, entry, prev_hash, hash) VALUES (%s, %s, %s, %s, %s, %s, %s)",
        (seq, entry["id"], entry["kind"], float(entry["created_at"]), audit.canonical(entry).decode("ascii"), prev,
         digest),
    )
    connection.execute(
        "INSERT INTO meta(key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (audit.HEAD_KEY, json.dumps({"seq": seq, "hash": digest})),
    )
    return AuditEvent(seq, entry["id"], entry["kind"], float(entry["created_at"]), entry, digest)


def recent(connection: Any, limit: int, kinds: Sequence[str] | None = None, exclude: Sequence[str] = ()) -> list[AuditEvent]:
    """The newest ``limit`` entries (of these kinds, not of those), newest first."""
    rows = connection.execute(
        "SELECT seq, id, kind, created_at, entry, hash FROM audit_log"
        " WHERE (%s::text[] IS NULL OR kind = ANY(%s::text[])) AND NOT (kind = ANY(%s::text[]))"
        " ORDER BY seq DESC LIMIT %s",
        (list(kinds) if kinds else None, list(kinds) if kinds else None, list(exclude), limit),
    ).fetchall()
    return [AuditEvent(seq, eid, kind, created, json.loads(text), digest)
            for seq, eid, kind, created, text, digest in rows]


def verify(connection: Any) -> ChainReport:
    """Walk the chain and the recorded head in one snapshot, so appends meanwhile are not seen."""
    with connection.transaction():
        connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        row = connection.execute("SELECT value FROM meta WHERE key = %s", (audit.HEAD_KEY,)).fetchone()
        with connection.cursor(name="ragloom_audit_walk") as cursor:
            cursor.execute("SELECT seq, id, kind, created_at, entry, prev_hash, hash FROM audit_log ORDER BY seq")
            return audit.verify_rows(_batches(cursor), None if row is None else row[0])


def _batches(cursor: Any) -> Iterator[tuple[Any, ...]]:
    while batch := cursor.fetchmany(1000):
        yield from batch
