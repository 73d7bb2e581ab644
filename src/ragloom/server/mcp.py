"""``ragloom mcp``: the index as an MCP server (the official ``mcp`` SDK's ``MCPServer``).

Tools return pydantic models, so clients get structured content (with an output schema)
as well as its JSON text. Each source is a resource, ``ragloom://source/{id}``. Answers
(``ask``, ``get_context``) carry their citations and passages the same way.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from ..config import Config
from ..errors import RagloomError
from ..optional import require
from .errors import classify
from .schemas import (
    AnswerModel,
    ContextModel,
    IngestReportModel,
    SearchResponse,
    SourceModel,
    answer_model,
    report_model,
    source_model,
)
from .security import configured_key, presented_key, resolve_inside
from .service import IndexService

T = TypeVar("T")
SOURCE_URI = "ragloom://source/{source_id}"


class SourceRef(BaseModel):
    id: str
    path: str
    uri: str = Field(..., description="read the whole source with resources/read on this URI")


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
        except RagloomError as exc:
            raise ToolError(f"{classify(exc)[1]}: {exc}") from exc

    read_only = ToolAnnotations(readOnlyHint=True, openWorldHint=False)

    @server.tool(annotations=read_only)
    def search(
        query: str, k: int | None = None, where: dict[str, Any] | None = None,
        mode: str | None = None, explain: bool = False,
    ) -> SearchResult:
        """Find the passages of the user's documents that best match a query, best first.

        `k` passages (default: the index's search.k); `where` filters on metadata, e.g.
        {"page": {"$gte": 2}} or {"source": "/path/file.md"};
        `mode` is a search preset: hybrid (default), dense (meaning), lexical (exact words, BM25)
        or one the server's config defines; `explain` adds the query plan and each step's trace.
        """
        result = guarded(lambda: service.search(query, k, where=where, mode=mode, explain=explain))
        refs = {hit.source_id: SourceRef(id=hit.source_id, path=hit.source, uri=source_uri(hit.source_id))
                for hit in result.hits}
        return SearchResult(**result.model_dump(), sources=list(refs.values()))

    def refs(items: Any) -> list[SourceRef]:
        unique = {item.source_id: SourceRef(id=item.source_id, path=item.source, uri=source_uri(item.source_id))
                  for item in items}
        return list(unique.values())

    @server.tool(annotations=read_only)
    def ask(
        question: str, strategy: str | None = None, k: int | None = None, budget: int | None = None,
        where: dict[str, Any] | None = None, mode: str | None = None,
    ) -> AskResult:
        """Answer a question from the user's documents, citing passages as [n].

        `citations` lists each cited passage (number, source, chunk_id, section, page, text).
        `strategy`: extractive (quotes the best sentences, no LLM), standard, attributed or cove
        (the server's LLM); default: the server's answer.strategy. `k` passages retrieved,
        `budget` tokens of context, `where` and `mode` as for search.
        """
        answer = guarded(lambda: service.ask(question, strategy=strategy, k=k, budget=budget, where=where,
                                             mode=mode))
        model = answer_model(answer, service.highlighter(question))
        return AskResult(**model.model_dump(), sources=refs(model.citations))

    @server.tool(annotations=read_only)
    def get_context(
        question: str, budget: int | None = None, k: int | None = None, where: dict[str, Any] | None = None,
        mode: str | None = None,
    ) -> ContextResult:
        """The numbered passages (with source, section, page, score) an LLM would be given to answer
        `question`, within `budget` tokens; `rendered` is that context as text, ready for a prompt."""
        model = guarded(lambda: service.context(question, budget=budget, k=k, where=where, mode=mode))
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
        @server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True))
        def ingest(paths: list[str]) -> IngestReportModel:  # type: ignore[valid-type]
            """Index files and folders (absolute paths inside the server's allowed roots).

            Unchanged files are skipped, changed ones replaced, files gone from a folder removed.
            """
            def run() -> Any:
                resolved = [resolve_inside(p, config.server.allowed_roots) for p in paths]
                with service.writing(wait=0) as index:
                    return report_model(index.ingest([str(p) for p in resolved]))

            return guarded(run)

    return server


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
