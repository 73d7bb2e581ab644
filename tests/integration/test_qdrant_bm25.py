"""BM25 computed by Qdrant (sparse vectors with the IDF modifier), on Qdrant's local mode."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragloom.config import Config
from ragloom.filters import parse_where
from ragloom.stores.base import create_store
from ragloom.stores.sparse_bm25 import AVGDL_META, FAMILIES_META
from ragloom.testing.conformance import record_for, synthetic_chunks, unit_vector

pytest.importorskip("qdrant_client")

SENTENCES = [
    "The river floods the valley every spring and the farmers plant rice after the water recedes.",
    "Desert foxes hunt at night when the sand has cooled and small rodents leave their burrows.",
    "A lighthouse keeper climbs the spiral stairs twice a night to trim the wick of the lamp.",
    "The orchestra tuned their violins while the conductor studied the score of the symphony.",
    "Glaciers carve deep valleys as they move slowly down from the mountains over centuries.",
    "The bakery sells rye bread, sourdough loaves and cinnamon rolls before the sun rises.",
    "Volcanic ash made the soil of the island fertile, and coffee plantations spread quickly.",
    "The chess champion sacrificed her queen to force checkmate in three moves.",
    "Migrating geese fly in a V formation to save energy over long distances.",
    "The river delta is home to herons, otters and hundreds of species of fish.",
    "The lighthouse was automated in 1990, and the keeper's cottage became a museum.",
    "Spring rain swelled the river until it broke its banks near the old mill.",
]
QUERIES = ["river flood", "lighthouse keeper lamp", "violins symphony conductor", "geese migrating",
           "bread bakery", "valley glaciers mountains", "fertile volcanic soil coffee"]


def _store(path: Path, backend: str, **qdrant: str):
    settings = {"store": {"backend": backend, **({"qdrant": qdrant} if qdrant else {})}}
    return create_store(path, Config.from_dict(settings))


def _write(store, source: str, texts: list[str], first: int = 0, lang: str | None = None) -> list:
    chunks = synthetic_chunks(source, list(range(first, first + len(texts))), lambda n: texts[n - first])
    if lang:
        for chunk in chunks:
            chunk.metadata["lang"] = lang
    store.replace_source(record_for(source, chunks), chunks, np.stack([unit_vector(n) for n in range(first, first + len(texts))]))
    store.flush()
    return chunks


def test_a_new_collection_keeps_bm25_in_qdrant_and_nothing_beside_it(tmp_path: Path) -> None:
    store = _store(tmp_path / "index", "qdrant")
    chunks = _write(store, "all.md", SENTENCES)
    try:
        assert store.abilities.server_bm25
        params = store.client.get_collection(store.collection).config.params
        assert "bm25" in (params.sparse_vectors or {})
        hits = store.search_lexical("lighthouse keeper", 3)
        assert {h.chunk_id for h in hits[:2]} == {chunks[2].id, chunks[10].id}
        assert store.search_lexical("zebra quantum", 5) == []
        assert not (store.folder / "bm25").exists()  # no tantivy index was written
        assert store.catalog.get_meta(AVGDL_META) > 5
    finally:
        store.close()


def test_the_ranking_is_the_embedded_stores_bm25(tmp_path: Path) -> None:
    """Same analyser, same IDF, the same length normalisation (the mean length fixed by the only
    write): the same order, and scores within tantivy's one-byte length encoding."""
    embedded, qdrant = _store(tmp_path / "e", "embedded"), _store(tmp_path / "q", "qdrant")
    try:
        for store in (embedded, qdrant):
            _write(store, "all.md", SENTENCES)
        for query in QUERIES:
            expected, got = embedded.search_lexical(query, 5), qdrant.search_lexical(query, 5)
            assert [h.chunk_id for h in got][:3] == [h.chunk_id for h in expected][:3], query
            for e, g in zip(expected[:3], got[:3]):
                assert g.score == pytest.approx(e.score, rel=0.05), query
    finally:
        embedded.close()
        qdrant.close()


def test_filters_run_with_the_sparse_search_and_deleted_sources_are_gone(tmp_path: Path) -> None:
    store = _store(tmp_path / "index", "qdrant")
    try:
        first = _write(store, "a.md", SENTENCES[:6])
        second = _write(store, "b.md", SENTENCES[6:], first=6)
        river = store.search_lexical("river", 5)
        assert {h.chunk_id for h in river} == {first[0].id, second[3].id, second[5].id}
        only_b = store.search_lexical("river", 5, parse_where({"source": "b.md"}))
        assert {h.chunk_id for h in only_b} == {second[3].id, second[5].id}
        not_in = store.search_lexical("river", 5, parse_where({"source": {"$ne": "b.md"}}))
        assert [h.chunk_id for h in not_in] == [first[0].id]
        store.delete_source("b.md")
        assert [h.chunk_id for h in store.search_lexical("river", 5)] == [first[0].id]
    finally:
        store.close()


def test_a_chunk_is_read_in_its_own_language(tmp_path: Path) -> None:
    store = _store(tmp_path / "index", "qdrant")
    try:
        german = _write(store, "de.md", ["Die alten Häuser am Fluss wurden im Winter renoviert.",
                                         "Der Zug nach Berlin fährt jeden Morgen um sieben Uhr."], lang="de")
        _write(store, "en.md", SENTENCES[:4], first=2)
        assert [h.chunk_id for h in store.search_lexical("Haus", 3)] == [german[0].id]  # Häuser -> haus
        assert [h.chunk_id for h in store.search_lexical("Züge Berlin", 3)] == [german[1].id]
        assert store.catalog.get_meta(FAMILIES_META) == ["de", "en"]  # what a query is read by
    finally:
        store.close()


# "The national team of Thailand won the football final last night"; "the titans trickled into
# the city, then the titans trickled home" (ไทย's character pairs inside other words); "it rained".
THAI = ["ทีมชาติไทยชนะการแข่งขันฟุตบอลนัดชิงชนะเลิศเมื่อคืนนี้อย่างสนุกสนาน",
        "ไททันทยอยเดินทางมาถึงเมืองแล้วไททันก็ทยอยกลับบ้าน", "ฝนตกหนักทั้งคืนจนน้ำท่วมถนนหน้าบ้าน"]


def test_thai_is_read_as_words_as_the_embedded_store_reads_it(tmp_path: Path) -> None:
    embedded, qdrant = _store(tmp_path / "e", "embedded"), _store(tmp_path / "q", "qdrant")
    try:
        for store in (embedded, qdrant):
            chunks = _write(store, "th.md", THAI, lang="th")
        assert qdrant.catalog.get_meta(FAMILIES_META) == ["th"]
        for query in ("ไทย", "ทีมไทยชนะไหม", "ฝนตก"):
            expected, got = embedded.search_lexical(query, 3), qdrant.search_lexical(query, 3)
            assert [h.chunk_id for h in got] == [h.chunk_id for h in expected], query
        # A word, not its character pairs: the titans hold ไท and ทย twice, never ไทย.
        assert [h.chunk_id for h in qdrant.search_lexical("ไทย", 3)] == [chunks[0].id]
    finally:
        embedded.close()
        qdrant.close()


def test_a_collection_written_before_thai_had_its_own_family_keeps_matching(tmp_path: Path) -> None:
    store = _store(tmp_path / "index", "qdrant")
    try:
        # Thai text marked Lao is read by ``sea``, as every Thai chunk was before Thai had its own
        # family: the points of such a collection, and its recorded families.
        old = _write(store, "old.md", THAI, lang="lo")
        assert store.catalog.get_meta(FAMILIES_META) == ["sea"]
        assert store.search_lexical("ทีมไทย", 3)[0].chunk_id == old[0].id
        new = _write(store, "new.md", ["ฟุตบอลทีมชาติไทยลงสนามวันนี้"], first=3, lang="th")  # "Thailand's team plays today"
        assert store.catalog.get_meta(FAMILIES_META) == ["sea", "th"]
        found = [h.chunk_id for h in store.search_lexical("ทีมไทย", 4)]
        assert old[0].id in found[:2] and new[0].id in found[:2]  # each read the way it was written
    finally:
        store.close()


def test_a_collection_keeps_the_lexical_side_it_was_created_with(tmp_path: Path) -> None:
    store = _store(tmp_path / "index", "qdrant", lexical="local")
    chunks = _write(store, "all.md", SENTENCES)
    assert not store.abilities.server_bm25
    assert [h.chunk_id for h in store.search_lexical("geese", 1)] == [chunks[8].id]
    assert (store.folder / "bm25").is_dir()
    store.close()
    reopened = _store(tmp_path / "index", "qdrant", lexical="server")
    try:
        assert not reopened.abilities.server_bm25  # the collection has no sparse vectors
        assert [h.chunk_id for h in reopened.search_lexical("geese", 1)] == [chunks[8].id]
    finally:
        reopened.close()


def test_the_mean_length_is_fixed_by_the_first_write_and_kept(tmp_path: Path) -> None:
    store = _store(tmp_path / "index", "qdrant")
    _write(store, "short.md", ["river valley", "desert foxes"])
    fixed = store.catalog.get_meta(AVGDL_META)
    assert fixed == pytest.approx(2.0)
    _write(store, "long.md", SENTENCES, first=2)
    assert store.catalog.get_meta(AVGDL_META) == fixed
    store.close()
    reopened = _store(tmp_path / "index", "qdrant")
    try:
        hits = reopened.search_lexical("river valley", 3)
        assert hits[0].chunk_id == synthetic_chunks("short.md", [0], lambda n: "river valley")[0].id
    finally:
        reopened.close()


def test_reads_while_another_thread_writes_do_not_break_local_mode(tmp_path: Path) -> None:
    """An ingest looks up cached vectors while its write-behind thread upserts: local mode's
    arrays must never be read half-grown."""
    import threading

    store = _store(tmp_path / "index", "qdrant")
    _write(store, "seed.md", SENTENCES[:2])
    failures: list[BaseException] = []
    done = threading.Event()

    def write() -> None:
        try:
            for n in range(20):
                texts = [f"{SENTENCES[(n + i) % len(SENTENCES)]} part {n} {i}" for i in range(25)]
                _write(store, f"s{n}.md", texts, first=100 + 25 * n)
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)
        finally:
            done.set()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        while not done.is_set():
            store.cached_vectors([f"hash-{n}" for n in range(50)])
            store.search_lexical("river valley", 5)
    except BaseException as exc:  # noqa: BLE001 - reported below
        failures.append(exc)
    writer.join()
    store.close()
    assert failures == []
