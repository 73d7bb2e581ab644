"""GET /v1/sources, GET /v1/sources/{id}/text and DELETE /v1/sources/{id}."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

from ..schemas import SourceModel, source_model
from ..source_view import SourceTextModel, source_view
from . import ERRORS, ReadIndex, State, WriteIndex

router = APIRouter(prefix="/v1", tags=["sources"])


class RemovedResponse(BaseModel):
    removed: list[str]


@router.get("/sources", response_model=list[SourceModel], responses=ERRORS)  # type: ignore[valid-type]
async def list_sources(index: ReadIndex, state: State) -> list:
    """Every ingested file, with its id (used by DELETE and by MCP's ragloom://source/{id})."""
    records = await state.run(index.sources)
    shown = await state.run(index.service.display_paths)
    return [source_model(record, shown) for record in records]


@router.get("/sources/{source_id}/text", response_model=SourceTextModel, responses=ERRORS)
async def source_text(source_id: str, index: ReadIndex, state: State) -> SourceTextModel:
    """A source's text as the index holds it (its chunks joined, overlaps once), with where each
    chunk lies in it: what the page's viewer opens at a cited passage. It is read from the index,
    never from the file, so it shows only what was ingested, and only the chunks the caller's key
    may read (a source it may not see is a 404, as one that does not exist)."""
    record, chunks = await state.run(index.source_text, source_id)
    shown = await state.run(index.service.display_paths)
    return source_view(source_model(record, shown), chunks)


@router.delete("/sources/{source_id}", response_model=RemovedResponse, responses=ERRORS)
async def delete_source(source_id: str, index: WriteIndex, state: State) -> RemovedResponse:
    """Remove a source and its chunks. Answers 409 while an ingest holds the index."""
    removed = await state.run(index.remove_source, source_id)
    return RemovedResponse(removed=removed)
