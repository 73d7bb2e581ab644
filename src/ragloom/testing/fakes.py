"""Fake Ollama, OpenAI and Cohere servers that speak the real wire formats.

Each fake runs on a loopback port in a background thread (standard library only), so
any test — yours too — can point a real ragloom provider at it::

    with FakeOllama(embed_models={"nomic-embed-text": 64}) as server:
        config = EmbedderConfig(provider="ollama", model="nomic-embed-text", base_url=server.url)
        ...
        assert server.requests[0].json["input"][0].startswith("search_document: ")

Vectors are deterministic feature-hashed bags of words (``fake_embedding``), so texts
that share words are near each other and search results are stable. Faults — 429 with
``Retry-After``, 5xx, slow answers, malformed JSON — are queued with ``fail``; each
answers one request, in order, in the API's own error format.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "FakeCohere",
    "FakeOllama",
    "FakeOpenAI",
    "FakeServer",
    "Fault",
    "Recorded",
    "Reply",
    "echo_reply",
    "fake_embedding",
]


def fake_embedding(text: str, dimension: int = 64, model: str = "") -> list[float]:
    """A unit vector from hashed words: shared words make texts similar; same text, same vector."""
    vector = np.zeros(dimension)
    for word in re.findall(r"\w+", text.lower()):
        n = int.from_bytes(hashlib.blake2b(f"{model}\x1f{word}".encode(), digest_size=8).digest(), "little")
        vector[n % dimension] += 1.0 if (n >> 40) & 1 else -1.0
    # A little per-text noise: no two texts share a vector and empty text is not zero.
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
    vector += 0.01 * np.random.default_rng(seed).standard_normal(dimension)
    return [round(float(x), 6) for x in vector / np.linalg.norm(vector)]


def echo_reply(messages: list[dict[str, Any]], json_mode: bool) -> str:
    """The fakes' chat model: echoes the last user message (as JSON in JSON mode)."""
    last = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    text = last if isinstance(last, str) else json.dumps(last)
    return json.dumps({"answer": f"Echo: {text}"}) if json_mode else f"Echo: {text}"


@dataclass
class Recorded:
    """One request as the fake received it."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any
    at: float  # time.monotonic() on arrival


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    #: Streamed body: each item is written and flushed on its own.
    chunks: Iterable[bytes] | None = None
    content_type: str = "application/json"


@dataclass
class Fault:
    """A scripted misbehaviour for one request."""

    status: int = 500
    message: str = "internal server error"
    headers: dict[str, str] = field(default_factory=dict)
    #: Seconds to wait before answering; a slow answer with status 200 is the normal one.
    delay: float = 0.0
    #: Bytes sent as-is with status 200 (malformed JSON).
    raw: bytes | None = None
    #: Stream only this many chunks of the real reply, then close the connection (a server that dies midway).
    cut_after: int | None = None

    @classmethod
    def rate_limited(cls, retry_after: float | None = None, message: str = "rate limit exceeded") -> Fault:
        headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
        return cls(429, message, headers)

    @classmethod
    def slow(cls, seconds: float) -> Fault:
        return cls(200, "", delay=seconds)

    @classmethod
    def cut(cls, after: int) -> Fault:
        return cls(200, "", cut_after=after)

    @classmethod
    def malformed(cls, raw: bytes = b'{"embeddings": [[0.1, 0.2') -> Fault:
        return cls(200, "", raw=raw)


Handler = Callable[[Recorded], Reply]


class FakeServer:
    """A model API on 127.0.0.1; subclasses fill ``routes`` and the API's error body."""

    service = "fake"
    #: Models served when none are given: embedding models with their dimension, chat models.
    default_embed_models: ClassVar[dict[str, int]] = {}
    default_chat_models: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        *,
        embed_models: dict[str, int] | None = None,
        chat_models: Iterable[str] | None = None,
        api_key: str | None = None,
        reply: Callable[..., str] = echo_reply,
    ) -> None:
        self.embed_models = {self.canonical(m): d for m, d in (embed_models or self.default_embed_models).items()}
        chat = self.default_chat_models if chat_models is None else chat_models
        self.chat_models = [self.canonical(m) for m in chat]
        self.api_key = api_key
        self.reply = reply
        self.requests: list[Recorded] = []
        self.routes: dict[tuple[str, str], Handler] = self._routes()
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> Self:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        self._httpd.daemon_threads = True
        threading.Thread(  # a short poll interval keeps stop() quick
            target=self._httpd.serve_forever, args=(0.02,), daemon=True, name=f"fake-{self.service}"
        ).start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "start the fake first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def _routes(self) -> dict[tuple[str, str], Handler]:
        """(method, path) -> handler of this API."""
        return {}

    def canonical(self, model: str) -> str:
        """The name the server lists a model under."""
        return model

    #: This API's answer to an unknown model (with status 404).
    not_found = "model {model!r} not found"

    def unknown(self, model: str, models: Iterable[str]) -> Reply | None:
        """The API's 404 for ``model`` if it is not among ``models``, else None."""
        if self.canonical(model) in models:
            return None
        return self.error(404, self.not_found.format(model=model))

    # -- scripting ---------------------------------------------------------------------

    def fail(self, *faults: Fault) -> None:
        """The next requests, one fault each, get these answers instead of the normal one."""
        with self._lock:
            self._faults.extend(faults)

    def requests_to(self, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.path == path]

    def error(self, status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
        """An error answer in this API's format."""
        return Reply(status, self.error_body(status, message), headers or {})

    def error_body(self, status: int, message: str) -> Any:
        return {"error": message}

    def unauthorized(self) -> Reply:
        return self.error(401, "invalid api key")

    # -- dispatch ----------------------------------------------------------------------

    def handle(self, request: Recorded) -> Reply:
        with self._lock:
            self.requests.append(request)
            fault = self._faults.pop(0) if self._faults else None
        if fault is not None and fault.delay:
            self._stopping.wait(fault.delay)
        if fault is not None and fault.raw is not None:
            return Reply(200, fault.raw)
        if fault is not None and fault.status != 200:
            return self.error(fault.status, fault.message, fault.headers)
        if self.api_key is not None and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return self.unauthorized()
        route = self.routes.get((request.method, request.path))
        if route is None:
            return Reply(404, b"404 page not found", content_type="text/plain")
        reply = route(request)
        if fault is not None and fault.cut_after is not None and reply.chunks is not None:
            reply.chunks = list(reply.chunks)[: fault.cut_after]
        return reply


def _handler_class(fake: FakeServer) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._serve(None)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            self._serve(body)

        def _serve(self, body: Any) -> None:
            path = self.path.split("?")[0]
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = fake.handle(Recorded(self.command, path, headers, body, time.monotonic()))
            try:
                self._write(reply)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        def _write(self, reply: Reply) -> None:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if reply.chunks is not None:
                self.send_header("Connection", "close")
                self.end_headers()
                for chunk in reply.chunks:
                    self.wfile.write(chunk)
                    self.wfile.flush()
                return
            payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return _Handler


def _pieces(text: str) -> list[str]:
    """How the fakes split a reply into streamed tokens."""
    return re.findall(r"\S+\s*|\s+", text) or [""]


def _wants_json(request: Recorded) -> bool:
    """JSON mode: Ollama's ``format: "json"``, or OpenAI's and Cohere's ``response_format``."""
    body = request.json
    return body.get("format") == "json" or (body.get("response_format") or {}).get("type") == "json_object"


def _inputs(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


# -- Ollama -----------------------------------------------------------------------------


class FakeOllama(FakeServer):
    """``/api/tags``, ``/api/embed``, ``/api/chat`` (NDJSON streaming) of Ollama."""

    service = "Ollama"
    default_embed_models: ClassVar[dict[str, int]] = {"nomic-embed-text": 64}
    default_chat_models = ("llama3.2",)
    not_found = 'model "{model}" not found, try pulling it first'

    def _routes(self) -> dict[tuple[str, str], Handler]:
        return {
            ("GET", "/api/tags"): self._tags,
            ("POST", "/api/embed"): self._embed,
            ("POST", "/api/chat"): self._chat,
        }

    def canonical(self, model: str) -> str:
        return model if ":" in model else f"{model}:latest"  # Ollama's default tag

    def _tags(self, request: Recorded) -> Reply:
        models = [
            {"name": name, "model": name, "modified_at": "2026-11-01T00:00:00Z", "size": 274302450,
             "digest": hashlib.sha256(name.encode()).hexdigest(),
             "details": {"format": "gguf", "family": "fake", "parameter_size": "137M"}}
            for name in [*self.embed_models, *self.chat_models]
        ]
        return Reply(body={"models": models})

    def _embed(self, request: Recorded) -> Reply:
        model = request.json.get("model", "")
        if (missing := self.unknown(model, self.embed_models)) is not None:
            return missing
        dimension = request.json.get("dimensions") or self.embed_models[self.canonical(model)]
        texts = _inputs(request.json.get("input"))
        return Reply(body={
            "model": model,
            "embeddings": [fake_embedding(t, dimension, model) for t in texts],
            "total_duration": 14143917, "load_duration": 1019500,
            "prompt_eval_count": sum(len(t.split()) for t in texts),
        })

    def _chat(self, request: Recorded) -> Reply:
        model = request.json.get("model", "")
        if (missing := self.unknown(model, self.chat_models)) is not None:
            return missing
        text = self.reply(request.json["messages"], _wants_json(request))
        stamp = "2026-11-22T12:00:00.000000Z"
        done = {"model": model, "created_at": stamp, "done": True, "done_reason": "stop",
                "total_duration": 4883583458, "prompt_eval_count": 26, "eval_count": len(_pieces(text))}
        if request.json.get("stream", True) is False:
            return Reply(body={**done, "message": {"role": "assistant", "content": text}})
        lines = [{"model": model, "created_at": stamp, "message": {"role": "assistant", "content": p},
                  "done": False} for p in _pieces(text)]
        lines.append({**done, "message": {"role": "assistant", "content": ""}})
        return Reply(chunks=(json.dumps(x).encode() + b"\n" for x in lines),
                     content_type="application/x-ndjson")


# -- OpenAI ------------------------------------------------------------------------------


class FakeOpenAI(FakeServer):
    """``/v1/models``, ``/v1/embeddings``, ``/v1/chat/completions`` (SSE streaming) of OpenAI.

    ``url`` ends in ``/v1``, like the ``base_url`` of every OpenAI-compatible server.
    """

    service = "OpenAI"
    default_embed_models: ClassVar[dict[str, int]] = {"text-embedding-3-small": 64}
    default_chat_models = ("gpt-4o-mini",)
    not_found = "The model `{model}` does not exist or you do not have access to it."

    def _routes(self) -> dict[tuple[str, str], Handler]:
        return {
            ("GET", "/v1/models"): self._models,
            ("POST", "/v1/embeddings"): self._embeddings,
            ("POST", "/v1/chat/completions"): self._chat,
        }

    @property
    def url(self) -> str:
        return super().url + "/v1"

    def error_body(self, status: int, message: str) -> Any:
        kind, code = {
            401: ("invalid_request_error", "invalid_api_key"),
            404: ("invalid_request_error", "model_not_found"),
            429: ("requests", "rate_limit_exceeded"),
        }.get(status, ("server_error", None))
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}

    def unauthorized(self) -> Reply:
        return self.error(401, "Incorrect API key provided. You can find your API key at "
                               "https://platform.openai.com/account/api-keys.")

    def _models(self, request: Recorded) -> Reply:
        data = [{"id": m, "object": "model", "created": 1700000000, "owned_by": "system"}
                for m in [*self.embed_models, *self.chat_models]]
        return Reply(body={"object": "list", "data": data})

    def _embeddings(self, request: Recorded) -> Reply:
        model = request.json.get("model", "")
        if (missing := self.unknown(model, self.embed_models)) is not None:
            return missing
        dimension = request.json.get("dimensions") or self.embed_models[model]
        texts = _inputs(request.json.get("input"))
        data = [{"object": "embedding", "index": i, "embedding": fake_embedding(t, dimension, model)}
                for i, t in enumerate(texts)]
        tokens = sum(len(t.split()) for t in texts)
        return Reply(body={"object": "list", "data": data[::-1],  # order by "index", not position
                           "model": model, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    def _chat(self, request: Recorded) -> Reply:
        model = request.json.get("model", "")
        if (missing := self.unknown(model, self.chat_models)) is not None:
            return missing
        text = self.reply(request.json["messages"], _wants_json(request))
        head = {"id": "chatcmpl-" + uuid.uuid4().hex[:12], "created": int(time.time()), "model": model,
                "system_fingerprint": "fp_fake"}
        if not request.json.get("stream"):
            usage = {"prompt_tokens": 20, "completion_tokens": len(_pieces(text)), "total_tokens": 40}
            choice = {"index": 0, "message": {"role": "assistant", "content": text},
                      "logprobs": None, "finish_reason": "stop"}
            return Reply(body={**head, "object": "chat.completion", "choices": [choice], "usage": usage})
        deltas = [{"role": "assistant", "content": ""}] + [{"content": p} for p in _pieces(text)] + [{}]
        events = [{**head, "object": "chat.completion.chunk", "choices": [
            {"index": 0, "delta": d, "logprobs": None, "finish_reason": None if d else "stop"}]}
            for d in deltas]
        chunks = [f"data: {json.dumps(e)}\n\n".encode() for e in events] + [b"data: [DONE]\n\n"]
        return Reply(chunks=chunks, content_type="text/event-stream")


# -- Cohere ------------------------------------------------------------------------------


class FakeCohere(FakeServer):
    """``/v1/models``, ``/v2/embed``, ``/v2/rerank``, ``/v2/chat`` (SSE streaming) of Cohere."""

    service = "Cohere"
    default_embed_models: ClassVar[dict[str, int]] = {"embed-english-v3.0": 64}
    default_chat_models = ("command-a-03-2025",)
    not_found = ("model '{model}' not found, make sure the correct model ID was used "
                 "and that you have access to the model.")
    max_texts = 96

    def __init__(self, *, rerank_models: Iterable[str] = ("rerank-v3.5",), **kwargs: Any) -> None:
        self.rerank_models = list(rerank_models)
        super().__init__(**kwargs)

    def _routes(self) -> dict[tuple[str, str], Handler]:
        return {
            ("GET", "/v1/models"): self._models,
            ("POST", "/v2/embed"): self._embed,
            ("POST", "/v2/rerank"): self._rerank,
            ("POST", "/v2/chat"): self._chat,
        }

    def error_body(self, status: int, message: str) -> Any:
        return {"id": str(uuid.uuid4()), "message": message}

    def unauthorized(self) -> Reply:
        return self.error(401, "invalid api token")

    def _meta(self, tokens: int) -> dict[str, Any]:
        return {"api_version": {"version": "2"}, "billed_units": {"input_tokens": tokens}}

    def _models(self, request: Recorded) -> Reply:
        endpoints = {**{m: ["embed"] for m in self.embed_models},
                     **{m: ["rerank"] for m in self.rerank_models}, **{m: ["chat"] for m in self.chat_models}}
        models = [{"name": m, "endpoints": e, "finetuned": False, "context_length": 512}
                  for m, e in endpoints.items()]
        return Reply(body={"models": models, "next_page_token": None})

    def _embed(self, request: Recorded) -> Reply:
        model, texts = request.json.get("model", ""), list(request.json.get("texts") or [])
        if (missing := self.unknown(model, self.embed_models)) is not None:
            return missing
        if not request.json.get("input_type"):
            return self.error(400, "invalid request: valid input_type must be provided with the provided model")
        if len(texts) > self.max_texts:
            return self.error(400, f"invalid request: total number of texts must be at most "
                                   f"{self.max_texts} - received {len(texts)}")
        dimension = request.json.get("output_dimension") or self.embed_models[model]
        return Reply(body={
            "id": str(uuid.uuid4()),
            "embeddings": {"float": [fake_embedding(t, dimension, model) for t in texts]},
            "texts": texts, "meta": self._meta(sum(len(t.split()) for t in texts)),
            "response_type": "embeddings_by_type",
        })

    def _rerank(self, request: Recorded) -> Reply:
        model = request.json.get("model", "")
        if (missing := self.unknown(model, self.rerank_models)) is not None:
            return missing
        query, documents = request.json["query"], request.json["documents"]
        q = np.array(fake_embedding(query))
        scores = [(float(q @ np.array(fake_embedding(d))) + 1) / 2 for d in documents]
        order = sorted(range(len(documents)), key=lambda i: -scores[i])[: request.json.get("top_n")]
        results = [{"index": i, "relevance_score": round(scores[i], 6)} for i in order]
        return Reply(body={"id": str(uuid.uuid4()), "results": results, "meta": self._meta(len(documents))})

    def _chat(self, request: Recorded) -> Reply:
        model = request.json.get("model", "")
        if (missing := self.unknown(model, self.chat_models)) is not None:
            return missing
        text = self.reply(request.json["messages"], _wants_json(request))
        usage = {"billed_units": {"input_tokens": 20, "output_tokens": len(_pieces(text))},
                 "tokens": {"input_tokens": 60, "output_tokens": len(_pieces(text))}}
        message_id = str(uuid.uuid4())
        if not request.json.get("stream"):
            message = {"role": "assistant", "content": [{"type": "text", "text": text}]}
            return Reply(body={"id": message_id, "finish_reason": "COMPLETE", "message": message, "usage": usage})
        return Reply(chunks=_cohere_events(message_id, text, usage), content_type="text/event-stream")


def _cohere_events(message_id: str, text: str, usage: dict[str, Any]) -> Iterator[bytes]:
    events: list[dict[str, Any]] = [
        {"id": message_id, "type": "message-start", "delta": {"message": {
            "role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}}},
        {"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}},
        *({"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": p}}}}
          for p in _pieces(text)),
        {"type": "content-end", "index": 0},
        {"type": "message-end", "delta": {"finish_reason": "COMPLETE", "usage": usage}},
    ]
    for event in events:
        yield f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
