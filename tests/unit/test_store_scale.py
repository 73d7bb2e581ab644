"""The embedded store's scale paths against their exact references: filtered BM25 by over-fetching,
the approximate (faiss IVF) dense index, and its upkeep as sources come and go."""

from __future__ import annotations

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
              metadata={"group": i % 10, "rare": i % 200 == 0})
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
    terms = index.terms(query)
    text_query = lexical_module.tantivy.Query.boolean_query(
        [(lexical_module.tantivy.Occur.Should, lexical_module.tantivy.Query.term_query(index.schema, "text", t))
         for t in terms])
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
        where = parse_where({"group": 3})
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
            text_query = lexical_module.tantivy.Query.boolean_query(
                [(lexical_module.tantivy.Occur.Should,
                  lexical_module.tantivy.Query.term_query(index.schema, "text", t)) for t in index.terms(query)])
            for k in (1, 3, 10):
                # start from a window of k + 1 hits, so that widening and the tie rule decide
                hits = lexical_module._top_over_fetched(searcher, text_query, k, allowed, limit=k + 1)
                got = sorted(((searcher.doc(a)["id"][0], round(s, 4)) for s, a in hits), key=lambda x: (-x[1], x[0]))
                assert got[:k] == _reference_lexical(store, query, k, allowed), (query, k)
    finally:
        store.close()
