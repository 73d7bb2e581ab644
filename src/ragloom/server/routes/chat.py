"""OpenAI-compatible chat: POST /v1/chat/completions and GET /v1/models.

Any OpenAI client (the official SDKs, Open WebUI, LibreChat, curl) can talk to the index: the
last user message is the question, the messages before it are the conversation (follow-ups are
searched standalone), and the answer is the assistant message with its citations inline as
``[n]`` and, as Perplexity's API returns them, in a top-level ``citations`` list. ``model`` picks
the answer strategy: ``ragloom`` (the server's default) or a strategy's name (``extractive``,
``attributed``, ...); GET /v1/models lists those the server can run. OpenAI's sampling
parameters (temperature, top_p, ...) are accepted and ignored: the server's config decides.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal

import anyio
from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette.sse import EventSourceResponse, ServerSentEvent

from ...types import Answer
from ..app import ServerState
from ..errors import ApiError, error_body
from ..schemas import CitationModel, citation_model
from . import BODY_ERRORS, ERRORS, JsonBodyRoute, ReadIndex, State
from .answers import END, first_piece, next_piece, whole_answer

router = APIRouter(prefix="/v1", route_class=JsonBodyRoute, tags=["openai-compatible"])
#: The model id that means "the server's own answer.strategy".
DEFAULT_MODEL = "ragloom"


class ContentPart(BaseModel):
    """One part of a message's content (OpenAI's content parts); the ``text`` parts are read."""

    model_config = ConfigDict(extra="ignore", strict=True)

    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    role: Literal["system", "user", "assistant", "developer", "tool"]
    content: str | list[ContentPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):  # content parts: the text ones
            return " ".join(p.text or "" for p in self.content if p.type == "text")
        return self.content or ""


class ChatCompletionRequest(BaseModel):
    # OpenAI clients send many optional fields (temperature, top_p, user, stream_options, ...):
    # they are accepted and ignored, as the server's config decides how it answers.
    model_config = ConfigDict(extra="ignore", strict=True)

    model: str = Field(DEFAULT_MODEL, description="ragloom (the server's answer.strategy) or a strategy name; "
                       "GET /v1/models lists them")
    messages: list[ChatMessage] = Field(..., min_length=1, max_length=10_000,
                                        description="the conversation; the question is the last user message with text (messages after it, "
                                        "such as a tool's result, are left out); one is needed (422 no_user_question)")
    stream: bool = Field(False, description="true: OpenAI's chat.completion.chunk events, then [DONE]")


class ChatChoiceMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class ChatChoice(BaseModel):
    index: int = 0
    message: ChatChoiceMessage
    finish_reason: Literal["stop"] = "stop"


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[ChatChoice]
    usage: dict[str, int]
    citations: list[CitationModel] = Field(default_factory=list, description="the passages the answer cites as [n]")


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "ragloom"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


@router.get("/models", response_model=ModelList, responses=ERRORS)
async def models(index: ReadIndex, state: State) -> ModelList:
    """The answer strategies a client may pick as ``model`` (those this server can run)."""
    names = await state.run(index.service.runnable_strategies)
    created = int(time.time())
    return ModelList(data=[ModelCard(id=name, created=created) for name in [DEFAULT_MODEL, *names]])


_STREAM_DOC = {
    200: {
        "description": "With `stream: false`, the chat.completion. With `stream: true`, a text/event-stream of "
        "OpenAI's chat.completion.chunk events (the last one with `citations`), then `[DONE]`.",
        "content": {"text/event-stream": {}},
    },
}


@router.post("/chat/completions", response_model=ChatCompletion, responses={**BODY_ERRORS, **_STREAM_DOC})
async def chat_completions(body: ChatCompletionRequest, index: ReadIndex, state: State) -> Any:
    """Answer the last user message with the earlier messages as the conversation, citing passages."""
    question, history = split_messages(body.messages)
    strategy = None if body.model == DEFAULT_MODEL else body.model
    shown = await state.run(index.service.display_paths)  # before the answer holds a reader
    pieces = index.ask_stream(question, strategy=strategy, history=history)
    first = await first_piece(state, pieces)
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())
    if not body.stream:
        answer = await whole_answer(state, first, pieces)
        return JSONResponse(completion(answer, completion_id, created, body.model, shown).model_dump(mode="json"))
    return EventSourceResponse(_chunks(state, first, pieces, completion_id, created, body.model, shown), ping=15)


def split_messages(messages: list[ChatMessage]) -> tuple[str, list[dict[str, str]]]:
    """The question (the last user message with text) and the conversation before it.

    Messages after the question (a tool's result, an assistant's partial turn, as OpenAI clients
    send while a tool call is under way) are not part of the question, and are left out; tool
    results never enter the history, whose roles are the user's, the assistant's and the system's.
    """
    asked = next((i for i in range(len(messages) - 1, -1, -1)
                  if messages[i].role == "user" and messages[i].text().strip()), None)
    if asked is None:
        raise ApiError(422, "no_user_question", "no user message has text; the conversation needs the user's "
                       "question")
    history = [{"role": "system" if m.role == "developer" else m.role, "content": m.text()}
               for m in messages[:asked] if m.role != "tool"]
    return messages[asked].text().strip(), history


def completion(answer: Answer, completion_id: str, created: int, model: str, shown: Any = str) -> ChatCompletion:
    prompt, completion_tokens = answer.tokens.get("prompt", 0), answer.tokens.get("completion", 0)
    return ChatCompletion(
        id=completion_id, created=created, model=model,
        choices=[ChatChoice(message=ChatChoiceMessage(content=answer.text))],
        usage={"prompt_tokens": prompt, "completion_tokens": completion_tokens, "total_tokens": prompt + completion_tokens},
        citations=[citation_model(c, shown) for c in answer.citations],
    )


def _chunk(completion_id: str, created: int, model: str, delta: dict, finish: str | None = None,
           **extra: Any) -> str:
    return json.dumps({"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra})


async def _chunks(state: ServerState, first: Any, pieces: Iterator[str | Answer], completion_id: str, created: int,
                  model: str, shown: Any = str) -> AsyncIterator[ServerSentEvent]:
    piece = first
    streamed: list[str] = []
    yield ServerSentEvent(_chunk(completion_id, created, model, {"role": "assistant", "content": ""}))
    try:
        while piece is not END:
            if isinstance(piece, Answer):
                state.metrics.answers.labels(piece.strategy).inc()
                # The answer may have been revised after it streamed (a retry, citations removed):
                # the rest of it, if any, then the citations with the finishing chunk.
                text = "".join(streamed)
                if piece.text.startswith(text) and len(piece.text) > len(text):
                    yield ServerSentEvent(_chunk(completion_id, created, model, {"content": piece.text[len(text):]}))
                citations = [citation_model(c, shown).model_dump(mode="json") for c in piece.citations]
                yield ServerSentEvent(_chunk(completion_id, created, model, {}, "stop", citations=citations))
            else:
                streamed.append(piece)
                yield ServerSentEvent(_chunk(completion_id, created, model, {"content": piece}))
            try:
                piece = await next_piece(state, pieces)
            except Exception as exc:  # the status is sent: the error is the stream's last event, as OpenAI does
                yield ServerSentEvent(json.dumps({"error": error_body(exc).model_dump()}))
                break
        yield ServerSentEvent("[DONE]")
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(pieces.close)

