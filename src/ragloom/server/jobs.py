"""Ingest jobs: what ``POST /v1/ingest`` and watched folders queue, and what GET /v1/ingest reads.

``IngestJobs`` is the door the routes and the watcher use: ``submit`` returns at once, ``wait``
blocks, ``get`` and ``recent`` read the records. Underneath, one ``JobQueue`` (``stores/jobs.py``:
in this process's memory, or the database's job table that every replica over it shares) and one
``JobWorker`` (``server/worker.py``) that runs them. The kind ``ingest`` ("remove these sources,
then ingest these paths") serves uploads, paths sent to the API and watched folders' batches
alike; ``origin`` says which.

Over a shared queue, ``POST /v1/ingest`` on one replica queues the job with the bytes of its
uploaded files; whichever replica's worker claims it first runs it, writing the files where the
uploading replica did (the index's upload folder has the same path everywhere), and saves its
progress with each renewal of its lease. A job whose replica died (no renewal for
``server.job_lease`` seconds) is claimed again by another and run from the start.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import SourceNotFoundError
from ..ingest.runner import IngestProgress
from ..paths import PathPolicy
from ..stores.jobs import FINISHED, JobQueue, MemoryJobQueue
from ..types import IngestReport
from .schemas import IngestJobModel
from .service import IndexService
from .worker import POLL_SECONDS, JobContext, JobWorker, register_kind

#: Finished jobs remembered (in memory: their records; everywhere: their reports, for the watcher).
KEEP_FINISHED = 200
#: The kind of every ingest job.
INGEST = "ingest"


class IngestJobs:
    """The ingest jobs of one served index; ``submit`` returns at once, ``wait`` blocks."""

    def __init__(self, service: IndexService, queue: JobQueue | None = None,
                 on_finish: Callable[[IngestJobModel, IngestReport | None], None] | None = None) -> None:
        self.service = service
        self.queue = queue if queue is not None else MemoryJobQueue(keep=KEEP_FINISHED)
        self.on_finish = on_finish
        self._reports: OrderedDict[str, IngestReport] = OrderedDict()
        self._lock = threading.Lock()
        self.worker = JobWorker(self.queue, service, lease=float(service.config.server.job_lease),
                                on_finish=self._finished)

    def submit(
        self, paths: Sequence[str], *, origin: str, glob: Sequence[str] | None = None, remove: Sequence[str] = (),
        policy: PathPolicy | None = None, owner: str | None = None, metadata: dict[str, Any] | None = None,
    ) -> IngestJobModel:
        """Queue an ingest of ``paths`` (after removing the sources ``remove``); with a ``policy``,
        each file is checked against its roots again when the job opens it. ``owner``: the key's
        name (a tenant sees only its own jobs); ``metadata``: stamped on every chunk written."""
        # Uploaded files travel with a job that another replica may run; paths are read where it runs.
        files = {path: Path(path).read_bytes() for path in paths} if origin == "upload" and self.queue.shared else {}
        work = {"paths": list(paths), "remove": list(remove), "glob": list(glob) if glob else None,
                "metadata": metadata,
                "policy": None if policy is None else {"roots": [str(r) for r in policy.roots], "what": policy.what}}
        return self.enqueue(INGEST, work, origin=origin, paths=paths, remove=remove, owner=owner, files=files)

    def enqueue(self, kind: str, work: dict[str, Any], *, origin: str, paths: Sequence[str] = (),
                remove: Sequence[str] = (), owner: str | None = None, files: dict[str, bytes] | None = None,
                ) -> IngestJobModel:
        """Queue a job of any registered ``kind`` (``server/worker.py`` ``register_kind``): ``work``
        is what its handler reads; ``paths`` and ``remove`` what its record shows."""
        job = IngestJobModel(id=uuid.uuid4().hex[:12], state="queued", origin=origin,
                             paths=list(paths), remove=list(remove), created_at=time.time())
        self.queue.enqueue(kind, job.model_dump(mode="json"), work, owner, files)
        self.worker.wake()
        return job

    def get(self, job_id: str, owner: object = all) -> IngestJobModel | None:
        """A job by id; with an ``owner`` (a key's name), only that key's job."""
        found = self.queue.get(job_id)
        if found is None or (owner is not all and found[1] != owner):
            return None
        return self.worker.live(job_id) or IngestJobModel.model_validate(found[0])

    def wait(self, job_id: str, timeout: float | None = None) -> IngestJobModel | None:
        """The job once it has finished (here or on another replica), or as it is after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self.get(job_id)
            left = None if deadline is None else deadline - time.monotonic()
            if job is None or job.state in FINISHED or (left is not None and left <= 0):
                return job
            self.worker.wait_for_an_end(POLL_SECONDS if left is None else min(POLL_SECONDS, left))

    def recent(self, limit: int, owner: object = all) -> list[IngestJobModel]:
        """The latest jobs, newest first; with an ``owner`` (a key's name), only that key's."""
        return [self.worker.live(raw["id"]) or IngestJobModel.model_validate(raw)
                for raw in self.queue.recent(limit, owner)]

    def report(self, job_id: str) -> IngestReport | None:
        """What a job run by this process did, as the library reports it."""
        with self._lock:
            return self._reports.get(job_id)

    def running(self) -> int:
        """Jobs queued or running (on every replica, over a shared queue)."""
        return self.queue.pending()

    def close(self, timeout: float = 30.0) -> None:
        self.worker.close(timeout)
        self.queue.close()

    def _finished(self, job: IngestJobModel, report: IngestReport | None) -> None:
        if report is not None:
            with self._lock:
                self._reports[job.id] = report
                while len(self._reports) > KEEP_FINISHED:
                    self._reports.popitem(last=False)
        if self.on_finish is not None:
            self.on_finish(job, report)


class _JobProgress(IngestProgress):
    """An ingest's progress written into its job's record; stops it between two sources once the
    job is no longer this worker's."""

    def __init__(self, context: JobContext) -> None:
        self.context, self.job = context, context.job

    def files(self, total: int) -> None:
        self.job.files_total = total

    def file_done(self, path: str, status: str) -> None:
        self.job.files_done += 1
        self.job.current = path

    def embedding(self, chunks: int) -> None:
        self.job.chunks_to_embed += chunks

    def embedded(self, chunks: int) -> None:
        self.job.chunks_embedded += chunks

    def check(self) -> None:
        self.context.check()


def run_ingest_job(context: JobContext) -> IngestReport:
    """The ``ingest`` kind: remove the sources ``work.remove``, then ingest ``work.paths``,
    holding the service's writer."""
    work = context.work
    write_uploads(context.files)
    policy = work.get("policy")
    progress = _JobProgress(context)
    with context.service.writing() as index:
        report = IngestReport()
        for path in work.get("remove") or ():
            context.check()
            try:
                report.removed.extend(index.remove(path))
            except SourceNotFoundError:
                pass
        if work.get("paths"):
            done = index.ingest(list(work["paths"]), glob=work.get("glob"), progress=progress,
                                policy=PathPolicy(policy["roots"], what=policy["what"]) if policy else None,
                                metadata=work.get("metadata"))
            done.removed[:0] = report.removed
            report = done
    return report


register_kind(INGEST, run_ingest_job)


def write_uploads(files: dict[str, bytes]) -> None:
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
    """The ingest jobs of a service: in the store's queue when it keeps one (every replica over it
    sees them), else in this process's memory."""
    return IngestJobs(service, service.writer.store.ingest_jobs(), on_finish=on_finish)
