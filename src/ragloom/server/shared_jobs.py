"""Ingest jobs kept in the store (``Store.ingest_jobs``), so every replica over it shares them.

``POST /v1/ingest`` on one replica queues a job in the database with the bytes of its uploaded
files; whichever replica's worker claims it first runs it, writing the files where the
uploading replica did (the index's upload folder has the same path everywhere), and saves its
progress with each renewal of its lease. ``GET /v1/ingest/{id}`` on any replica reads the row.
A job whose replica died (no renewal for ``server.job_lease`` seconds) is claimed again by
another and run from the start; after ``MAX_ATTEMPTS`` it is marked failed.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import RagloomError
from ..paths import PathPolicy
from ..types import IngestReport
from .jobs import IngestJobs, _JobProgress, _Work, run_ingest, run_recorded
from .schemas import IngestJobModel
from .service import IndexService

log = logging.getLogger("ragloom.server")

MAX_ATTEMPTS = 3
#: How often an idle worker looks for a job queued by another replica, in seconds.
POLL_SECONDS = 0.5


class SharedIngestJobs(IngestJobs):
    """``IngestJobs`` over a job table that replicas share (``stores/postgres/jobs.py``)."""

    def __init__(self, service: IndexService, table: Any,
                 on_finish: Callable[[IngestJobModel, IngestReport | None], None] | None = None) -> None:
        self.service, self.table, self.on_finish = service, table, on_finish
        self.lease = float(service.config.server.job_lease)
        self.replica = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._reports: dict[str, IngestReport] = {}
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._work, name="ragloom-ingest", daemon=True)
        self._thread.start()

    def submit(
        self, paths: Sequence[str], *, origin: str, glob: Sequence[str] | None = None, remove: Sequence[str] = (),
        policy: PathPolicy | None = None, owner: str | None = None, metadata: dict[str, Any] | None = None,
    ) -> IngestJobModel:
        job = IngestJobModel(id=uuid.uuid4().hex[:12], state="queued", origin=origin,
                             paths=list(paths), remove=list(remove), created_at=time.time())
        # Uploaded files travel with the job; paths on the server are read where the job runs.
        files = {path: Path(path).read_bytes() for path in paths} if origin == "upload" else {}
        work = {"paths": list(paths), "remove": list(remove), "glob": list(glob) if glob else None,
                "metadata": metadata,
                "policy": None if policy is None else {"roots": [str(r) for r in policy.roots], "what": policy.what}}
        self.table.create(job.model_dump(mode="json"), work, owner, files)
        self._wake.set()
        return job

    def get(self, job_id: str, owner: object = all) -> IngestJobModel | None:
        found = self.table.get(job_id)
        if found is None or (owner is not all and found[1] != owner):
            return None
        return IngestJobModel.model_validate(found[0])

    def wait(self, job_id: str, timeout: float | None = None) -> IngestJobModel | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self.get(job_id)
            if job is None or job.state in ("done", "failed") or (deadline is not None and time.monotonic() >= deadline):
                return job
            time.sleep(0.1)

    def recent(self, limit: int, owner: object = all) -> list[IngestJobModel]:
        return [IngestJobModel.model_validate(raw) for raw in self.table.recent(limit, owner)]

    def report(self, job_id: str) -> IngestReport | None:
        return self._reports.get(job_id)

    def running(self) -> int:
        return self.table.pending()

    def close(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)
        self.table.close()

    # -- the worker ----------------------------------------------------------------------------
    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                claimed = self.table.claim(self.replica, self.lease)
            except Exception:  # the database is away for a moment: look again later
                log.warning("cannot look for ingest jobs", exc_info=True)
                claimed = None
            if claimed is None:
                self._wake.wait(POLL_SECONDS)
                self._wake.clear()
                continue
            self._run(*claimed)

    def _run(self, raw: dict[str, Any], work: dict[str, Any], files: dict[str, bytes]) -> None:
        job = IngestJobModel.model_validate(raw)
        report: IngestReport | None = None
        renewing = threading.Event()
        heart = threading.Thread(target=self._renew, args=(job, renewing), daemon=True)
        try:
            report = run_recorded(job, lambda: self._ingest(job, work, files, heart), self._reports)
        finally:
            renewing.set()
            if heart.is_alive():
                heart.join()
            job.finished_at, job.current = time.time(), None
            self.table.finish(job.model_dump(mode="json"), self.replica)
            if self.on_finish is not None:
                self.on_finish(job, report)

    def _ingest(self, job: IngestJobModel, work: dict[str, Any], files: dict[str, bytes],
                heart: threading.Thread) -> IngestReport:
        if int(work.get("attempts", 1)) > MAX_ATTEMPTS:
            raise RagloomError(f"the replicas running this job stopped {MAX_ATTEMPTS} times; submit it again")
        job.state, job.started_at = "running", time.time()
        heart.start()
        _write_uploads(files)
        policy = work.get("policy")
        return run_ingest(self.service, _Work(
            job, list(work["paths"]), list(work["remove"]), work.get("glob"),
            PathPolicy(policy["roots"], what=policy["what"]) if policy else None, work.get("metadata")),
            _JobProgress(job))

    def _renew(self, job: IngestJobModel, stop: threading.Event) -> None:
        """Save the job's progress and keep its lease, a few times a lease, until it ends."""
        while not stop.wait(self.lease / 3):
            try:
                self.table.renew(job.model_dump(mode="json"), self.replica, self.lease)
            except Exception:
                log.warning("cannot renew the lease of ingest job %s", job.id, exc_info=True)


def _write_uploads(files: dict[str, bytes]) -> None:
    """Put uploaded files where their job reads them (absent on a replica that did not receive them)."""
    for name, data in files.items():
        path = Path(name)
        if path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".upload-{uuid.uuid4().hex[:8]}")
        tmp.write_bytes(data)
        os.replace(tmp, path)


def create_jobs(service: IndexService, on_finish: Callable[[IngestJobModel, IngestReport | None], None] | None = None
                ) -> IngestJobs:
    """The ingest jobs of a service: in the store when it keeps them (every replica sees them), else in memory."""
    shared = service.writer.store.ingest_jobs()
    if shared is None:
        return IngestJobs(service, on_finish=on_finish)
    return SharedIngestJobs(service, shared, on_finish=on_finish)
