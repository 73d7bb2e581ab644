"""The query pipeline: steps built from config by name, over-fetch, traces, presets."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from ragloom import Config, Index, registry
from ragloom.errors import ConfigError, UnknownComponentError
from ragloom.retrieve.base import NoOptions, QueryPlan, SearchContext, with_score
from ragloom.retrieve.pipeline import build_pipeline, preset_names
from ragloom.types import Hit

from test_index import small_corpus


class ReverseStage:
    """A test stage: reverses its input and records how many hits it was given."""

    name: ClassVar[str] = "reverse-test"
    Options = NoOptions
    seen: ClassVar[list[int]] = []

    def __init__(self, options: NoOptions) -> None:
        self.options = options

    def wants(self, k: int) -> int:
        return k * 3

    def process(self, plan: QueryPlan, hits: list[Hit], context: SearchContext) -> list[Hit]:
        ReverseStage.seen.append(len(hits))
        return [with_score(hit, 1.0 / (i + 1), "reverse-test") for i, hit in enumerate(reversed(hits))]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, embedder):
    root = tmp_path_factory.mktemp("pipeline")
    docs = small_corpus(root / "docs")
    with Index.open(root / "ix", Config(), embedder=embedder) as idx:
        idx.ingest([docs])
        yield idx


def test_mode_names_are_presets_of_one_retriever(index: Index) -> None:
    for mode in ("dense", "lexical", "hybrid"):
        result = index.retrieve("how do nodes communicate", k=3, mode=mode)
        assert result.plan.preset == mode
        assert [step.name for step in result.trace] == [mode]
        assert result.trace[0].n_out == len(result.hits) <= 3
        assert result.hits == index.search("how do nodes communicate", k=3, mode=mode)


def test_hybrid_trace_keeps_both_signals(index: Index) -> None:
    result = index.retrieve("Kalman filter covariance", k=2)
    top = result.hits[0]
    assert top.source.endswith("kalman.txt")
    assert set(top.scores) == {"dense", "lexical"}
    assert result.trace[0].scores[top.chunk_id] == pytest.approx(top.score)
    assert result.elapsed_ms > 0


def test_stages_run_in_order_with_over_fetch(index: Index) -> None:
    registry.register("stage", ReverseStage.name, ReverseStage)
    ReverseStage.seen.clear()
    config = index.config.model_copy(update={"search": index.config.search.model_copy(
        update={"pipeline": [{"lexical": {}}, "reverse-test"]})})
    view = Index(index.path, config, index.store, index.embedder)
    result = view.retrieve("nodes topics service request", k=2)
    assert index.audit(1)[0].parameters["pipeline"] == ["lexical", "reverse-test"]
    assert [step.name for step in result.trace] == ["lexical", "reverse-test"]
    # The stage asked for 3 x k candidates and was given all the retriever found up to that.
    lexical = index.search("nodes topics service request", k=6, mode="lexical")
    assert ReverseStage.seen == [len(lexical)]
    assert [h.chunk_id for h in result.hits] == [h.chunk_id for h in reversed(lexical)][:2]
    assert [h.rank for h in result.hits] == [1, 2]
    assert result.hits[0].scores["reverse-test"] == 1.0
    assert result.plan.preset == "custom"


def test_user_presets_and_unknown_names(index: Index) -> None:
    config = index.config.model_copy(update={"search": index.config.search.model_copy(
        update={"presets": {"words": ["lexical"]}})})
    view = Index(index.path, config, index.store, index.embedder)
    assert view.retrieve("bread", k=1, mode="words").plan.preset == "words"
    with pytest.raises(UnknownComponentError) as caught:
        view.search("bread", mode="nonsense")
    assert "words" in str(caught.value) and "hybrid" in str(caught.value)
    assert {"dense", "lexical", "hybrid"} <= set(preset_names())


def test_pipeline_config_errors_name_the_fix() -> None:
    registry.register("stage", ReverseStage.name, ReverseStage)
    with pytest.raises(ConfigError, match="put a retriever first"):
        build_pipeline([{"reverse-test": {}}, "hybrid"])
    with pytest.raises(ConfigError, match="only the first step retrieves"):
        build_pipeline(["hybrid", "dense"])
    with pytest.raises(ConfigError, match="valid options: fusion, alpha, rrf_k, candidates"):
        build_pipeline([{"hybrid": {"alpah": 0.5}}])
    with pytest.raises(ConfigError, match="a pipeline step must be a name"):
        build_pipeline([{"hybrid": {}, "dense": {}}])
    with pytest.raises(ConfigError, match="empty"):
        build_pipeline([])
    with pytest.raises(UnknownComponentError, match="hybrid"):
        build_pipeline(["hybird"])


def test_pipeline_from_yaml(tmp_path: Path) -> None:
    (tmp_path / "ragloom.yaml").write_text(
        "search:\n  pipeline:\n    - hybrid: {alpha: 0.5, fusion: rrf}\n"
    )
    config = Config.load(tmp_path / "ragloom.yaml")
    pipeline = build_pipeline(config.search.pipeline)
    assert pipeline.steps == ["hybrid"]
    assert pipeline.retriever.options.fusion == "rrf"


def test_audit_records_each_step_with_the_options_that_ran(index: Index) -> None:
    """Not the search section's alpha: the hybrid step's own, and the stages' options."""
    config = index.config.model_copy(update={"search": index.config.search.model_copy(
        update={"alpha": 0.8, "pipeline": [{"hybrid": {"alpha": 0.25, "fusion": "rrf"}}, {"mmr": {"lambda": 0.6}}]})})
    view = Index(index.path, config, index.store, index.embedder)
    view.retrieve("motion planning grid", k=3)
    steps = view.audit(1)[0].parameters["steps"]
    assert [next(iter(step)) for step in steps] == ["hybrid", "mmr"]
    hybrid, mmr = steps[0]["hybrid"], steps[1]["mmr"]
    assert (hybrid["fusion"], hybrid["alpha"]) == ("rrf", 0.25)
    assert (hybrid["rrf_k"], hybrid["candidates"]) == (config.search.rrf_k, config.search.candidates)
    assert mmr["lambda"] == 0.6  # as the option is written in config
    # An identifier-like query gets its own dense weight (a plan hint): that is what ran.
    assert view.retrieve("get_user_id", k=1).plan.hints["alpha"] == 0.5
    assert view.audit(1)[0].parameters["steps"][0]["hybrid"]["alpha"] == 0.5


def test_hybrid_options_override_config(index: Index) -> None:
    plain = index.retrieve("motion planning grid", k=3).hits
    config = index.config.model_copy(update={"search": index.config.search.model_copy(
        update={"pipeline": [{"hybrid": {"alpha": 0.0}}]})})
    view = Index(index.path, config, index.store, index.embedder)
    lexical_only = view.retrieve("motion planning grid", k=3).hits
    # alpha 0: each fused score is the min-max normalised BM25 score alone.
    bm25 = {h.chunk_id: h.score for h in index.retrieve("motion planning grid", k=100, mode="lexical").hits}
    low, high = min(bm25.values()), max(bm25.values())
    for hit in lexical_only:
        expected = (bm25[hit.chunk_id] - low) / (high - low) if hit.chunk_id in bm25 else 0.0
        assert hit.score == pytest.approx(expected, abs=1e-6)
    assert plain[0].scores["dense"] > 0  # the default blend uses the dense side too


# -- relevance across queries (issue 25, finding 3) -----------------------------------------------

def test_relevance_means_the_same_across_queries_where_the_fused_score_does_not(tmp_path, embedder, sample_docs):
    with Index.open(tmp_path / "index", embedder=embedder) as index:
        index.ingest(sample_docs)
        for mode in ("hybrid", "precise"):
            related = index.search("how do ROS 2 nodes communicate?", k=3, mode=mode)
            unrelated = index.search("banana bread recipe", k=3, mode=mode)
            # The rank score of the best hit is high whatever it is; relevance tells them apart.
            assert related[0].score > 0.7 and unrelated[0].score > 0.7
            assert related[0].relevance > unrelated[0].relevance + 0.3
            assert not related[0].weak and all(h.weak for h in unrelated)
            assert related[0].relevance_kind == unrelated[0].relevance_kind == (
                "dense" if mode == "hybrid" else "rerank_probability")
        assert index.search("nodes", k=1, mode="lexical")[0].weak is None  # no relevance to judge
