"""Chroma and Qdrant stores: crash consistency of the write journal, and `ragloom migrate`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragloom.config import Config
from ragloom.filters import parse_where
from ragloom.stores.base import create_store, folder_bytes, write_lock_if_free
from ragloom.stores.migrate import migrate
from ragloom.stores.vectordb import VectorDBStore
from ragloom.testing.conformance import LAYOUT, corpus_vector, record_for, synthetic_chunks, unit_vector, write_corpus

BACKENDS = ["chroma", "qdrant"]


class Crash(BaseException):
    """Stands for the process dying: nothing after it runs."""


def _open(tmp_path: Path, backend: str) -> VectorDBStore:
    pytest.importorskip({"chroma": "chromadb", "qdrant": "qdrant_client"}[backend])
    store = create_store(tmp_path / "index", Config.from_dict({"store": {"backend": backend}}))
    assert isinstance(store, VectorDBStore)
    return store


def _new_version(source: str) -> tuple:
    chunks = synthetic_chunks(source, [40, 41], lambda n: f"rewritten text number{n}")
    return record_for(source, chunks, version="2"), chunks, np.stack([unit_vector(40), unit_vector(41)])


def _crash_while_replacing(tmp_path: Path, backend: str, monkeypatch, primitive: str, fault) -> tuple:
    """Write the corpus, then rewrite a.md with ``primitive`` replaced by ``fault``; reopen."""
    store = _open(tmp_path, backend)
    write_corpus(store)
    record, chunks, vectors = _new_version("a.md")
    monkeypatch.setattr(store, primitive, fault(getattr(store, primitive)))
    monkeypatch.setattr(store, "_recover", lambda path, entry: None)  # a dead process cleans nothing up
    with pytest.raises(Crash):
        store.replace_source(record, chunks, vectors)
    store.close()
    return _open(tmp_path, backend), record, chunks


def _die(real):
    def fault(*args):
        raise Crash()

    return fault


def _write_half_then_die(real):
    def fault(chunks, vectors):
        real(chunks[:1], vectors[:1])
        raise Crash()

    return fault


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_crash_after_the_database_write_is_rolled_forward_on_open(tmp_path, backend, monkeypatch):
    store, record, chunks = _crash_while_replacing(tmp_path, backend, monkeypatch, "_register", _die)
    assert store.get_source("a.md") == record
    assert store.count() == 15 - len(LAYOUT["a.md"]) + 2
    assert [c.chunk_id for c in store.search_lexical("rewritten", 10)] == sorted(c.id for c in chunks)
    store.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_crash_mid_write_drops_the_source_so_the_next_ingest_redoes_it(tmp_path, backend, monkeypatch):
    # The new chunks reuse the old chunk ids (ids follow position, not text): presence alone proves nothing.
    store, _, _ = _crash_while_replacing(tmp_path, backend, monkeypatch, "_upsert", _write_half_then_die)
    assert store.get_source("a.md") is None  # the registry never claims what the database lacks
    assert store.count() == 15 - len(LAYOUT["a.md"])
    assert store.search_dense(unit_vector(40), 100, parse_where({"source": "a.md"})) == []
    assert store.search_lexical("rewritten", 10) == []
    store.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_failed_write_is_settled_at_once_while_the_database_answers(tmp_path, backend, monkeypatch):
    store = _open(tmp_path, backend)
    write_corpus(store)
    record, chunks, vectors = _new_version("b.md")
    monkeypatch.setattr(store, "_upsert", lambda chunks, vectors: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        store.replace_source(record, chunks, vectors)
    assert store.get_source("b.md") is None
    assert store.count() == 15 - len(LAYOUT["b.md"])
    assert {c.source for c in store.get_chunks([c.chunk_id for c in store.search_dense(unit_vector(3), 100)])} == {
        "a.md", "c.md"}
    assert all("unique7" not in c.text for c in store.get_chunks([h.chunk_id for h in store.search_lexical("unique7", 5)]))
    store.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_migrate_copies_everything_and_resumes(tmp_path, backend):
    pytest.importorskip({"chroma": "chromadb", "qdrant": "qdrant_client"}[backend])
    origin = create_store(tmp_path / "index", Config())
    written = write_corpus(origin)
    target = _open(tmp_path, backend)
    report = migrate(origin, target)
    assert (len(report.copied), report.chunks) == (3, 15)
    assert target.list_sources() == origin.list_sources()
    assert target.embedder_info() == origin.embedder_info()
    assert target.get_chunks(list(written)) == origin.get_chunks(list(written))
    query = corpus_vector(5)
    for where in (None, {"tags": "x"}, {"page": {"$gte": 3}}):
        conditions = parse_where(where)
        got, expected = target.search_dense(query, 5, conditions), origin.search_dense(query, 5, conditions)
        assert [c.chunk_id for c in got] == [c.chunk_id for c in expected]
        got, expected = target.search_lexical("river desert", 5, conditions), origin.search_lexical("river desert", 5, conditions)
        assert [c.chunk_id for c in got] == [c.chunk_id for c in expected]

    origin.delete_source("c.md")
    again = migrate(origin, target)
    assert (again.copied, len(again.unchanged), again.removed) == ([], 2, ["c.md"])
    assert target.count() == origin.count()
    origin.close()
    target.close()


def test_migrate_command_copies_in_place_and_prints_the_config_change(tmp_path):
    pytest.importorskip("qdrant_client")
    import json
    import os
    import subprocess
    import sys

    origin = create_store(tmp_path / "index", Config())
    write_corpus(origin)
    origin.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    command = [sys.executable, "-m", "ragloom", "--index", str(tmp_path / "index"), "migrate", "--to", "qdrant"]
    with write_lock_if_free(tmp_path / "index") as held:  # as an ingest into the index would
        assert held
        busy = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert busy.returncode == 1 and "another process is writing to the index" in busy.stderr, busy.stderr
    report = subprocess.run([*command, "--json"], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert json.loads(report.stdout) == {**json.loads(report.stdout), "copied": 3, "chunks": 15}
    again = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert "3 unchanged" in again.stdout and "backend: qdrant" in again.stdout
    copy = _open(tmp_path, "qdrant")
    assert copy.count() == 15 and len(copy.list_sources()) == 3
    copy.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_disk_size_counts_each_file_once(tmp_path, backend, monkeypatch):
    pytest.importorskip({"chroma": "chromadb", "qdrant": "qdrant_client"}[backend])
    monkeypatch.chdir(tmp_path)
    inside = create_store(Path("index"), Config.from_dict({"store": {"backend": backend}}))  # a relative path
    write_corpus(inside)
    inside.flush()
    assert inside.disk_bytes() == folder_bytes(Path("index"))
    inside.close()

    settings = {"backend": backend, backend: {"path": str(tmp_path / "elsewhere")}}
    outside = create_store(Path("index2"), Config.from_dict({"store": settings}))
    write_corpus(outside)
    outside.flush()
    assert outside.disk_bytes() == folder_bytes(Path("index2")) + folder_bytes(tmp_path / "elsewhere") > 0
    outside.close()
