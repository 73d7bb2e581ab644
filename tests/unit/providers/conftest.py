"""Fake Ollama, OpenAI and Cohere servers (real HTTP on loopback) for the provider tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from provider_helpers import COHERE_KEY, DIMENSION, OPENAI_KEY, PROVIDERS

from ragloom.testing.fakes import FakeCohere, FakeOllama, FakeOpenAI, FakeServer


@pytest.fixture(autouse=True)
def _no_provider_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OLLAMA_HOST", "OLLAMA_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "COHERE_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with FakeOllama(embed_models={"nomic-embed-text": DIMENSION}, chat_models=["llama3.2"]) as server:
        yield server


@pytest.fixture
def openai(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    with FakeOpenAI(embed_models={"text-embedding-3-small": DIMENSION}, api_key=OPENAI_KEY) as server:
        yield server


@pytest.fixture
def cohere(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCohere]:
    monkeypatch.setenv("COHERE_API_KEY", COHERE_KEY)
    with FakeCohere(embed_models={"embed-english-v3.0": DIMENSION}, api_key=COHERE_KEY) as server:
        yield server


@pytest.fixture(params=sorted(PROVIDERS))
def provider(request: pytest.FixtureRequest) -> tuple[str, FakeServer]:
    """Each HTTP provider with its fake server running."""
    name = request.param
    return name, request.getfixturevalue(PROVIDERS[name][0])
