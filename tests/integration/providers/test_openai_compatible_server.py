"""The openai providers against a real OpenAI-compatible server: llama-cpp-python's."""

from __future__ import annotations

import pytest

from ragloom.config import EmbedderConfig, LLMConfig
from ragloom.embed import create_embedder
from ragloom.errors import ProviderError
from ragloom.generate import create_llm


@pytest.fixture
def server_llm(llama_server: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # local servers need no key
    llm = create_llm(LLMConfig(provider="openai", model="smollm2", base_url=llama_server, max_tokens=8, timeout=60))
    yield llm
    llm.close()


def test_chat_completion(server_llm) -> None:
    answer = server_llm.complete([{"role": "user", "content": "Say hello."}])
    assert answer.strip()


def test_streamed_chat_completion(server_llm) -> None:
    pieces = list(server_llm.stream("Count to three.", max_tokens=6))
    assert len(pieces) > 1 and "".join(pieces).strip()


def test_models_are_listed(server_llm) -> None:
    assert any(name.endswith("SmolLM2-135M-Instruct.Q4_1.gguf") for name in server_llm.client.models())


def test_embeddings_of_a_chat_model_without_pooling_are_explained(llama_server: str) -> None:
    # llama-cpp-python's server returns one vector per token for a model without pooling;
    # ragloom says so instead of storing garbage.
    embedder = create_embedder(EmbedderConfig(provider="openai", model="smollm2", base_url=llama_server))
    with pytest.raises(ProviderError, match="one vector per token .* --pooling mean"):
        embedder.embed_documents(["hello world"])
