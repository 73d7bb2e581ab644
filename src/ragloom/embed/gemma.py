"""EmbeddingGemma-300m (Google, Gemma Terms of Use), INT8 ONNX, installed with
``ragloom models install embeddinggemma-300m --accept-licence``.

768-d vectors trained with Matryoshka learning, so the first 512, 256 or 128 numbers are a
vector of their own (``embedder.dimensions``; fewer numbers, smaller index, a little less
quality). The model was trained with a prompt before each text: ``title: none | text: `` before
a document and ``task: search result | query: `` before a query; for code
(``embedder.embeddinggemma.query_task: code``) ``task: code retrieval | query: ``. The graph
pools and projects inside (``models/gemma_onnx.py``), so each run returns the sentence vector.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..config import EmbedderConfig
from ..errors import ConfigError, EmbeddingError
from ..models import EMBEDDINGGEMMA, find, location
from .base import Kind, normalize
from .onnx import OnnxEmbedder

PROVIDER = "embeddinggemma"
#: The Matryoshka sizes the model was trained to give.
DIMENSIONS = (768, 512, 256, 128)
#: The model's prompts, as its ``config_sentence_transformers.json`` names them.
_PROMPTS = {"search": "query", "code": "InstructionRetrieval"}


class EmbeddingGemmaEmbedder(OnnxEmbedder):
    """EmbeddingGemma through onnxruntime, one text per run (as the default embedder)."""

    # Measured on the first 2,000 SciFact abstracts, one ingest each (BENCHMARKS.md "EmbeddingGemma-300m").
    first_ingest_note = (
        f"{EMBEDDINGGEMMA} embeds about 9x slower than the default bge-small-en (3.8 against 36.8 chunks/s "
        "on SciFact abstracts, 2 cores) and needs about 3x the memory (1.9 GB); it finds more (SciFact "
        "nDCG@10 0.782 against 0.738, hybrid). For the fast model, make the index with --embedder onnx")

    class Options(BaseModel):
        model_config = ConfigDict(extra="forbid")

        query_task: Literal["search", "code"] = Field(
            "search", description="the query prompt: search (task: search result) or code (task: code retrieval)")

    def __init__(self, model_dir: Path, *, dimensions: int | None = None, query_task: str = "search", threads: int = 0,
                 sessions: int = 0, max_tokens: int = 512) -> None:
        prompts = json.loads((model_dir / "config_sentence_transformers.json").read_text())["prompts"]
        super().__init__(model_dir, EMBEDDINGGEMMA, threads=threads, sessions=sessions, max_tokens=max_tokens,
                         query_prefix=prompts[_PROMPTS[query_task]])
        self.document_prefix = prompts["document"]
        self.task_prefixes = {task: prompts[key] for task, key in _PROMPTS.items()}
        self._tokenizer.enable_padding(pad_id=0, pad_token="<pad>")
        full = self.dimension  # what the graph gives
        self.dimension = dimensions or full
        self.model_id = f"{PROVIDER}:{EMBEDDINGGEMMA}" + (f"@{self.dimension}" if self.dimension != full else "")
        # The window holds <bos>, <eos> and the document prompt besides the text's own tokens.
        self.max_input_tokens = max_tokens - 2 - self.count_tokens(self.document_prefix)

    @classmethod
    def from_config(cls, config: EmbedderConfig) -> EmbeddingGemmaEmbedder:
        if config.model not in (None, EMBEDDINGGEMMA):
            raise ConfigError(f"the {PROVIDER} embedder runs {EMBEDDINGGEMMA} only, not {config.model!r}; "
                              "leave embedder.model empty")
        dimensions = config.dimensions
        if dimensions is not None and dimensions not in DIMENSIONS:
            raise ConfigError(f"embedder.dimensions: {EMBEDDINGGEMMA} gives {', '.join(map(str, DIMENSIONS))} "
                              f"numbers, not {dimensions}")
        folder = location(find(EMBEDDINGGEMMA))
        if folder is None or not (folder / "model.onnx").is_file():
            raise EmbeddingError(
                f"{EMBEDDINGGEMMA} is not installed; install it with `ragloom models install {EMBEDDINGGEMMA} "
                "--accept-licence` (1.15 GB download under the Gemma Terms of Use, then about 330 MB on disk)")
        options = config.options()
        return cls(folder, dimensions=dimensions, query_task=options.query_task if options else "search",
                   threads=config.threads, sessions=config.sessions, max_tokens=config.max_tokens)

    def embed_query_for(self, text: str, task: str | None) -> np.ndarray:
        """With the task's prompt (``code``: ``task: code retrieval``; CoSQA dev 0.786 against the
        search prompt's 0.758), whatever ``query_task`` says; an unknown task or None: ``query_task``'s."""
        prefix = self.task_prefixes.get(task or "", self.query_prefix)
        if prefix == self.query_prefix:
            return self.embed_query(text)
        return normalize(self._vectors(self._encode([prefix + text])))[0]

    def feeds(self, texts: Sequence[str], kind: Kind) -> dict[str, np.ndarray]:
        prefix = self.query_prefix if kind == "query" else self.document_prefix
        return self._encode([prefix + t for t in texts])

    def _encode(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        return {"input_ids": ids, "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64)}

    def _embed_batch(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        return self._vectors(self.feeds(texts, kind))

    def _vectors(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        # Matryoshka: the first numbers are the smaller vector (normalised by the caller).
        return self._pool.run(feeds)[:, : self.dimension]

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "query_prefix": self.query_prefix, "document_prefix": self.document_prefix}
