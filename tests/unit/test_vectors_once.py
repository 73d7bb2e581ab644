"""Vectors are stored once, in the memory-mapped vector file that SQLite indexes; a kill at any
moment leaves a consistent index, dead slots are compacted away, and schema-1 indexes (vectors
as SQLite blobs) are moved over on open."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from ragloom.config import Config
from ragloom.stores.embedded import EmbeddedStore
from ragloom.stores.embedded import vectorlog

sys.path.insert(0, str(Path(__file__).parent))
from test_store_scale import DIM, _corpus, _store, _write  # noqa: E402


def _files(path: Path) -> dict[str, int]:
    return {str(p.relative_to(path)): p.stat().st_size for p in path.rglob("*") if p.is_file()}


def test_each_vector_is_on_disk_once(tmp_path):
    vectors, texts = _corpus(1200)
    store = _store(tmp_path / "idx", vectors, texts)
    try:
        files = _files(tmp_path / "idx")
        assert files["vectors-0.f32"] == 1200 * DIM * 4
        assert not [name for name in files if name.startswith("vectors/") and "vectors." in name]
        columns = {r[1] for r in store.catalog.db.execute("PRAGMA table_info(embeddings)")}
        assert columns == {"content_hash", "slot", "checksum"}
        found = store.cached_vectors([c.content_hash for c in store.get_chunks([f"{i:08d}" for i in range(1200)])])
        assert len(found) == 1200
        for i in (0, 599, 1199):
            q = vectors[i]
            assert store.search_dense(q, 1)[0].chunk_id == f"{i:08d}"
    finally:
        store.close()


_KILL_MID_WRITE = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, {tests!r})
    from pathlib import Path
    from test_store_scale import _corpus, _write
    from ragloom.config import Config
    from ragloom.stores.embedded import EmbeddedStore
    from ragloom.stores.embedded.catalog import Catalog
    vectors, texts = _corpus(3000)
    store = EmbeddedStore.open(Path({path!r}), Config())
    bump = Catalog._bump_generation
    def bump_then_die(self):
        if self.count() > 1000:  # the third source: its vectors are written, nothing committed
            os.kill(os.getpid(), signal.SIGKILL)
        return bump(self)
    Catalog._bump_generation = bump_then_die
    for n, first in enumerate(range(1000, 3000, 500)):
        _write(store, vectors, texts, first, 500, f"late{{n}}")
""")


def test_a_kill_between_the_vector_write_and_the_commit_leaves_a_consistent_index(tmp_path):
    path = tmp_path / "idx"
    vectors, texts = _corpus(3000)
    store = _store(path, vectors[:1000], texts[:1000])
    store.close()
    script = _KILL_MID_WRITE.format(tests=str(Path(__file__).parent), path=str(path))
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == -9, result.stderr

    store = EmbeddedStore.open(path, Config())
    try:
        assert store.count() == 1000 and [s.path for s in store.list_sources()][-1] == "/s/src0001.txt"
        slots = store.catalog.get_meta("vector_slots")
        assert slots == 1000
        assert (path / "vectors-0.f32").stat().st_size == 1500 * DIM * 4  # the uncommitted source's bytes
        ids = [f"{i:08d}" for i in range(1000)]
        found = store.cached_vectors([c.content_hash for c in store.get_chunks(ids)])
        assert len(found) == 1000
        assert store.search_dense(vectors[321], 1)[0].chunk_id == f"{321:08d}"
        # the next write goes over the dead bytes; flush trims the file to what is committed
        _write(store, vectors, texts, 2000, 100, "after")
        store.flush()
        assert (path / "vectors-0.f32").stat().st_size == 1100 * DIM * 4
        assert store.search_dense(vectors[2050], 1)[0].chunk_id == f"{2050:08d}"
        assert store.search_dense(vectors[321], 1)[0].chunk_id == f"{321:08d}"
    finally:
        store.close()


def test_dead_slots_are_compacted_into_a_new_file(tmp_path):
    path = tmp_path / "idx"
    vectors, texts = _corpus(3000)
    store = _store(path, vectors, texts)
    try:
        for name in ("/s/src0000.txt", "/s/src0001.txt", "/s/src0002.txt", "/s/src0003.txt"):
            store.delete_source(name)
        store.catalog.prune_embeddings()
        dropped = store.catalog.compact_vectors(min_dead=10)
        store.flush()
        assert dropped == 2000
        assert not (path / "vectors-0.f32").exists() and (path / "vectors-1.f32").stat().st_size == 1000 * DIM * 4
        assert store.catalog.get_meta("vector_slots") == 1000
        for i in (2000, 2500, 2999):
            assert store.search_dense(vectors[i], 1)[0].chunk_id == f"{i:08d}"
        ids = [f"{i:08d}" for i in range(2000, 3000)]
        found = store.cached_vectors([c.content_hash for c in store.get_chunks(ids)])
        assert len(found) == 1000
        assert np.allclose(np.stack([found[c.content_hash] for c in store.get_chunks(ids)]), vectors[2000:])
    finally:
        store.close()


def test_a_vector_failing_its_checksum_counts_as_missing(tmp_path):
    path = tmp_path / "idx"
    vectors, texts = _corpus(600)
    store = _store(path, vectors, texts)
    try:
        chunk = store.get_chunks([f"{5:08d}"])[0]
        slot = store.catalog.db.execute("SELECT slot FROM embeddings WHERE content_hash = ?",
                                        (chunk.content_hash,)).fetchone()[0]
        with open(path / "vectors-0.f32", "r+b") as handle:
            handle.seek(slot * DIM * 4)
            handle.write(np.full(DIM, 0.5, dtype=np.float32).tobytes())
        store.catalog._view = None
        assert chunk.content_hash not in store.cached_vectors([chunk.content_hash])
        other = store.get_chunks([f"{6:08d}"])[0]
        assert other.content_hash in store.cached_vectors([other.content_hash])
    finally:
        store.close()


def test_a_schema_1_index_moves_its_vector_blobs_to_the_vector_file(tmp_path):
    path = tmp_path / "idx"
    vectors, texts = _corpus(800)
    store = _store(path, vectors, texts)
    before = [c.chunk_id for c in store.search_dense(vectors[17], 10)]
    store.close()
    # Rewrite it as schema 1 wrote it: vectors as blobs, no vector file.
    db = sqlite3.connect(path / "ragloom.sqlite")
    view = vectorlog.open_view(path / "vectors-0.f32", 800, DIM)
    blobs = [(h, np.array(view[s]).tobytes()) for h, s in db.execute("SELECT content_hash, slot FROM embeddings")]
    db.executescript("DROP TABLE embeddings; CREATE TABLE embeddings (content_hash TEXT PRIMARY KEY, vector BLOB NOT NULL);")
    db.executemany("INSERT INTO embeddings VALUES (?, ?)", blobs)
    db.execute("DELETE FROM meta WHERE key IN ('vector_file', 'vector_slots', 'vector_dimension')")
    db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    del view
    (path / "vectors-0.f32").unlink()

    store = EmbeddedStore.open(path, Config())
    try:
        assert store.catalog.get_meta("schema_version") == 2
        assert (path / "vectors-0.f32").stat().st_size == 800 * DIM * 4
        assert [c.chunk_id for c in store.search_dense(vectors[17], 10)] == before
        assert json.loads(json.dumps(store.catalog.get_meta("vector_slots"))) == 800
    finally:
        store.close()


def test_optimize_drops_every_dead_slot_and_rebuilds(tmp_path):
    from test_store_scale import _ann_config

    path = tmp_path / "idx"
    vectors, texts = _corpus(3000)
    store = _store(path, vectors, texts, config=_ann_config(threshold=1000))
    try:
        store.delete_source("/s/src0000.txt")
        store.flush()  # 500 dead slots: fewer than the live ones, so no compaction yet
        assert store.catalog.get_meta("vector_slots") == 3000
        report = store.optimize()
        assert report["dead_vector_slots_dropped"] == 500 and report["chunks"] == 2500
        assert (path / "vectors-1.f32").stat().st_size == 2500 * DIM * 4 and not (path / "vectors-0.f32").exists()
        assert store._ann_current() and store.ann.trained_size == 2500
        assert store.lexical.generation() == store.catalog.generation() == store.matrix.generation
        assert store.search_dense(vectors[2600], 1)[0].chunk_id == f"{2600:08d}"
        assert store.search_lexical(texts[2601], 1)  # BM25 answers from the rebuilt index
    finally:
        store.close()
