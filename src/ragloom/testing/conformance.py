"""A conformance suite every ``Store`` passes: subclass it and say how to configure the store.

What a store must do is the ``Store`` class in ``ragloom/stores/base.py``: the abstract methods of
its three roles, and its ``Abilities``. This suite checks the roles on every store, and each
ability from the store's declaration: asserted where declared, skipped (naming the declaration)
where not, and a store that does not declare one is checked not to offer it.

::

    from ragloom.testing.conformance import StoreConformance

    class TestMyStore(StoreConformance):
        @pytest.fixture(scope="class")
        @classmethod
        def store_config(cls):
            return Config.from_dict({"store": {"backend": "mystore"}})

The suite writes a small synthetic corpus (12-d deterministic unit vectors, metadata
of every kind the filter language handles) and checks results against brute force:
cosine scores over the same vectors and ``filters.matches`` over the same metadata.
Needs pytest.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ..config import Config
from ..filters import matches, parse_where, value_kinds
from ..stores.base import Abilities, AuditEntry, Candidate, Store, create_store, rank_candidates
from ..types import Chunk, SourceRecord, content_hash

DIMENSION = 12
EMBEDDER = {"model_id": "test:synthetic", "dimension": DIMENSION}

# Filters checked against filters.matches; together they use every operator on every kind of value.
FILTERS: list[dict[str, Any]] = [
    {"kind": "note"},
    {"kind": {"$ne": "note"}},
    {"kind": {"$in": ["note", "code"]}},
    {"kind": {"$gte": "note"}},
    {"page": 2},
    {"page": 2.0},
    {"page": {"$ne": 2}},
    {"page": {"$in": [1, 3]}},
    {"page": {"$lt": 3}},
    {"page": {"$lte": 3}},
    {"page": {"$gt": 2}},
    {"page": {"$gte": 2, "$lt": 4}},
    {"weight": {"$gte": 2.5}},
    {"weight": 1.5},
    {"flag": True},
    {"flag": {"$ne": True}},
    {"tags": "x"},
    {"tags": {"$ne": "x"}},
    {"tags": {"$in": ["y", "z"]}},
    {"nums": 3},
    {"nums": {"$gt": 10}},
    {"maybe": {"$ne": 1}},
    {"maybe": 1},
    {"nested": {"$ne": "a"}},
    {"mixed": "a"},
    {"mixed": 1},
    {"kind": "note", "flag": True},
    {"absent": "x"},
    {"absent": {"$ne": "x"}},
    {"source": "b.md"},
    {"kind": {"$contains": "OT"}},
    {"kind": {"$contains": "p"}, "flag": True},
    {"tags": {"$contains": "x"}},
    {"mixed": {"$contains": "A"}},
    {"page": {"$contains": "2"}},
    {"absent": {"$contains": "x"}},
]


# -- the synthetic corpus -------------------------------------------------------------------
def unit_vector(seed: int, dimension: int = DIMENSION) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(dimension).astype(np.float32)
    return vector / np.linalg.norm(vector)


def synthetic_metadata(n: int) -> dict[str, Any]:
    """Metadata of chunk ``n``: ints, floats, strings, bools, lists, None, nested and mixed values."""
    meta: dict[str, Any] = {
        "page": n % 4 + 1,
        "weight": n * 0.5,
        "flag": n % 2 == 0,
        "tags": [["x"], ["x", "y"], [], ["z"]][n % 4],
        "section_path": ["Intro", f"Part {n % 3}"],
    }
    if n % 5 != 4:
        meta["kind"] = ["note", "paper", "code"][n % 3]
    if n % 3 == 0:
        meta["nums"] = [n, n + 1]
    meta["maybe"] = None if n % 2 else 1
    if n == 7:
        meta["page"] = 2.0  # a float equal to an int: $eq 2 must find it
    if n == 0:
        meta["nested"] = {"a": 1}
    if n == 1:
        meta["mixed"] = [1, "a"]
    return meta


_WORDS = ["river", "mountain", "forest", "desert", "harbor", "valley"]


def synthetic_chunks(source: str, numbers: list[int], text_of: Callable[[int], str]) -> list[Chunk]:
    chunks = []
    for index, n in enumerate(numbers):
        text = text_of(n)
        meta = {"source": source, "doc_id": source, "chunk_index": index, **synthetic_metadata(n)}
        chunks.append(Chunk(
            id=Chunk.make_id(source, source, index, index * 100, index * 100 + 99, "test"),
            text=text, source=source, doc_id=source, chunk_index=index, start=index * 100,
            end=index * 100 + 99, policy="test", content_hash=content_hash(text), token_count=4, metadata=meta,
        ))
    return chunks


def record_for(source: str, chunks: list[Chunk], version: str = "1") -> SourceRecord:
    return SourceRecord(path=source, content_hash=content_hash(source + version), mtime=1_700_000_000.0,
                        size=100 * len(chunks), chunk_count=len(chunks), ingested_at=1_700_000_100.0,
                        loader="text", policy="test")


# Three sources; chunk 13 repeats chunk 2's vector and text, so scores tie and chunk id decides.
LAYOUT = {"a.md": list(range(0, 6)), "b.md": list(range(6, 11)), "c.md": list(range(11, 15))}
_TWIN, _TWIN_OF = 13, 2


def corpus_vector(n: int) -> np.ndarray:
    return unit_vector(1000 + (_TWIN_OF if n == _TWIN else n))


def _text(n: int) -> str:
    n = _TWIN_OF if n == _TWIN else n
    return f"{_WORDS[n % 6]} {_WORDS[(n + 2) % 6]} token{n} unique{n}"


def write_corpus(store: Store) -> dict[str, tuple[Chunk, np.ndarray]]:
    """Write the three sources; return chunk id -> (chunk, vector)."""
    store.set_embedder_info(EMBEDDER)
    written: dict[str, tuple[Chunk, np.ndarray]] = {}
    for source, numbers in LAYOUT.items():
        chunks = synthetic_chunks(source, numbers, _text)
        vectors = np.stack([corpus_vector(n) for n in numbers])
        store.replace_source(record_for(source, chunks), chunks, vectors)
        written.update({c.id: (c, v) for c, v in zip(chunks, vectors)})
    store.flush()
    return written


def brute_force(
    written: dict[str, tuple[Chunk, np.ndarray]], query: np.ndarray, k: int, where: dict[str, Any] | None = None
) -> list[Candidate]:
    conditions = parse_where(where)
    scored = [Candidate(cid, float(v @ query)) for cid, (c, v) in written.items() if matches(c.metadata, conditions)]
    return rank_candidates(scored, k)


def require_ability(store: Store, ability: str) -> None:
    """Skip the calling test unless the store declares ``ability`` (``stores.base.Abilities``)."""
    if not dataclasses.asdict(store.abilities)[ability]:
        pytest.skip(f"the {store.name or type(store).__name__} store does not declare Abilities.{ability}")


# A fixed corpus for BM25 against an independent implementation (bm25s): words that every
# analyser keeps as they are (no stop word, no stem, no identifier), lengths and counts that vary.
BM25_K1, BM25_B = 1.2, 0.75
BM25_TEXTS = [
    "river river mountain",
    "river forest desert harbor valley meadow",
    "mountain mountain mountain forest",
    "desert",
    "harbor valley river mountain forest desert meadow harbor valley river",
    "meadow meadow forest forest river",
    "valley",
    "forest mountain harbor desert river meadow valley forest mountain harbor desert river",
]
BM25_QUERIES = ["river", "mountain forest", "meadow harbor valley", "desert", "valley river mountain"]


def bm25_reference(texts: list[str], query: str) -> list[float]:
    """BM25 scores of ``query`` over ``texts`` by bm25s (Lucene's idf, ``ln(1 + (N - n + 0.5) /
    (n + 0.5))``), with the ``(k1 + 1)`` numerator ragloom's stores keep (bm25s leaves it out)."""
    import bm25s

    reference = bm25s.BM25(method="lucene", k1=BM25_K1, b=BM25_B)
    reference.index([text.split() for text in texts], show_progress=False)
    return [float(score) * (BM25_K1 + 1) for score in reference.get_scores(query.split())]


# -- the suite ------------------------------------------------------------------------------
class StoreOpener:
    """Opens the store under test at one index directory, any number of times."""

    def __init__(self, path: Path, config: Config) -> None:
        self.path, self.config = path, config
        self.open_stores: list[Store] = []

    def open(self) -> Store:
        store = create_store(self.path, self.config)
        self.open_stores.append(store)
        return store

    def reopen(self, store: Store) -> Store:
        self.close(store)
        return self.open()

    def close(self, store: Store) -> None:
        if store in self.open_stores:
            self.open_stores.remove(store)
            store.close()

    def close_all(self) -> None:
        for store in list(self.open_stores):
            self.close(store)


def assert_same_ranking(got: list[Candidate], expected: list[Candidate], tolerance: float = 1e-4) -> None:
    assert [c.chunk_id for c in got] == [c.chunk_id for c in expected]
    for g, e in zip(got, expected):
        assert g.score == pytest.approx(e.score, abs=tolerance)


class StoreFixtures:
    """The stores the conformance tests run on (each part below is a mixin over these).

    Provide a class-scoped ``store_config`` fixture returning a Config. Read-only tests
    share one store written once per class; tests that write get a fresh one. A backend
    whose data lives outside the index directory (a server) overrides ``config_for`` so
    that each fresh store gets its own collection.
    """

    @pytest.fixture(scope="class")
    @classmethod
    def store_config(cls) -> Config:
        raise NotImplementedError("a StoreConformance subclass must define a store_config fixture")

    @classmethod
    def config_for(cls, config: Config, index_dir: Path) -> Config:
        return config

    @pytest.fixture
    def opener(self, tmp_path: Path, store_config: Config) -> Iterator[StoreOpener]:
        index_dir = tmp_path / "index"
        opener = StoreOpener(index_dir, self.config_for(store_config, index_dir))
        yield opener
        opener.close_all()

    @pytest.fixture
    def store(self, opener: StoreOpener) -> Store:
        return opener.open()

    @pytest.fixture
    def written(self, store: Store) -> dict[str, tuple[Chunk, np.ndarray]]:
        return write_corpus(store)

    @pytest.fixture(scope="class")
    @classmethod
    def shared(
        cls, store_config: Config, tmp_path_factory: pytest.TempPathFactory
    ) -> Iterator[tuple[Store, dict[str, tuple[Chunk, np.ndarray]]]]:
        index_dir = tmp_path_factory.mktemp("shared") / "index"
        opener = StoreOpener(index_dir, cls.config_for(store_config, index_dir))
        store = opener.open()
        yield store, write_corpus(store)
        opener.close_all()


class SourceRegistryConformance(StoreFixtures):
    """``SourceRegistry``: sources, the embedder identity, the vector cache, persistence."""

    def test_empty_store_answers_with_nothing(self, store: Store) -> None:
        assert store.count() == 0
        assert store.list_sources() == []
        assert store.get_source("a.md") is None
        assert store.embedder_info() is None
        assert store.search_dense(unit_vector(1), 5) == []
        assert store.search_dense(unit_vector(1), 5, parse_where({"kind": "note"})) == []
        assert store.search_lexical("river", 5) == []
        assert store.get_chunks(["missing"]) == []
        assert store.cached_vectors(["no-such-hash"]) == {}
        assert store.dense_scores(unit_vector(1), ["missing"]) == {}
        assert store.recent_searches(5) == []
        assert store.delete_source("a.md") == 0

    def test_write_registers_sources_and_round_trips_chunks(self, shared: tuple) -> None:
        store, written = shared
        assert store.count() == len(written)
        assert [s.path for s in store.list_sources()] == sorted(LAYOUT)
        chunks = synthetic_chunks("b.md", LAYOUT["b.md"], _text)
        assert store.get_source("b.md") == record_for("b.md", chunks)
        assert store.get_chunks([c.id for c in chunks]) == chunks
        assert store.embedder_info() == EMBEDDER

    def test_cached_vectors_by_content_hash(self, shared: tuple) -> None:
        store, written = shared
        hashes = {c.content_hash: v for c, v in written.values()}
        found = store.cached_vectors([*hashes, "no-such-hash"])
        assert set(found) == set(hashes)
        for digest, vector in found.items():
            np.testing.assert_allclose(vector, hashes[digest], atol=1e-5)

    def test_replace_source_overwrites_everything_it_held(self, store: Store, written: dict) -> None:
        old = synthetic_chunks("a.md", LAYOUT["a.md"], _text)
        kept = old[0]
        fresh = [kept] + [
            Chunk(**{**c.__dict__, "chunk_index": i + 1, "id": Chunk.make_id("a.md", "a.md", i + 1, 0, 1, "v2")})
            for i, c in enumerate(synthetic_chunks("a.md", [20, 21], lambda n: f"replacement zebra{n}"))
        ]
        vectors = np.stack([written[kept.id][1], unit_vector(20), unit_vector(21)])
        record = record_for("a.md", fresh, version="2")
        store.replace_source(record, fresh, vectors)
        store.flush()
        assert store.count() == len(written) - len(old) + len(fresh)
        assert store.get_source("a.md") == record
        assert store.get_chunks([c.id for c in old[1:]]) == []
        assert store.get_chunks([c.id for c in fresh]) == fresh
        gone = {c.id for c in old[1:]}
        everything = store.search_dense(unit_vector(3), 1000)
        assert not gone & {c.chunk_id for c in everything}
        assert len(everything) == store.count()
        assert store.search_lexical("unique1", 10) == []
        assert [c.chunk_id for c in store.search_lexical("zebra21", 10)] == [fresh[2].id]

    def test_a_source_written_in_parts_appears_whole_at_its_commit(self, store: Store, written: dict) -> None:
        """``begin_source``: parts added one by one, then exactly the new chunks at the commit (a
        large file is never held whole to be written)."""
        old = synthetic_chunks("a.md", LAYOUT["a.md"], _text)
        fresh = [
            Chunk(**{**c.__dict__, "chunk_index": i, "id": Chunk.make_id("a.md", "a.md", i, 0, 1, "parts")})
            for i, c in enumerate(synthetic_chunks("a.md", [30, 31, 32, 33, 34], lambda n: f"streamed quokka{n}"))
        ]
        vectors = np.stack([unit_vector(30 + i) for i in range(len(fresh))])
        record = record_for("a.md", fresh, version="parts")
        write = store.begin_source(dataclasses.replace(record, chunk_count=0))
        for start in (0, 2, 4):
            write.add(fresh[start : start + 2], vectors[start : start + 2])
        write.commit(record)
        store.flush()
        assert store.get_source("a.md") == record
        assert store.get_chunks([c.id for c in old]) == []
        assert store.get_chunks([c.id for c in fresh]) == fresh
        assert store.count() == len(written) - len(old) + len(fresh)
        assert {c.chunk_id for c in store.search_lexical("quokka33", 10)} == {fresh[3].id}

    def test_an_aborted_write_in_parts_leaves_no_part_of_it(self, store: Store, written: dict) -> None:
        fresh = [
            Chunk(**{**c.__dict__, "chunk_index": i, "id": Chunk.make_id("b.md", "b.md", i, 0, 1, "aborted")})
            for i, c in enumerate(synthetic_chunks("b.md", [40, 41, 42], lambda n: f"aborted wombat{n}"))
        ]
        write = store.begin_source(record_for("b.md", fresh, version="aborted"))
        write.add(fresh, np.stack([unit_vector(40 + i) for i in range(len(fresh))]))
        write.abort()
        store.flush()
        assert store.get_chunks([c.id for c in fresh]) == []
        assert store.search_lexical("wombat41", 10) == []
        # A store with transactions keeps the old version; one without drops the source whole.
        kept = store.get_source("b.md")
        old = synthetic_chunks("b.md", LAYOUT["b.md"], _text)
        if store.abilities.transactions:
            assert kept == record_for("b.md", old) and store.get_chunks([c.id for c in old]) == old
        else:
            assert kept is None and store.get_chunks([c.id for c in old]) == []

    def test_delete_source_removes_its_chunks(self, store: Store, written: dict) -> None:
        gone = [c.id for c, _ in written.values() if c.source == "b.md"]
        assert store.delete_source("b.md") == len(gone)
        store.flush()
        assert store.get_source("b.md") is None
        assert [s.path for s in store.list_sources()] == ["a.md", "c.md"]
        assert store.count() == len(written) - len(gone)
        assert store.get_chunks(gone) == []
        assert not set(gone) & {c.chunk_id for c in store.search_dense(unit_vector(2), 1000)}
        assert store.search_lexical("unique7", 10) == []
        assert store.search_dense(unit_vector(2), 10, parse_where({"source": "b.md"})) == []
        assert store.delete_source("b.md") == 0

    def test_everything_survives_reopening(self, opener: StoreOpener, store: Store, written: dict) -> None:
        query = unit_vector(9)
        dense = store.search_dense(query, 5, parse_where({"tags": "x"}))
        lexical = store.search_lexical("river desert", 5)
        search_id = store.log_search(_audit_entry("before reopen"))
        sources = store.list_sources()
        again = opener.reopen(store)
        assert again.count() == len(written)
        assert again.list_sources() == sources
        assert again.embedder_info() == EMBEDDER
        assert again.get_chunks(list(written)) == [c for c, _ in written.values()]
        # A backend may hand back its vectors re-rounded after a reload: same ranking, scores to 1e-6.
        assert_same_ranking(again.search_dense(query, 5, parse_where({"tags": "x"})), dense, 1e-6)
        assert_same_ranking(again.search_lexical("river desert", 5), lexical, 1e-6)
        assert [e.id for e in again.recent_searches(5)] == [search_id]
        assert again.disk_bytes() > 0

    def test_source_chunks_come_in_document_order(self, shared: tuple) -> None:
        store, _ = shared
        chunks = synthetic_chunks("b.md", LAYOUT["b.md"], _text)
        assert store.source_chunks("b.md") == chunks
        assert store.source_chunks("missing.md") == []

    def test_catalog_database_is_sqlite_or_absent(self, shared: tuple) -> None:
        store, _ = shared
        db = store.catalog_database()
        assert db is None or db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0

    def test_the_derived_structures_have_tables_where_the_store_declares_them(self, shared: tuple) -> None:
        from ..knowledge.tables import tables

        store, _ = shared
        require_ability(store, "structures")
        assert store.structures_database() is not None
        kept = tables(store)
        columns, key = ("path", "content_hash"), ("path",)
        with kept.transaction():
            kept.upsert("raptor_sources", columns, key, [("z.md", "1"), ("y.md", "2")])
            kept.upsert("raptor_sources", columns, key, [("z.md", "3")])
        with pytest.raises(RuntimeError), kept.transaction():  # a failed write leaves nothing behind
            kept.upsert("raptor_sources", columns, key, [("x.md", "4")])
            raise RuntimeError("stop")
        found = kept.select_in("SELECT path, content_hash FROM raptor_sources WHERE path", ["z.md", "y.md", "x.md", "z.md"])
        assert sorted(found) == [("y.md", "2"), ("z.md", "3")]
        assert kept.has_rows("raptor_sources") and not kept.has_rows("raptor_nodes")
        kept.cache({"n": [1, 2]}, "conformance", store.name)
        assert kept.cached("conformance", store.name) == {"n": [1, 2]} and kept.cached("missing") is None
        with kept.transaction():
            kept.execute("DELETE FROM raptor_sources WHERE path = ? OR path = ?", ("z.md", "y.md"))
        assert not kept.has_rows("raptor_sources")


class ChunkSearchConformance(StoreFixtures):
    """``ChunkSearch``: reading chunks back, dense and BM25 search, filters, the tie rule."""

    def test_get_chunks_keeps_the_order_asked_and_skips_missing(self, shared: tuple) -> None:
        store, written = shared
        ids = list(written)
        asked = [ids[9], "missing", ids[0], ids[4]]
        assert [c.id for c in store.get_chunks(asked)] == [ids[9], ids[0], ids[4]]

    def test_dense_scores_are_cosine_similarities(self, shared: tuple) -> None:
        store, written = shared
        query = unit_vector(7)
        ids = list(written)[:5]
        scores = store.dense_scores(query, [*ids, "missing"])
        assert set(scores) == set(ids)
        for cid in ids:
            assert scores[cid] == pytest.approx(float(written[cid][1] @ query), abs=1e-4)

    @pytest.mark.parametrize("seed", [1, 2, 3])
    def test_dense_search_matches_brute_force(self, shared: tuple, seed: int) -> None:
        store, written = shared
        query = unit_vector(seed)
        assert_same_ranking(store.search_dense(query, 5), brute_force(written, query, 5))

    def test_k_larger_than_the_collection_returns_everything(self, shared: tuple) -> None:
        store, written = shared
        query = unit_vector(4)
        assert_same_ranking(store.search_dense(query, 1000), brute_force(written, query, 1000))

    def test_ties_are_broken_by_chunk_id_and_results_repeat(self, shared: tuple) -> None:
        store, written = shared
        query = corpus_vector(_TWIN)  # two chunks hold exactly this vector
        first = store.search_dense(query, 2)
        assert first[0].score == pytest.approx(first[1].score, abs=1e-6)
        assert [c.chunk_id for c in first] == sorted(c.chunk_id for c in first)
        assert store.search_dense(query, 2) == first
        assert store.search_dense(query, 1)[0].chunk_id == first[0].chunk_id

    @pytest.mark.parametrize("where", FILTERS, ids=[repr(f) for f in FILTERS])
    def test_every_filter_operator_matches_the_reference(self, shared: tuple, where: dict) -> None:
        store, written = shared
        query = unit_vector(11)
        expected = brute_force(written, query, 1000, where)
        assert_same_ranking(store.search_dense(query, 1000, parse_where(where)), expected)
        assert_same_ranking(store.search_dense(query, 2, parse_where(where)), expected[:2])

    @pytest.mark.parametrize("where", FILTERS, ids=[repr(f) for f in FILTERS])
    def test_sources_where_are_the_sources_of_the_chunks_that_pass(self, shared: tuple, where: dict) -> None:
        store, written = shared
        conditions = parse_where(where)
        expected = {chunk.source for chunk, _ in written.values() if matches(chunk.metadata, conditions)}
        assert store.sources_where(conditions) == expected

    def test_sources_where_leaves_out_a_source_without_chunks(self, store: Store, written: dict) -> None:
        """Even under a filter every chunk passes: the sources of the chunks that pass, not the registry."""
        write = store.begin_source(record_for("empty.md", []))
        write.commit(record_for("empty.md", []))
        store.flush()
        assert store.get_source("empty.md") == record_for("empty.md", [])
        assert store.sources_where(parse_where({"absent": {"$ne": "x"}})) == set(LAYOUT)
        assert store.sources_where(parse_where({"source": "empty.md"})) == set()

    def test_metadata_kinds_name_every_key_and_the_kinds_of_its_values(self, shared: tuple) -> None:
        store, written = shared
        assert store.metadata_kinds() == value_kinds(c.metadata for c, _ in written.values())

    def test_a_selective_filter_still_finds_the_farthest_match(self, shared: tuple) -> None:
        store, written = shared
        target = min(written, key=lambda cid: float(written[cid][1] @ unit_vector(5)))
        where = {"source": written[target][0].source, "chunk_index": written[target][0].chunk_index}
        got = store.search_dense(unit_vector(5), 1, parse_where(where))
        assert [c.chunk_id for c in got] == [target]

    def test_lexical_search_ranks_by_bm25_with_the_tie_rule(self, shared: tuple) -> None:
        store, written = shared
        hits = store.search_lexical("unique3", 10)
        assert [c.chunk_id for c in hits] == [_id_of(written, 3)]
        assert hits[0].score > 0
        twins = store.search_lexical(f"unique{_TWIN_OF}", 10)  # two chunks share this text
        assert [c.chunk_id for c in twins] == sorted(_id_of(written, n) for n in (_TWIN_OF, _TWIN))
        broad = store.search_lexical("river mountain", 1000)
        assert broad == rank_candidates(broad)
        assert {c.chunk_id for c in broad} == {
            cid for cid, (c, _) in written.items() if {"river", "mountain"} & set(c.text.split())
        }
        assert store.search_lexical("river mountain", 1000) == broad

    def test_bm25_scores_match_an_independent_implementation(self, store: Store) -> None:
        """Every store's BM25 (tantivy's, PostgreSQL's postings, Qdrant's sparse vectors) gives the
        scores bm25s gives on a fixed corpus, written as one source (so a mean length fixed at the
        first write is the corpus's)."""
        pytest.importorskip("bm25s", reason="pip install bm25s (the test extra)")
        chunks = synthetic_chunks("bm25.md", list(range(len(BM25_TEXTS))), lambda n: BM25_TEXTS[n])
        store.set_embedder_info(EMBEDDER)
        store.replace_source(record_for("bm25.md", chunks), chunks, np.stack([unit_vector(n) for n in range(len(chunks))]))
        store.flush()
        for query in BM25_QUERIES:
            expected = {c.id: score for c, score in zip(chunks, bm25_reference(BM25_TEXTS, query)) if score > 0}
            got = {c.chunk_id: c.score for c in store.search_lexical(query, len(chunks))}
            assert got.keys() == expected.keys(), query
            for chunk_id, score in expected.items():
                assert got[chunk_id] == pytest.approx(score, rel=1e-4), query

    @pytest.mark.parametrize("where", [{"kind": "note"}, {"tags": "x"}, {"page": {"$gte": 3}}, {"absent": "x"},
                                       {"kind": {"$contains": "ote"}}])
    def test_lexical_search_honours_filters(self, shared: tuple, where: dict) -> None:
        store, written = shared
        conditions = parse_where(where)
        everything = store.search_lexical("river mountain forest", 1000)
        allowed = {cid for cid, (c, _) in written.items() if matches(c.metadata, conditions)}
        expected = [c for c in everything if c.chunk_id in allowed]
        got = store.search_lexical("river mountain forest", 1000, conditions)
        assert_same_ranking(got, expected, 1e-5)  # a filter changes which chunks, never their BM25 score
        assert store.search_lexical("river mountain forest", 2, conditions) == got[:2]


#: Definitions of a small code base: (source, symbol, kind).
SYMBOL_CORPUS = [
    ("shop/style.py", "Style", "class"), ("shop/style.py", "Style.parse", "method"),
    ("shop/style.py", "Style.__repr__", "method"), ("shop/theme.py", "Theme.get_style", "method"),
    ("shop/theme.py", "parse", "function"), ("shop/box.cpp", "Box::close", "function"),
    ("shop/index.ts", "$store.get_item", "function"),
]
#: A name as a developer types it -> the symbols it must find (exact and loose keys, ``ragloom.symbols``).
SYMBOL_QUERIES: list[tuple[str, set[str]]] = [
    ("Style.parse", {"Style.parse"}),
    ("parse", {"Style.parse", "parse"}),
    ("shop.style.Style", {"Style"}),
    ("STYLE.PARSE", {"Style.parse"}),
    ("theme.getStyle", {"Theme.get_style"}),
    ("__repr__", {"Style.__repr__"}),
    ("Box::close", {"Box::close"}),
    ("$store.getItem", {"$store.get_item"}),
    ("Styles", set()),
]


def write_symbols(store: Store) -> dict[str, str]:
    """Write ``SYMBOL_CORPUS`` as code chunks carrying their lookup keys; return chunk id -> symbol."""
    from ..symbols import SYMBOLS_FIELD, module_parts, split_symbol, symbol_keys

    store.set_embedder_info(EMBEDDER)
    written: dict[str, str] = {}
    for source in dict.fromkeys(s for s, _, _ in SYMBOL_CORPUS):
        chunks = []
        for index, (symbol, kind) in enumerate((sym, k) for src, sym, k in SYMBOL_CORPUS if src == source):
            text = f"definition of {symbol}"
            metadata = {"source": source, "doc_id": source, "chunk_index": index, "symbol": symbol, "kind": kind,
                        "language": "python", SYMBOLS_FIELD: symbol_keys(module_parts(source), split_symbol(symbol))}
            chunks.append(Chunk(id=Chunk.make_id(source, source, index, index, index + 1, "test"), text=text,
                                source=source, doc_id=source, chunk_index=index, start=index, end=index + 1,
                                policy="test", content_hash=content_hash(source + text), token_count=3,
                                metadata=metadata))
            written[chunks[-1].id] = symbol
        store.replace_source(record_for(source, chunks), chunks, np.stack([unit_vector(len(written) + i)
                                                                           for i in range(len(chunks))]))
    store.flush()
    return written


class SymbolSearchConformance(StoreFixtures):
    """Symbols are looked up by their keys, a list-valued metadata field (``ragloom.symbols``):
    every store answers ``$in`` on it exactly, alone and with other filters."""

    @pytest.mark.parametrize("name, expected", SYMBOL_QUERIES, ids=[q for q, _ in SYMBOL_QUERIES])
    def test_a_name_finds_its_definitions_by_their_keys(self, store: Store, name: str, expected: set[str]) -> None:
        from ..filters import Condition
        from ..symbols import SYMBOLS_FIELD, query_keys

        written = write_symbols(store)
        exact, loose = query_keys(name)
        wanted = Condition(SYMBOLS_FIELD, "$in", tuple(exact + loose))
        found = store.search_dense(unit_vector(3), 50, (wanted,))
        assert {written[c.chunk_id] for c in found} == expected
        theme_only = store.search_dense(unit_vector(3), 50, (wanted, Condition("source", "$eq", "shop/theme.py")))
        assert {written[c.chunk_id] for c in theme_only} == {s for s in expected if s in ("parse", "Theme.get_style")}


class AuditLogConformance(StoreFixtures):
    """``AuditLog``: searches newest first, every write and search chained."""

    def test_audit_log_keeps_searches_newest_first(self, store: Store) -> None:
        first = store.log_search(_audit_entry("first", created_at=time.time() - 5))
        second = store.log_search(_audit_entry("second"))
        entries = store.recent_searches(10)
        assert [e.id for e in entries] == [second, first]
        assert entries[0].query == "second" and entries[0].mode == "hybrid"
        assert entries[0].hits == _audit_entry("second").hits
        assert entries[0].filters == {"kind": "note"}
        assert len(store.recent_searches(1)) == 1

    def test_every_write_and_search_is_chained_in_the_audit_log(self, store: Store, written: dict) -> None:
        with store.audited("remove", {"path": "b.md"}) as summary:
            store.delete_source("b.md")
            summary["removed"] = 1
        search_id = store.log_search(_audit_entry("after the writes"))
        events = list(reversed(store.audit_events(100)))
        kinds = [e.kind for e in events]
        assert kinds == ["embedder.set", *["source.added"] * len(LAYOUT), "remove", "source.removed",
                         "remove.done", "search"]
        added = {e.entry["path"]: e.entry for e in events if e.kind == "source.added"}
        assert {path: (entry["content_hash"], entry["chunk_count"]) for path, entry in added.items()} == {
            path: (record_for(path, synthetic_chunks(path, numbers, _text)).content_hash, len(numbers))
            for path, numbers in LAYOUT.items()}
        removed = events[-3].entry
        assert (removed["path"], removed["operation"]) == ("b.md", events[-4].id)
        assert events[-2].entry["summary"] == {"removed": 1} and events[-1].id == search_id
        report = store.verify_audit()
        assert report.ok and report.entries == len(events) and report.head == events[-1].hash


#: One passage per language (its ``lang`` as ingest detects it), each found first by a query in
#: its own language only when the store reads that language as ``lang/analysis.py`` does: Thai by
#: its words, Chinese by bigrams, Hindi with its suffixes cut, German stemmed, code by its
#: identifiers whole and by its camelCase words' parts.
LANGUAGE_PASSAGES = {
    "th": ("แมวนอนหลับอยู่บนหลังคาบ้านทุกวันตอนบ่าย", "หลังคาบ้าน"),
    "zh": ("北京是中国的首都，城里有很多历史悠久的古老建筑。", "历史建筑"),
    "hi": ("भारत की राजधानी नई दिल्ली है और यहाँ हर साल बहुत सारे पर्यटक आते हैं।", "पर्यटकों"),
    "ar": ("القاهرة هي عاصمة مصر وأكبر مدنها من حيث عدد السكان.", "عاصمة مصر"),
    "de": ("Die alten Häuser stehen dicht am Ufer des Flusses.", "Haus am Fluss"),
    "en": ("Rivers carry sediment from the mountains down to the sea.", "sediment carried by rivers"),
    "code": ("def refresh(self):\n    return self.fetchUserProfile(self.session_token)", "user profile"),
    "ident": ("def start(self):\n    self._render_buffer.clear()\n    return MAX_RETRY_COUNT", "_render_buffer"),
}
_PASSAGE_LANG = {"code": "en", "ident": "en"}


class LexicalAnalysisConformance(StoreFixtures):
    """BM25 reads every language, and identifiers, as ``lang/analysis.py`` does (the embedded
    store's tantivy fields, Qdrant's sparse vectors, PostgreSQL's postings): a store whose lexical
    side cannot declares it with ``Abilities.analysis`` other than ``ragloom`` and skips these."""

    @pytest.fixture(scope="class")
    @classmethod
    def languages(cls, store_config: Config, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[tuple[Store, dict[str, str]]]:
        index_dir = tmp_path_factory.mktemp("languages") / "index"
        opener = StoreOpener(index_dir, cls.config_for(store_config, index_dir))
        store = opener.open()
        if store.abilities.analysis != "ragloom":
            opener.close_all()
            pytest.skip(f"this store reads text with {store.abilities.analysis}, as it declares (Abilities.analysis)")
        store.set_embedder_info(EMBEDDER)
        ids: dict[str, str] = {}
        for n, (name, (text, _)) in enumerate(LANGUAGE_PASSAGES.items()):
            source = f"{name}.txt"
            chunk = synthetic_chunks(source, [n], lambda _: text)[0]
            chunk = dataclasses.replace(chunk, metadata={**chunk.metadata, "lang": _PASSAGE_LANG.get(name, name)})
            store.replace_source(record_for(source, [chunk]), [chunk], np.stack([unit_vector(n)]))
            ids[name] = chunk.id
        store.flush()
        yield store, ids
        opener.close_all()

    @pytest.mark.parametrize("name", list(LANGUAGE_PASSAGES))
    def test_each_language_is_read_as_the_analysis_reads_it(self, languages: tuple, name: str) -> None:
        store, ids = languages
        hits = store.search_lexical(LANGUAGE_PASSAGES[name][1], 3)
        assert hits and hits[0].chunk_id == ids[name], [h.chunk_id for h in hits]

    def test_a_query_in_two_languages_finds_both(self, languages: tuple) -> None:
        store, ids = languages
        query = f"{LANGUAGE_PASSAGES['th'][1]} {LANGUAGE_PASSAGES['zh'][1]}"
        assert {h.chunk_id for h in store.search_lexical(query, 2)} == {ids["th"], ids["zh"]}


class SyncStateConformance(StoreFixtures):
    """Remote sources' cursors (``stores/sync_state.py``), as every store that syncs them keeps them:
    saved, read back by another opening of the store, leased to one holder at a time, scheduled once."""

    def test_sources_and_items_are_kept_and_read_back_by_another_opening(self, opener: StoreOpener) -> None:
        from ..stores.sync_state import RemoteItemState, RemoteSourceState

        store = opener.open()
        require_ability(store, "sync_state")
        state = store.sync_state()
        assert state is not None and state.remote_sources() == []
        state.save_remote_source(RemoteSourceState("docs", "s3://bucket/docs", cursor={"commit": "abc"},
                                                   status="ok", report={"added": 2}))
        items = [RemoteItemState("a.md", "s3://bucket/docs/a.md", '"etag-1"', {"size": 3}),
                 RemoteItemState("b.md", "s3://bucket/docs/b.md", '"etag-2"', {"links": ["x", "y"]})]
        state.put_remote_items("docs", items)
        state.put_remote_items("docs", [RemoteItemState("a.md", "s3://bucket/docs/a.md", '"etag-3"')])
        state.put_remote_items("other", [RemoteItemState("a.md", "x", "1")])
        again = opener.reopen(store).sync_state()
        assert again is not None
        found = again.remote_source("docs")
        assert found is not None and (found.uri, found.cursor, found.status, found.report) == (
            "s3://bucket/docs", {"commit": "abc"}, "ok", {"added": 2})
        assert again.remote_items("docs") == {
            "a.md": RemoteItemState("a.md", "s3://bucket/docs/a.md", '"etag-3"', {}),
            "b.md": RemoteItemState("b.md", "s3://bucket/docs/b.md", '"etag-2"', {"links": ["x", "y"]}),
        }
        again.delete_remote_items("docs", ["b.md"])
        assert list(again.remote_items("docs")) == ["a.md"]
        again.forget_remote_source("docs")
        assert again.remote_source("docs") is None and again.remote_items("docs") == {}
        assert list(again.remote_items("other")) == ["a.md"]

    def test_one_holder_syncs_a_source_and_a_dead_holders_lease_runs_out(self, store: Store) -> None:
        require_ability(store, "sync_state")
        state = store.sync_state()
        assert state is not None
        first = state.begin_sync("docs", "https://example.org/", "replica-1", lease=30)
        assert first is not None and first.status == "running" and first.holder == "replica-1"
        assert state.begin_sync("docs", "https://example.org/", "replica-2", lease=30) is None
        assert state.renew_sync("docs", "replica-1", 30) and not state.renew_sync("docs", "replica-2", 30)
        first.status, first.holder = "ok", None
        assert not state.end_sync(first, "replica-2")
        assert state.end_sync(first, "replica-1")
        saved = state.remote_source("docs")
        assert saved is not None and saved.status == "ok" and saved.holder is None
        # A holder that stops renewing (its process died) loses the source once its lease runs out.
        assert state.begin_sync("docs", "https://example.org/", "replica-1", lease=0.2) is not None
        time.sleep(0.3)
        taken = state.begin_sync("docs", "https://example.org/", "replica-2", lease=30)
        assert taken is not None and taken.holder == "replica-2"
        assert not state.renew_sync("docs", "replica-1", 30)

    def test_a_due_sync_is_scheduled_once(self, store: Store) -> None:
        require_ability(store, "sync_state")
        state = store.sync_state()
        assert state is not None
        assert state.claim_schedule("docs", "s3://b/p", interval=60)
        assert not state.claim_schedule("docs", "s3://b/p", interval=60)
        assert state.claim_schedule("site", "https://example.org/", interval=0)
        # Not while a holder's lease is live, whatever the interval.
        assert state.begin_sync("site", "https://example.org/", "replica-1", lease=30) is not None
        assert not state.claim_schedule("site", "https://example.org/", interval=0)


class AbilitiesConformance(StoreFixtures):
    """``Abilities``: each ability the store declares does what it says; one it does not declare
    is not offered (its tests elsewhere in the suite are skipped, naming the declaration)."""

    def test_abilities_are_declared(self, shared: tuple) -> None:
        store, _ = shared
        assert isinstance(store.abilities, Abilities)
        assert store.abilities.analysis == "ragloom" or ":" in store.abilities.analysis  # e.g. postgresql:english

    def test_an_ability_not_declared_is_not_offered(self, shared: tuple) -> None:
        from ..errors import StoreError
        from ..knowledge.tables import tables

        store, _ = shared
        declared = store.abilities
        if not declared.value_counts:
            with pytest.raises(StoreError, match="value_counts"):
                store.value_counts("kind")
        if not declared.structures:
            assert store.structures_database() is None
            with pytest.raises(StoreError, match="keeps tables"):
                tables(store)
        if not declared.sync_state:
            assert store.sync_state() is None
        if not declared.shared_jobs:
            assert store.ingest_jobs() is None

    def test_value_counts_count_the_chunks_of_each_value(self, shared: tuple) -> None:
        store, written = shared
        require_ability(store, "value_counts")
        expected = Counter(str(c.metadata["kind"]) for c, _ in written.values() if "kind" in c.metadata)
        got = store.value_counts("kind")
        assert got == dict(expected)
        assert list(got) == sorted(got, key=lambda value: (-got[value], value))  # most first
        assert store.value_counts("absent") == {}

    def test_server_bm25_keeps_no_lexical_index_beside_the_store(self, opener: StoreOpener, store: Store,
                                                                 written: dict) -> None:
        require_ability(store, "server_bm25")
        assert store.search_lexical("river", 3)
        store.show_latest_writes()
        tantivy_files = [p for p in opener.path.rglob("meta.json") if (p.parent / ".managed.json").exists()]
        assert tantivy_files == []

    def test_the_latest_writes_are_shown_to_another_opening_at_once(self, opener: StoreOpener, store: Store,
                                                                     written: dict) -> None:
        """``show_latest_writes``: a server's reader, asked after its writer's ingest, finds the new
        chunks on the lexical side too (not only once a cache catches up on its own)."""
        from ..errors import StoreError

        try:
            reader = opener.open()
        except StoreError as exc:  # Qdrant's local mode: one client at a time
            pytest.skip(f"the store opens once at a time here ({exc})")
        assert reader.search_lexical("river", 3)  # its readers are open, at the generation before the write
        chunk = synthetic_chunks("d.md", [50], lambda n: "platypus")[0]
        store.replace_source(record_for("d.md", [chunk]), [chunk], np.stack([unit_vector(50)]))
        store.flush()
        reader.show_latest_writes()
        assert [c.chunk_id for c in reader.search_lexical("platypus", 3)] == [chunk.id]

    def test_sync_state_is_offered_where_declared(self, shared: tuple) -> None:
        store, _ = shared
        require_ability(store, "sync_state")
        assert store.sync_state() is not None  # the rest: SyncStateConformance

    def test_a_shared_job_queue_is_seen_through_another_queue_object(self, store: Store) -> None:
        """``shared_jobs``: the queue lives in the store's database, so what one server enqueues
        another sees (here two queue objects over the same store)."""
        from .jobs import KIND, new_job

        require_ability(store, "shared_jobs")
        first, second = store.ingest_jobs(), store.ingest_jobs()
        assert first is not None and second is not None
        try:
            job = new_job()
            first.enqueue(KIND, job, {"paths": ["/a"]}, owner="team-a")
            found = second.get(job["id"])
            assert found is not None and found[0]["state"] == "queued" and found[1] == "team-a"
        finally:
            first.close()
            second.close()


class StoreConformance(SourceRegistryConformance, ChunkSearchConformance, SymbolSearchConformance,
                       AuditLogConformance, LexicalAnalysisConformance, AbilitiesConformance,
                       SyncStateConformance):
    """The behaviour every store shares: the three roles of the Store interface and the abilities
    it declares, one suite.

    Provide a class-scoped ``store_config`` fixture returning a Config. Read-only tests
    share one store written once per class; tests that write get a fresh one. A backend
    whose data lives outside the index directory (a server) overrides ``config_for`` so
    that each fresh store gets its own collection.
    """


def _id_of(written: dict[str, tuple[Chunk, np.ndarray]], n: int) -> str:
    """Id of corpus chunk number ``n``."""
    source = next(path for path, numbers in LAYOUT.items() if n in numbers)
    index = LAYOUT[source].index(n)
    return Chunk.make_id(source, source, index, index * 100, index * 100 + 99, "test")


def _audit_entry(query: str, created_at: float | None = None) -> AuditEntry:
    return AuditEntry(
        query=query, mode="hybrid", k=2, filters={"kind": "note"}, parameters={"alpha": 0.6},
        hits=[{"rank": 1, "chunk_id": "c1", "score": 0.9, "source": "a.md"},
              {"rank": 2, "chunk_id": "c2", "score": 0.5, "source": "b.md"}],
        elapsed_ms=1.5, created_at=created_at or time.time(), embedder="test:synthetic",
    )
