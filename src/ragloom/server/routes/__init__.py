"""One router module per group of endpoints, and the dependencies they share."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import Depends, Header, Request, Response, Security
from fastapi.routing import APIRoute
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from ..access import Caller, ScopedIndex
from ..app import INDEX_SCOPE_KEY, ServerState
from ..errors import ApiError
from ..schemas import ErrorResponse
from ..security import presented_key


def server_state(request: Request) -> ServerState:
    return request.app.state.ragloom


def caller_of(
    request: Request,
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
    x_api_key: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> Caller:
    """Who the request is (the one key check every route goes through)."""
    return server_state(request).gate.caller(presented_key(authorization, x_api_key))


#: The two ways to send the key, declared as OpenAPI security schemes (either one will do).
_BEARER = HTTPBearer(auto_error=False, scheme_name="bearer", description="the API key: `Authorization: Bearer KEY`")
_API_KEY = APIKeyHeader(name="X-API-Key", auto_error=False, scheme_name="apiKey", description="the API key: `X-API-Key: KEY`")


def writer_of(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_BEARER)] = None,
    x_api_key: Annotated[str | None, Security(_API_KEY)] = None,
) -> Caller:
    return server_state(request).gate.caller(x_api_key or (bearer.credentials if bearer else None))


def open_for_read(request: Request, caller: Annotated[Caller, Depends(caller_of)]) -> ScopedIndex:
    # The index named in the path (/v1/indexes/{name}/..., see IndexPathMiddleware), or the default one.
    return server_state(request).open(caller, request.scope.get(INDEX_SCOPE_KEY), "read")


def open_for_write(request: Request, caller: Annotated[Caller, Depends(writer_of)]) -> ScopedIndex:
    return server_state(request).open(caller, request.scope.get(INDEX_SCOPE_KEY), "write")


#: A route's index as its caller may see it, for reading or for writing.
ReadIndex = Annotated[ScopedIndex, Depends(open_for_read)]
WriteIndex = Annotated[ScopedIndex, Depends(open_for_write)]
State = Annotated[ServerState, Depends(server_state)]

#: Documented error responses, shared by the routes' OpenAPI descriptions.
ERRORS = {status: {"model": ErrorResponse} for status in (401, 403, 404, 409, 413, 422, 500)}
#: And those of a route that reads a request body.
BODY_ERRORS = {
    **ERRORS,
    400: {"model": ErrorResponse, "description": "the body is not UTF-8 or not JSON (invalid_body)"},
    503: {"model": ErrorResponse, "description": "the strategy or search preset asked for needs an LLM this "
          "server cannot use (llm_unavailable, mode_unavailable)"},
    415: {"model": ErrorResponse, "description": "the body's Content-Type is not one the endpoint reads "
          "(unsupported_media_type); an upload's file type is not one ragloom reads (unsupported_format)"},
}


def is_json(content_type: str | None) -> bool:
    """Whether a Content-Type names JSON; none at all is taken as JSON, as FastAPI does."""
    if not content_type:
        return True
    kind = content_type.split(";", 1)[0].strip().lower()
    return kind == "application/json" or (kind.startswith("application/") and kind.endswith("+json"))


def require_json(content_type: str | None, other: str = "") -> None:
    """ApiError 415 unless the body is JSON (``other``: what else the endpoint reads, for the message)."""
    if not is_json(content_type):
        raise ApiError(415, "unsupported_media_type", f"the body is {(content_type or '').split(';', 1)[0]}; send JSON "
                       f"with Content-Type: application/json{other}")


class JsonBodyRoute(APIRoute):
    """A route whose body is JSON: any other Content-Type is a 415 before the body is read."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()
        if self.body_field is None:
            return handle

        async def checked(request: Request) -> Response:
            require_json(request.headers.get("content-type"))
            return await handle(request)

        return checked
