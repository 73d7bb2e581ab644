"""Chat with a model served by Ollama (``POST /api/chat``; streaming is NDJSON)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...providers.http import dig
from ...providers.ollama import OllamaClient
from ...models.llm import GenerationOptions, Message
from .remote import RemoteLLM


class OllamaLLM(RemoteLLM):
    provider = "ollama"
    default_model = "llama3.2"
    client_class = OllamaClient

    def _payload(self, messages: list[Message], options: GenerationOptions, stream: bool) -> dict[str, Any]:
        settings: dict[str, Any] = {"temperature": options.temperature, "num_predict": options.max_tokens}
        if options.stop:
            settings["stop"] = list(options.stop)
        payload = {"model": self.model, "messages": messages, "stream": stream, "options": settings}
        if options.json_mode:
            payload["format"] = "json"
        return payload

    def _complete(self, messages: list[Message], options: GenerationOptions) -> str:
        response = self.client.post("/api/chat", self._payload(messages, options, stream=False))
        return dig(response, "message", "content", service=self.client.service)

    def _stream(self, messages: list[Message], options: GenerationOptions) -> Iterator[str]:
        for line in self.client.stream_lines("/api/chat", self._payload(messages, options, stream=True)):
            if not line.strip():
                continue
            event = self._event(line)
            if piece := dig(event, "message", "content", service=self.client.service):
                yield piece
            if event.get("done"):
                return
