"""The embedder interface.

A provider implements one method, ``_embed_batch(texts, kind)``, and states its
``model_id`` and ``dimension``. Batching (sorted by length, so little padding is
wasted), normalisation, query/document asymmetry and token counting come from here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from .. import registry
from ..config import EmbedderConfig

if TYPE_CHECKING:
    from pydantic import BaseModel

Kind = Literal["query", "document"]


class Embedder(ABC):
    """Turns text into unit-length float32 vectors."""

    #: Stable identifier recorded in the index, e.g. ``onnx:bge-small-en-v1.5``.
    model_id: str
    #: Length of every vector this embedder returns.
    dimension: int
    #: Largest batch sent to the model or API at once.
    batch_size: int = 32
    #: Batches embedded at once; HTTP providers raise it to overlap network round trips.
    concurrency: int = 1
    #: Embed every text in a batch of its own. Set where a text's vector would otherwise depend
    #: on the other texts in its batch: models that quantise activations per input tensor (INT8
    #: ONNX exports do, see ``quantises_per_batch``). Then a vector is a function of the text and
    #: the model only, so an ingest resumed after a crash reproduces a clean build.
    one_text_per_batch: bool = False
    #: The most tokens of one text (``count_tokens``) the model reads; the rest would be cut off
    #: unseen, so chunks are kept within it. None: no known limit.
    max_input_tokens: int | None = None
    #: Said at the start of the first ingest of a new index that embeds with this model, when it costs
    #: much more than the default (its time against bge-small-en's, measured). None: nothing to say.
    first_ingest_note: ClassVar[str | None] = None
    #: The component's settings, declared once: a pydantic model that checks its sub-section of the
    #: config (``embedder.<name>``) when it is resolved; a plugin reads them with ``config.options()``.
    Options: ClassVar[type[BaseModel] | None] = None

    @abstractmethod
    def _embed_batch(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        """Embed one batch; return an array of shape (len(texts), dimension)."""

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` costs this model; providers with a tokenizer override it."""
        return max(1, round(len(text.split()) * 1.3))

    def token_offsets(self, text: str) -> list[tuple[int, int]] | None:
        """Character span of every token of ``text``, if this embedder has a tokenizer."""
        return None

    def embed_documents(
        self,
        texts: Sequence[str],
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        return self._embed_many(texts, "document", progress)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed_many(texts, "query", None)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_queries([text])[0]

    def embed_query_for(self, text: str, task: str | None) -> np.ndarray:
        """The embedding of a query for a search ``task`` (``"code"``: source code searched in
        words). A model trained with a prompt for that task asks with it (EmbeddingGemma); the
        others embed every query alike."""
        return self.embed_query(text)

    def describe(self) -> dict[str, Any]:
        return {"model_id": self.model_id, "dimension": self.dimension}

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release sessions, connections or threads."""

    def _embed_many(
        self, texts: Sequence[str], kind: Kind, progress: Callable[[int], None] | None
    ) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        out: np.ndarray | None = None
        # Sorting by length keeps each batch's padding small; results go back in input order.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        size = 1 if self.one_text_per_batch else self.batch_size
        batches = [order[start : start + size] for start in range(0, len(order), size)]
        for rows, vectors in zip(batches, self._map_batches(texts, batches, kind)):
            vectors = np.asarray(vectors, dtype=np.float32)
            if out is None:  # allocated after the first batch, which tells HTTP embedders their dimension
                out = np.zeros((len(texts), self.dimension), dtype=np.float32)
            if vectors.shape != (len(rows), self.dimension):
                from ..errors import EmbeddingError

                raise EmbeddingError(
                    f"{self.model_id} returned vectors of shape {vectors.shape}, expected "
                    f"({len(rows)}, {self.dimension}); the model or server is not the one configured"
                )
            out[rows] = normalize(vectors)
            if progress is not None:
                progress(len(rows))
        assert out is not None
        return out

    def _map_batches(
        self, texts: Sequence[str], batches: list[list[int]], kind: Kind
    ) -> Iterator[np.ndarray]:
        """Each batch's vectors, in order; up to ``concurrency`` batches in flight."""
        jobs = ([texts[i] for i in rows] for rows in batches)
        if self.concurrency <= 1 or len(batches) == 1:
            yield from (self._embed_batch(batch, kind) for batch in jobs)
            return
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="ragloom-embed")
        try:
            yield from pool.map(lambda batch: self._embed_batch(batch, kind), jobs)
        finally:  # after a failed batch, do not wait for the rest to be sent
            pool.shutdown(wait=True, cancel_futures=True)


def quantises_per_batch(model_file: Path) -> bool:
    """Whether an ONNX model quantises activations dynamically (one scale per input tensor,
    so per batch). The operator's name is stored verbatim in the model's protobuf."""
    try:
        return b"DynamicQuantizeLinear" in model_file.read_bytes()
    except OSError:
        return False


def normalize(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (vectors / norms).astype(np.float32, copy=False)


_GENERIC_FOLDERS = {"model", "models", "onnx", "weights", "checkpoint"}


def folder_model_name(folder: Path) -> str:
    """The name a model folder goes by in ``model_id``, which the index records.

    Usually the folder's own name; ``<name>/model`` when the folder is named generically (a
    model packaged inside a wheel), and ``org/name`` for a Hugging Face cache snapshot.
    """
    folder = folder.expanduser().resolve()
    if folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--"):
        return folder.parent.parent.name.removeprefix("models--").replace("--", "/")
    if folder.name.lower() in _GENERIC_FOLDERS:
        return f"{folder.parent.name}/{folder.name}"
    return folder.name


def is_default_embedder(settings: EmbedderConfig) -> bool:
    """Whether the embedder is left to ragloom (the packaged default, no model named): an index
    then embeds with what it recorded, and a new one chooses by its documents' language."""
    return settings.provider == "onnx" and settings.model is None


def create_embedder(config: EmbedderConfig) -> Embedder:
    cls = registry.resolve("embedder", config.provider)
    config.options()  # a misspelt option fails here, before a model is loaded
    return cls.from_config(config)
