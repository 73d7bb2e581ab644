"""The postgres store against a real PostgreSQL (pgserver): what the conformance suite does not
cover — failures said in one line, nothing half-written, concurrent writers, the approximate
indexes, BM25 from each term's best postings, indexes side by side."""

from __future__ import annotations

import threading
import uuid
from dataclasses import replace

import numpy as np
import pytest

from ragloom.config import Config
from ragloom.errors import AuthenticationError, ServiceUnavailableError, StoreError
from ragloom.filters import parse_where
from ragloom.stores.base import create_store
from ragloom.testing.conformance import EMBEDDER, _audit_entry, record_for, synthetic_chunks, unit_vector, write_corpus
from ragloom.types import Chunk, content_hash


def _config(url: str, index: str | None = None, **settings: object) -> Config:
    postgres = {"url": url, **({"index": index} if index else {}), **settings}
    return Config.from_dict({"store": {"backend": "postgres", "postgres": postgres}})


def _name() -> str:
    return "t" + uuid.uuid4().hex[:12]


@pytest.fixture
def open_store(postgres_server, tmp_path):
    opened = []

    def make(index: str | None = None, **settings: object):
        store = create_store(tmp_path, _config(postgres_server.url(), index or _name(), **settings))
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


def test_a_server_that_is_down_is_one_line(tmp_path):
    config = _config(f"postgresql://postgres@/postgres?host={tmp_path}", "docs")
    with pytest.raises(ServiceUnavailableError) as caught:
        create_store(tmp_path, config)
    message = str(caught.value)
    assert "\n" not in message and "PostgreSQL is not reachable" in message and "start the server" in message


def test_a_statement_the_server_refuses_is_not_called_an_unreachable_server(open_store):
    # psycopg files "the server refused this statement" (here: cancelled by a timeout, 57014) under
    # the same OperationalError as a lost connection; only the latter means the server is away.
    store = open_store()
    with pytest.raises(StoreError) as caught:
        with store.database.connection() as connection, connection.transaction():
            connection.execute("SET LOCAL statement_timeout = 1")
            connection.execute("SELECT pg_sleep(1)")
    assert not isinstance(caught.value, ServiceUnavailableError)
    message = str(caught.value)
    assert "\n" not in message and "refused a statement" in message and "statement timeout" in message


def test_the_ivfflat_build_asks_for_the_memory_pgvector_needs():
    from ragloom.stores.postgres.ann import ivfflat_build_mb

    # pgvector 0.6 refused 1,000 lists of 384-d vectors at 256 MB: "memory required is 272 MB".
    assert ivfflat_build_mb(1000, 384) >= 272
    assert ivfflat_build_mb(316, 384) < 256  # 100k chunks: the 256 MB floor suffices


def test_a_wrong_password_is_one_line(postgres_server, tmp_path):
    postgres_server.execute("DO $$ BEGIN CREATE ROLE pwuser LOGIN PASSWORD 'right'; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
    pg_hba = postgres_server.data_dir / "pgdata" / "pg_hba.conf"
    if "pwuser" not in pg_hba.read_text():
        pg_hba.write_text("local all pwuser scram-sha-256\n" + pg_hba.read_text())
        postgres_server.execute("SELECT pg_reload_conf()")
    _wait_for_password_check(postgres_server.socket_dir)
    url = f"postgresql://pwuser:wrong@/postgres?host={postgres_server.socket_dir}"
    with pytest.raises(AuthenticationError) as caught:
        create_store(tmp_path, _config(url, "docs"))
    assert "\n" not in str(caught.value) and "refused the login" in str(caught.value)
    assert "wrong" not in str(caught.value)  # the password is never shown


def test_a_database_without_pgvector_is_one_line(postgres_server, tmp_path, monkeypatch):
    from ragloom.stores.postgres import database

    monkeypatch.setattr(database, "EXTENSION", "no_such_vector_extension")
    postgres_server.execute("DROP DATABASE IF EXISTS plain")
    postgres_server.execute("CREATE DATABASE plain")
    with pytest.raises(StoreError) as caught:
        create_store(tmp_path, _config(postgres_server.url(database="plain"), "docs"))
    assert "\n" not in str(caught.value) and "no pgvector extension" in str(caught.value)


def test_an_older_schema_is_refused_in_one_line(open_store, postgres_server, tmp_path):
    name = _name()
    open_store(name).close()
    postgres_server.execute(f"UPDATE ragloom_{name}.meta SET value = '0' WHERE key = 'schema_version'")
    with pytest.raises(StoreError) as caught:
        open_store(name)
    assert "older ragloom (schema 0" in str(caught.value) and "\n" not in str(caught.value)


def test_a_failed_source_write_leaves_nothing_behind(open_store):
    store = open_store()
    write_corpus(store)
    before = (store.count(), store.generation(), [s.path for s in store.list_sources()], len(store.audit_events(100)))
    taken = store.source_chunks("a.md")[0]  # a chunk id another source already holds: the insert fails
    clash = Chunk(**{**taken.__dict__, "source": "d.md", "content_hash": content_hash("d")})
    fresh = synthetic_chunks("d.md", [30, 31], lambda n: f"fresh text {n}")
    with pytest.raises(Exception):
        store.replace_source(record_for("d.md", fresh + [clash]), fresh + [clash], np.stack([unit_vector(i) for i in range(3)]))
    after = (store.count(), store.generation(), [s.path for s in store.list_sources()], len(store.audit_events(100)))
    assert after == before
    assert store.search_lexical("fresh", 10) == []
    assert store.verify_audit().ok


def test_concurrent_writers_never_fork_the_audit_chain(open_store):
    name = _name()
    stores = [open_store(name), open_store(name, pool_size=2)]
    stores[0].set_embedder_info(EMBEDDER)

    def log(store, n):
        for i in range(n):
            store.log_search(_audit_entry(f"q{i}"))

    def write(store, n):  # a write appends under the write lock and then the chain's
        for i in range(n):
            chunks = synthetic_chunks(f"w{i}.md", [i], lambda n: f"text {n}")
            store.replace_source(record_for(f"w{i}.md", chunks), chunks, np.stack([unit_vector(i)]))

    threads = [threading.Thread(target=log, args=(store, 25)) for store in stores for _ in range(2)]
    threads.append(threading.Thread(target=write, args=(stores[0], 10)))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    report = stores[1].verify_audit()
    assert report.ok and report.entries == 111, report.describe()


def test_a_search_is_logged_while_another_replica_holds_the_write_lock(open_store):
    # A search's audit entry takes the chain's lock only: it must not wait for a source's write
    # (COPY, postings) on another replica to commit.
    name = _name()
    writer, searcher = open_store(name), open_store(name)
    writer.set_embedder_info(EMBEDDER)
    logged = threading.Event()
    with writer.catalog.transaction():  # the write lock, held as a long write would
        thread = threading.Thread(target=lambda: (searcher.log_search(_audit_entry("q")), logged.set()))
        thread.start()
        assert logged.wait(10), "the search's audit entry waited for the write lock"
    thread.join()
    assert writer.verify_audit().ok


@pytest.mark.parametrize("kind", ["ivfflat", "hnsw"])
def test_approximate_index_takes_over_above_exact_rows_and_filters_stay_exact(open_store, kind):
    store = open_store(exact_rows=50, ann_index=kind)
    store.set_embedder_info({"model_id": "test:synthetic", "dimension": 12})
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((400, 12)).astype(np.float32)
    chunks = [Chunk(id=f"c{i:04d}", text=f"word{i % 7} common", source="big.md", doc_id="big.md", chunk_index=i,
                    start=i, end=i + 1, policy="test", content_hash=content_hash(str(i)), token_count=2,
                    metadata={"group": i % 10}) for i in range(400)]
    store.replace_source(record_for("big.md", chunks), chunks, vectors)
    store.flush()
    assert store._approximate().kind == kind
    units = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    query = unit_vector(3)
    exact = [f"c{i:04d}" for i in np.argsort(-(units @ query))[:10]]
    got = [c.chunk_id for c in store.search_dense(query, 10)]
    assert len(set(got) & set(exact)) >= 9  # approximate: recall@10 of the index
    filtered = [c.chunk_id for c in store.search_dense(query, 5, parse_where({"group": 3}))]
    allowed = [i for i in np.argsort(-(units @ query)) if i % 10 == 3][:5]
    assert filtered == [f"c{i:04d}" for i in allowed]  # 40 pass: every list probed, or too few found, so exact


def test_ivfflat_is_rebuilt_with_more_lists_once_the_index_grew_fourfold(open_store):
    store = open_store(exact_rows=10)
    store.set_embedder_info({"model_id": "test:synthetic", "dimension": 12})
    rng = np.random.default_rng(1)

    def write(source: str, count: int) -> None:
        chunks = [Chunk(id=f"{source}-{i}", text=f"word{i}", source=source, doc_id=source, chunk_index=i, start=i,
                        end=i + 1, policy="test", content_hash=content_hash(f"{source}{i}"), token_count=1,
                        metadata={}) for i in range(count)]
        store.replace_source(record_for(source, chunks), chunks, rng.standard_normal((count, 12)).astype(np.float32))
        store.flush()

    write("a.md", 25)
    assert store._approximate().lists == 5
    write("b.md", 50)  # 75 chunks: fewer than 4 x 5^2
    assert store._approximate().lists == 5
    write("c.md", 30)  # 105 chunks: rebuilt
    assert store._approximate().lists == 10
    assert len(store.search_dense(unit_vector(2), 5)) == 5


def test_bm25_reading_each_terms_best_postings_scores_what_it_finds_exactly(open_store):
    shallow, exact = open_store(bm25_depth=2), open_store(bm25_depth=10**6)
    texts = [f"common filler {'common ' * (i % 3)}word{i}" for i in range(30)] + ["common rare"]
    chunks = [Chunk(id=f"c{i:02d}", text=text, source="a.md", doc_id="a.md", chunk_index=i, start=i, end=i + 1,
                    policy="test", content_hash=content_hash(text), token_count=3, metadata={})
              for i, text in enumerate(texts)]
    for store in (shallow, exact):
        store.set_embedder_info({"model_id": "test:synthetic", "dimension": 12})
        store.replace_source(record_for("a.md", chunks), chunks, np.ones((len(chunks), 12), dtype=np.float32))
    got = shallow.search_lexical("common rare", 2)
    full = exact.search_lexical("common rare", 31)
    assert got[0].chunk_id == full[0].chunk_id == "c30"
    scores = {c.chunk_id: c.score for c in full}
    assert all(abs(c.score - scores[c.chunk_id]) < 1e-9 for c in got)  # candidates scored on every term
    assert len(full) == 31  # every chunk holds "common": read whole when the depth allows


def test_indexes_side_by_side_in_one_database(open_store):
    first, second = open_store(), open_store()
    write_corpus(first)
    assert second.count() == 0 and second.list_sources() == []
    second.set_embedder_info(EMBEDDER)
    chunks = synthetic_chunks("z.md", [1], lambda n: "zebra crossing")
    second.replace_source(record_for("z.md", chunks), chunks, np.stack([unit_vector(1)]))
    assert [s.path for s in second.list_sources()] == ["z.md"]
    assert first.search_lexical("zebra", 5) == [] and len(second.search_lexical("zebra", 5)) == 1


def _wait_for_password_check(socket_dir: str) -> None:
    """The server reloads pg_hba.conf on a signal: wait until it asks pwuser for a password."""
    import time

    import psycopg

    for _ in range(100):
        try:
            psycopg.connect(f"postgresql://pwuser:wrong@/postgres?host={socket_dir}").close()
        except psycopg.OperationalError:
            return
        time.sleep(0.05)


def test_keys_in_the_database_are_shared_by_every_replica(postgres_server):
    from ragloom.server.keys import open_keys

    url = postgres_server.url()
    first, second = open_keys(url), open_keys(url)
    try:
        name = "k" + uuid.uuid4().hex[:8]
        key, record = first.add(name, scopes=["write"], indexes=["docs"], rate=2.0, burst=2)
        assert second.lookup(key) == record and name in second.names()
        assert key not in str(second.records())  # only the hash is kept
        # One bucket for every replica: two requests pass, the third (on either) waits.
        assert first.take(name, 2.0, 2) == 0.0 and second.take(name, 2.0, 2) == 0.0
        assert first.take(name, 2.0, 2) > 0 and second.take(name, 2.0, 2) > 0
        first.revoke(name)
        assert second.lookup(key) is None  # at once, on the other replica
        with pytest.raises(Exception, match="no key named"):
            second.revoke(name)
    finally:
        first.close()
        second.close()


def test_an_unknown_text_search_language_is_one_line(open_store):
    from ragloom.errors import ConfigError

    with pytest.raises(ConfigError, match="no text search configuration 'klingon'"):
        open_store(language="klingon")


def test_another_language_analyses_the_text(open_store):
    store = open_store(language="german")
    store.set_embedder_info(EMBEDDER)
    chunks = synthetic_chunks("de.md", [1], lambda n: "Die Häuser stehen am Flussufer")
    store.replace_source(record_for("de.md", chunks), chunks, np.stack([unit_vector(1)]))
    assert len(store.search_lexical("Haus", 5)) == 1  # German stemming: Häuser ~ Haus


@pytest.mark.parametrize("filter_", [{"group": 3}, {"group": {"$in": [1, 2, 3, 4, 5, 6, 7, 8]}}, {"rare": True}],
                         ids=["a tenth", "most", "one chunk"])
def test_a_filtered_bm25_search_is_the_unfiltered_ranking_filtered(open_store, filter_):
    # A filter that keeps enough of the unfiltered top 10k is answered from it; one that keeps too
    # few (a single chunk) falls back to the filtered statement; both must rank the same way.
    from ragloom.filters import matches
    from ragloom.stores.postgres import search

    store = open_store(bm25_depth=40)  # the first try reads the top 50 of 200, not all of them
    store.set_embedder_info({"model_id": "test:synthetic", "dimension": 12})
    chunks = [Chunk(id=f"c{i:03d}", text=" ".join(["river"] * (1 + i % 7) + ["delta"] * (i % 3) + ["bank"] * (i % 11)
                                                + [f"filler{i}"] * (i % 17)),  # lengths differ: few ties
                    source="a.md", doc_id="a.md", chunk_index=i, start=i, end=i + 1, policy="test",
                    content_hash=content_hash(f"a{i}"), token_count=3,
                    metadata={"group": i % 10, **({"rare": True} if i == 77 else {})}) for i in range(200)]
    store.replace_source(record_for("a.md", chunks), chunks, np.stack([unit_vector(i, 12) for i in range(200)]))
    conditions = parse_where(filter_)
    by_id = {c.id: c for c in chunks}
    for query, k in [("river delta", 5), ("bank river", 3)]:
        everything = store.search_lexical(query, 1000)
        expected = [c.chunk_id for c in everything if matches(by_id[c.chunk_id].metadata, conditions)][:k]
        assert [c.chunk_id for c in store.search_lexical(query, k, conditions)] == expected, (query, filter_)
        with store._read() as connection:  # which way it was answered
            over = search._over_fetched(connection, query, k, conditions, store.language, store.settings.bm25_depth)
        assert (over is None) == ("rare" in filter_)


def _postings_indexes(store) -> dict[str, int]:
    with store._read() as connection:
        rows = connection.execute("SELECT indexrelid::regclass::text, indexrelid::int8 FROM pg_index"
                                  " WHERE indrelid = 'postings'::regclass AND indisvalid").fetchall()
    return dict(rows)


def _postings(store) -> set[tuple]:
    with store._read() as connection:
        return set(connection.execute("SELECT c.id, p.lexeme, p.tf, p.doc_len, p.impact FROM postings p"
                                      " JOIN chunks c USING (rid)").fetchall())


def test_a_large_write_rebuilds_the_postings_indexes_and_scores_as_a_row_by_row_one(open_store, monkeypatch):
    # A write of BULK_ROWS chunks or more, into an index holding fewer, inserts its postings into the
    # bare table and builds the indexes after; the postings, statistics and scores must be those of the
    # same write made row by row into the indexes.
    from ragloom.stores.postgres import chunks as chunk_rows

    words = ["river", "delta", "bank", "heron", "stone"]

    def chunks_of(source: str, count: int) -> list[Chunk]:
        return [Chunk(id=f"{source}-{i}", text=" ".join(w for j, w in enumerate(words) for _ in range((i + j) % (j + 2)))
                      + f" filler{i % 37}", source=source, doc_id=source, chunk_index=i, start=i, end=i + 1,
                      policy="test", content_hash=content_hash(f"{source}{i}"), token_count=5, metadata={})
                for i in range(count)]

    bulk, rows = open_store(), open_store()
    seed, big = chunks_of("seed.md", 10), chunks_of("big.md", chunk_rows.BULK_ROWS)
    for store in (bulk, rows):
        store.set_embedder_info({"model_id": "test:synthetic", "dimension": 12})
        store.replace_source(record_for("seed.md", seed), seed, np.ones((len(seed), 12), dtype=np.float32))
    before = (_postings_indexes(bulk), _postings_indexes(rows))
    bulk.replace_source(record_for("big.md", big), big, np.ones((len(big), 12), dtype=np.float32))
    monkeypatch.setattr(chunk_rows, "BULK_ROWS", 10**9)
    rows.replace_source(record_for("big.md", big), big, np.ones((len(big), 12), dtype=np.float32))
    assert set(before[0]) == set(_postings_indexes(bulk)) == {"postings_pkey", "postings_impact"}
    assert set(before[0].values()).isdisjoint(_postings_indexes(bulk).values())  # built again
    assert _postings_indexes(rows) == before[1]  # written into
    assert _postings(bulk) == _postings(rows)
    for store in (bulk, rows):
        store.delete_source("seed.md")
    for query in ["river delta", "heron stone bank", "filler3 river"]:
        assert bulk.search_lexical(query, 50) == rows.search_lexical(query, 50), query


def test_an_index_keeps_the_analysis_it_was_made_with_and_search_says_what_it_cannot_read(open_store):
    """A new index reads text as ragloom does (Thai by its words); one made with a PostgreSQL text
    search configuration keeps it, declares it, and a search in a language it does not read says so."""
    from ragloom.retrieve.searcher import analysis_notes

    thai = "แมวนอนหลับอยู่บนหลังคาบ้านทุกวัน"
    for language, found in (("ragloom", 1), ("english", 0)):
        store = open_store(language=language)
        store.set_embedder_info(EMBEDDER)
        chunks = synthetic_chunks("th.md", [1], lambda n: thai)
        chunks = [replace(c, metadata={**c.metadata, "lang": "th"}) for c in chunks]
        store.replace_source(record_for("th.md", chunks), chunks, np.stack([unit_vector(1)]))
        assert len(store.search_lexical("หลังคาบ้าน", 5)) == found
    assert store.abilities.analysis == "postgresql:english"
    assert analysis_notes(store.abilities.analysis, "หลังคาบ้านอยู่ที่ไหน", "hybrid")
    assert not analysis_notes(store.abilities.analysis, "where is the roof of the house", "hybrid")
    assert not analysis_notes(store.abilities.analysis, "หลังคาบ้านอยู่ที่ไหน", "dense")
    assert not analysis_notes("ragloom", "หลังคาบ้านอยู่ที่ไหน", "hybrid")
