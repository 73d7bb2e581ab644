"""The LLM interface: complete a chat, stream its tokens, optionally as JSON.

A provider implements ``_stream`` (the answer in pieces) and usually ``_complete``
(one non-streamed request, cheaper over HTTP); ``complete``, ``stream``,
``complete_json``, message checking and defaults come from here.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict

from .. import registry
from ..config import LLMConfig
from ..errors import ProviderError, QueryError

if TYPE_CHECKING:  # annotations only: no runtime dependency on typing_extensions
    from pydantic import BaseModel
    from typing_extensions import Unpack

#: One chat turn: ``{"role": "system" | "user" | "assistant", "content": "..."}``.
Message = dict[str, str]
ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class GenerationOptions:
    max_tokens: int = 512
    temperature: float = 0.0
    #: Ask the model for one JSON object (providers constrain or instruct it).
    json_mode: bool = False
    stop: tuple[str, ...] = ()


class CallOptions(TypedDict, total=False):
    """What a single call may override; None means the LLM's default."""

    max_tokens: int | None
    temperature: float | None
    json_mode: bool
    stop: Sequence[str]


class LLM(ABC):
    """Generates text from a list of chat messages."""

    #: Stable identifier, e.g. ``llamacpp:SmolLM2-135M-Instruct.Q4_1`` or ``openai:gpt-4o-mini``.
    model_id: str
    #: Defaults for calls that do not set them (from ``llm.max_tokens`` / ``llm.temperature``).
    max_tokens: int = 512
    temperature: float = 0.0
    #: The component's settings, declared once: a pydantic model that checks its sub-section of the
    #: config (``llm.<name>``) when it is resolved; a plugin reads them with ``config.options()``.
    Options: ClassVar[type[BaseModel] | None] = None

    def __init__(self, model_id: str, *, max_tokens: int = 512, temperature: float = 0.0) -> None:
        self.model_id = model_id
        self.max_tokens = max_tokens
        self.temperature = temperature

    @classmethod
    @abstractmethod
    def from_config(cls, config: LLMConfig) -> LLM:
        """Build the provider from the ``llm`` section of ragloom.yaml."""

    @abstractmethod
    def _stream(self, messages: list[Message], options: GenerationOptions) -> Iterator[str]:
        """Yield the answer's text in pieces as the model produces them."""

    def _complete(self, messages: list[Message], options: GenerationOptions) -> str:
        return "".join(self._stream(messages, options))

    def complete(self, messages: str | Sequence[Message], **options: Unpack[CallOptions]) -> str:
        """The whole answer to ``messages`` (a string is one user message)."""
        return self._complete(as_messages(messages), self._options(**options))

    def stream(self, messages: str | Sequence[Message], **options: Unpack[CallOptions]) -> Iterator[str]:
        """The answer in pieces, as soon as each is generated."""
        return self._stream(as_messages(messages), self._options(**options))

    def complete_json(self, messages: str | Sequence[Message], **options: Unpack[CallOptions]) -> Any:
        """The answer parsed as JSON; a ProviderError if the model did not return JSON."""
        text = self.complete(messages, **{**options, "json_mode": True})
        try:
            return json.loads(text)
        except ValueError:
            raise ProviderError(
                f"{self.model_id} was asked for JSON but answered {text[:200]!r}; "
                "use a larger model, or raise max_tokens if the answer was cut off"
            ) from None

    def describe(self) -> dict[str, Any]:
        return {"model_id": self.model_id, "max_tokens": self.max_tokens, "temperature": self.temperature}

    def close(self) -> None:
        """Release the model, connections or threads."""

    def _options(
        self,
        max_tokens: int | None = None,
        temperature: float | None = None,
        json_mode: bool = False,
        stop: Sequence[str] = (),
    ) -> GenerationOptions:
        return GenerationOptions(
            max_tokens=self.max_tokens if max_tokens is None else max_tokens,
            temperature=self.temperature if temperature is None else temperature,
            json_mode=json_mode,
            stop=tuple(stop),
        )


def as_messages(messages: str | Sequence[Message]) -> list[Message]:
    """Check chat messages; a plain string becomes one user message."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    checked = []
    for number, message in enumerate(messages, start=1):
        role, content = message.get("role"), message.get("content")
        if role not in ROLES or not isinstance(content, str):
            raise QueryError(
                f"message {number} must be {{'role': one of {', '.join(ROLES)}, 'content': str}}, "
                f"got {message!r}"
            )
        checked.append({"role": role, "content": content})
    if not checked:
        raise QueryError("no messages to answer; pass a question or a list of chat messages")
    return checked


def create_llm(config: LLMConfig | None = None) -> LLM:
    config = config or LLMConfig()
    cls = registry.resolve("llm", config.provider)
    config.options()  # a misspelt option fails here, before a model is loaded
    return cls.from_config(config)


#: Local models are loaded once per process, whatever index asks (keyed by their settings).
_SHARED: dict[str, LLM] = {}


def shared_llm(config: LLMConfig) -> LLM:
    """The LLM for these settings, built once per process (a local model takes seconds to load)."""
    key = config.model_dump_json()
    if key not in _SHARED:
        _SHARED[key] = create_llm(config)
    return _SHARED[key]


def llm_unavailable(config: LLMConfig) -> str | None:
    """Why the configured LLM cannot be used without installing something, or None when it can.

    Only local models are checked (cheaply, without loading them); a server is found out
    about when it is asked.
    """
    import importlib.util
    from pathlib import Path

    if config.provider != "llamacpp":
        return None
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (`scripts/setup.sh --llm` builds it, ~15 min)"
    from . import DEFAULT_LOCAL_LLM, LOCAL_LLMS, SMOLLM2, local_llm_installed

    name = config.model or DEFAULT_LOCAL_LLM
    if name in LOCAL_LLMS or name == SMOLLM2:
        if not local_llm_installed(name):
            return f"the local model {name} is not installed (`scripts/setup.sh --llm` installs it)"
        return None
    if not Path(name).expanduser().is_file():
        return f"llm.model is {name!r}, which is not a .gguf file"
    return None
