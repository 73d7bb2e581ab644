"""Embeddings from Cohere (``POST /v2/embed``), with ``input_type`` per side.

Cohere models are asymmetric through ``input_type``: ``search_query`` for queries,
``search_document`` for the chunks being indexed; no text prefixes are added.
"""

from __future__ import annotations

from typing import Any

from ..providers.cohere import CohereClient
from ..providers.http import dig
from .base import Kind
from .remote import RemoteEmbedder

INPUT_TYPES: dict[str, str] = {"query": "search_query", "document": "search_document"}


class CohereEmbedder(RemoteEmbedder):
    provider = "cohere"
    default_model = "embed-english-v3.0"
    client_class = CohereClient
    max_batch = 96  # Cohere's limit of texts per request
    default_batch = 96
    default_concurrency = 2

    def _request(self, texts: list[str], kind: Kind) -> list[list[float]]:
        payload: dict[str, Any] = {
            "model": self.model,
            "texts": texts,
            "input_type": INPUT_TYPES[kind],
            "embedding_types": ["float"],
            "truncate": "END",
        }
        if self.requested_dimensions:
            payload["output_dimension"] = self.requested_dimensions  # embed-v4.0 and later
        response = self.client.post("/v2/embed", payload)
        return dig(response, "embeddings", "float", service=self.client.service)
