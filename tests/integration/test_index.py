"""The embedded engine end to end: real model, real SQLite, real tantivy."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from ragloom import Config, Index, QueryError, RagloomWarning
from ragloom.errors import (
    ModelMismatchError,
    SourceNotFoundError,
    UnknownConfigKeyError,
    UnsupportedFormatError,
)
from ragloom.testing.pdf import write_corrupt_pdf, write_pdf

ROS = (
    "# ROS 2 communication\n\nROS 2 nodes communicate by publishing messages on topics; any number of "
    "subscribers receive them. Discovery and transport are handled by the DDS middleware.\n\n"
    "## Services\n\nA service is a request/response call between two nodes: a client sends a request "
    "and the server answers it once.\n"
)
KALMAN = (
    "The Kalman filter fuses noisy measurements from several sensors into one state estimate. "
    "It alternates a prediction step, driven by a motion model, and an update step that weighs "
    "each measurement by its covariance.\n"
)
COOKING = "To bake bread, mix flour, water, salt and yeast, knead the dough, let it rise and bake it.\n"


def small_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ros.md").write_text(ROS)
    (folder / "kalman.txt").write_text(KALMAN)
    (folder / "bread.txt").write_text(COOKING)
    write_pdf(folder / "planning.pdf", [
        "Motion planning. A* search finds the shortest path on a grid using a heuristic. " * 8,
        "Sampling-based planners such as RRT explore the configuration space at random. " * 8,
        "Trajectory optimisation smooths a path while respecting velocity limits. " * 8,
    ])
    return folder


def open_index(path: Path, embedder, **settings) -> Index:
    settings.setdefault("chunking", {"chunk_size": 96, "chunk_overlap": 16})
    return Index.open(path, Config.from_dict(settings), embedder=embedder)


@pytest.fixture
def index(tmp_path, embedder):
    docs = small_corpus(tmp_path / "docs")
    with open_index(tmp_path / "index", embedder) as idx:
        report = idx.ingest([docs])
        assert report.ok, report.failed
        yield idx


def test_round_trip_returns_the_answering_passage_with_its_source(index):
    hits = index.search("how do ROS 2 nodes communicate?", k=3)
    assert hits[0].source.endswith("ros.md")
    assert "publishing messages on topics" in hits[0].text
    assert [h.rank for h in hits] == [1, 2, 3]
    assert hits[0].score >= hits[1].score >= hits[2].score
    top = hits[0]
    assert top.metadata["chunk_index"] == top.chunk_index
    assert top.metadata["source"] == top.source
    assert set(top.scores) == {"dense", "lexical"}


@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid"])
def test_each_mode_finds_the_kalman_note(index, mode):
    hits = index.search("Kalman filter sensor fusion", k=2, mode=mode)
    assert hits[0].source.endswith("kalman.txt")


def test_pdf_hits_carry_their_page(index):
    pdf = [s.path for s in index.sources() if s.path.endswith(".pdf")]
    hits = index.search("RRT explores the configuration space", k=1, where={"source": {"$in": pdf}})
    assert hits[0].page == 2
    pages = {h.page for h in index.search("planning", k=20, where={"source": pdf[0]})}
    assert pages == {1, 2, 3}


def _all_chunks(index: Index):
    return index.store.get_chunks(list(index.store.matrix.ids) if index.store.matrix.ids else [])


@pytest.mark.parametrize(
    "where",
    [
        {"doc_id": "kalman.txt"},
        {"doc_id": {"$ne": "kalman.txt"}},
        {"doc_id": {"$in": ["kalman.txt", "bread.txt"]}},
        {"page": {"$lt": 2}},
        {"page": {"$lte": 2}},
        {"page": {"$gt": 1}},
        {"page": {"$gte": 3}},
        {"page": {"$gte": 2, "$lt": 3}},
    ],
)
@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid"])
def test_filters_are_exact(index, where, mode):
    from ragloom.filters import matches, parse_where

    conditions = parse_where(where)
    index.search("robot", k=1, mode="dense")  # make sure the derived indexes are loaded
    every = index.store.get_chunks(list(index.store.matrix.ids))
    expected = {c.id for c in every if matches(c.metadata, conditions)}
    assert expected, "the filter should select something in this corpus"
    hits = index.search("planning path sensors nodes bread", k=100, where=where, mode=mode)
    got = {h.chunk_id for h in hits}
    assert got <= expected
    if mode == "dense":
        assert got == expected  # exact search over the allowed rows returns all of them at k=100


def test_a_filter_never_lowers_recall(index):
    """The top hits of a filtered search equal the unfiltered ranking restricted to the filter."""
    where = {"doc_id": {"$ne": "ros.md"}}
    unfiltered = index.search("how do nodes talk to each other", k=100, mode="dense")
    filtered = index.search("how do nodes talk to each other", k=3, where=where, mode="dense")
    expected = [h.chunk_id for h in unfiltered if h.metadata["doc_id"] != "ros.md"][:3]
    assert [h.chunk_id for h in filtered] == expected


def test_incremental_ingest(tmp_path, embedder):
    docs = small_corpus(tmp_path / "docs")
    with open_index(tmp_path / "index", embedder) as idx:
        first = idx.ingest([docs])
        assert len(first.added) == 4 and first.chunks_embedded > 0

        again = idx.ingest([docs])
        assert len(again.unchanged) == 4
        assert again.chunks_embedded == 0 and again.tokens_embedded == 0 and not again.added

        # Change one paragraph of a multi-chunk file: only the changed chunk is embedded.
        (docs / "ros.md").write_text(ROS + "\n## Actions\n\nActions are long-running goals with feedback.\n")
        changed = idx.ingest([docs])
        assert [Path(p).name for p in changed.updated] == ["ros.md"]
        assert 0 < changed.chunks_embedded < changed.chunks_written + 1
        assert len(changed.unchanged) == 3

        # Rename: the old path disappears, the new one appears, nothing is re-embedded.
        (docs / "kalman.txt").rename(docs / "estimation.txt")
        renamed = idx.ingest([docs])
        assert [Path(p).name for p in renamed.removed] == ["kalman.txt"]
        assert [Path(p).name for p in renamed.added] == ["estimation.txt"]
        assert renamed.chunks_embedded == 0

        # Delete: gone from the index and from search results.
        (docs / "bread.txt").unlink()
        deleted = idx.ingest([docs])
        assert [Path(p).name for p in deleted.removed] == ["bread.txt"]
        assert all(not h.source.endswith("bread.txt") for h in idx.search("bake bread dough", k=10))
        names = sorted(Path(s.path).name for s in idx.sources())
        assert names == ["estimation.txt", "planning.pdf", "ros.md"]
        assert idx.store.count() == sum(s.chunk_count for s in idx.sources())


def test_ids_and_order_are_deterministic(tmp_path, embedder):
    docs = small_corpus(tmp_path / "docs")
    ids = []
    for name in ("a", "b"):
        with open_index(tmp_path / name, embedder) as idx:
            idx.ingest([docs])
            ids.append(sorted(idx.store.matrix.ids or [h.chunk_id for h in idx.search("x y z", k=100)]))
            runs = [[h.chunk_id for h in idx.search("sensor planning", k=10)] for _ in range(2)]
            assert runs[0] == runs[1]
    assert ids[0] == ids[1]


def test_ties_are_broken_by_chunk_id(tmp_path, embedder):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("one.txt", "two.txt", "three.txt"):
        (docs / name).write_text("Identical passage about lidar odometry.\n")
    with open_index(tmp_path / "index", embedder) as idx:
        idx.ingest([docs])
        for mode in ("dense", "lexical", "hybrid"):
            hits = idx.search("lidar odometry", k=3, mode=mode)
            assert len({h.score for h in hits}) == 1
            assert [h.chunk_id for h in hits] == sorted(h.chunk_id for h in hits)


def test_bad_input_gets_clear_errors(tmp_path, embedder):
    docs = small_corpus(tmp_path / "docs")
    (docs / "empty.txt").write_text("")
    write_corrupt_pdf(docs / "broken.pdf")
    (docs / "tool.exe").write_bytes(b"MZ\x90\x00\x03")
    with open_index(tmp_path / "index", embedder) as idx:
        report = idx.ingest([docs])
        assert [Path(f.path).name for f in report.failed] == ["broken.pdf"]
        assert "broken.pdf" in report.failed[0].error
        assert len(report.added) == 5  # the four good files and the empty one
        assert any("empty" in w for w in report.warnings)
        assert [Path(p).name for p in report.skipped] == ["tool.exe"]

        with pytest.raises(UnsupportedFormatError, match=r"\.md"):
            idx.ingest([docs / "tool.exe"])
        with pytest.raises(SourceNotFoundError):
            idx.ingest([docs / "missing.txt"])
        with pytest.raises(QueryError):
            idx.search("   ")
        with pytest.warns(RagloomWarning, match="outside the allowed range"):
            hits = idx.search("sensor", k=1000)
        assert len(hits) <= idx.config.search.k_max
        assert idx.search("zzzqqq", mode="lexical") == []


def test_empty_index_returns_nothing_with_a_message(tmp_path, embedder):
    with open_index(tmp_path / "index", embedder) as idx:
        with pytest.warns(RagloomWarning, match="empty"):
            assert idx.search("anything") == []


def test_unknown_config_key_names_the_valid_ones():
    with pytest.raises(UnknownConfigKeyError, match="valid keys here are: .*mode"):
        Config.from_dict({"search": {"mdoe": "dense"}})


def test_opening_with_another_embedder_is_an_error(tmp_path, embedder):
    from ragloom.embed.base import Embedder

    class Other(Embedder):
        model_id, dimension = "test:other", 8

        def _embed_batch(self, texts, kind):
            return np.ones((len(texts), 8), dtype=np.float32)

    docs = small_corpus(tmp_path / "docs")
    with open_index(tmp_path / "index", embedder) as idx:
        idx.ingest([docs])
    with pytest.raises(ModelMismatchError, match="was built with onnx:bge-small-en-v1.5"):
        Index.open(tmp_path / "index", Config(), embedder=Other())


def test_audit_log_records_every_search(index):
    index.search("planning path", k=2, mode="lexical")
    index.search("ros nodes", k=1, where={"doc_id": "ros.md"})
    entries = index.audit(last=2)
    assert [e.query for e in entries] == ["ros nodes", "planning path"]
    assert entries[0].filters == {"doc_id": "ros.md"} and entries[0].k == 1
    assert entries[1].mode == "lexical"
    assert [h["rank"] for h in entries[1].hits] == [1, 2]
    assert all(len(h["chunk_id"]) == 64 for h in entries[1].hits)


def test_derived_indexes_are_rebuilt_when_stale(tmp_path, embedder):
    docs = small_corpus(tmp_path / "docs")
    with open_index(tmp_path / "index", embedder) as idx:
        idx.ingest([docs])
        before = [h.chunk_id for h in idx.search("motion planning", k=5)]
    # Simulate a crash after SQLite committed but before the caches caught up.
    db = sqlite3.connect(tmp_path / "index" / "ragloom.sqlite")
    db.execute("UPDATE meta SET value = json(value + 1) WHERE key = 'generation'")
    db.commit()
    db.close()
    with open_index(tmp_path / "index", embedder) as idx:
        assert [h.chunk_id for h in idx.search("motion planning", k=5)] == before
        generation = idx.store.catalog.generation()
        assert idx.store.matrix.generation == generation
        assert idx.store.lexical.generation() == generation


def test_markdown_files_are_chunked_by_section_unless_told_otherwise(tmp_path, embedder):
    docs = small_corpus(tmp_path / "docs")
    with open_index(tmp_path / "by-section", embedder) as idx:
        idx.ingest([docs])
        hit = idx.search("request and response call", k=1, where={"doc_id": "ros.md"})[0]
        assert hit.section == "ROS 2 communication > Services"
        assert hit.metadata["section_path"] == ["ROS 2 communication", "Services"]
    with open_index(tmp_path / "flat", embedder, chunking={"strategy": "recursive", "by_extension": {}}) as idx:
        idx.ingest([docs])
        hit = idx.search("request and response call", k=1, where={"doc_id": "ros.md"})[0]
        assert hit.section == ""


def test_sources_are_shown_relative_to_the_folder_that_was_ingested(tmp_path, embedder):
    docs = tmp_path / "site" / "docs"
    for folder, text in (("tutorial", "Tutorial start page."), ("advanced", "Advanced start page.")):
        (docs / folder).mkdir(parents=True)
        (docs / folder / "index.md").write_text(f"# {folder}\n\n{text}\n")
    single = tmp_path / "notes" / "todo.md"
    single.parent.mkdir()
    single.write_text("# Todo\n\nWrite the release notes.\n")
    with Index.open(tmp_path / "index", Config(), embedder=embedder) as index:
        index.ingest([docs])
        index.ingest([single])
        shown = index.display_paths()
        assert sorted(shown(r.path) for r in index.sources()) == ["advanced/index.md", "todo.md", "tutorial/index.md"]
        assert [r.path for r in index.sources()][0].startswith(str(tmp_path))  # the source's id stays its full path
    # An index that recorded no roots (an older ragloom) shows paths from the folder its sources share.
    with Index.open(tmp_path / "index", Config(), embedder=embedder) as index:
        with index.store.catalog.transaction():
            index.store.catalog.set_meta("ingest_roots", [])
        shown = index.display_paths()
        assert shown(str(docs / "tutorial" / "index.md")) == "site/docs/tutorial/index.md"
