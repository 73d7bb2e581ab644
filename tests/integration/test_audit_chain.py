"""The audit log (issue 15, items 19-20): every search and write, chained by SHA-256, on every
store; tampering with the SQLite rows (edit, delete, truncate, re-hash) is found and named."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from ragloom import Config, Index
from ragloom.audit import chain_hash, verify_chain
from ragloom.stores.base import create_store
from ragloom.stores.migrate import migrate

BACKENDS = ["embedded", "chroma", "qdrant"]


def _config(backend: str) -> Config:
    if backend != "embedded":
        pytest.importorskip({"chroma": "chromadb", "qdrant": "qdrant_client"}[backend])
    return Config.from_dict({"store": {"backend": backend}})


def _database(index_dir: Path, backend: str) -> Path:
    return index_dir / ("ragloom.sqlite" if backend == "embedded" else f"{backend}/ragloom.sqlite")


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "kalman.txt").write_text("The Kalman filter fuses noisy sensor measurements into one estimate.\n")
    (folder / "ros.md").write_text("# ROS 2\n\nROS 2 nodes communicate by publishing messages on topics.\n")
    (folder / "bread.txt").write_text("To bake bread, knead the dough, let it rise and bake it.\n")
    return folder


def _history(index_dir: Path, docs: Path, backend: str, embedder) -> None:
    """Ingest, change a file and ingest again, remove one, search twice."""
    with Index.open(index_dir, _config(backend), embedder=embedder) as index:
        index.ingest([docs])
        (docs / "bread.txt").write_text("Sourdough bread needs a starter, flour, water and salt.\n")
        (docs / "ros.md").unlink()
        index.ingest([docs])
        index.remove(docs / "kalman.txt")
        index.search("Kalman filter", k=2)
        index.search("bread starter", k=2, where={"source": str((docs / "bread.txt").resolve())})


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_write_is_in_the_log_with_hashes_chunk_counts_and_parameters(tmp_path, docs, backend, embedder):
    _history(tmp_path / "ix", docs, backend, embedder)
    with Index.open(tmp_path / "ix", _config(backend), create=False, embedder=embedder) as index:
        events = list(reversed(index.audit_events(100)))
        report = index.verify_audit()
    assert report.ok, report.describe()
    assert report.entries == len(events)
    assert [e.kind for e in events] == [
        "ingest", "embedder.set", "source.added", "source.added", "source.added", "ingest.done",
        "ingest", "source.updated", "source.removed", "ingest.done",
        "remove", "source.removed", "remove.done",
        "search", "search",
    ]
    bread = str((docs / "bread.txt").resolve())
    first, update = events[0].entry, events[7].entry
    assert first["parameters"]["paths"] == [str(docs.resolve())]
    assert first["parameters"]["embedder"] == embedder.model_id
    assert first["parameters"]["chunking"]["strategy"] == "recursive"
    assert update["path"] == bread and update["chunk_count"] == 1
    assert update["content_hash"] != update["previous_hash"]
    assert update["embedder"] == embedder.model_id and update["operation"] == events[6].id
    assert update["user"] and update["created_at"] >= first["created_at"]
    assert events[9].entry["summary"]["updated"] == 1 and events[9].entry["summary"]["removed"] == 1
    assert events[10].entry["parameters"] == {"path": str((docs / "kalman.txt").resolve())}
    search = events[-1].entry
    assert search["query"] == "bread starter" and search["filters"] == {"source": bread}
    assert search["hits"][0]["source"] == bread and search["embedder"] == embedder.model_id


def _flat(text: str) -> str:
    """Output with rich's hard line wraps undone."""
    return " ".join(text.split())


def _rows(database: Path) -> list[tuple]:
    db = sqlite3.connect(database)
    try:
        return db.execute("SELECT seq, entry, prev_hash, hash FROM audit_log ORDER BY seq").fetchall()
    finally:
        db.close()


def _verify(index_dir: Path, backend: str, embedder):
    with Index.open(index_dir, _config(backend), create=False, embedder=embedder) as index:
        return index.verify_audit()


def _tamper(database: Path, *statements: tuple) -> None:
    db = sqlite3.connect(database)
    with db:
        for statement in statements:
            db.execute(*statement)
    db.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_tampering_with_the_rows_is_found_and_the_first_broken_entry_named(tmp_path, docs, backend, embedder):
    index_dir = tmp_path / "ix"
    _history(index_dir, docs, backend, embedder)
    database = _database(index_dir, backend)
    pristine = database.read_bytes()
    rows = _rows(database)
    assert len(rows) == 15

    def restore() -> None:
        for leftover in database.parent.glob("ragloom.sqlite-*"):
            leftover.unlink()
        database.write_bytes(pristine)
        assert _verify(index_dir, backend, embedder).ok

    # Edit what a search returned.
    _tamper(database, ("UPDATE audit_log SET entry = replace(entry, 'Kalman filter', 'Kalman smoother') WHERE seq = 14",))
    report = _verify(index_dir, backend, embedder)
    assert (report.ok, report.broken_seq) == (False, 14) and "edited" in report.problem
    restore()

    # Edit a source's content hash and recompute that row's hash: the next link breaks.
    seq, text, prev, _ = rows[7]
    entry = json.loads(text)
    entry["content_hash"] = "0" * 64
    forged = json.dumps(entry, sort_keys=True, separators=(",", ":"))
    _tamper(database, ("UPDATE audit_log SET entry = ?, hash = ? WHERE seq = ?", (forged, chain_hash(seq, prev, entry), seq)))
    report = _verify(index_dir, backend, embedder)
    assert report.broken_seq == 9 and "link to the previous entry" in report.problem
    restore()

    # Delete an entry in the middle.
    _tamper(database, ("DELETE FROM audit_log WHERE seq = 5",))
    report = _verify(index_dir, backend, embedder)
    assert report.broken_seq == 5 and "missing" in report.problem
    restore()

    # Delete the newest entries.
    _tamper(database, ("DELETE FROM audit_log WHERE seq >= 14",))
    report = _verify(index_dir, backend, embedder)
    assert report.broken_seq == 14 and "14..15 are missing" in report.problem
    restore()

    # Change the time column only.
    _tamper(database, ("UPDATE audit_log SET created_at = created_at - 86400 WHERE seq = 3",))
    report = _verify(index_dir, backend, embedder)
    assert report.broken_seq == 3


def test_the_cli_verifies_the_chain_and_warns_when_it_is_broken(tmp_path, docs, embedder):
    _history(tmp_path / "ix", docs, "embedded", embedder)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src") + os.pathsep + env.get("PYTHONPATH", "")

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "ragloom", "-i", str(tmp_path / "ix"), *args],
                              cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)

    good = cli("audit", "--verify")
    assert good.returncode == 0 and "intact: 15 entries" in _flat(good.stdout), good.stderr
    listing = cli("audit", "--last", "20")
    assert listing.returncode == 0 and "source.updated" in _flat(listing.stdout) and "broken" not in _flat(listing.stderr)
    _tamper(tmp_path / "ix" / "ragloom.sqlite", ("DELETE FROM audit_log WHERE seq = 11",))
    bad = cli("audit", "--verify")
    assert bad.returncode == 1 and "broken at entry 11" in _flat(bad.stderr) and "Traceback" not in _flat(bad.stderr)
    warned = cli("audit")
    assert warned.returncode == 0 and "warning:" in _flat(warned.stderr) and "broken at entry 11" in _flat(warned.stderr)
    as_json = json.loads(cli("audit", "--json", "-n", "3").stdout)
    assert [e["kind"] for e in as_json] == ["search", "search", "remove.done"]
    assert as_json[0]["query"] == "bread starter"
    writes = json.loads(cli("audit", "--json", "-n", "2", "--kind", "write").stdout)
    assert [e["kind"] for e in writes] == ["remove.done", "source.removed"]
    assert writes[1]["path"] == str((docs / "kalman.txt").resolve()) and writes[1]["chunk_count"] == 1


@pytest.mark.parametrize("target", ["chroma", "qdrant"])
def test_migration_is_audited_on_the_target(tmp_path, docs, target, embedder):
    with Index.open(tmp_path / "ix", Config(), embedder=embedder) as index:
        index.ingest([docs])
    origin = create_store(tmp_path / "ix", Config())
    copy = create_store(tmp_path / "copy", _config(target))
    try:
        migrate(origin, copy)
        events = list(reversed(copy.audit_events(20)))
        assert [e.kind for e in events] == ["migrate", "embedder.set", *["source.added"] * 3, "migrate.done"]
        assert events[0].entry["parameters"]["from"] == "embedded"
        assert events[-1].entry["summary"]["copied"] == 3
        assert {e.entry["operation"] for e in events[1:-1]} == {events[0].id}
        assert copy.verify_audit().ok
    finally:
        origin.close()
        copy.close()


def test_searches_logged_before_the_chain_are_imported_into_it(tmp_path, docs, embedder):
    with Index.open(tmp_path / "ix", Config(), embedder=embedder) as index:
        index.ingest([docs])
    # The tables an index written by an earlier ragloom holds, with one search in them.
    _tamper(tmp_path / "ix" / "ragloom.sqlite",
            ("CREATE TABLE searches (id TEXT PRIMARY KEY, created_at REAL NOT NULL, query TEXT NOT NULL, mode TEXT"
             " NOT NULL, k INTEGER NOT NULL, filters TEXT NOT NULL, parameters TEXT NOT NULL, embedder TEXT NOT NULL,"
             " elapsed_ms REAL NOT NULL)",),
            ("CREATE TABLE search_hits (search_id TEXT NOT NULL REFERENCES searches(id) ON DELETE CASCADE, rank"
             " INTEGER NOT NULL, chunk_id TEXT NOT NULL, score REAL NOT NULL, source TEXT NOT NULL,"
             " PRIMARY KEY (search_id, rank))",),
            ("INSERT INTO searches VALUES ('old1', 1000.0, 'old query', 'dense', 3, '{}', '{}', 'onnx:x', 2.0)",),
            ("INSERT INTO search_hits VALUES ('old1', 1, 'c1', 0.5, 'a.md')",))
    with Index.open(tmp_path / "ix", Config(), embedder=embedder) as index:
        old = index.audit(5)[0]
        assert (old.id, old.query, old.hits[0]["chunk_id"], old.extra) == ("old1", "old query", "c1", {"imported": True})
        assert index.verify_audit().ok


def test_a_read_only_index_with_a_broken_chain_still_lists_it_with_a_warning(tmp_path, docs, embedder):
    _history(tmp_path / "ix", docs, "embedded", embedder)
    _tamper(tmp_path / "ix" / "ragloom.sqlite", ("DELETE FROM audit_log WHERE seq = 2",))
    db = sqlite3.connect(tmp_path / "ix" / "ragloom.sqlite")
    head = json.loads(db.execute("SELECT value FROM meta WHERE key = 'audit_head'").fetchone()[0])
    report = verify_chain(db, head)
    db.close()
    assert report.broken_seq == 2
    with Index.open(tmp_path / "ix", Config(), create=False, read_only=True, embedder=embedder) as index:
        assert len(index.audit_events(100)) == 14
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert not index.verify_audit().ok


def test_concurrent_writers_keep_one_unbroken_chain(tmp_path, docs, embedder):
    """Each append reads the newest entry and links to it inside one IMMEDIATE transaction."""
    from concurrent.futures import ThreadPoolExecutor

    from ragloom.stores.base import AuditEntry

    with Index.open(tmp_path / "ix", Config(), embedder=embedder) as index:
        index.ingest([docs])
        before = index.verify_audit().entries

    def log_searches(worker: int) -> None:
        store = create_store(tmp_path / "ix", Config())  # a connection of its own
        try:
            for n in range(15):
                store.log_search(AuditEntry(query=f"w{worker} q{n}", mode="dense", k=1, filters={}, parameters={},
                                            hits=[], elapsed_ms=0.1, created_at=0.0))
        finally:
            store.close()

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(log_searches, range(4)))
    with Index.open(tmp_path / "ix", Config(), create=False, embedder=embedder) as index:
        report = index.verify_audit()
        assert report.ok and report.entries == before + 60, report.describe()
