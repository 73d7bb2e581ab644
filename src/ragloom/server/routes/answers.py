"""POST /v1/context and POST /v1/ask (one JSON, or Server-Sent Events as the answer is generated)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
from fastapi import APIRouter
from fastapi.responses import JSONResponse
from sse_starlette.sse import EventSourceResponse, ServerSentEvent

from ...context import Context
from ...types import Answer
from ..app import ServerState
from ..errors import error_body
from ..schemas import AnswerModel, AskRequest, ContextModel, ContextRequest, answer_model, context_model
from . import BODY_ERRORS, JsonBodyRoute, ReadIndex, State

router = APIRouter(prefix="/v1", route_class=JsonBodyRoute, tags=["answers"])
#: What ``next_piece`` gives when the answer's pieces are used up.
END = object()

_STREAM_DOC = {
    200: {
        "description": "With `stream: false`, the Answer. With `stream: true`, a text/event-stream: first one "
        '`sources` event (data `{"passages": [...]}`: the numbered passages the answer will cite, as soon as they are '
        'retrieved), then `token` events (data `{"text": "..."}`) as the answer is generated, then one `answer` event '
        "whose data is the Answer (citations, context, trace), or an `error` event (data `{\"code\", \"message\"}`) "
        "if it fails midway. Clients that know only `token` and `answer` may ignore `sources`.",
        "content": {"text/event-stream": {}},
    },
}


@router.post("/context", response_model=ContextModel, responses=BODY_ERRORS)  # type: ignore[valid-type]
async def context(body: ContextRequest, index: ReadIndex, state: State) -> Any:
    """The numbered passages an LLM would be given for a question, within a token budget, each
    with its source, section, page and score, and the token count of the whole."""
    return await state.run(index.context, body.question, budget=body.budget, k=body.k, where=body.where,
                           mode=body.mode)


@router.post("/ask", response_model=AnswerModel, responses={**BODY_ERRORS, **_STREAM_DOC})  # type: ignore[valid-type]
async def ask(body: AskRequest, index: ReadIndex, state: State) -> Any:
    """Answer a question from the index, citing the passages as [n]. Extractive answers need no
    LLM; the others use the server's LLM, one answer at a time."""
    history = [m.model_dump() for m in body.history] if body.history is not None else None
    # Before the answer takes a reader: while it holds one, this would wait for a second.
    shown = await state.run(index.service.display_paths)
    pieces = index.ask_stream(body.question, strategy=body.strategy, k=body.k, budget=body.budget,
                              where=body.where, mode=body.mode, history=history, sources_first=body.stream)
    highlight = index.service.highlighter(body.question)
    first = await first_piece(state, pieces)
    if not body.stream:
        answer = await whole_answer(state, first, pieces)
        return JSONResponse(answer_model(answer, highlight, shown).model_dump(mode="json"))
    return EventSourceResponse(_events(state, first, pieces, highlight, shown), ping=15)


async def _events(state: ServerState, first: Any, pieces: Iterator[str | Context | Answer], highlight: Any,
                  shown: Any) -> AsyncIterator[ServerSentEvent]:
    piece = first
    try:
        while piece is not END:
            if isinstance(piece, Context):  # the sources, before the answer is written
                passages = context_model(piece, highlight, shown).model_dump(mode="json")["passages"]
                yield ServerSentEvent(json.dumps({"passages": passages}), event="sources")
            elif isinstance(piece, Answer):
                state.metrics.answers.labels(piece.strategy).inc()
                yield ServerSentEvent(answer_model(piece, highlight, shown).model_dump_json(), event="answer")
            else:
                yield ServerSentEvent(json.dumps({"text": piece}), event="token")
            try:
                piece = await next_piece(state, pieces)
            except Exception as exc:  # the status is sent already: the error is the stream's last event
                yield ServerSentEvent(error_body(exc).model_dump_json(), event="error")
                return
    finally:
        # Returns the reader (and the LLM's lock) when the client goes away mid-answer.
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(pieces.close)


def last_answer(pieces: Iterator[str | Answer]) -> Answer:
    answer = None
    for piece in pieces:
        answer = piece
    assert isinstance(answer, Answer), "ask_stream ended without an Answer"
    return answer


async def next_piece(state: ServerState, pieces: Iterator[str | Answer]) -> Any:
    return await state.run(next, pieces, END)


async def first_piece(state: ServerState, pieces: Iterator[str | Answer]) -> Any:
    """The answer's first piece. It comes after retrieval and the strategy's checks: an error up
    to here is an ordinary JSON error response, not a stream that fails."""
    try:
        return await next_piece(state, pieces)
    except BaseException:
        pieces.close()
        raise


async def whole_answer(state: ServerState, first: Any, pieces: Iterator[str | Answer]) -> Answer:
    """The finished Answer (for a request that does not stream), counted in the metrics."""
    try:
        answer = first if isinstance(first, Answer) else await state.run(last_answer, pieces)
    finally:
        pieces.close()
    state.metrics.answers.labels(answer.strategy).inc()
    return answer
