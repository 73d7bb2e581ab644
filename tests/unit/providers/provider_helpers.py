"""Settings shared by the provider tests (imported by conftest and the tests)."""

from __future__ import annotations

from ragloom.config import EmbedderConfig, LLMConfig
from ragloom.testing.fakes import FakeServer

OPENAI_KEY = "sk-test-key"
COHERE_KEY = "co-test-key"
DIMENSION = 48
#: Quick retries, so failure tests take milliseconds.
FAST = {"max_retries": 2, "retry_base_delay": 0.01, "timeout": 5.0}

#: provider -> (fixture, embedding model, chat model)
PROVIDERS = {
    "ollama": ("ollama", "nomic-embed-text", "llama3.2"),
    "openai": ("openai", "text-embedding-3-small", "gpt-4o-mini"),
    "cohere": ("cohere", "embed-english-v3.0", "command-a-03-2025"),
}


def embedder_config(name: str, server: FakeServer, **overrides: object) -> EmbedderConfig:
    settings = {"provider": name, "model": PROVIDERS[name][1], "base_url": server.url, **FAST}
    return EmbedderConfig(**{**settings, **overrides})


def llm_config(name: str, server: FakeServer, **overrides: object) -> LLMConfig:
    settings = {"provider": name, "model": PROVIDERS[name][2], "base_url": server.url, **FAST}
    return LLMConfig(**{**settings, **overrides})
