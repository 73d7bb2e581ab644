"""POST /v1/search."""

from __future__ import annotations

from fastapi import APIRouter

from ..schemas import SearchRequest, SearchResponse
from . import BODY_ERRORS, JsonBodyRoute, ReadIndex, State

router = APIRouter(prefix="/v1", route_class=JsonBodyRoute, tags=["search"])


@router.post("/search", response_model=SearchResponse, responses=BODY_ERRORS)
async def search(body: SearchRequest, index: ReadIndex, state: State) -> SearchResponse:
    """The passages that best match a query, best first, with sources and matched-term spans;
    with ``explain``, also the query plan and each pipeline step's trace."""
    result = await state.run(index.search, body.query, body.k, where=body.where, mode=body.mode,
                             explain=body.explain)
    state.metrics.searches.labels(result.mode).inc()
    state.metrics.search_hits.inc(len(result.hits))
    return result
