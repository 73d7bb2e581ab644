"""Embeddings through fastembed (ONNX, no torch): any model it knows by name, or a local folder.

A name such as ``BAAI/bge-small-en-v1.5`` is downloaded to fastembed's cache the first
time, which needs the network; a folder holding an ONNX export (``model.onnx``,
``tokenizer.json``, ``tokenizer_config.json``) is registered as a custom model and
loaded offline. Install with ``pip install 'ragloom[fastembed]'``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EmbeddingError
from ..optional import require
from .base import quantises_per_batch
from .local import LocalEmbedder, load_model

_CLS_POOLED = ("bge", "mxbai", "snowflake", "arctic")


class FastEmbedEmbedder(LocalEmbedder):
    provider = "fastembed"
    default_model = "BAAI/bge-small-en-v1.5"

    def _load(self, model: str, *, threads: int, max_tokens: int, cache_dir: str | None = None) -> dict[str, str]:
        fastembed = require("fastembed", extra="fastembed", feature="the fastembed embedder")
        folder = Path(model).expanduser()
        kwargs: dict[str, Any] = {"threads": threads or None, "cache_dir": cache_dir}
        name = model
        if folder.is_dir():
            name = register_folder(fastembed.TextEmbedding, folder)
            kwargs["specific_model_path"] = str(folder)
            # An INT8 export gives a text a batch-dependent vector: embed texts one at a time.
            self.one_text_per_batch = any(quantises_per_batch(f) for f in folder.rglob("*.onnx"))
        self._model = load_model(self.provider, model, lambda: fastembed.TextEmbedding(name, **kwargs))
        self.dimension = int(self._model.embedding_size)
        tokenizer = getattr(getattr(self._model, "model", None), "tokenizer", None)
        if tokenizer is not None:  # fastembed truncates at the model's limit; honour a lower one
            limit = (tokenizer.truncation or {}).get("max_length", max_tokens)
            tokenizer.enable_truncation(max_length=min(max_tokens, limit))
            self.max_input_tokens = min(max_tokens, limit) - 2  # [CLS] text [SEP]
        self._counter = _untruncated(tokenizer)
        return {}

    def _encode(self, texts: list[str]) -> np.ndarray:
        # The base class already batched (sorted by length); fastembed must not re-batch.
        return np.stack(list(self._model.embed(texts, batch_size=len(texts))))

    def count_tokens(self, text: str) -> int:
        if self._counter is None:
            return super().count_tokens(text)
        return len(self._counter.encode(text, add_special_tokens=False).ids)


def _untruncated(tokenizer: Any) -> Any:
    """A copy of fastembed's tokenizer that counts every token."""
    if tokenizer is None or not hasattr(tokenizer, "to_str"):
        return None
    from tokenizers import Tokenizer

    counter = Tokenizer.from_str(tokenizer.to_str())
    counter.no_truncation()
    counter.no_padding()
    return counter


def register_folder(text_embedding: Any, folder: Path) -> str:
    """Register an ONNX export in ``folder`` with fastembed; return the name to load it by."""
    from fastembed.common.model_description import ModelSource, PoolingType

    name = f"local/{folder.resolve()}"
    if any(d["model"] == name for d in text_embedding.list_supported_models()):
        return name
    model_file = next(
        (f for f in ("model.onnx", "onnx/model.onnx") if (folder / f).is_file()),
        next((str(p.relative_to(folder)) for p in sorted(folder.rglob("*.onnx"))), None),
    )
    config_file = folder / "config.json"
    if model_file is None or not config_file.is_file():
        raise EmbeddingError(
            f"{folder} must hold an ONNX model (model.onnx) and its config.json; "
            "export one with `optimum-cli export onnx`, or give fastembed a model name"
        )
    dimension = int(json.loads(config_file.read_text(encoding="utf-8"))["hidden_size"])
    pooling = PoolingType.CLS if _cls_pooled(folder) else PoolingType.MEAN
    text_embedding.add_custom_model(
        model=name, pooling=pooling, normalization=True, sources=ModelSource(hf=name),
        dim=dimension, model_file=model_file,
    )
    return name


def _cls_pooled(folder: Path) -> bool:
    """Pooling from sentence-transformers' 1_Pooling/config.json, else from the model family."""
    pooling = folder / "1_Pooling" / "config.json"
    if pooling.is_file():
        return bool(json.loads(pooling.read_text(encoding="utf-8")).get("pooling_mode_cls_token"))
    return any(family in folder.resolve().name.lower() for family in _CLS_POOLED)
