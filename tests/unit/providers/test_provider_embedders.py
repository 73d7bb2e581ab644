"""Ollama, OpenAI and Cohere embedders against fakes that speak each API's wire format."""

from __future__ import annotations

import numpy as np
import pytest
from provider_helpers import DIMENSION, FAST, embedder_config

from ragloom.config import EmbedderConfig
from ragloom.embed import create_embedder
from ragloom.errors import (
    AuthenticationError,
    ModelMismatchError,
    ModelNotFoundError,
    RateLimitError,
)
from ragloom.testing.fakes import (
    FakeCohere,
    FakeOllama,
    FakeOpenAI,
    FakeServer,
    Fault,
    fake_embedding,
)

TEXTS = ["Ollama runs models locally.", "Cohere has an embed API.", "bge wants a query instruction."]
#: What each provider must send for (document, query): a prefix, or Cohere's input_type.
SIDES = {
    "ollama": (("search_document: ", None), ("search_query: ", None)),
    "openai": (("", None), ("", None)),
    "cohere": (("", "search_document"), ("", "search_query")),
}
INPUT_FIELD = {"ollama": "input", "openai": "input", "cohere": "texts"}


def sent_texts(server: FakeServer, name: str) -> list[list[str]]:
    return [r.json[INPUT_FIELD[name]] for r in server.requests if r.method == "POST"]


def test_documents_and_queries_are_embedded_with_each_sides_prefix_or_input_type(provider) -> None:
    name, server = provider
    embedder = create_embedder(embedder_config(name, server))
    documents = embedder.embed_documents(TEXTS)
    query = embedder.embed_query("where do models run?")
    (doc_prefix, doc_type), (query_prefix, query_type) = SIDES[name]
    doc_request, query_request = [r.json for r in server.requests]
    assert sorted(doc_request[INPUT_FIELD[name]]) == sorted(doc_prefix + t for t in TEXTS)
    assert query_request[INPUT_FIELD[name]] == [query_prefix + "where do models run?"]
    assert doc_request.get("input_type") == doc_type and query_request.get("input_type") == query_type
    # Vectors come back in input order, unit length, and are the server's own.
    model = doc_request["model"]
    expected = np.array([fake_embedding(doc_prefix + t, DIMENSION, model) for t in TEXTS])
    assert np.allclose(documents, expected, atol=1e-5)
    assert embedder.dimension == DIMENSION == query.shape[0]
    assert embedder.model_id == f"{name}:{model}"


def test_batches_follow_the_api_limit_and_keep_input_order(cohere: FakeCohere) -> None:
    embedder = create_embedder(embedder_config("cohere", cohere, concurrency=3))
    texts = [f"passage number {i} " + "word " * (i % 7) for i in range(200)]
    vectors = embedder.embed_documents(texts)
    sizes = [len(batch) for batch in sent_texts(cohere, "cohere")]
    assert embedder.batch_size == 96 and sorted(sizes) == [8, 96, 96]
    expected = np.array([fake_embedding(t, DIMENSION, "embed-english-v3.0") for t in texts])
    assert np.allclose(vectors, expected, atol=1e-5)


def test_configured_batch_size_is_capped_by_the_api(openai: FakeOpenAI) -> None:
    assert create_embedder(embedder_config("openai", openai)).batch_size == 128
    reloaded = EmbedderConfig.model_validate(embedder_config("openai", openai).model_dump())  # as an index does
    assert create_embedder(reloaded).batch_size == 128
    assert create_embedder(embedder_config("openai", openai, batch_size=5000)).batch_size == 2048
    embedder = create_embedder(embedder_config("openai", openai, batch_size=2))
    embedder.embed_documents(TEXTS)
    assert sorted(len(batch) for batch in sent_texts(openai, "openai")) == [1, 2]  # sent concurrently


def test_dimension_is_discovered_once_from_the_server(ollama: FakeOllama) -> None:
    embedder = create_embedder(embedder_config("ollama", ollama))
    assert embedder.dimension == DIMENSION and embedder.dimension == DIMENSION
    assert len(ollama.requests) == 1


def test_requested_dimensions_are_sent_to_the_api(openai: FakeOpenAI) -> None:
    embedder = create_embedder(embedder_config("openai", openai, dimensions=16))
    assert embedder.dimension == 16 and not openai.requests  # known without asking
    assert embedder.embed_documents(TEXTS).shape == (3, 16)
    assert openai.requests[0].json["dimensions"] == 16


def test_a_server_that_changes_model_is_a_mismatch(ollama: FakeOllama) -> None:
    embedder = create_embedder(embedder_config("ollama", ollama))
    embedder.embed_documents(TEXTS)
    ollama.embed_models["nomic-embed-text:latest"] = 32  # someone re-pulled another model
    with pytest.raises(ModelMismatchError, match=r"returned 32-dimensional vectors, but 48 were expected"):
        embedder.embed_query("anything")


def test_index_dimension_is_enforced(openai: FakeOpenAI) -> None:
    embedder = create_embedder(embedder_config("openai", openai))
    embedder.dimension = 1536  # what the index recorded
    with pytest.raises(ModelMismatchError, match="re-ingest into a new index"):
        embedder.embed_documents(TEXTS)


@pytest.mark.parametrize(
    ("name", "hint"),
    [("ollama", "pull it with `ollama pull nomic-embed-txt`"),
     ("openai", "set `model` to one of them"),
     ("cohere", "check the name and that your key may use it")],
)
def test_unknown_model_lists_the_servers_models(request, name: str, hint: str) -> None:
    server = request.getfixturevalue(name)
    wrong = {"ollama": "nomic-embed-txt", "openai": "text-embedding-4", "cohere": "embed-english-v9"}[name]
    embedder = create_embedder(embedder_config(name, server, model=wrong))
    with pytest.raises(ModelNotFoundError) as caught:
        embedder.embed_documents(TEXTS)
    message = str(caught.value)
    assert f"has no model {wrong!r}" in message and hint in message
    listed = {"ollama": "llama3.2:latest, nomic-embed-text:latest",
              "openai": "gpt-4o-mini, text-embedding-3-small",
              "cohere": "command-a-03-2025, embed-english-v3.0, rerank-v3.5"}[name]
    assert f"it has: {listed}" in message


def test_rate_limit_is_retried_per_provider(provider) -> None:
    name, server = provider
    server.fail(Fault.rate_limited(retry_after=0.2), Fault(503))
    vectors = create_embedder(embedder_config(name, server)).embed_documents(TEXTS)
    assert vectors.shape == (3, DIMENSION)
    first, second, _ = server.requests
    assert second.at - first.at >= 0.2


def test_rate_limit_exhausted_per_provider(provider) -> None:
    name, server = provider
    server.fail(*[Fault.rate_limited(retry_after=0)] * 3)
    with pytest.raises(RateLimitError, match="after 3 attempts"):
        create_embedder(embedder_config(name, server)).embed_documents(TEXTS)


def test_missing_api_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    with pytest.raises(AuthenticationError, match="set the environment variable COHERE_API_KEY"):
        create_embedder(EmbedderConfig(provider="cohere"))
    with pytest.raises(AuthenticationError, match="set the environment variable OPENAI_API_KEY"):
        create_embedder(EmbedderConfig(provider="openai"))  # api.openai.com always needs one
    with pytest.raises(AuthenticationError, match="MY_KEY"):
        create_embedder(EmbedderConfig(provider="openai", api_key_env="MY_KEY"))


def test_refused_key_names_the_variable(cohere: FakeCohere, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COHERE_API_KEY", "expired")
    with pytest.raises(AuthenticationError, match=r"HTTP 401 \(invalid api token\); check the key in COHERE_API_KEY"):
        create_embedder(embedder_config("cohere", cohere)).embed_query("x")


def test_openai_compatible_server_needs_no_key_and_honours_openai_base_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with FakeOpenAI(embed_models={"BAAI/bge-small-en-v1.5": 8}) as server:  # e.g. TEI or vLLM
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        embedder = create_embedder(EmbedderConfig(provider="openai", model="BAAI/bge-small-en-v1.5", **FAST))
        embedder.embed_query("what is bge?")
        request = server.requests[0]
    assert "authorization" not in request.headers
    assert request.json["input"] == ["Represent this sentence for searching relevant passages: what is bge?"]


def test_ollama_honours_ollama_host(ollama: FakeOllama, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", ollama.url.removeprefix("http://"))
    embedder = create_embedder(EmbedderConfig(provider="ollama", **FAST))
    assert embedder.model_id == "ollama:nomic-embed-text" and embedder.dimension == DIMENSION


def test_prefixes_can_be_configured(ollama: FakeOllama) -> None:
    embedder = create_embedder(embedder_config("ollama", ollama, query_prefix="Q: ", document_prefix=""))
    embedder.embed_documents(["doc"])
    embedder.embed_query("question")
    assert sent_texts(ollama, "ollama") == [["doc"], ["Q: question"]]


def test_token_level_vectors_are_explained(openai: FakeOpenAI) -> None:
    embedder = create_embedder(embedder_config("openai", openai))
    embedder._request = lambda texts, kind: [[[0.1, 0.2], [0.3, 0.4]] for _ in texts]  # llama.cpp, no pooling
    with pytest.raises(Exception, match="one vector per token"):
        embedder.embed_query("x")
