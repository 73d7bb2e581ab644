"""GET /v1/status, /v1/audit, /v1/healthz and /v1/metrics."""

from __future__ import annotations

import dataclasses

from fastapi import APIRouter, Query, Response

from ..errors import ApiError
from ..metrics import CONTENT_TYPE
from ..schemas import AuditEntryModel, HealthResponse, StatusModel
from . import ERRORS, ReadIndex, State

router = APIRouter(prefix="/v1", tags=["status"])

@router.get("/status", response_model=StatusModel, responses=ERRORS)
async def status(index: ReadIndex, state: State):
    """What the index holds: sources, chunks, embedder, size on disk; and the server's state."""
    from ..app import package_version

    stats = await state.run(index.stats)
    pending = await state.call(index.served.jobs.running)
    return StatusModel(**dataclasses.asdict(stats), jobs_pending=pending, version=package_version(),
                       readers=index.service.reader_count, writes_enabled=state.writes_enabled)


@router.get("/audit", response_model=list[AuditEntryModel], responses=ERRORS)  # type: ignore[valid-type]
async def audit(index: ReadIndex, state: State, last: int = Query(10, ge=1, le=1000, description="how many recent searches")) -> list:
    """Recent searches with their parameters and every hit's rank and score."""
    entries = await state.run(index.audit, last)
    return [AuditEntryModel.model_validate(entry) for entry in entries]


@router.get("/healthz", response_model=HealthResponse, openapi_extra={"security": []})
async def healthz() -> HealthResponse:
    """Liveness: answers while the process serves requests (no key needed)."""
    from ..app import package_version

    return HealthResponse(version=package_version())


@router.get("/metrics", response_class=Response, responses={**ERRORS, 200: {"content": {CONTENT_TYPE: {}}}})
async def metrics(index: ReadIndex, state: State) -> Response:
    """Prometheus text format: requests, latencies, searches, ingest jobs, embedding cache hits, index size.
    With a keys file, only for an admin key (the counts cover every tenant)."""
    if state.gate.keys is not None and not index.caller.may("admin"):
        raise ApiError(403, "forbidden", "the metrics cover every tenant: they need a key with the admin scope")
    body = await state.run(state.metrics.render)
    return Response(body, media_type=CONTENT_TYPE)
