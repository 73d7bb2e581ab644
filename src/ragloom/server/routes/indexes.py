"""GET /v1/indexes: the indexes this server serves that the caller's key may use."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from ..access import Caller
from . import ERRORS, State, caller_of

router = APIRouter(prefix="/v1", tags=["indexes"])


class IndexRef(BaseModel):
    name: str
    default: bool = Field(False, description="the index the paths without /indexes/{name} serve")
    url: str = Field(..., description="prefix of this index's endpoints, e.g. {url}/search")


class IndexList(BaseModel):
    indexes: list[IndexRef]
    scope: str = Field("read", description="what the caller's key may do: read, write or admin (the page shows "
                       "the server's file paths to admins only)")


@router.get("/indexes", response_model=IndexList, responses=ERRORS)
async def list_indexes(state: State, caller: Annotated[Caller, Depends(caller_of)]) -> IndexList:
    """The indexes the caller may use (an index it may not use is not listed, and answers 404)."""
    default = state.default.name
    return IndexList(indexes=[IndexRef(name=name, default=name == default, url=f"/v1/indexes/{name}")
                              for name in state.visible(caller)], scope=caller.scope)
