"""What every embedder behind an HTTP API shares.

A provider names its client class and API limits and implements ``_request`` (one
API call for one batch). The dimension comes from ``dimensions`` in the config or
from the first response, and every later response is checked against it.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np

from ..config import EmbedderConfig
from ..errors import ModelMismatchError, ProviderError
from ..providers.http import HttpClient
from .base import Embedder, Kind
from .prefixes import resolve_prefixes


class RemoteEmbedder(Embedder):
    #: Registry name, the first part of ``model_id``.
    provider: ClassVar[str]
    default_model: ClassVar[str]
    client_class: ClassVar[type[HttpClient]]
    #: The API's limit of texts per request.
    max_batch: ClassVar[int]
    #: Texts per request when the config does not set ``batch_size``.
    default_batch: ClassVar[int] = 32
    default_concurrency: ClassVar[int] = 1

    def __init__(
        self,
        client: HttpClient,
        model: str,
        *,
        batch_size: int | None = None,
        concurrency: int | None = None,
        dimensions: int | None = None,
        prefixes: dict[str, str] | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.model_id = f"{self.provider}:{model}"
        self.batch_size = min(batch_size or self.default_batch, self.max_batch)
        self.concurrency = concurrency or self.default_concurrency
        self.requested_dimensions = dimensions
        self._dimension = dimensions
        self.prefixes = prefixes if prefixes is not None else resolve_prefixes(model, None, None)

    @classmethod
    def from_config(cls, config: EmbedderConfig) -> RemoteEmbedder:
        model = config.model or cls.default_model
        # batch_size has one generic default for every provider; left at it, each API gets its
        # own (Cohere 96, OpenAI 128). Compared by value, since the index stores and reloads configs.
        generic = EmbedderConfig.model_fields["batch_size"].default
        batch_size = None if config.batch_size == generic else config.batch_size
        return cls(
            cls.client_class.from_config(config),
            model,
            batch_size=batch_size,
            concurrency=config.concurrency,
            dimensions=config.dimensions,
            prefixes=resolve_prefixes(model, config.query_prefix, config.document_prefix),
        )

    @abstractmethod
    def _request(self, texts: list[str], kind: Kind) -> list[list[float]]:
        """One API call: the vectors of ``texts`` (prefixes already added), in order."""

    def _embed_batch(self, texts: Any, kind: Kind) -> np.ndarray:
        prefix = self.prefixes[kind]
        rows = self._request([prefix + t for t in texts], kind)
        if rows and rows[0] and isinstance(rows[0][0], list):
            raise ProviderError(
                f"{self.model_id}: {self.client.service} returned one vector per token instead of one "
                "per text, because the model it serves has no pooling; serve an embedding model "
                "(llama.cpp's llama-server: --embedding --pooling mean)"
            )
        vectors = np.asarray(rows, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise ProviderError(
                f"{self.model_id}: {self.client.service} returned {len(vectors)} vectors "
                f"for {len(texts)} texts; the server is not behaving like the {self.provider} API"
            )
        self._check_dimension(vectors.shape[1])
        return vectors

    @property
    def dimension(self) -> int:  # type: ignore[override]
        """Known from the config or the first response; asks the server once if neither."""
        if self._dimension is None:
            self._embed_batch(["dimension probe"], "query")
        assert self._dimension is not None
        return self._dimension

    @dimension.setter
    def dimension(self, expected: int) -> None:
        """Set by an index that already holds vectors, so any other width is an error."""
        self._dimension = expected

    def _check_dimension(self, width: int) -> None:
        if self._dimension is None:
            self._dimension = width
        elif width != self._dimension:
            raise ModelMismatchError(
                f"{self.model_id} at {self.client.base_url} returned {width}-dimensional vectors, "
                f"but {self._dimension} were expected (from `embedder.dimensions` or the index); "
                "the server runs a different model than the one configured — point the embedder "
                "at the original model, or re-ingest into a new index"
            )

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "base_url": self.client.base_url, "prefixes": self.prefixes}

    def close(self) -> None:
        self.client.close()
