"""Embeddings through sentence-transformers: any model by Hugging Face name or local folder.

Needs torch (``pip install 'ragloom[sentence-transformers]'``). Query and document
prompts come from the model's own configuration when it has them (e5, nomic, ...).
"""

from __future__ import annotations

import numpy as np

from ..optional import require
from .local import LocalEmbedder, load_model

_EXTRA = {"extra": "sentence-transformers", "package": "sentence-transformers"}


class SentenceTransformerEmbedder(LocalEmbedder):
    provider = "sentence-transformers"
    default_model = "sentence-transformers/all-MiniLM-L6-v2"

    def _load(self, model: str, *, threads: int, max_tokens: int, device: str | None = None) -> dict[str, str]:
        st = require("sentence_transformers", feature="the sentence-transformers embedder", **_EXTRA)
        if threads:
            require("torch", feature="the sentence-transformers embedder", **_EXTRA).set_num_threads(threads)
        self._model = load_model(self.provider, model, lambda: st.SentenceTransformer(model, device=device))
        self._model.max_seq_length = min(max_tokens, self._model.max_seq_length or max_tokens)
        self.max_input_tokens = self._model.max_seq_length - 2  # [CLS] text [SEP]
        dimension = getattr(self._model, "get_embedding_dimension", None)  # the newer name
        self.dimension = int((dimension or self._model.get_sentence_embedding_dimension)())
        return getattr(self._model, "prompts", None) or {}

    def _encode(self, texts: list[str]) -> np.ndarray:
        # prompt="" keeps sentence-transformers from adding a default prompt on top of ours.
        return self._model.encode(
            texts, batch_size=len(texts), prompt="",
            convert_to_numpy=True, normalize_embeddings=False, show_progress_bar=False,
        )

    def count_tokens(self, text: str) -> int:
        # verbose=False: counting a text longer than the model's limit is the point, not a mistake.
        return len(self._model.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])
