"""The embedded store's scale paths against their exact references: filtered BM25 by over-fetching,
the approximate (faiss IVF) dense index, and its upkeep as sources come and go."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ragloom.config import Config
from ragloom.filters import parse_where
from ragloom.stores.embedded import EmbeddedStore
from ragloom.stores.embedded import lexical as lexical_module
from ragloom.types import Chunk, SourceRecord, content_hash

DIM = 32
WORDS = [f"w{i}" for i in range(300)]


def _corpus(n: int, seed: int = 3) -> tuple[np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(20, DIM))
    vectors = centers[rng.integers(0, 20, size=n)] + 0.8 * rng.normal(size=(n, DIM))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    ranks = np.minimum(rng.zipf(1.4, size=(n, 12)), len(WORDS)) - 1
    texts = [" ".join(WORDS[r] for r in row) for row in ranks]
    for i in range(0, n, 97):  # identical texts: BM25 ties that a cut-off must not split
        texts[i] = "w1 w2 w3 w4"
    return vectors, texts


def _write(store: EmbeddedStore, vectors: np.ndarray, texts: list[str], first: int, count: int, name: str) -> None:
    source = f"/s/{name}.txt"
    chunks = [
        Chunk(id=f"{i:08d}", text=texts[i], source=source, doc_id=str(i), chunk_index=i - first, start=0,
              end=len(texts[i]), policy="t", content_hash=content_hash(f"{texts[i]}|{i}"), token_count=12,
              metadata={"group": i % 10, "rare": i % 200 == 0, "team": "abc"[i % 3],
                        "tags": [f"t{i % 4}", [f"u{i % 5}"]], "level": [1.0, 2.5][i % 2]})
        for i in range(first, first + count)
    ]
    store.replace_source(SourceRecord(source, content_hash(source), 0.0, 0, count, time.time()), chunks,
                         vectors[first:first + count])


def _store(path: Path, vectors: np.ndarray, texts: list[str], per_source: int = 500, config: Config | None = None):
    store = EmbeddedStore.open(path, config or Config())
    store.set_embedder_info({"model_id": "synthetic", "dimension": DIM})
    for first in range(0, len(texts), per_source):
        _write(store, vectors, texts, first, min(per_source, len(texts) - first), f"src{first // per_source:04d}")
    store.flush()
    return store


def _reference_lexical(store: EmbeddedStore, query: str, k: int, allowed: np.ndarray) -> list[tuple[str, float]]:
    """The filtered BM25 ranking by tantivy's term-set clause over the allowed rows."""
    index = store.lexical
    text_query = index.query_of(query)
    searcher = index.index.searcher()
    hits = lexical_module._top(searcher, lexical_module._restricted(index.schema, text_query, allowed), k)
    found = sorted(((searcher.doc(a)["id"][0], round(s, 4)) for s, a in hits), key=lambda x: (-x[1], x[0]))
    return found[:k]


@pytest.fixture(scope="module")
def corpus() -> tuple[np.ndarray, list[str]]:
    return _corpus(6000)


def test_filtered_bm25_over_fetch_matches_the_term_set_clause(tmp_path, corpus):
    vectors, texts = corpus
    store = _store(tmp_path / "idx", vectors, texts)
    try:
        rng = np.random.default_rng(0)
        filters = [{"group": 3}, {"group": {"$in": [1, 2, 5, 7, 8]}}, {"group": {"$ne": 4}}, {"rare": True}]
        for where in filters:
            allowed = store._allowed_rows(parse_where(where))
            for _ in range(15):
                query = " ".join(rng.choice(WORDS[:40], size=3))
                for k in (1, 10, 100):
                    got = [(c.chunk_id, round(c.score, 4)) for c in store.search_lexical(query, k, parse_where(where))]
                    assert got == _reference_lexical(store, query, k, allowed), (where, query, k)
        # the tie group: 62 identical texts; a filter keeping some of them returns all that tie
        got = store.search_lexical("w1 w2 w3 w4", 3, parse_where({"group": {"$in": [0, 1, 2]}}))
        assert len({c.score for c in got[:3]}) == 1
    finally:
        store.close()


def test_a_very_selective_filter_falls_back_to_the_clause(tmp_path, corpus, monkeypatch):
    vectors, texts = corpus
    store = _store(tmp_path / "idx", vectors, texts)
    try:
        monkeypatch.setattr(lexical_module, "OVER_FETCH_LIMIT", 50)  # force the clause for every filter
        where = parse_where({"group": {"$gte": 3, "$lte": 3}})  # a range: not answered by metadata terms
        assert store.lexical.metadata_filter(where) is None
        allowed = store._allowed_rows(where)
        got = [(c.chunk_id, round(c.score, 4)) for c in store.search_lexical("w5 w9", 20, where)]
        assert got == _reference_lexical(store, "w5 w9", 20, allowed)
        assert got and all(int(cid) % 10 == 3 for cid, _ in got)
    finally:
        store.close()


def test_over_fetch_widens_until_nothing_unfetched_can_tie_the_kth(tmp_path, corpus):
    vectors, texts = corpus
    store = _store(tmp_path / "idx", vectors, texts)
    try:
        index = store.lexical
        searcher = index.index.searcher()
        allowed = store._allowed_rows(parse_where({"group": {"$in": [0, 1, 2]}}))
        rng = np.random.default_rng(1)
        queries = ["w1 w2 w3 w4"] + [" ".join(rng.choice(WORDS[:30], size=2)) for _ in range(10)]
        for query in queries:
            text_query = index.query_of(query)
            for k in (1, 3, 10):
                # start from a window of k + 1 hits, so that widening and the tie rule decide
                hits = lexical_module._top_over_fetched(searcher, text_query, k, allowed, limit=k + 1)
                got = sorted(((searcher.doc(a)["id"][0], round(s, 4)) for s, a in hits), key=lambda x: (-x[1], x[0]))
                assert got[:k] == _reference_lexical(store, query, k, allowed), (query, k)
    finally:
        store.close()


#: Filters the metadata terms answer inside tantivy, and (with the second's kinds) what they mean:
#: a number equals as a float, a text exactly, a boolean only a boolean; a list matches by any element.
TERM_FILTERS = [
    {"group": 3}, {"group": 3.0}, {"group": {"$in": [1, 2, 5]}}, {"rare": True}, {"team": "b"},
    {"tags": "t2"}, {"tags": "u4"}, {"tags": {"$in": ["t1", "u0"]}}, {"level": 2.5}, {"group": 0, "team": "a"},
    {"$and": [{"team": "b"}, {"team": "c"}]}, {"group": "3"}, {"rare": 1}, {"team": "B"}, {"missing": 1},
]


def test_equality_filters_run_inside_tantivy_and_equal_the_filter_by_rows(tmp_path, corpus):
    vectors, texts = corpus
    store = _store(tmp_path / "idx", vectors, texts)
    try:
        rng = np.random.default_rng(4)
        for where in TERM_FILTERS:
            conditions = parse_where(where)
            assert store.lexical.metadata_filter(conditions) is not None, where
            allowed = store._allowed_rows(conditions)
            for _ in range(6):
                query = " ".join(rng.choice(WORDS[:40], size=3))
                for k in (1, 10, 100):
                    got = [(c.chunk_id, round(c.score, 4)) for c in store.search_lexical(query, k, conditions)]
                    assert got == _reference_lexical(store, query, k, allowed), (where, query, k)
                    if where == {"group": 3}:
                        assert got and all(int(cid) % 10 == 3 for cid, _ in got)
        for where in ({"group": "3"}, {"rare": 1}, {"team": "B"}, {"missing": 1}):  # other kinds, case, keys
            assert not store.search_lexical("w1 w2 w3 w4", 10, parse_where(where)), where
    finally:
        store.close()


def test_filters_the_terms_cannot_answer_filter_by_rows(tmp_path, corpus):
    vectors, texts = corpus
    store = _store(tmp_path / "idx", vectors, texts)
    try:
        for where in ({"group": {"$ne": 4}}, {"group": {"$gt": 7}}, {"team": {"$contains": "b"}},
                      {"team": "x" * 201}, {"group": 3, "level": {"$lt": 2}}):
            conditions = parse_where(where)
            assert store.lexical.metadata_filter(conditions) is None, where
            got = [(c.chunk_id, round(c.score, 4)) for c in store.search_lexical("w5 w9", 20, conditions)]
            assert got == _reference_lexical(store, "w5 w9", 20, store._allowed_rows(conditions)), where
        with pytest.raises(ValueError, match="allowed rows"):  # never an unfiltered search by mistake
            store.lexical.search("w5", 5, None, parse_where({"group": {"$ne": 4}}))
    finally:
        store.close()


def test_an_index_stamped_before_the_metadata_terms_filters_by_rows(tmp_path, corpus):
    vectors, texts = corpus
    store = _store(tmp_path / "idx", vectors, texts)
    store.close()
    state = tmp_path / "idx" / "bm25" / "ragloom-state.json"
    stamped = json.loads(state.read_text())
    assert stamped.pop("metadata_terms") is True
    state.write_text(json.dumps(stamped))
    reader = EmbeddedStore.open(tmp_path / "idx", Config(), read_only=True)
    try:
        where = parse_where({"group": 3})
        got = [(c.chunk_id, round(c.score, 4)) for c in reader.search_lexical("w5 w9", 20, where)]
        assert not reader.lexical.metadata_terms and reader.lexical.metadata_filter(where) is None
        assert got and got == _reference_lexical(reader, "w5 w9", 20, reader._allowed_rows(where))
    finally:
        reader.close()


# -- the approximate index -------------------------------------------------------------------------

def _ann_config(threshold: int = 1000, exact_rows: int = 100) -> Config:
    return Config.model_validate({"store": {"embedded": {"ann": {"threshold": threshold, "exact_rows": exact_rows}}}})


def _recall(store: EmbeddedStore, queries: np.ndarray, k: int = 10, where=None) -> float:
    conditions = parse_where(where) if where else ()
    allowed = store._allowed_rows(conditions)
    found = []
    for q in queries:
        approximate = store.search_dense(q, k, conditions)
        exact = store.matrix.search(q, k, allowed)
        found.append(len({c.chunk_id for c in approximate} & {c.chunk_id for c in exact[:k]}) / k)
    return float(np.mean(found))


def _queries(vectors: np.ndarray, n: int = 40, seed: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    q = vectors[rng.integers(0, len(vectors), size=n)] + 0.3 * rng.normal(size=(n, DIM)).astype(np.float32)
    return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


def test_ann_recall_against_exact_with_and_without_a_filter(tmp_path, corpus):
    vectors, texts = corpus
    store = _store(tmp_path / "idx", vectors, texts, config=_ann_config())
    try:
        assert store._ann_current() and store.ann.index.ntotal == len(texts)
        queries = _queries(vectors)
        assert _recall(store, queries) >= 0.95
        assert _recall(store, queries, where={"group": 3}) >= 0.95
        # every hit passes the filter, and carries the exact cosine
        for q in queries[:5]:
            hits = store.search_dense(q, 10, parse_where({"group": 3}))
            assert len(hits) == 10 and all(int(h.chunk_id) % 10 == 3 for h in hits)
            for h in hits:
                assert h.score == pytest.approx(float(vectors[int(h.chunk_id)] @ q), abs=1e-5)
        # a filter keeping fewer rows than exact_rows is searched exactly: identical to the matrix
        rare = parse_where({"rare": True})
        for q in queries[:5]:
            assert store.search_dense(q, 10, rare) == store.matrix.search(q, 10, store._allowed_rows(rare))
    finally:
        store.close()


def test_ann_follows_adds_and_deletes_without_retraining(tmp_path, corpus):
    vectors, texts = corpus
    extra_vectors, extra_texts = _corpus(7000, seed=11)
    store = _store(tmp_path / "idx", vectors[:5000], texts[:5000], config=_ann_config())
    try:
        trained = store.ann.trained_size
        centroids = store.ann.index.quantizer.reconstruct_n(0, store.ann.index.nlist).copy()
        store.delete_source("/s/src0000.txt")  # rows 0..499
        _write(store, np.vstack([vectors[:5000], extra_vectors[5000:5500]]), texts[:5000] + extra_texts[5000:5500],
               5000, 500, "added")
        store.flush()
        assert store.ann.trained_size == trained
        assert np.array_equal(store.ann.index.quantizer.reconstruct_n(0, store.ann.index.nlist), centroids)
        assert np.array_equal(store.ann.rows, store.matrix.rows) and store.ann.index.ntotal == 5000
        for i in (5000, 5123, 5499):  # a new chunk's own vector finds it first
            assert store.search_dense(extra_vectors[i], 1)[0].chunk_id == f"{i:08d}"
        deleted = {f"{i:08d}" for i in range(500)}
        for q in _queries(vectors, 10):
            assert not deleted & {c.chunk_id for c in store.search_dense(q, 20)}
        # the saved index is the caught-up one
        reopened = EmbeddedStore.open(tmp_path / "idx", _ann_config())
        reopened.search_dense(extra_vectors[5000], 1)
        assert reopened.ann.generation == reopened.catalog.generation() and reopened.ann.trained_size == trained
        reopened.close()
    finally:
        store.close()


def test_stale_or_damaged_ann_is_brought_up_to_date_from_sqlite(tmp_path, corpus):
    vectors, texts = corpus
    path = tmp_path / "idx"
    store = _store(path, vectors[:4000], texts[:4000], config=_ann_config())
    # A crash after SQLite committed but before flush: the derived caches are behind.
    _write(store, vectors, texts, 4000, 500, "late")
    store.close()
    reader = EmbeddedStore.open(path, _ann_config())
    try:
        assert reader.search_dense(vectors[4321], 1)[0].chunk_id == f"{4321:08d}"
        assert reader._ann_current() and reader.ann.index.ntotal == 4500
    finally:
        reader.close()
    # A damaged index file is rebuilt on the next open that can write.
    state = json.loads((path / "ann" / "state.json").read_text())
    (path / "ann" / f"ivf.{state['tag']}.faiss").write_bytes(b"not an index")
    writer = EmbeddedStore.open(path, _ann_config())
    try:
        writer.flush()
        assert writer._ann_current() and writer.ann.index.ntotal == 4500
        assert _recall(writer, _queries(vectors)) >= 0.95
    finally:
        writer.close()


def test_below_the_threshold_there_is_no_ann_and_shrinking_drops_it(tmp_path, corpus):
    vectors, texts = corpus
    path = tmp_path / "idx"
    store = _store(path, vectors[:1500], texts[:1500], config=_ann_config(threshold=1200))
    try:
        assert store._ann_current() and (path / "ann" / "state.json").exists()
        store.delete_source("/s/src0000.txt")
        store.delete_source("/s/src0001.txt")
        store.flush()
        assert not store.ann.ready and not list((path / "ann").glob("*"))
        q = _queries(vectors, 1)[0]
        assert store.search_dense(q, 10) == store.matrix.search(q, 10)
    finally:
        store.close()
    small = _store(tmp_path / "small", vectors[:500], texts[:500], config=_ann_config(threshold=1200))
    assert not small.ann.ready and not (tmp_path / "small" / "ann").exists()
    small.close()


def test_ragloom_index_optimize_retrains_the_approximate_index(tmp_path, corpus):
    vectors, texts = corpus
    path = tmp_path / "idx"
    store = _store(path, vectors[:3000], texts[:3000], config=_ann_config())
    first_tag = json.loads((path / "ann" / "state.json").read_text())["tag"]
    store.close()
    (tmp_path / "ragloom.yaml").write_text("store:\n  embedded:\n    ann:\n      threshold: 1000\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    result = subprocess.run([sys.executable, "-m", "ragloom", "--index", str(path), "index", "optimize", "--json"],
                            cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["chunks"] == 3000 and report["approximate_index"].startswith("IVF")
    state = json.loads((path / "ann" / "state.json").read_text())
    assert state["tag"] != first_tag and state["trained_size"] == 3000


def test_a_small_change_is_caught_up_in_memory_without_rewriting_the_saved_index(tmp_path, corpus):
    vectors, texts = corpus
    path = tmp_path / "idx"
    store = _store(path, vectors[:5000], texts[:5000], config=_ann_config())
    saved = (path / "ann" / "state.json").read_text()
    _write(store, vectors, texts, 5000, 20, "small")  # 20 rows: under 1% of the index
    store.flush()
    assert (path / "ann" / "state.json").read_text() == saved and store._ann_current()
    assert store.search_dense(vectors[5010], 1)[0].chunk_id == f"{5010:08d}"
    store.close()
    reader = EmbeddedStore.open(path, _ann_config())
    try:
        assert reader.search_dense(vectors[5011], 1)[0].chunk_id == f"{5011:08d}"
        assert reader._ann_current() and reader.ann.index.ntotal == 5020
    finally:
        reader.close()


def test_hybrid_halves_run_together_and_equal_the_separate_searches(tmp_path, corpus, monkeypatch):
    from ragloom.stores.embedded import store as store_module

    monkeypatch.setattr(store_module, "PARALLEL_ROWS", 1000)  # the corpus is past it: two threads
    submitted = []
    pool = store_module._workers()

    class Counting:
        def submit(self, fn, *args):
            submitted.append(fn.__name__)
            return pool.submit(fn, *args)

    monkeypatch.setattr(store_module, "_workers", Counting)
    vectors, texts = corpus
    store = _store(tmp_path / "idx", vectors, texts, config=_ann_config())
    try:
        for where in (None, {"group": 3}, {"rare": True}):
            conditions = parse_where(where) if where else ()
            for i in (1, 500, 4321):
                dense, lexical = store.search_both(vectors[i], texts[i], 50, conditions)
                assert dense == store.search_dense(vectors[i], 50, conditions)
                assert lexical == store.search_lexical(texts[i], 50, conditions)
        assert submitted == ["_lexical"] * 9
    finally:
        store.close()


def test_a_cached_filter_follows_new_writes(tmp_path, corpus):
    vectors, texts = corpus
    store = _store(tmp_path / "idx", vectors[:2000], texts[:2000])
    try:
        where = parse_where({"group": 3})
        before = store._allowed_rows(where)
        assert store._allowed_rows(where) is before  # reused within a generation
        assert not before.flags.writeable
        _write(store, vectors, texts, 2000, 100, "more")
        store.flush()
        hits = store.search_dense(vectors[2003], 5, where)
        assert hits[0].chunk_id == f"{2003:08d}"  # a row written after the filter was first used
        assert len(store._allowed_rows(where)) == len(before) + 10
    finally:
        store.close()


def test_the_count_kept_per_generation_follows_writes_from_this_store_and_another(tmp_path, corpus):
    vectors, texts = corpus
    store = _store(tmp_path / "idx", vectors[:1000], texts[:1000])
    other = EmbeddedStore.open(tmp_path / "idx", Config())
    try:
        assert store.count() == store.count() == 1000
        _write(store, vectors, texts, 1000, 100, "more")
        assert store.count() == 1100
        other.delete_source("/s/src0000.txt")  # 500 chunks, written by another connection
        assert store.count() == 600 == other.count()
    finally:
        other.close()
        store.close()


def test_small_gathers_read_the_vector_file_without_mapping_it(tmp_path, corpus):
    """Rescoring reads rows with pread (so a search process's RSS does not grow by the pages
    of a 1.5 GB file); the result is the mapped file's bytes, and survives the file being
    unlinked by a compaction while a reader still uses it."""
    vectors, texts = corpus
    store = _store(tmp_path / "idx", vectors[:3000], texts[:3000])
    try:
        matrix = store.matrix
        positions = np.array([0, 17, 2999, 5, 5])
        assert matrix._reader is not None
        read = matrix.at(positions)
        assert read.flags.writeable and read.dtype == np.float32
        np.testing.assert_array_equal(read, np.asarray(matrix.vectors[matrix.slots[positions]]))
        np.testing.assert_array_equal(read, vectors[[0, 17, 2999, 5, 5]])
        os.unlink(matrix.vectors.filename)
        np.testing.assert_array_equal(matrix.at(positions[:2]), vectors[[0, 17]])
    finally:
        store.close()
