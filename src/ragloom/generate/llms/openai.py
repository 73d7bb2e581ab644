"""Chat completions from OpenAI or any OpenAI-compatible server (``POST /v1/chat/completions``)."""

from __future__ import annotations

from collections.abc import Iterator

from ...errors import ProviderError
from ...providers.http import dig, iter_sse
from ...providers.openai import OpenAIClient
from ...models.llm import GenerationOptions, Message
from .remote import RemoteLLM


class OpenAILLM(RemoteLLM):
    provider = "openai"
    default_model = "gpt-4o-mini"
    client_class = OpenAIClient

    def _complete(self, messages: list[Message], options: GenerationOptions) -> str:
        response = self.client.post("/chat/completions", self._payload(messages, options, stream=False))
        return dig(response, "choices", 0, "message", "content", service=self.client.service) or ""

    def _stream(self, messages: list[Message], options: GenerationOptions) -> Iterator[str]:
        lines = self.client.stream_lines("/chat/completions", self._payload(messages, options, stream=True))
        finished = False
        for _, data in iter_sse(lines):
            if data.strip() == "[DONE]":
                return
            event = self._event(data)
            for choice in event.get("choices", []):
                if piece := (choice.get("delta") or {}).get("content"):
                    yield piece
                finished = finished or bool(choice.get("finish_reason"))
        if not finished:  # the connection closed before the server said it was done: the answer is cut
            raise ProviderError(
                f"{self.client.service} at {self.client.base_url} closed the stream before the answer was finished "
                "(no finish_reason, no [DONE]); the server may have stopped or crashed midway — try again"
            )
