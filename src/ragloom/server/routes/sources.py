"""GET /v1/sources and DELETE /v1/sources/{id}."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

from ..schemas import SourceModel, source_model
from . import ERRORS, ReadIndex, State, WriteIndex

router = APIRouter(prefix="/v1", tags=["sources"])


class RemovedResponse(BaseModel):
    removed: list[str]


@router.get("/sources", response_model=list[SourceModel], responses=ERRORS)  # type: ignore[valid-type]
async def list_sources(index: ReadIndex, state: State) -> list:
    """Every ingested file, with its id (used by DELETE and by MCP's ragloom://source/{id})."""
    records = await state.run(index.sources)
    return [source_model(record) for record in records]


@router.delete("/sources/{source_id}", response_model=RemovedResponse, responses=ERRORS)
async def delete_source(source_id: str, index: WriteIndex, state: State) -> RemovedResponse:
    """Remove a source and its chunks. Answers 409 while an ingest holds the index."""
    removed = await state.run(index.remove_source, source_id)
    return RemovedResponse(removed=removed)
