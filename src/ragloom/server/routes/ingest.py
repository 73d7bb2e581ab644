"""POST /v1/ingest (uploaded files, or paths under the allowed roots) and GET /v1/ingest/{job}."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from fastapi import APIRouter, Query, Request, Response
from pydantic import ValidationError
from starlette.datastructures import UploadFile

from ...ingest.loaders import is_supported, supported_extensions
from ...errors import RemoteRefusedError, UsageError
from ...paths import PathPolicy
from ...sources import check_allowed, is_remote, parse
from ..errors import ApiError
from ..schemas import IngestJobModel, IngestPathsRequest
from ..security import accept_paths
from ..sync_jobs import queue_sync
from . import BODY_ERRORS, ERRORS, ReadIndex, State, WriteIndex, require_json

router = APIRouter(prefix="/v1", tags=["ingest"])

# The paths are absolute: what the path policy asks of them first.
_PATHS_SCHEMA = IngestPathsRequest.model_json_schema()
_PATHS_SCHEMA["properties"]["paths"]["items"]["pattern"] = "^/"
_BODY_DOC = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": _PATHS_SCHEMA},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {"files": {"type": "array", "items": {"type": "string", "format": "binary"}}},
                    "required": ["files"],
                }
            },
        },
    }
}
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_COPY_CHUNK = 1 << 20


@router.post("/ingest", status_code=202, response_model=IngestJobModel, responses=BODY_ERRORS, openapi_extra=_BODY_DOC)
async def ingest(request: Request, response: Response, index: WriteIndex, state: State) -> IngestJobModel:
    """Start an ingest in the background; poll GET /v1/ingest/{id} for its progress and report.

    Send files as multipart/form-data (field ``files``), or JSON ``{"paths": [...]}`` naming
    files and folders inside ``server.allowed_roots``, or remote sources (``s3://BUCKET/PREFIX``,
    ``https://HOST/PATH``, ``git+https://HOST/REPO@REF``) whose bucket or host is in the server's
    ``sources.allowed``: those are synced by a job of kind ``sync`` (GET /v1/remote-sources).
    """
    content_type = request.headers.get("content-type", "")
    jobs, owner = index.served.jobs, index.caller.name
    if content_type.startswith("multipart/form-data"):
        folder = index.upload_dir()
        paths = await _save_uploads(request, state, folder)
        job = await state.call(jobs.submit, [str(p) for p in paths], origin="upload",
                               policy=PathPolicy([folder], what="the upload folder"), owner=owner, metadata=index.stamp)
    else:
        require_json(content_type, ", or files as multipart/form-data")
        if index.caller.filtered:  # the allowed roots are every tenant's: a tenant's key only uploads
            raise ApiError(403, "forbidden", f"the key {owner!r} sees only its own documents, so it may upload "
                           "files (multipart/form-data) but not ingest paths on the server")
        try:
            body = IngestPathsRequest.model_validate_json(await request.body())
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors())
            raise ApiError(422, "invalid_request", problems) from None
        remote = [path for path in body.paths if is_remote(path)]
        if remote:
            if len(remote) != len(body.paths):
                raise ApiError(422, "invalid_request", "send remote URIs and server paths in separate requests")
            job = await state.call(_queue_remote, index, remote)
            response.headers["Location"] = f"{request.scope.get('ragloom.prefix', '/v1')}/ingest/{job.id}"
            return job
        settings = state.config.ingest
        accepted = await state.run(accept_paths, state.paths, body.paths, body.glob or settings.glob, settings.exclude)
        job = await state.call(jobs.submit, accepted, origin="api", glob=body.glob, policy=state.paths, owner=owner)
    response.headers["Location"] = f"{request.scope.get('ragloom.prefix', '/v1')}/ingest/{job.id}"
    return job


def _queue_remote(index, uris: list[str]) -> IngestJobModel:
    """A sync job for remote URIs, each refused unless the server's ``sources.allowed`` names it."""
    sources = index.service.config.sources
    for uri in uris:
        try:
            check_allowed(parse(uri), sources.allowed)
        except RemoteRefusedError as exc:
            raise ApiError(403, "remote_not_allowed", str(exc)) from None
        except UsageError as exc:
            raise ApiError(422, "invalid_request", str(exc)) from None
    return queue_sync(index.served.jobs, uris, sources, origin="api", owner=index.caller.name)


@router.get("/ingest", response_model=list[IngestJobModel], responses=ERRORS)
async def ingest_jobs(index: ReadIndex, state: State,
                      last: int = Query(20, ge=1, le=200, description="how many")) -> list[IngestJobModel]:
    """Recent ingest jobs, newest first: from the API, from uploads and from watched folders (a key
    that is not an admin sees its own)."""
    return await state.call(index.served.jobs.recent, last, owner=index.owner)


@router.get("/ingest/{job_id}", response_model=IngestJobModel, responses=ERRORS)
async def ingest_job(job_id: str, index: ReadIndex, state: State) -> IngestJobModel:
    """An ingest job: queued, running (with files and chunks done so far), done (with its report) or failed."""
    job = await state.call(index.served.jobs.get, job_id, owner=index.owner)
    if job is None:
        raise ApiError(404, "job_not_found", f"no ingest job {job_id!r}; finished jobs are kept for a while, not forever")
    return job


async def _save_uploads(request: Request, state, folder: Path) -> list[Path]:
    settings = state.config.server
    form = await request.form(max_files=100, max_fields=100)
    uploads = [item for item in form.getlist("files") if isinstance(item, UploadFile)]
    if not uploads:
        raise ApiError(422, "invalid_request", "send the documents as multipart form field `files`")
    names = [_safe_name(upload.filename or "") for upload in uploads]
    folder.mkdir(parents=True, exist_ok=True)
    saved = []
    for upload, name in zip(uploads, names):
        saved.append(await _store(upload, folder / name, settings.max_upload_bytes))
    await form.close()
    return saved


def _safe_name(filename: str) -> str:
    """A file name without folders or unusual characters; the extension picks the loader."""
    name = _UNSAFE.sub("_", Path(filename.replace("\\", "/")).name).lstrip(".")
    if not name or not is_supported(Path(name)):
        raise ApiError(415, "unsupported_format",
                       f"{filename or '(no name)'}: unsupported file type; ragloom reads: {', '.join(sorted(supported_extensions()))}")
    return name


async def _store(upload: UploadFile, target: Path, limit: int) -> Path:
    """Copy an upload next to ``target`` and move it into place, refusing more than ``limit`` bytes."""
    handle, tmp = tempfile.mkstemp(dir=target.parent, prefix=".upload-")
    written = 0
    try:
        with os.fdopen(handle, "wb") as out:
            while block := await upload.read(_COPY_CHUNK):
                written += len(block)
                if written > limit:
                    raise ApiError(413, "upload_too_large",
                                   f"{upload.filename} is larger than {limit} bytes (server.max_upload_bytes)")
                out.write(block)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
