"""The RAPTOR tree end to end: real embedder, real embedded store, SciFact abstracts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragloom import Config, Index
from ragloom.errors import MissingStructureError
from ragloom.knowledge.raptor import Tree, tree_view
from ragloom.knowledge.sync import status
from ragloom.knowledge.tables import tables
from ragloom.testing.knowledge_corpus import RAPTOR_TABLES, documents


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "part1.jsonl").write_text(documents(["cancer", "bread"]))
    (folder / "part2.jsonl").write_text(documents(["robots"]))
    return folder


def open_index(path: Path, embedder, **settings) -> Index:
    settings.setdefault("raptor", {"enabled": True, "stop_below": 4, "cluster_size": 8})
    return Index.open(path, Config.from_dict(settings), embedder=embedder)


@pytest.fixture
def index(tmp_path: Path, corpus: Path, embedder):
    with open_index(tmp_path / "index", embedder) as idx:
        assert idx.ingest([corpus]).ok
        yield idx


def test_ingest_builds_a_tree_whose_first_level_covers_every_chunk(index: Index) -> None:
    nodes = Tree(tables(index.store)).nodes()
    chunk_ids = {c.id for _, c in index.store.catalog.iter_chunks()}
    level_one = [n for n in nodes if n.level == 1]
    assert len(level_one) >= 2
    assert {leaf for n in level_one for leaf in n.children} == chunk_ids
    for node in nodes:
        assert node.text and node.vector.shape == (384,) and not node.dirty
        assert set(node.leaves) <= chunk_ids
    state = status(index).raptor
    assert state.built and state.fresh and state.counts["leaves"] == len(chunk_ids)


def test_raptor_search_returns_summaries_that_cite_their_leaves(index: Index) -> None:
    hits = index.search("DNA methylation in cancer cells", k=15, mode="raptor")
    summaries = [h for h in hits if "raptor_level" in h.metadata]
    assert summaries, [h.chunk_id for h in hits]
    chunk_ids = {c.id for _, c in index.store.catalog.iter_chunks()}
    for hit in summaries:
        assert hit.chunk_id.startswith("raptor:") and set(hit.metadata["leaf_chunks"]) <= chunk_ids
        assert hit.doc_id and hit.metadata["leaf_sources"]
    assert any("raptor_level" not in h.metadata for h in hits)


def test_a_changed_source_re_summarises_only_the_clusters_it_touched(index: Index, corpus: Path) -> None:
    tree = Tree(tables(index.store))
    before = {n.id: n for n in tree.nodes()}
    old_part2 = {c.id for _, c in index.store.catalog.iter_chunks(source=str((corpus / "part2.jsonl").resolve()))}
    (corpus / "part2.jsonl").write_text(documents(["football"], offset=100))
    index.ingest([corpus])
    after = {n.id: n for n in tree.nodes()}
    new_part2 = {c.id for _, c in index.store.catalog.iter_chunks(source=str((corpus / "part2.jsonl").resolve()))}
    assert set(after) <= set(before)  # the same clusters, none re-clustered
    level_one = [n for n in after.values() if n.level == 1]
    covered = {leaf for n in level_one for leaf in n.children}
    assert not (covered & old_part2) and new_part2 <= covered
    untouched = [i for i, n in before.items() if n.level == 1 and not (set(n.children) & old_part2)]
    for node_id in untouched:  # clusters of part1 only, which no new chunk joined, kept their summary
        if node_id in after and set(after[node_id].children) == set(before[node_id].children):
            assert after[node_id].text == before[node_id].text
    counts = status(index).raptor.counts
    assert counts["dirty"] == 0 and counts["leaves_changed_since_build"] == len(old_part2) + len(new_part2)


def test_removing_every_source_leaves_empty_tables(index: Index, corpus: Path) -> None:
    index.remove(corpus)
    db = tables(index.store)
    for table in RAPTOR_TABLES:
        assert db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 0, table
    with pytest.raises(MissingStructureError, match="ragloom ingest --raptor"):
        tree_view(index.store)


def test_asking_an_index_without_a_tree_says_how_to_build_it(tmp_path: Path, corpus: Path, embedder) -> None:
    with Index.open(tmp_path / "plain", Config(), embedder=embedder) as plain:
        plain.ingest([corpus])
        with pytest.raises(MissingStructureError, match="raptor rebuild"):
            plain.search("cancer", mode="raptor")
        assert not status(plain).raptor.built


def test_cli_rebuild_show_and_status(tmp_path: Path, corpus: Path, python_bin: str) -> None:
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    run = lambda *args: subprocess.run([python_bin, "-m", "ragloom", "--index", str(tmp_path / "cli"), *args],
                                       capture_output=True, text=True, timeout=300, env=env)
    assert run("ingest", str(corpus), "--quiet").returncode == 0
    before = run("status", "--json")
    assert json.loads(before.stdout)["raptor"]["built"] is False
    rebuilt = run("raptor", "rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "summaries over" in rebuilt.stdout
    shown = run("raptor", "show", "-n", "2")
    assert shown.returncode == 0 and "L1" in shown.stdout
    after = json.loads(run("status", "--json").stdout)
    assert after["raptor"]["built"] and after["raptor"]["fresh"]
    assert "raptor tree" in run("status").stdout
    flags = subprocess.run([python_bin, "-m", "ragloom", "--index", str(tmp_path / "flags"), "ingest", str(corpus),
                            "--graph", "--raptor", "--quiet"], capture_output=True, text=True, timeout=300, env=env)
    assert flags.returncode == 0, flags.stderr
    both = json.loads(subprocess.run([python_bin, "-m", "ragloom", "--index", str(tmp_path / "flags"), "status", "--json"],
                                     capture_output=True, text=True, timeout=300, env=env).stdout)
    assert both["graph"]["built"] and both["raptor"]["built"] and both["graph"]["fresh"]


def test_a_tree_re_clusters_once_most_of_its_chunks_are_new(index: Index, corpus: Path) -> None:
    built = status(index).raptor.counts["leaves_at_build"]
    (corpus / "part3.jsonl").write_text(documents(["football", "bread", "robots", "cancer"], offset=200))
    report = index.ingest([corpus])
    assert any("re-clustered" in w for w in report.warnings)
    counts = status(index).raptor.counts
    assert counts["leaves_at_build"] == built + 40 and counts["leaves_changed_since_build"] == 0
