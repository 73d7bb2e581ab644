"""Chat with Cohere (``POST /v2/chat``; streaming is server-sent events)."""

from __future__ import annotations

from collections.abc import Iterator

from ...providers.cohere import CohereClient
from ...providers.http import dig, iter_sse
from ...models.llm import GenerationOptions, Message
from .remote import RemoteLLM


class CohereLLM(RemoteLLM):
    provider = "cohere"
    default_model = "command-a-03-2025"
    client_class = CohereClient
    stop_field = "stop_sequences"

    def _complete(self, messages: list[Message], options: GenerationOptions) -> str:
        response = self.client.post("/v2/chat", self._payload(messages, options, stream=False))
        content = dig(response, "message", "content", service=self.client.service)
        return "".join(part.get("text", "") for part in content if part.get("type") == "text")

    def _stream(self, messages: list[Message], options: GenerationOptions) -> Iterator[str]:
        lines = self.client.stream_lines("/v2/chat", self._payload(messages, options, stream=True))
        for _, data in iter_sse(lines):
            event = self._event(data)
            if event.get("type") == "content-delta":
                if piece := dig(event, "delta", "message", "content", "text", service=self.client.service):
                    yield piece
            elif event.get("type") == "message-end":
                return
