"""Embeddings from OpenAI or any OpenAI-compatible server (``POST /v1/embeddings``).

vLLM, llama.cpp's server, LM Studio and TEI all speak this API; prefixes are still
applied when the served model wants them (a bge or nomic model behind vLLM).
"""

from __future__ import annotations

from typing import Any

from ..providers.http import dig
from ..providers.openai import OpenAIClient
from .base import Kind
from .remote import RemoteEmbedder


class OpenAIEmbedder(RemoteEmbedder):
    provider = "openai"
    default_model = "text-embedding-3-small"
    client_class = OpenAIClient
    max_batch = 2048  # OpenAI's limit of inputs per request
    default_batch = 128
    default_concurrency = 4

    def _request(self, texts: list[str], kind: Kind) -> list[list[float]]:
        payload: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.requested_dimensions:
            payload["dimensions"] = self.requested_dimensions
        data = dig(self.client.post("/embeddings", payload), "data", service=self.client.service)
        # The API may answer out of order; every item carries its input's index.
        items = sorted(data, key=lambda item: item.get("index", 0))
        return [dig(item, "embedding", service=self.client.service) for item in items]
