"""Reranking with Cohere (``POST /v2/rerank``), e.g. ``rerank-v3.5``.

``score`` gives every passage's relevance in input order, so it plugs into any
post-processor; ``rerank`` gives the best ``top_n`` as (index, score) pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...providers.cohere import CohereClient
from ...providers.http import dig


class CohereReranker:
    provider = "cohere"
    default_model = "rerank-v3.5"
    #: Documents per request that Cohere recommends at most.
    max_documents = 1000

    def __init__(self, model: str | None = None, *, client: CohereClient | None = None) -> None:
        self.client = client or CohereClient()
        self.model = model or self.default_model
        self.model_id = f"{self.provider}:{self.model}"

    @classmethod
    def from_config(cls, config: Any) -> CohereReranker:
        """From any config section with ``model`` and the connection fields
        (``base_url``, ``api_key_env``, ``timeout``, ``max_retries``, ``retry_base_delay``)."""
        return cls(config.model, client=CohereClient.from_config(config))

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Relevance of each text to ``query`` (0..1, higher is better), in input order."""
        scores = np.zeros(len(texts), dtype=np.float32)
        for start in range(0, len(texts), self.max_documents):
            batch = list(texts[start : start + self.max_documents])
            payload = {"model": self.model, "query": query, "documents": batch, "top_n": len(batch)}
            results = dig(self.client.post("/v2/rerank", payload), "results", service="Cohere")
            for result in results:
                scores[start + int(result["index"])] = float(result["relevance_score"])
        return scores

    def rerank(self, query: str, texts: Sequence[str], top_n: int | None = None) -> list[tuple[int, float]]:
        """The ``top_n`` most relevant texts as (index into ``texts``, score), best first."""
        scores = self.score(query, texts)
        order = sorted(range(len(texts)), key=lambda i: (-scores[i], i))
        return [(i, float(scores[i])) for i in order[:top_n]]

    def close(self) -> None:
        self.client.close()
