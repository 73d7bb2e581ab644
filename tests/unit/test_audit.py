"""The audit hash chain as pure functions over a SQLite connection, and the read-only catalog."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from ragloom import audit
from ragloom.errors import IndexDamagedError, IndexReadOnlyError
from ragloom.stores.embedded.catalog import Catalog


def _db() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    for statement in audit.SCHEMA.split(";"):
        db.execute(statement)
    return db


def _head(db: sqlite3.Connection) -> dict:
    return json.loads(db.execute("SELECT value FROM meta WHERE key = ?", (audit.HEAD_KEY,)).fetchone()[0])


def test_canonical_encoding_is_sorted_compact_and_ascii() -> None:
    assert audit.canonical({"b": 1, "a": [1.5, "é"], "c": None}) == b'{"a":[1.5,"\\u00e9"],"b":1,"c":null}'
    # An undecodable file name (a surrogate escape) still encodes.
    assert audit.canonical({"path": "bad\udcff.txt"}) == b'{"path":"bad\\udcff.txt"}'


def test_each_hash_covers_the_sequence_number_the_previous_hash_and_the_entry() -> None:
    entry = {"id": "x", "kind": "search", "created_at": 1.0}
    expected = hashlib.sha256(audit.canonical({"seq": 1, "prev": audit.GENESIS, "entry": entry})).hexdigest()
    assert audit.chain_hash(1, audit.GENESIS, entry) == expected
    assert audit.chain_hash(2, audit.GENESIS, entry) != expected
    assert audit.chain_hash(1, "f" * 64, entry) != expected


def test_appended_entries_link_and_verify() -> None:
    db = _db()
    events = [audit.append(db, audit.new_entry("search", query=f"q{i}")) for i in range(5)]
    assert [e.seq for e in events] == [1, 2, 3, 4, 5]
    rows = db.execute("SELECT prev_hash, hash FROM audit_log ORDER BY seq").fetchall()
    assert rows[0][0] == audit.GENESIS and all(rows[i][0] == rows[i - 1][1] for i in range(1, 5))
    report = audit.verify_chain(db, _head(db))
    assert report.ok and report.entries == 5 and report.head == events[-1].hash
    assert [e.entry["query"] for e in audit.recent(db, 2)] == ["q4", "q3"]


@pytest.mark.parametrize(("tamper", "broken", "words"), [
    ("UPDATE audit_log SET entry = replace(entry, 'q2', 'qq') WHERE seq = 3", 3, "edited"),
    ("DELETE FROM audit_log WHERE seq = 2", 2, "missing"),
    ("DELETE FROM audit_log WHERE seq = 5", 5, "missing"),
    ("UPDATE audit_log SET kind = 'ingest' WHERE seq = 4", 4, "column"),
    ("UPDATE audit_log SET prev_hash = hash WHERE seq = 2", 2, "link"),
    ("UPDATE audit_log SET entry = entry || ' ' WHERE seq = 1", 1, "edited"),
])
def test_tampering_names_the_first_broken_entry(tamper: str, broken: int, words: str) -> None:
    db = _db()
    for i in range(5):
        audit.append(db, audit.new_entry("search", query=f"q{i}"))
    db.execute(tamper)
    report = audit.verify_chain(db, _head(db))
    assert (report.ok, report.broken_seq) == (False, broken)
    assert words in report.problem and f"entry {broken}" in report.describe()


def test_a_read_only_catalog_cannot_write_even_past_ragloom(tmp_path: Path) -> None:
    Catalog(tmp_path / "ragloom.sqlite").close()
    catalog = Catalog(tmp_path / "ragloom.sqlite", read_only=True)
    try:
        with pytest.raises(IndexReadOnlyError):
            with catalog.transaction():
                pass
        with pytest.raises(IndexReadOnlyError):  # SQLite itself (mode=ro) refuses
            catalog.db.execute("INSERT INTO meta VALUES ('x', '1')")
        assert catalog.generation() == 0
    finally:
        catalog.close()


def test_a_file_that_is_not_sqlite_is_a_damaged_index(tmp_path: Path) -> None:
    (tmp_path / "ragloom.sqlite").write_bytes(b"garbage" * 1000)
    for read_only in (False, True):
        with pytest.raises(IndexDamagedError, match="damaged"):
            Catalog(tmp_path / "ragloom.sqlite", read_only=read_only)
