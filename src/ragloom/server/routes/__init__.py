"""One router module per group of endpoints, and the dependencies they share."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from ..app import ServerState
from ..schemas import ErrorResponse
from ..security import check_key, presented_key


def server_state(request: Request) -> ServerState:
    return request.app.state.ragloom


def _key(authorization: str | None, x_api_key: str | None) -> str | None:
    return presented_key(authorization, x_api_key)


def require_read(
    request: Request,
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
    x_api_key: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> ServerState:
    state = server_state(request)
    if state.config.server.require_key_for_reads:
        check_key(state.api_key, _key(authorization, x_api_key), write=False)
    return state


def require_write(
    request: Request,
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
    x_api_key: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> ServerState:
    state = server_state(request)
    check_key(state.api_key, _key(authorization, x_api_key), write=True)
    return state


Reader = Annotated[ServerState, Depends(require_read)]
Writer = Annotated[ServerState, Depends(require_write)]

#: Documented error responses, shared by the routes' OpenAPI descriptions.
ERRORS = {status: {"model": ErrorResponse} for status in (401, 403, 404, 409, 413, 422, 500)}
