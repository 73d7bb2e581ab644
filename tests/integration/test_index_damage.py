"""A damaged, read-only or missing index (issue 15, items 10-13): clear errors, reading
without writing, derived indexes rebuilt from SQLite, no index created by reading."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from ragloom import Config, Index, RagloomWarning
from ragloom.errors import IndexDamagedError, IndexNotFoundError, IndexReadOnlyError

DOCS = {
    "kalman.txt": "The Kalman filter fuses noisy measurements from several sensors into one state estimate. " * 20,
    "ros.md": "# ROS 2\n\n" + "ROS 2 nodes communicate by publishing messages on topics. " * 20,
    "bread.txt": "To bake bread, mix flour, water, salt and yeast, knead the dough and bake it. " * 20,
}


def _flat(text: str) -> str:
    """Output with rich's hard line wraps undone."""
    return " ".join(text.split())


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "ragloom", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.fixture
def built(tmp_path: Path, embedder) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text)
    # One indexing thread: one BM25 segment, the same bytes every run (the damage tests rely on it).
    with Index.open(tmp_path / "ix", Config.from_dict({"embedder": {"threads": 1}}), embedder=embedder) as index:
        assert index.ingest([docs]).ok
        index.search("kalman", k=1)  # derived indexes saved, one audit entry
    return tmp_path / "ix"


def _snapshot(folder: Path) -> dict[str, str]:
    """Every file's digest; SQLite's shared-memory file, and an empty WAL, are how readers
    coordinate, not writes."""
    empty = hashlib.sha256(b"").hexdigest()
    found = {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(folder.rglob("*")) if p.is_file() and not p.name.endswith("-shm")}
    return {name: digest for name, digest in found.items() if not (name.endswith("-wal") and digest == empty)}


# -- 10: a damaged database ----------------------------------------------------------------
def test_a_database_that_is_not_sqlite_is_reported_as_damaged(built: Path, embedder) -> None:
    for leftover in built.glob("ragloom.sqlite-*"):
        leftover.unlink()
    (built / "ragloom.sqlite").write_bytes(b"this is not a database" * 500)
    with pytest.raises(IndexDamagedError, match="damaged.*backup"):
        Index.open(built, Config(), create=False, embedder=embedder)
    for command in (["status"], ["search", "kalman"], ["audit"]):
        result = _cli("-i", str(built), *command, cwd=built.parent)
        assert result.returncode == 1, result
        assert "damaged" in _flat(result.stderr) and "ingest --rebuild" in _flat(result.stderr), result.stderr
        assert "Traceback" not in _flat(result.stderr), result.stderr
    # What the message says to do works, and keeps the damaged index.
    rebuilt = _cli("-i", str(built), "ingest", "--rebuild", "-q", "docs", cwd=built.parent)
    assert rebuilt.returncode == 0 and "moved the old index to" in _flat(rebuilt.stderr), rebuilt.stderr
    kept = [p for p in built.parent.iterdir() if p.name.startswith("ix.damaged-")]
    assert len(kept) == 1 and (kept[0] / "ragloom.sqlite").read_bytes().startswith(b"this is not a database")
    found = _cli("-i", str(built), "search", "Kalman filter", "-k", "1", "--json", cwd=built.parent)
    assert found.returncode == 0 and "kalman.txt" in _flat(found.stdout), found.stderr


def test_damaged_pages_inside_the_database_are_reported_as_damaged(built: Path) -> None:
    data = bytearray((built / "ragloom.sqlite").read_bytes())
    page = 4096
    assert len(data) > 3 * page
    data[page:-page] = bytes(len(data) - 2 * page)  # keep the header, zero the tables' pages
    (built / "ragloom.sqlite").write_bytes(bytes(data))
    for command in (["status"], ["search", "kalman"]):
        result = _cli("-i", str(built), *command, cwd=built.parent)
        assert result.returncode == 1, result
        assert "damaged" in _flat(result.stderr) and "Traceback" not in _flat(result.stderr), result.stderr


# -- 11: an index this process may not write -------------------------------------------------
def test_a_read_only_index_answers_status_search_and_audit_without_writing(built: Path, embedder) -> None:
    before = _snapshot(built)
    with Index.open(built, Config(), create=False, read_only=True, embedder=embedder) as index:
        assert index.stats().sources == 3
        with pytest.warns(RagloomWarning, match="read-only.*not written to its audit log"):
            hits = index.search("Kalman filter sensors", k=1)
        assert hits[0].source.endswith("kalman.txt")
        assert [e.kind for e in index.audit_events(2)] == ["search", "ingest.done"]
        assert index.verify_audit().ok
        with pytest.raises(IndexReadOnlyError):
            index.remove(next(iter(index.sources())).path)
    assert _snapshot(built) == before


def test_stale_derived_indexes_of_a_read_only_index_are_rebuilt_in_memory(built: Path, embedder) -> None:
    shutil.rmtree(built / "bm25")
    shutil.rmtree(built / "vectors")
    with Index.open(built, Config(), create=False, read_only=True, embedder=embedder) as index:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RagloomWarning)
            for mode in ("lexical", "dense", "hybrid"):
                assert index.search("Kalman filter", k=1, mode=mode)[0].source.endswith("kalman.txt")
    assert not (built / "bm25").exists() and not (built / "vectors").exists()


def _chattr(flag: str, folder: Path) -> bool:
    return shutil.which("chattr") is not None and subprocess.run(
        ["chattr", "-R", flag, str(folder)], capture_output=True).returncode == 0


def test_cli_reads_an_index_nobody_may_write(built: Path) -> None:
    """``chattr +i`` makes the folder and its files unwritable even for root."""
    if not _chattr("+i", built):
        pytest.skip("chattr +i is not available on this file system")
    try:
        assert not os.access(built / "ragloom.sqlite", os.W_OK)
        status = _cli("-i", str(built), "status", "--json", cwd=built.parent)
        assert status.returncode == 0, status.stderr
        assert '"sources": 3' in status.stdout
        search = _cli("-i", str(built), "search", "Kalman filter sensors", "-k", "1", "--json", cwd=built.parent)
        assert search.returncode == 0, search.stderr
        assert "kalman.txt" in _flat(search.stdout) and "not written to its audit log" in _flat(search.stderr)
        audit = _cli("-i", str(built), "audit", cwd=built.parent)
        assert audit.returncode == 0, audit.stderr
        assert "kalman" in _flat(audit.stdout)
        removal = _cli("-i", str(built), "remove", str(built.parent / "docs" / "kalman.txt"), cwd=built.parent)
        assert removal.returncode == 1 and "Traceback" not in _flat(removal.stderr), removal.stderr
    finally:
        _chattr("-i", built)


# -- 12: damaged derived indexes ------------------------------------------------------------
def _garble(files: list[Path]) -> None:
    assert files
    for path in files:
        data = bytearray(path.read_bytes())
        for i in range(0, len(data), 7):
            data[i] = (data[i] * 31 + 17) % 256
        path.write_bytes(bytes(data))


def _few_bytes_of_garbage(files: list[Path]) -> None:
    """What made tantivy panic on every search (``start <= orig_range.end``): with the
    fixture's single segment, tantivy opens the index and panics on the query."""
    assert files
    for path in files:
        data = bytearray(path.read_bytes())
        data[24:28] = b"\xff\xfe\xfd\xfc"
        path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_garble, _few_bytes_of_garbage])
@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_garbage_in_bm25_segments_is_rebuilt_once_with_a_warning(built: Path, embedder, mode: str, damage) -> None:
    if damage is _garble:  # tantivy fails to open it
        _garble([p for p in (built / "bm25").iterdir() if p.suffix in (".idx", ".term", ".pos", ".fast", ".store")])
    else:  # tantivy opens it, then panics on the search
        _few_bytes_of_garbage(list((built / "bm25").glob("*.pos")))
    with pytest.warns(RagloomWarning, match="BM25 index.*rebuilding it") as caught:
        index = Index.open(built, Config(), embedder=embedder)
        hits = index.search("Kalman filter sensors", k=1, mode=mode)
    with index:
        assert hits[0].source.endswith("kalman.txt")
        if damage is _few_bytes_of_garbage:
            assert "PanicException" in str(caught[0].message)
        assert len(caught) == 1  # rebuilt once
        with warnings.catch_warnings():
            warnings.simplefilter("error", RagloomWarning)
            assert index.search("bread flour", k=1, mode="lexical")[0].source.endswith("bread.txt")
    with Index.open(built, Config(), embedder=embedder) as index, warnings.catch_warnings():
        warnings.simplefilter("error", RagloomWarning)  # rebuilt on disk: the next process is quiet
        assert index.search("ROS topics", k=1, mode="lexical")[0].source.endswith("ros.md")


def test_garbage_in_the_vector_matrix_is_rebuilt_with_a_warning(built: Path, embedder) -> None:
    _garble(list((built / "vectors").glob("slots.*.npy")))
    with Index.open(built, Config(), embedder=embedder) as index:
        with pytest.warns(RagloomWarning, match="vector matrix.*rebuilding it"):
            hits = index.search("Kalman filter sensors", k=1, mode="dense")
        assert hits[0].source.endswith("kalman.txt")
    with Index.open(built, Config(), embedder=embedder) as index, warnings.catch_warnings():
        warnings.simplefilter("error", RagloomWarning)
        assert index.search("bread", k=1, mode="dense")[0].source.endswith("bread.txt")


# -- 13: reading never creates an index ------------------------------------------------------
def test_read_only_commands_do_not_turn_a_folder_into_an_index(tmp_path: Path) -> None:
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "holiday.txt").write_text("not an index")
    before = sorted(p.name for p in folder.rglob("*"))
    with pytest.raises(IndexNotFoundError, match="no ragloom index"):
        Index.open(folder, Config(), create=False)
    for command in (["status"], ["search", "anything"], ["audit"], ["audit", "--verify"]):
        result = _cli("-i", str(folder), *command, cwd=tmp_path)
        assert result.returncode == 1, result
        assert "no ragloom index" in _flat(result.stderr) and "Traceback" not in _flat(result.stderr), result.stderr
    assert sorted(p.name for p in folder.rglob("*")) == before
