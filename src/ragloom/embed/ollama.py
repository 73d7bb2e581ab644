"""Embeddings from an Ollama server (``POST /api/embed``), e.g. ``ollama:nomic-embed-text``."""

from __future__ import annotations

from typing import Any

from ..providers.http import dig
from ..providers.ollama import OllamaClient
from .base import Kind
from .remote import RemoteEmbedder


class OllamaEmbedder(RemoteEmbedder):
    provider = "ollama"
    default_model = "nomic-embed-text"
    client_class = OllamaClient
    max_batch = 512  # no hard limit; one request holds the server for its whole batch
    default_batch = 32
    default_concurrency = 1  # Ollama runs one request per model unless OLLAMA_NUM_PARALLEL is set

    def _request(self, texts: list[str], kind: Kind) -> list[list[float]]:
        payload: dict[str, Any] = {"model": self.model, "input": texts, "truncate": True}
        if self.requested_dimensions:
            payload["dimensions"] = self.requested_dimensions
        return dig(self.client.post("/api/embed", payload), "embeddings", service=self.client.service)
