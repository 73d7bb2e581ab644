"""The audit log: every search and every write, as a tamper-evident hash chain.

An entry is a JSON object: ``kind`` (``search``, ``ingest``, ``source.added``, ``remove``,
``migrate``, ...), ``created_at``, ``user``, ``embedder`` and what the kind records (a
search's query, parameters and hits; a source's path, content hash and chunk count; an
operation's parameters and summary). Entry number ``seq`` is stored with

    hash = SHA-256(canonical({"seq": seq, "prev": <hash of entry seq-1>, "entry": entry}))

where the first entry's ``prev`` is ``GENESIS`` and ``canonical`` is JSON with sorted keys,
no whitespace and ASCII only. Editing an entry changes its hash; deleting one breaks
the link from the next; deleting the newest ones disagrees with the head that is
recorded beside the chain in the same transaction. ``verify_chain`` walks the chain and
names the first entry that does not check out.

Whoever can write the database can recompute the whole chain; keep the head hash that
``ragloom audit --verify`` prints somewhere else to detect that too.

The chain lives in one ``audit_log`` table, which every store keeps: the embedded store in
its SQLite catalog, Chroma and Qdrant in the catalog beside the collection, the PostgreSQL
store in its database (``stores/postgres/audit.py``, the same rows and hashes).
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import sqlite3
import time
from contextvars import ContextVar
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

GENESIS = "0" * 64

SCHEMA = """
CREATE TABLE IF NOT EXISTS audit_log (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    created_at REAL NOT NULL,
    entry TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_kind ON audit_log(kind, seq)
"""

#: The meta key of the newest entry's (seq, hash), written with every append.
HEAD_KEY = "audit_head"


def canonical(value: Any) -> bytes:
    """The one byte encoding that is hashed: sorted keys, no whitespace, ASCII-escaped."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str).encode("ascii")


def normalised(value: Any) -> Any:
    """``value`` as it reads back from its canonical JSON (tuples become lists, and so on)."""
    return json.loads(canonical(value))


def chain_hash(seq: int, prev: str, entry: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical({"seq": seq, "prev": prev, "entry": entry})).hexdigest()


def current_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry (containers): the numeric id still says who
        return str(os.getuid())


@dataclass
class AuditEvent:
    """One entry of the chain as read back."""

    seq: int
    id: str
    kind: str
    created_at: float
    entry: dict[str, Any]
    hash: str


@dataclass
class ChainReport:
    """What ``verify_chain`` found: ``ok``, or the first broken entry and what is wrong with it."""

    entries: int
    head: str
    broken_seq: int | None = None
    problem: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.broken_seq is None

    def describe(self) -> str:
        if self.ok:
            return f"the audit log is intact: {self.entries} entries, head {self.head}"
        return f"the audit log is broken at entry {self.broken_seq}: {self.problem}"


def new_entry(kind: str, **fields: Any) -> dict[str, Any]:
    """An entry of ``kind`` stamped with an id, the time and the user."""
    entry = {"id": uuid.uuid4().hex, "kind": kind, "created_at": time.time(), "user": current_user()}
    entry.update(fields)
    return entry


def append(db: sqlite3.Connection, entry: Mapping[str, Any]) -> AuditEvent:
    """Chain ``entry`` after the newest one. Call inside the transaction that makes the change."""
    entry = normalised(dict(entry))
    row = db.execute("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1").fetchone()
    seq, prev = (row[0] + 1, row[1]) if row else (1, GENESIS)
    digest = chain_hash(seq, prev, entry)
    db.execute(
        "INSERT INTO audit_log(seq, id, kind, created_at, entry, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (seq, entry["id"], entry["kind"], float(entry["created_at"]), canonical(entry).decode("ascii"), prev, digest),
    )
    db.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (HEAD_KEY, json.dumps({"seq": seq, "hash": digest})),
    )
    return AuditEvent(seq, entry["id"], entry["kind"], float(entry["created_at"]), entry, digest)


def recent(
    db: sqlite3.Connection, limit: int, kinds: Sequence[str] | None = None, exclude: Sequence[str] = ()
) -> list[AuditEvent]:
    """The newest ``limit`` entries (of these kinds, not of those), newest first."""
    clauses, values = [], []
    if kinds:
        clauses.append(f"kind IN ({','.join('?' * len(kinds))})")
        values.extend(kinds)
    if exclude:
        clauses.append(f"kind NOT IN ({','.join('?' * len(exclude))})")
        values.extend(exclude)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = db.execute(
        f"SELECT seq, id, kind, created_at, entry, hash FROM audit_log {where} ORDER BY seq DESC LIMIT ?",
        (*values, limit),
    )
    return [AuditEvent(seq, eid, kind, created, json.loads(text), digest)
            for seq, eid, kind, created, text, digest in rows.fetchall()]


def _rows(db: sqlite3.Connection) -> Iterator[tuple[Any, ...]]:
    cursor = db.execute("SELECT seq, id, kind, created_at, entry, prev_hash, hash FROM audit_log ORDER BY seq")
    while batch := cursor.fetchmany(1000):
        yield from batch


def verify_chain(db: sqlite3.Connection, head: Mapping[str, Any] | None) -> ChainReport:
    """Walk the chain from the first entry; stop at the first one that does not check out."""
    return verify_rows(_rows(db), head)


def verify_rows(rows: Iterable[Sequence[Any]], head: Mapping[str, Any] | None) -> ChainReport:
    """``verify_chain`` over rows (seq, id, kind, created_at, entry, prev_hash, hash) in seq order,
    read from whichever database keeps the chain."""
    expected_seq, prev, count = 1, GENESIS, 0
    for seq, eid, kind, created, text, stored_prev, stored_hash in rows:
        problem = _check_row(seq, expected_seq, prev, eid, kind, created, text, stored_prev, stored_hash)
        if problem:
            return ChainReport(count, prev, broken_seq=min(seq, expected_seq), problem=problem)
        expected_seq, prev, count = seq + 1, stored_hash, count + 1
    if head is not None and (head.get("seq") != expected_seq - 1 or head.get("hash") != prev):
        last = int(head.get("seq") or 0)
        if last >= expected_seq:
            missing = f"entries {expected_seq}..{last} are missing" if last > expected_seq else \
                f"entry {expected_seq} is missing"
            return ChainReport(count, prev, broken_seq=expected_seq,
                               problem=f"{missing} (the newest entry recorded is {last}); they were deleted")
        return ChainReport(count, prev, broken_seq=expected_seq - 1,
                           problem="the newest entry does not match the head recorded with it")
    if head is None and count:
        return ChainReport(count, prev, broken_seq=count, problem="the record of the newest entry is missing")
    return ChainReport(count, prev)


def _check_row(
    seq: int, expected_seq: int, prev: str, eid: str, kind: str, created: float, text: str,
    stored_prev: str, stored_hash: str,
) -> str:
    if seq != expected_seq:
        return (f"entry {expected_seq} is missing (the next one is {seq}); it was deleted"
                if seq > expected_seq else f"entry {seq} is out of order")
    if stored_prev != prev:
        return "its link to the previous entry does not match; an entry before it was changed, deleted or inserted"
    try:
        entry = json.loads(text)
    except ValueError:
        return "it is not valid JSON any more; it was edited"
    if chain_hash(seq, prev, entry) != stored_hash or canonical(entry).decode("ascii") != text:
        return f"its content does not match its hash; the {kind or '?'} entry was edited"
    if (entry.get("id"), entry.get("kind"), entry.get("created_at")) != (eid, kind, created):
        return "its id, kind or time column does not match its content; the row was edited"
    return ""


#: The name of the API key a server request is made with (never the key): searches record it, and
#: a key that is not an admin reads back only its own entries.
CALLER: ContextVar[str | None] = ContextVar("ragloom_caller", default=None)
