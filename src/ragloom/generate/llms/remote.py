"""What every LLM behind an HTTP API shares: client, model name, defaults."""

from __future__ import annotations

from typing import Any, ClassVar

from ...config import LLMConfig
from ...errors import ProviderError
from ...providers.http import HttpClient, parse_json
from ...models.llm import LLM, GenerationOptions, Message


class RemoteLLM(LLM):
    #: Registry name, the first part of ``model_id``.
    provider: ClassVar[str]
    default_model: ClassVar[str]
    client_class: ClassVar[type[HttpClient]]
    #: The request field that holds stop sequences.
    stop_field: ClassVar[str] = "stop"

    def __init__(
        self, client: HttpClient, model: str, *, max_tokens: int = 512, temperature: float = 0.0
    ) -> None:
        super().__init__(f"{self.provider}:{model}", max_tokens=max_tokens, temperature=temperature)
        self.client = client
        self.model = model

    @classmethod
    def from_config(cls, config: LLMConfig) -> RemoteLLM:
        return cls(
            cls.client_class.from_config(config),
            config.model or cls.default_model,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
        )

    def _payload(self, messages: list[Message], options: GenerationOptions, stream: bool) -> dict[str, Any]:
        """The request body in the shape OpenAI and Cohere share."""
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            # max_tokens, not OpenAI's newer max_completion_tokens: every compatible server knows it.
            "max_tokens": options.max_tokens,
            "temperature": options.temperature,
            "stream": stream,
        }
        if options.stop:
            payload[self.stop_field] = list(options.stop)
        if options.json_mode:
            payload["response_format"] = {"type": "json_object"}
        return payload

    def _event(self, data: str) -> dict[str, Any]:
        """One streamed JSON event; an error event (``{"error": ...}``) becomes a ProviderError."""
        event = parse_json(data, self.client.service, self.client.base_url)
        if not isinstance(event, dict):
            raise ProviderError(f"{self.client.service} streamed an unexpected event: {data[:200]!r}")
        if error := event.get("error"):
            detail = error.get("message", error) if isinstance(error, dict) else error
            raise ProviderError(f"{self.client.service} stopped generating: {detail}")
        return event

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "base_url": self.client.base_url}

    def close(self) -> None:
        self.client.close()
