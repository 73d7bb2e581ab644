"""GET /v1/sources, GET /v1/sources/{id}/text, DELETE /v1/sources/{id}; GET /v1/remote-sources and POST
/v1/remote-sources/{name}/sync (remote sources: ``ragloom/sources/``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from ..errors import ApiError
from ..schemas import IngestJobModel, SourceModel, source_model
from ..sync_jobs import queue_sync
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


class RemoteSourceModel(BaseModel):
    """A remote source: its last sync, the age of its cursor, its error."""

    name: str
    uri: str = Field(..., description="its address (a password in it is masked)")
    status: str = Field(..., description="never synced | running | ok | partial | failed | interrupted")
    configured: bool = Field(..., description="named under sources.remote (synced on its interval by the server)")
    interval: float | None = Field(None, description="seconds between scheduled syncs (None: sources.interval)")
    last_started: float | None = None
    last_finished: float | None = None
    last_success: float | None = Field(None, description="end of the last sync that could list the remote")
    cursor_age_seconds: float | None = Field(None, description="how old what the index knows of it is, in seconds")
    error: str | None = Field(None, description="why the last sync could not list or reach it (one line)")
    report: dict[str, Any] = Field(default_factory=dict, description="the last sync's counts: seen, added, updated, "
                                   "removed, failed, skipped, requests, bytes_downloaded")
    failures: list[dict[str, Any]] = Field(default_factory=list, description="items that failed, each with its reason")


@router.get("/remote-sources", response_model=list[RemoteSourceModel], responses=ERRORS)
async def remote_sources(index: ReadIndex, state: State) -> list[RemoteSourceModel]:
    """Each remote source of the index (configured, or ingested by URI once): its last sync, how old its
    cursor is, and its errors."""
    rows = await state.run(index.service.remote_sources)
    return [RemoteSourceModel.model_validate(row) for row in rows]


@router.post("/remote-sources/{name}/sync", status_code=202, response_model=IngestJobModel, responses=ERRORS)
async def sync_remote_source(name: str, index: WriteIndex, state: State) -> IngestJobModel:
    """Sync a configured remote source now (a job of kind ``sync``; poll GET /v1/ingest/{id})."""
    sources = index.service.config.sources
    if name not in sources.remote:
        raise ApiError(404, "source_not_found", f"no remote source named {name!r} under sources.remote; configured: "
                       f"{', '.join(sources.remote) or 'none'}")
    return await state.call(queue_sync, index.served.jobs, [name], sources, origin="api", owner=index.caller.name)


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
