"""Ingest jobs: queued, run one at a time on a worker thread, their progress readable meanwhile."""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import RagloomError, SourceNotFoundError
from ..ingest.runner import IngestProgress
from ..paths import PathPolicy
from ..types import IngestReport
from .errors import error_body
from .schemas import IngestJobModel, report_model
from .service import IndexService

log = logging.getLogger("ragloom.server")

#: Finished jobs remembered for GET /v1/ingest/{id}.
KEEP_FINISHED = 200


class _JobProgress(IngestProgress):
    def __init__(self, job: IngestJobModel) -> None:
        self.job = job

    def files(self, total: int) -> None:
        self.job.files_total = total

    def file_done(self, path: str, status: str) -> None:
        self.job.files_done += 1
        self.job.current = path

    def embedding(self, chunks: int) -> None:
        self.job.chunks_to_embed += chunks

    def embedded(self, chunks: int) -> None:
        self.job.chunks_embedded += chunks


@dataclass
class _Work:
    job: IngestJobModel
    paths: list[str]
    remove: list[str]
    glob: list[str] | None
    policy: PathPolicy | None
    metadata: dict[str, Any] | None = None


class IngestJobs:
    """A queue of ingests for one service; ``submit`` returns at once, ``wait`` blocks."""

    def __init__(self, service: IndexService, on_finish: Callable[[IngestJobModel, IngestReport | None], None] | None = None) -> None:
        self.service = service
        self.on_finish = on_finish
        self._jobs: OrderedDict[str, IngestJobModel] = OrderedDict()
        self._done: dict[str, threading.Event] = {}
        self._reports: dict[str, IngestReport] = {}
        self._owners: dict[str, str | None] = {}  # job id -> the name of the key that submitted it
        self._queue: queue.Queue[_Work | None] = queue.Queue()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._work, name="ragloom-ingest", daemon=True)
        self._thread.start()

    def submit(
        self, paths: Sequence[str], *, origin: str, glob: Sequence[str] | None = None, remove: Sequence[str] = (),
        policy: PathPolicy | None = None, owner: str | None = None, metadata: dict[str, Any] | None = None,
    ) -> IngestJobModel:
        """Queue an ingest of ``paths`` (after removing the sources ``remove``); with a ``policy``,
        each file is checked against its roots again when the job opens it. ``owner``: the key's
        name (a tenant sees only its own jobs); ``metadata``: stamped on every chunk written."""
        job = IngestJobModel(id=uuid.uuid4().hex[:12], state="queued", origin=origin,
                             paths=list(paths), remove=list(remove), created_at=time.time())
        with self._lock:
            self._jobs[job.id] = job
            self._done[job.id] = threading.Event()
            self._owners[job.id] = owner
            self._forget_old()
        self._queue.put(_Work(job, list(paths), list(remove), list(glob) if glob else None, policy, metadata))
        return job

    def get(self, job_id: str, owner: object = all) -> IngestJobModel | None:
        """A job by id; with an ``owner`` (a key's name), only that key's job."""
        with self._lock:
            job = self._jobs.get(job_id)
            if owner is not all and self._owners.get(job_id) != owner:
                job = None
        return job.model_copy(deep=True) if job is not None else None

    def wait(self, job_id: str, timeout: float | None = None) -> IngestJobModel | None:
        event = self._done.get(job_id)
        if event is not None:
            event.wait(timeout)
        return self.get(job_id)

    def recent(self, limit: int, owner: object = all) -> list[IngestJobModel]:
        """The latest jobs, newest first; with an ``owner`` (a key's name), only that key's."""
        with self._lock:
            jobs = [job for jid, job in self._jobs.items() if owner is all or self._owners.get(jid) == owner][-limit:]
        return [job.model_copy(deep=True) for job in reversed(jobs)]

    def report(self, job_id: str) -> IngestReport | None:
        """What a finished job did, as the library reports it."""
        return self._reports.get(job_id)

    def running(self) -> int:
        with self._lock:
            return sum(1 for job in self._jobs.values() if job.state in ("queued", "running"))

    def close(self, timeout: float = 30.0) -> None:
        self._queue.put(None)
        self._thread.join(timeout)

    def _forget_old(self) -> None:
        finished = [jid for jid, job in self._jobs.items() if job.state in ("done", "failed")]
        for jid in finished[: max(0, len(finished) - KEEP_FINISHED)]:
            self._jobs.pop(jid, None)
            self._done.pop(jid, None)
            self._reports.pop(jid, None)
            self._owners.pop(jid, None)

    def _work(self) -> None:
        while True:
            work = self._queue.get()
            if work is None:
                return
            job = work.job
            job.state, job.started_at = "running", time.time()
            report: IngestReport | None = None
            try:
                report = run_recorded(job, lambda: run_ingest(self.service, work, _JobProgress(job)), self._reports)
            finally:
                job.finished_at = time.time()
                job.current = None
                event = self._done.get(job.id)
                if event is not None:
                    event.set()
                if self.on_finish is not None:
                    self.on_finish(job, report)


def run_ingest(service: IndexService, work: _Work, progress: IngestProgress) -> IngestReport:
    """Remove the sources ``work.remove``, then ingest ``work.paths``, holding the service's writer."""
    with service.writing() as index:
        report = IngestReport()
        for path in work.remove:
            try:
                report.removed.extend(index.remove(path))
            except SourceNotFoundError:
                pass
        if work.paths:
            done = index.ingest(work.paths, glob=work.glob, progress=progress, policy=work.policy,
                                metadata=work.metadata)
            done.removed[:0] = report.removed
            report = done
    return report



def run_recorded(job: IngestJobModel, run: Callable[[], IngestReport], reports: dict[str, IngestReport]
                 ) -> IngestReport | None:
    """``run()`` the job and record its outcome in ``job`` (done with its report, or failed with
    the error); the worker keeps going either way."""
    try:
        report = run()
    except Exception as exc:
        if not isinstance(exc, RagloomError):
            log.exception("ingest job %s failed", job.id)
        job.error = error_body(exc)
        job.state = "failed"
        return None
    job.report = report_model(report)
    reports[job.id] = report
    job.state = "done"
    return report
