"""The HTTP API: ``create_app(config)`` returns a FastAPI app serving its indexes under /v1.

The first index is served at /v1/...; every index (the first too) at /v1/indexes/{name}/....

Each group of endpoints is a router module in ``server/routes``; adding one (answers:
``routes/answers.py`` for /v1/context and /v1/ask) is a new module listed in ``ROUTERS``.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from collections.abc import Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, TypeVar

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..config import Config
from ..errors import ConfigError, RagloomError
from ..paths import PathPolicy
from ..types import IngestReport
from .access import Caller, Gate, ScopedIndex, Served
from .errors import ApiError, classify
from .jobs import IngestJobs, create_jobs
from .sync_jobs import SyncScheduler
from .keys import open_keys
from .metrics import Metrics
from .openapi import describe_api, methods_at
from .schemas import IngestJobModel
from .security import allowed_paths, configured_key
from .service import IndexService

log = logging.getLogger("ragloom.server")
_INDEX_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
T = TypeVar("T")

#: Router modules under ragloom.server.routes, each exposing ``router`` (with its /v1 prefix).
ROUTERS = ("indexes", "search", "answers", "chat", "ingest", "sources", "status")


def package_version() -> str:
    try:
        return version("ragloom")
    except PackageNotFoundError:
        return "0+unknown"


@dataclass
class ServerState:
    """What every endpoint reaches through ``request.app.state.ragloom``."""

    config: Config
    #: The served indexes by name; the first is the default, which the paths without a name serve.
    indexes: dict[str, Served]
    gate: Gate
    metrics: Metrics
    api_key: str | None
    limiter: anyio.CapacityLimiter
    #: What ingest by path may read (server.allowed_roots).
    paths: PathPolicy

    @property
    def default(self) -> Served:
        return next(iter(self.indexes.values()))

    # The default index's parts, as the single-index server had them.
    @property
    def service(self) -> IndexService:
        return self.default.service

    @property
    def jobs(self) -> IngestJobs:
        return self.default.jobs

    @property
    def upload_dir(self) -> Path:
        return self.default.upload_dir

    @property
    def writes_enabled(self) -> bool:
        return self.api_key is not None or self.gate.keys is not None

    def open(self, caller: Caller, name: str | None, scope: str) -> ScopedIndex:
        """The index ``name`` (None: the default) as ``caller`` may use it for ``scope``; 404/401/403 if not."""
        name = self.default.name if name is None else name
        self.gate.check(caller, name, self.indexes, scope)
        return ScopedIndex(self.indexes[name], caller)

    def visible(self, caller: Caller) -> list[str]:
        return [name for name in self.indexes if caller.may_use(name)]

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run blocking index work on a worker thread, at most one per reader."""
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs), limiter=self.limiter)

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a short blocking call that needs no reader (the job queue, which may be a database)
        on a worker thread, never on the event loop."""
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))


def served_indexes(config: Config) -> dict[str, Config]:
    """Name -> config of each index to serve: ``server.indexes`` if set, else ``config.index`` as ``default``."""
    named = config.server.indexes or {"default": config.index}
    for name in named:
        if not _INDEX_NAME.fullmatch(name):
            raise ConfigError(f"index name {name!r}: start with a letter or digit, then up to 63 letters, digits, "
                              "'.', '_' and '-' (it is part of a URL and of the upload folder, so never '.' or '..')")
    return {name: _own_collection(config.model_copy(update={"index": str(path)}, deep=True), name)
            for name, path in named.items()} if config.server.indexes else {"default": config}


def _own_collection(config: Config, name: str) -> Config:
    """Several indexes on one Chroma or Qdrant server (or one shared folder) each get their own
    collection, ``<collection>-<name>``; a store inside its index folder keeps its name."""
    store = config.store
    if store.backend == "chroma" and (store.chroma.host or store.chroma.path):
        store.chroma.collection = f"{store.chroma.collection}-{name}"
    elif store.backend == "qdrant" and (store.qdrant.url or store.qdrant.path):
        store.qdrant.collection = f"{store.qdrant.collection}-{name}"
    return config


def create_app(config: Config, service: IndexService | None = None, *,
               services: Mapping[str, IndexService] | None = None, keys_file: str | Path | None = None) -> FastAPI:
    """The API for the indexes of ``config`` (``server.indexes``, else ``config.index``).

    ``service`` (one index) or ``services`` (by name) may be shared with MCP or a watcher; those
    given are not closed with the app. ``keys_file``: scoped keys (``ragloom keys``).
    """
    settings = config.server
    given = dict(services or ({} if service is None else {next(iter(served_indexes(config))): service}))
    opened = {name: IndexService(cfg) for name, cfg in served_indexes(config).items() if name not in given}
    all_services = {**given, **opened}
    order = [*served_indexes(config)] + [n for n in all_services if n not in served_indexes(config)]
    metrics: Metrics

    def on_finish(job: IngestJobModel, report: IngestReport | None) -> None:
        metrics.observe_job(job.state, report)

    indexes: dict[str, Served] = {}
    for name in order:
        svc = all_services[name]
        upload_dir = Path(settings.upload_dir).expanduser() / name if settings.upload_dir and len(order) > 1 else (
            Path(settings.upload_dir).expanduser() if settings.upload_dir else svc.path / "uploads")
        indexes[name] = Served(name, svc, create_jobs(svc, on_finish=on_finish), upload_dir.resolve())
    default = next(iter(indexes.values()))
    metrics = Metrics(default.service.stats, lambda: sum(s.jobs.running() for s in indexes.values()))
    api_key = configured_key(settings)
    keys = open_keys(keys_file) if keys_file is not None else None
    state = ServerState(config, indexes, Gate(settings, api_key, keys), metrics, api_key,
                        anyio.CapacityLimiter(sum(s.service.reader_count for s in indexes.values())),
                        allowed_paths(settings))

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        # Configured remote sources are synced on their interval while the server runs.
        schedulers = [SyncScheduler(served.jobs, served.service.config.sources) for served in indexes.values()]
        yield
        for scheduler in schedulers:
            scheduler.close()
        for served in indexes.values():
            served.jobs.close()
        for service in opened.values():
            service.close()

    app = FastAPI(
        title="ragloom", version=package_version(), lifespan=lifespan,
        description="Search your own documents by meaning, with sources. Writes need an API key.",
    )
    app.state.ragloom = state
    for name in ROUTERS:
        module = __import__(f"ragloom.server.routes.{name}", fromlist=["router"])
        app.include_router(module.router)
    from .routes import web

    web.install(app)
    describe_api(app, config)
    _add_error_handlers(app)
    if settings.cors_origins:
        app.add_middleware(JsonCORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["*"],
                           allow_headers=["Authorization", "X-API-Key", "Content-Type"])
    app.add_middleware(BodyLimitMiddleware, limit=settings.max_body_bytes)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    app.add_middleware(IndexPathMiddleware)
    return app


def allowed_methods(request: Request, declared: str | None) -> list[str]:
    """Every method some route answers at the request's path (several routes may share one), and OPTIONS."""
    methods = methods_at(request.app, request.url.path)
    methods.update(m.strip() for m in (declared or "").split(",") if m.strip())  # routes outside the document
    return sorted(methods - {"OPTIONS"}) + ["OPTIONS"]


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if any(err["type"] == "json_invalid" for err in errors):
            return error_response(400, "invalid_body", "the body is not valid JSON; send a JSON object")
        bad_filter = next((err for err in errors if err["type"] == "invalid_filter"), None)
        if bad_filter is not None:
            return error_response(422, "invalid_filter", bad_filter["msg"])
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in errors)
        return error_response(422, "invalid_request", problems or "the request is not valid")

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        codes = {400: "invalid_body", 404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}
        message = exc.detail if isinstance(exc.detail, str) else "request failed"
        headers = getattr(exc, "headers", None)
        if exc.status_code == 404 and message == "Not Found":
            message = f"there is no endpoint at {request.url.path}; see /docs for the API"
        elif exc.status_code == 400 and message == "There was an error parsing the body":
            message = "the body could not be read: send JSON encoded as UTF-8"
        elif exc.status_code == 405:
            allowed = allowed_methods(request, (headers or {}).get("Allow"))
            headers = {**(headers or {}), "Allow": ", ".join(allowed)}
            if request.method == "OPTIONS":  # what may be done here: the answer to OPTIONS, not an error
                return Response(status_code=204, headers=headers)
            message = f"{request.method} is not allowed at {request.url.path}; use {' or '.join(allowed[:-1])}"
        return error_response(exc.status_code, codes.get(exc.status_code, f"http_{exc.status_code}"), message,
                              headers=headers)

    async def _classified(request: Request, exc: Exception) -> JSONResponse:
        status, code, message = classify(exc)
        if not isinstance(exc, RagloomError):
            log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        elif status >= 500:  # said on purpose (no LLM, a store error): its message is the whole story
            log.warning("%s %s: %s (%s)", request.method, request.url.path, message, code)
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else getattr(exc, "headers", None)
        return error_response(status, code, message, headers)

    # ragloom's own errors are answered where they happen; anything else reaches Starlette's
    # outermost handler, which answers with the same JSON (and logs the traceback, never sends it).
    app.add_exception_handler(RagloomError, _classified)
    app.add_exception_handler(Exception, _classified)


class JsonCORSMiddleware(CORSMiddleware):
    """Starlette's CORS, with a refused preflight answered in the API's JSON error shape."""

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code < 400:
            return response
        refused = bytes(response.body).decode("utf-8", "replace")  # "Disallowed CORS origin, method"
        headers = {k: v for k, v in response.headers.items() if k.lower().startswith("access-control-")}
        return error_response(response.status_code, "cors_refused",
                              f"{refused}; this server allows the origins in server.cors_origins", headers)


class BodyLimitMiddleware:
    """413 for a request body larger than ``limit`` bytes, declared or streamed.

    A streamed body is cut off where it crosses the limit; whatever the app then answers
    (FastAPI turns a failed body read into a 400) is replaced by the 413.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        too_large = error_response(
            413, "payload_too_large", f"the request body is larger than {self.limit} bytes (server.max_body_bytes)")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await too_large(scope, receive, send)
            return
        seen, exceeded, answered = 0, False, False

        async def limited() -> Message:
            nonlocal seen, exceeded
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    exceeded = True
                    raise ApiError(413, "payload_too_large", "request body too large")
            return message

        async def sending(message: Message) -> None:
            nonlocal answered
            if not exceeded:
                await send(message)
            elif not answered:
                answered = True
                await too_large(scope, receive, send)

        try:
            await self.app(scope, limited, sending)
        except Exception:
            if not exceeded:
                raise
        if exceeded and not answered:
            await too_large(scope, receive, send)


#: Where an index's name is put by IndexPathMiddleware, for the routes' dependencies.
INDEX_SCOPE_KEY = "ragloom.index"
_INDEX_PATH = re.compile(r"^/v1/indexes/([^/]+)(/.+)$")


class IndexPathMiddleware:
    """Serves /v1/indexes/{name}/... with the routes of /v1/...: the path is shortened, the name kept
    in the scope. Each endpoint is written once, and both forms are answered by the same code."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            match = _INDEX_PATH.match(scope["path"])
            if match is not None:
                name, rest = match.groups()
                scope = {**scope, "path": "/v1" + rest, "raw_path": ("/v1" + rest).encode("utf-8"),
                         INDEX_SCOPE_KEY: name, "ragloom.prefix": f"/v1/indexes/{name}"}
        await self.app(scope, receive, send)


class MetricsMiddleware:
    """Counts requests and times them, labelled by route template (not the raw path)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = scope.get("route")
            label = getattr(route, "path", None) or "unmatched"
            self.metrics.observe_request(scope["method"], label, status, time.perf_counter() - started)
