"""``ragloom mcp``: the index as an MCP server (the official ``mcp`` SDK's ``MCPServer``).

Tools return pydantic models, so clients get structured content (with an output schema)
as well as its JSON text. Each source is a resource, ``ragloom://source/{id}``. Answers
(``ask``, ``get_context``) carry their citations and passages the same way.
"""

from __future__ import annotations

import hmac
import inspect
import logging
import typing
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, Field, Strict

from ..config import Config
from ..errors import RagloomError
from ..optional import require
from .errors import classify
from .schemas import (
    AnswerModel,
    AskRequest,
    ContextModel,
    ContextRequest,
    IngestPathsRequest,
    IngestReportModel,
    SearchRequest,
    SearchResponse,
    SourceModel,
    answer_model,
    report_model,
    source_model,
)
from .security import accept_paths, allowed_paths, configured_key, presented_key
from .service import IndexService

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger("ragloom.mcp")
SOURCE_URI = "ragloom://source/{source_id}"


class SourceRef(BaseModel):
    id: str
    source: str = Field(..., description="the source's path, as hits and citations call it")
    path: str = Field(..., description="the same as source (the older name, kept for clients that read it)")
    uri: str = Field(..., description="read the whole source with resources/read on this URI")


def source_ref(source_id: str, source: str) -> SourceRef:
    return SourceRef(id=source_id, source=source, path=source, uri=source_uri(source_id))


class SearchResult(SearchResponse):
    sources: list[SourceRef] = Field(default_factory=list, description="the sources the hits come from, best first")


class AskResult(AnswerModel):  # type: ignore[valid-type,misc]
    sources: list[SourceRef] = Field(default_factory=list, description="the sources the citations come from")


class ContextResult(ContextModel):  # type: ignore[valid-type,misc]
    rendered: str = Field("", description="the context as an LLM reads it: numbered passages with headers")
    sources: list[SourceRef] = Field(default_factory=list, description="the sources of the passages")


class SourceList(BaseModel):
    sources: list[SourceModel]  # type: ignore[valid-type]


def source_uri(sid: str) -> str:
    return SOURCE_URI.format(source_id=sid)


def build_mcp(service: IndexService, config: Config) -> Any:
    """An MCPServer offering the index; ``ingest`` only when ``server.mcp.ingest`` is on."""
    mcpserver = require("mcp.server.mcpserver", extra="mcp", feature="ragloom mcp", package="mcp")
    from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
    from mcp_types import ToolAnnotations

    server = mcpserver.MCPServer(
        "ragloom",
        instructions="Search the user's indexed documents, or ask them a question (`ask` answers with numbered "
        "citations; `get_context` gives the passages to answer from yourself). Every hit names its source file, "
        "section, page and score; read a whole source with the ragloom://source/{id} resource.",
    )

    def guarded(fn: Callable[[], T]) -> T:
        try:
            return fn()
        except Exception as exc:  # the client reads why, under the same code the HTTP API answers with
            status, code, message = classify(exc)
            if status >= 500 and not isinstance(exc, RagloomError):
                log.error("MCP tool failed", exc_info=exc)
            raise ToolError(f"{code}: {message}") from exc

    read_only = ToolAnnotations(readOnlyHint=True, openWorldHint=False)

    @server.tool(annotations=read_only)
    @takes(SearchRequest)
    def search(**arguments: Any) -> SearchResult:
        """Find the passages of the user's documents that best match a query, best first.

        `k` passages (default: the index's search.k); `where` filters on metadata, e.g.
        {"page": {"$gte": 2}} or {"source": "/path/file.md"};
        `mode` is a search preset: hybrid (default), dense (meaning), lexical (exact words, BM25)
        or one the server's config defines; `explain` adds the query plan and each step's trace.
        """
        body = SearchRequest(**arguments)
        result = guarded(lambda: service.search(body.query, body.k, where=body.where, mode=body.mode,
                                                explain=body.explain))
        refs = {hit.source_id: source_ref(hit.source_id, hit.source) for hit in result.hits}
        return SearchResult(**result.model_dump(), sources=list(refs.values()))

    def refs(items: Any) -> list[SourceRef]:
        unique = {item.source_id: source_ref(item.source_id, item.source) for item in items}
        return list(unique.values())

    @server.tool(annotations=read_only)
    @takes(AskRequest, omit=("stream",))
    def ask(**arguments: Any) -> AskResult:
        """Answer a question from the user's documents, citing passages as [n].

        `citations` lists each cited passage (number, source, chunk_id, section, page, text).
        `strategy`: extractive (quotes the best sentences, no LLM), standard, attributed or cove
        (the server's LLM); default: the server's answer.strategy. `k` passages retrieved,
        `budget` tokens of context, `where` and `mode` as for search. `history`: the conversation's
        earlier messages ({role, content}, oldest first) when the question is a follow-up.
        """
        body = AskRequest(**arguments)
        answer = guarded(lambda: service.ask(body.question, strategy=body.strategy, k=body.k, budget=body.budget,
                                             where=body.where, mode=body.mode, history=history_of(body)))
        model = answer_model(answer, service.highlighter(body.question))
        return AskResult(**model.model_dump(), sources=refs(model.citations))

    @server.tool(annotations=read_only)
    @takes(ContextRequest)
    def get_context(**arguments: Any) -> ContextResult:
        """The numbered passages (with source, section, page, score) an LLM would be given to answer
        `question`, within `budget` tokens; `rendered` is that context as text, ready for a prompt."""
        body = ContextRequest(**arguments)
        model = guarded(lambda: service.context(body.question, budget=body.budget, k=body.k, where=body.where,
                                                mode=body.mode))
        rendered = "\n\n".join(f"{p.header}\n{p.text}" for p in model.passages)
        return ContextResult(**model.model_dump(), rendered=rendered, sources=refs(model.passages))

    @server.tool(annotations=read_only)
    def list_sources() -> SourceList:
        """Every file in the index, with its id (read one with the ragloom://source/{id} resource)."""
        return SourceList(sources=[source_model(r) for r in guarded(service.sources)])

    @server.resource(SOURCE_URI, mime_type="text/plain")
    def read_source(source_id: str) -> str:
        """The text of one indexed source, chunk by chunk, with sections and pages."""
        try:
            record, chunks = service.source_text(source_id)
        except RagloomError as exc:
            raise ResourceNotFoundError(str(exc)) from exc
        parts = [f"source: {record.path}\nchunks: {record.chunk_count}\n"]
        for chunk in chunks:
            where = [w for w in (chunk.section, f"page {chunk.page}" if chunk.page else "") if w]
            parts.append(f"--- chunk {chunk.chunk_index}{' (' + ', '.join(where) + ')' if where else ''}\n{chunk.text}")
        return "\n".join(parts)

    if config.server.mcp.ingest:
        policy, settings = allowed_paths(config.server), config.ingest

        @server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True))
        @takes(IngestPathsRequest)
        def ingest(**arguments: Any) -> IngestReportModel:  # type: ignore[valid-type]
            """Index files and folders (absolute paths inside the server's allowed roots).

            Unchanged files are skipped, changed ones replaced, files gone from a folder removed.
            """
            body = IngestPathsRequest(**arguments)

            def run() -> Any:
                accepted = accept_paths(policy, body.paths, body.glob or settings.glob, settings.exclude)
                with service.writing(wait=0) as index:
                    return report_model(index.ingest(accepted, glob=body.glob, policy=policy))

            return guarded(run)

    return server


def history_of(body: AskRequest) -> list[dict[str, str]] | None:
    return [m.model_dump() for m in body.history] if body.history is not None else None


def takes(model: type[BaseModel], *, omit: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Give a tool the fields of an HTTP request model as its parameters: the same names, types,
    bounds, strictness and descriptions, so both doors accept exactly the same requests (the SDK
    checks them against the tool's input schema before the tool runs)."""
    strict = [Strict()] if model.model_config.get("strict") else []

    def apply(fn: F) -> F:
        parameters = [
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if info.is_required() else info.default,
                annotation=Annotated[(info.annotation, *strict, *info.metadata, Field(description=info.description))],
            )
            for name, info in model.model_fields.items() if name not in omit
        ]
        returns = typing.get_type_hints(fn)["return"]
        fn.__signature__ = inspect.Signature(parameters, return_annotation=returns)  # type: ignore[attr-defined]
        return fn

    return apply


def run_mcp(config: Config, *, transport: str, host: str, port: int) -> None:
    """Serve MCP over stdio or streamable HTTP until the client goes away or Ctrl-C."""
    require("mcp.server.mcpserver", extra="mcp", feature="ragloom mcp", package="mcp")
    service = IndexService(config, readers=min(2, config.server.search_threads))
    try:
        server = build_mcp(service, config)
        if transport == "stdio":
            server.run("stdio")
            return
        uvicorn = require("uvicorn", extra="server", feature="ragloom mcp --transport http")
        app = server.streamable_http_app(host=host)
        key = configured_key(config.server)
        if key is not None and (config.server.require_key_for_reads or config.server.mcp.ingest):
            app = KeyRequired(app, key)
        uvicorn.run(app, host=host, port=port, log_level="info")
    finally:
        service.close()


class KeyRequired:
    """ASGI wrapper: every HTTP request must carry the API key (Bearer or X-API-Key)."""

    def __init__(self, app: Any, key: str) -> None:
        self.app, self.key = app, key.encode("utf-8")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
            given = presented_key(headers.get("authorization"), headers.get("x-api-key"))
            if given is None or not hmac.compare_digest(given.encode("utf-8"), self.key):
                from starlette.responses import JSONResponse

                body = {"error": {"code": "unauthorized", "message": "send the API key as `Authorization: Bearer KEY`"}}
                await JSONResponse(body, status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


__all__ = ["build_mcp", "run_mcp", "SearchResult", "SourceRef"]
