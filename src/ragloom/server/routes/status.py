"""GET /v1/status, /v1/audit, /v1/healthz and /v1/metrics."""

from __future__ import annotations

import dataclasses

from fastapi import APIRouter, Query, Response

from ..metrics import CONTENT_TYPE
from ..schemas import AuditEntryModel, HealthResponse, StatusModel
from . import ERRORS, Reader

router = APIRouter(prefix="/v1", tags=["status"])

@router.get("/status", response_model=StatusModel, responses=ERRORS)
async def status(state: Reader):  # noqa: ANN201
    """What the index holds: sources, chunks, embedder, size on disk; and the server's state."""
    from ..app import package_version

    stats = await state.run(state.service.stats)
    return StatusModel(**dataclasses.asdict(stats), jobs_pending=state.jobs.running(), version=package_version(),
                          readers=state.service.reader_count, writes_enabled=state.api_key is not None)


@router.get("/audit", response_model=list[AuditEntryModel], responses=ERRORS)  # type: ignore[valid-type]
async def audit(state: Reader, last: int = Query(10, ge=1, le=1000, description="how many recent searches")) -> list:
    """Recent searches with their parameters and every hit's rank and score."""
    entries = await state.run(state.service.audit, last)
    return [AuditEntryModel.model_validate(entry) for entry in entries]


@router.get("/healthz", response_model=HealthResponse, openapi_extra={"security": []})
async def healthz() -> HealthResponse:
    """Liveness: answers while the process serves requests (no key needed)."""
    from ..app import package_version

    return HealthResponse(version=package_version())


@router.get("/metrics", response_class=Response, responses={**ERRORS, 200: {"content": {CONTENT_TYPE: {}}}})
async def metrics(state: Reader) -> Response:
    """Prometheus text format: requests, latencies, searches, ingest jobs, embedding cache hits, index size."""
    body = await state.run(state.metrics.render)
    return Response(body, media_type=CONTENT_TYPE)
