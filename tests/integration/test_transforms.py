"""HyDE, multi-query, corrective RAG and contextual compression as pipeline parts, with the real tiny
llama.cpp model (its text is nonsense; these tests check the plumbing and the evaluator's decisions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom import Config, Index
from ragloom.errors import ConfigError

SMOLLM = {"provider": "llamacpp", "model": "smollm2", "threads": 1, "context_size": 2048, "max_tokens": 48}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, embedder, sample_docs):
    root = tmp_path_factory.mktemp("transforms")
    with Index.open(root / "index", Config.from_dict({"llm": SMOLLM}), embedder=embedder) as built:
        built.ingest(sample_docs)
        yield built


def view(index: Index, **settings) -> Index:
    config = Config.from_dict({**index.config.model_dump(), **settings})
    return Index(index.path, config, index.store, index.embedder)


@pytest.mark.parametrize("mode", ["hyde", "multi-query"])
def test_llm_transforms_retrieve_with_the_local_model(index: Index, mode: str) -> None:
    result = index.retrieve("How do ROS 2 nodes find each other?", k=3, mode=mode)
    assert len(result.hits) == 3 and result.trace[0].name == mode
    assert len({h.chunk_id for h in result.hits}) == 3


@pytest.mark.parametrize("mode", ["hyde", "multi-query", "corrective"])
def test_without_an_llm_the_error_names_the_setting(index: Index, mode: str) -> None:
    broken = view(index, llm={**SMOLLM, "model": "/nope/model.gguf"},
                  search={"pipeline": [{mode: {"upper": 1.0, "lower": 1.0}} if mode == "corrective" else mode]})
    with pytest.raises(ConfigError, match=r"needs an LLM.*llm\.provider"):
        broken.search("How do ROS 2 nodes find each other?")


def test_a_confident_corrective_result_is_kept_and_compressed(index: Index) -> None:
    plain = index.search("How do ROS 2 nodes find each other?", k=3)
    result = index.retrieve("How do ROS 2 nodes find each other?", k=3, mode="corrective")
    assert [s.name for s in result.trace] == ["corrective", "compress"]
    top = result.hits[0]
    assert top.scores["crag_correct"] == 1.0 and top.chunk_id == plain[0].chunk_id
    assert 0 < top.scores["compression"] < 1.0 and len(top.text) < len(plain[0].text)


def test_an_irrelevant_result_is_rewritten_then_falls_back_to_lexical(index: Index) -> None:
    strict = view(index, search={"pipeline": [{"corrective": {"upper": 1.0, "lower": 1.0}}]})
    hits = strict.search("How do ROS 2 nodes find each other?", k=3)
    assert hits and all(h.scores.get("crag_incorrect_fallback") == 1.0 for h in hits)
    assert all("lexical" in h.scores for h in hits)


def test_compression_keeps_offsets_into_the_source(index: Index) -> None:
    compressed = view(index, search={"pipeline": ["hybrid", {"compress": {"threshold": 0.5}}]})
    hits = compressed.search("Which DDS implementations can be used?", k=2)
    markdown = next(h for h in hits if h.source.endswith(".md"))
    document = Path(markdown.source).read_text(encoding="utf-8")
    for start, end in markdown.metadata["kept_offsets"]:
        assert document[start:end] in markdown.text
    assert markdown.metadata["compression_ratio"] == pytest.approx(markdown.scores["compression"], abs=1e-4)
