"""What the embedders that run a named model in-process share (fastembed, sentence-transformers).

A subclass loads its model in ``__init__`` (through ``load_model``), sets ``dimension``
and implements ``_encode``; prefixes, config and naming come from here.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np

from ..config import EmbedderConfig
from ..errors import ModelNotFoundError
from .base import Embedder, Kind, folder_model_name
from .prefixes import resolve_prefixes

T = TypeVar("T")


class LocalEmbedder(Embedder):
    #: Registry name, the first part of ``model_id``.
    provider: ClassVar[str]
    default_model: ClassVar[str]
    #: Text put before queries and documents.
    prefixes: dict[str, str]

    def __init__(
        self,
        model: str | None = None,
        *,
        threads: int = 0,
        batch_size: int = 32,
        max_tokens: int = 512,
        query_prefix: str | None = None,
        document_prefix: str | None = None,
        **options: Any,
    ) -> None:
        """``options`` go to the backend's loader (fastembed: ``cache_dir``; sentence-transformers: ``device``)."""
        model = model or self.default_model
        folder = Path(model).expanduser()
        self.model_id = f"{self.provider}:{folder_model_name(folder) if folder.is_dir() else model}"
        self.batch_size = batch_size
        prompts = self._load(model, threads=threads, max_tokens=max_tokens, **options)
        self.prefixes = resolve_prefixes(model, query_prefix, document_prefix, prompts)

    @abstractmethod
    def _load(self, model: str, *, threads: int, max_tokens: int, **options: Any) -> Mapping[str, str]:
        """Load the model and set ``dimension``; return the model's own prompts, if it has any."""

    @classmethod
    def from_config(cls, config: EmbedderConfig) -> LocalEmbedder:
        return cls(
            config.model or cls.default_model,
            threads=config.threads,
            batch_size=config.batch_size,
            max_tokens=config.max_tokens,
            query_prefix=config.query_prefix,
            document_prefix=config.document_prefix,
        )

    @abstractmethod
    def _encode(self, texts: list[str]) -> np.ndarray:
        """Vectors of ``texts`` (prefixes already added), one batch, in order."""

    def _embed_batch(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        prefix = self.prefixes[kind]
        return self._encode([prefix + t for t in texts])


def load_model(provider: str, model: str, load: Callable[[], T]) -> T:
    """Run ``load``; any failure (offline hub, unknown name, bad folder) becomes one clear error."""
    try:
        return load()
    except Exception as exc:  # the libraries raise OSError, ValueError, hub errors...
        raise ModelNotFoundError(
            f"{provider} could not load the model {model!r} ({type(exc).__name__}: {exc}); "
            "give a local folder, or run once while online so the model is downloaded to the cache"
        ) from exc
