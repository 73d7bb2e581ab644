"""``ragloom mcp``: the indexes as an MCP server (the official ``mcp`` SDK's ``MCPServer``).

Tools return pydantic models, so clients get structured content (with an output schema)
as well as its JSON text. Each source is a resource, ``ragloom://source/{id}`` (the default
index) or ``ragloom://index/{name}/source/{id}``. Answers (``ask``, ``get_context``) carry
their citations and passages the same way. Every tool takes an ``index`` argument; its schema
lists the indexes the caller's key may use, and every call goes through the same ``Gate`` and
``ScopedIndex`` as the HTTP API (server/access.py), so a key's filter holds here too.
"""

from __future__ import annotations

import contextvars
import inspect
import logging
import os
import typing
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, Field, Strict

from ..config import Config
from ..errors import ConfigError, RagloomError
from ..optional import require
from .access import ANONYMOUS, Caller, Gate, ScopedIndex, Served
from .errors import ApiError, classify
from .keys import open_keys
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
INDEX_SOURCE_URI = "ragloom://index/{index}/source/{source_id}"
#: Where the HTTP wrapper puts the caller it resolved, in the ASGI scope the SDK hands on.
CALLER_SCOPE_KEY = "ragloom.caller"
#: The key a stdio session acts as when the server has a keys file.
MCP_KEY_ENV = "RAGLOOM_MCP_KEY"
#: Who a session without keys is: the local user, who may do everything (as before keys).
LOCAL = Caller(None, "admin")
_INDEX_DESCRIPTION = "the index to use (default: the server's first); one of those your key may use"


class SourceRef(BaseModel):
    id: str
    source: str = Field(..., description="the source's path, as hits and citations call it")
    path: str = Field(..., description="the same as source (the older name, kept for clients that read it)")
    uri: str = Field(..., description="read the whole source with resources/read on this URI")


def source_ref(source_id: str, source: str, uri: str | None = None) -> SourceRef:
    return SourceRef(id=source_id, source=source, path=source, uri=uri or source_uri(source_id))


class SearchResult(SearchResponse):
    sources: list[SourceRef] = Field(default_factory=list, description="the sources the hits come from, best first")


class AskResult(AnswerModel):  # type: ignore[valid-type,misc]
    sources: list[SourceRef] = Field(default_factory=list, description="the sources the citations come from")


class ContextResult(ContextModel):  # type: ignore[valid-type,misc]
    rendered: str = Field("", description="the context as an LLM reads it: numbered passages with headers")
    sources: list[SourceRef] = Field(default_factory=list, description="the sources of the passages")


class SourceList(BaseModel):
    sources: list[SourceModel]  # type: ignore[valid-type]


def source_uri(sid: str, index: str | None = None) -> str:
    return SOURCE_URI.format(source_id=sid) if index is None else INDEX_SOURCE_URI.format(index=index, source_id=sid)


class McpDoor:
    """The indexes an MCP server offers and who is calling: over stdio (or in-process) one fixed
    caller; over HTTP the caller the key of each request resolved to."""

    def __init__(self, services: Mapping[str, IndexService], gate: Gate, local: Caller) -> None:
        self.served = {name: Served(name, svc, None, svc.path / "uploads") for name, svc in services.items()}  # type: ignore[arg-type]
        self.default = next(iter(self.served))
        self.gate, self.local = gate, local
        self.current: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("ragloom_mcp_caller", default=None)

    def caller(self) -> Caller:
        return self.current.get() or self.local

    def open(self, index: str | None, scope: str = "read") -> ScopedIndex:
        caller, name = self.caller(), index or self.default
        self.gate.check(caller, name, self.served, scope)
        return ScopedIndex(self.served[name], caller)

    def visible(self) -> list[str]:
        caller = self.caller()
        return [name for name in self.served if caller.may_use(name)]

    @contextmanager
    def acting_for(self, ctx: Any) -> Iterator[None]:
        """Within: the caller of the MCP request ``ctx`` (its HTTP request's key, else the session's)."""
        token = self.current.set(_caller_of_request(ctx))
        try:
            yield
        finally:
            self.current.reset(token)

    def uri(self, sid: str, index: str) -> str:
        return source_uri(sid, None if index == self.default else index)


def _caller_of_request(ctx: Any) -> Caller | None:
    request = getattr(ctx, "request", None)
    return getattr(request, "scope", {}).get(CALLER_SCOPE_KEY) if request is not None else None


def build_mcp(service: IndexService | Mapping[str, IndexService], config: Config, *, gate: Gate | None = None,
              caller: Caller | None = None) -> Any:
    """An MCPServer offering the indexes (one service, or services by name); ``ingest`` only when
    ``server.mcp.ingest`` is on. ``caller``: who a session without HTTP is (default: the local user,
    who may do everything); over HTTP each request's key decides (``KeyRequired``)."""
    mcpserver = require("mcp.server.mcpserver", extra="mcp", feature="ragloom mcp", package="mcp")
    from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
    from mcp_types import ToolAnnotations

    services = dict(service) if isinstance(service, Mapping) else {"default": service}
    door = McpDoor(services, gate or Gate(config.server, None, None), caller or LOCAL)

    class ScopedServer(mcpserver.MCPServer):  # type: ignore[misc,name-defined]
        """Runs each request as the caller its HTTP request resolved to, and lists that caller's indexes."""

        async def _handle_list_tools(self, ctx: Any, params: Any) -> Any:
            with door.acting_for(ctx):
                result = await super()._handle_list_tools(ctx, params)
                names = door.visible()
            for tool in result.tools:
                prop = (tool.input_schema or {}).get("properties", {}).get("index")
                if prop is not None:
                    prop.pop("anyOf", None)
                    prop.update({"type": "string", "enum": names})
            return result

        async def _handle_call_tool(self, ctx: Any, params: Any) -> Any:
            with door.acting_for(ctx):
                return await super()._handle_call_tool(ctx, params)

        async def _handle_read_resource(self, ctx: Any, params: Any) -> Any:
            with door.acting_for(ctx):
                return await super()._handle_read_resource(ctx, params)

    server = ScopedServer(
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
    def search(index: str | None = None, **arguments: Any) -> SearchResult:
        """Find the passages of the user's documents that best match a query, best first.

        `k` passages (default: the index's search.k); `where` filters on metadata, e.g.
        {"page": {"$gte": 2}} or {"source": "/path/file.md"};
        `mode` is a search preset: hybrid (default), dense (meaning), lexical (exact words, BM25)
        or one the server's config defines; `explain` adds the query plan and each step's trace.
        """
        body = SearchRequest(**arguments)
        scoped = guarded(lambda: door.open(index))
        result = guarded(lambda: scoped.search(body.query, body.k, where=body.where, mode=body.mode,
                                               explain=body.explain))
        return SearchResult(**result.model_dump(), sources=refs(result.hits, scoped.name))

    def refs(items: Any, index: str) -> list[SourceRef]:
        unique = {item.source_id: source_ref(item.source_id, item.source, door.uri(item.source_id, index))
                  for item in items}
        return list(unique.values())

    @server.tool(annotations=read_only)
    @takes(AskRequest, omit=("stream",))
    def ask(index: str | None = None, **arguments: Any) -> AskResult:
        """Answer a question from the user's documents, citing passages as [n].

        `citations` lists each cited passage (number, source, chunk_id, section, page, start_line, end_line, text).
        `strategy`: extractive (quotes the best sentences, no LLM), standard, attributed or cove
        (the server's LLM); default: the server's answer.strategy. `k` passages retrieved,
        `budget` tokens of context, `where` and `mode` as for search. `history`: the conversation's
        earlier messages ({role, content}, oldest first) when the question is a follow-up.
        """
        body = AskRequest(**arguments)
        scoped = guarded(lambda: door.open(index))
        answer = guarded(lambda: scoped.ask(body.question, strategy=body.strategy, k=body.k, budget=body.budget,
                                            where=body.where, mode=body.mode, history=history_of(body)))
        model = answer_model(answer, scoped.service.highlighter(body.question), scoped.service.display_paths())
        return AskResult(**model.model_dump(), sources=refs(model.citations, scoped.name))

    @server.tool(annotations=read_only)
    @takes(ContextRequest)
    def get_context(index: str | None = None, **arguments: Any) -> ContextResult:
        """The numbered passages (with source, section, page, score) an LLM would be given to answer
        `question`, within `budget` tokens; `rendered` is that context as text, ready for a prompt."""
        body = ContextRequest(**arguments)
        scoped = guarded(lambda: door.open(index))
        model = guarded(lambda: scoped.context(body.question, budget=body.budget, k=body.k, where=body.where,
                                               mode=body.mode))
        rendered = "\n\n".join(f"{p.header}\n{p.text}" for p in model.passages)
        return ContextResult(**model.model_dump(), rendered=rendered, sources=refs(model.passages, scoped.name))

    @server.tool(annotations=read_only)
    @takes(_IndexOnly)
    def list_sources(index: str | None = None) -> SourceList:
        """Every file in the index, with its id (read one with the ragloom://source/{id} resource)."""
        scoped = guarded(lambda: door.open(index))
        shown = guarded(scoped.service.display_paths)
        return SourceList(sources=[source_model(r, shown) for r in guarded(scoped.sources)])

    @server.resource(SOURCE_URI, mime_type="text/plain")
    def read_source(source_id: str) -> str:
        """The text of one source of the default index, chunk by chunk, with sections and pages."""
        return source_text(None, source_id)

    @server.resource(INDEX_SOURCE_URI, mime_type="text/plain")
    def read_index_source(index: str, source_id: str) -> str:
        """The text of one source of the index, chunk by chunk, with sections and pages."""
        return source_text(index, source_id)

    def source_text(index: str | None, source_id: str) -> str:
        try:
            record, chunks = door.open(index).source_text(source_id)
        except RagloomError as exc:
            raise ResourceNotFoundError(str(exc)) from exc
        parts = [f"source: {record.path}\nchunks: {record.chunk_count}\n"]
        for chunk in chunks:
            lines = f"lines {chunk.start_line}-{chunk.end_line}" if chunk.start_line is not None else ""
            where = [w for w in (chunk.section, f"page {chunk.page}" if chunk.page else "", lines) if w]
            parts.append(f"--- chunk {chunk.chunk_index}{' (' + ', '.join(where) + ')' if where else ''}\n{chunk.text}")
        return "\n".join(parts)

    if config.server.mcp.ingest:
        policy, settings = allowed_paths(config.server), config.ingest

        @server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True))
        @takes(IngestPathsRequest)
        def ingest(index: str | None = None, **arguments: Any) -> IngestReportModel:  # type: ignore[valid-type]
            """Index files and folders (absolute paths inside the server's allowed roots).

            Unchanged files are skipped, changed ones replaced, files gone from a folder removed.
            """
            body = IngestPathsRequest(**arguments)

            def run() -> Any:
                scoped = door.open(index, "write")
                if scoped.caller.filtered:  # the allowed roots are every tenant's
                    raise ApiError(403, "forbidden", f"the key {scoped.caller.name!r} sees only its own documents; "
                                   "it may upload files over HTTP, not ingest paths on the server")
                accepted = accept_paths(policy, body.paths, body.glob or settings.glob, settings.exclude)
                with scoped.service.writing(wait=0) as writer:
                    return report_model(writer.ingest(accepted, glob=body.glob, policy=policy))

            return guarded(run)

    return server


class _IndexOnly(BaseModel):
    """A tool whose only argument is the index."""


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
        parameters.insert(0, inspect.Parameter("index", inspect.Parameter.KEYWORD_ONLY, default=None,
                                               annotation=Annotated[str | None, Field(description=_INDEX_DESCRIPTION)]))
        returns = typing.get_type_hints(fn)["return"]
        fn.__signature__ = inspect.Signature(parameters, return_annotation=returns)  # type: ignore[attr-defined]
        return fn

    return apply


def run_mcp(config: Config, *, transport: str, host: str, port: int, keys_file: str | None = None) -> None:
    """Serve MCP over stdio or streamable HTTP until the client goes away or Ctrl-C.

    With a keys file, a stdio session acts as the key in $RAGLOOM_MCP_KEY; over HTTP each
    request's key decides what it may see."""
    require("mcp.server.mcpserver", extra="mcp", feature="ragloom mcp", package="mcp")
    from .app import served_indexes
    from .runner import GRACE_SECONDS

    services = {name: IndexService(cfg, readers=min(2, config.server.search_threads))
                for name, cfg in served_indexes(config).items()}
    gate = Gate(config.server, configured_key(config.server), open_keys(keys_file) if keys_file else None)
    try:
        if transport == "stdio":
            if keys_file and not os.environ.get(MCP_KEY_ENV):
                raise ConfigError(f"with --keys-file, a stdio session acts as one key: set {MCP_KEY_ENV} to it")
            caller = gate.caller(os.environ.get(MCP_KEY_ENV)) if keys_file else LOCAL
            build_mcp(services, config, gate=gate, caller=caller).run("stdio")
            return
        uvicorn = require("uvicorn", extra="server", feature="ragloom mcp --transport http")
        open_server = gate.admin_key is None and gate.keys is None  # as before keys: everyone is the local user
        server = build_mcp(services, config, gate=gate, caller=LOCAL if open_server else ANONYMOUS)
        app = server.streamable_http_app(host=host)
        if not open_server:
            app = KeyRequired(app, gate, always=config.server.mcp.ingest)
        uvicorn.run(app, host=host, port=port, log_level="info", timeout_graceful_shutdown=GRACE_SECONDS)
    finally:
        for service in services.values():
            service.close()


class KeyRequired:
    """ASGI wrapper: each HTTP request's key resolves to its caller (401 for a wrong or revoked key,
    429 past its rate), which the tools then act as."""

    def __init__(self, app: Any, gate: Gate, *, always: bool = False) -> None:
        self.app, self.gate, self.always = app, gate, always

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            import anyio
            from starlette.responses import JSONResponse

            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
            presented = presented_key(headers.get("authorization"), headers.get("x-api-key"))
            try:
                if presented is None and self.always:  # the ingest tool is on: nobody without a key
                    raise ApiError(401, "unauthorized", "send the API key as `Authorization: Bearer KEY`")
                # The key store may be a database: looked up on a worker thread, never on the event loop.
                caller = await anyio.to_thread.run_sync(self.gate.caller, presented)
            except ApiError as exc:
                body = {"error": {"code": exc.code, "message": str(exc)}}
                await JSONResponse(body, status_code=exc.status, headers=getattr(exc, "headers", None))(
                    scope, receive, send)
                return
            scope = {**scope, CALLER_SCOPE_KEY: caller}
        await self.app(scope, receive, send)


__all__ = ["build_mcp", "run_mcp", "SearchResult", "SourceRef"]
