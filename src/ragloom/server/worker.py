"""The one worker loop of a server's index: claims jobs from its ``JobQueue`` (``stores/jobs.py``),
runs each with the handler of its kind, keeps its lease alive, and finishes it.

A job kind is one registration: ``register_kind("ingest", run_ingest_job)`` (``server/jobs.py``);
the handler gets a ``JobContext`` (the index's service, the job's live record to write progress
into, its work and files) and returns the ``IngestReport`` of what it did. A worker claims only the
kinds it knows, so a replica of an older version leaves a newer kind to the replicas that run it.

While a job runs, a heartbeat saves its record and renews its lease a few times a lease. A
heartbeat the queue refuses (another replica took the job over, or it was cancelled), or no
heartbeat accepted for a whole lease (the database away), cancels the work: the handler's next
``context.check()`` (an ingest calls it between two sources) raises ``JobCancelled``, and the
worker leaves the job to whoever holds it now.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import RagloomError
from ..stores.jobs import DONE, FAILED, MAX_ATTEMPTS, Claim, JobQueue
from ..types import IngestReport
from .errors import error_body
from .schemas import IngestJobModel, report_model
from .service import IndexService

log = logging.getLogger("ragloom.server")

#: How often an idle worker looks for a job queued by another replica, in seconds.
POLL_SECONDS = 0.5


class JobCancelled(RagloomError):
    """A running job's lease was lost (another worker holds it now) or the job was cancelled."""


@dataclass
class JobContext:
    """What a job's handler is given."""

    service: IndexService
    #: The job's record: the handler writes its progress here (heartbeats save it).
    job: IngestJobModel
    work: dict[str, Any]
    files: dict[str, bytes]
    cancelled: threading.Event = field(default_factory=threading.Event)
    why: str = ""

    def check(self) -> None:
        """Raise ``JobCancelled`` once the job is no longer this worker's: call it between two steps."""
        if self.cancelled.is_set():
            raise JobCancelled(f"ingest job {self.job.id} stopped: {self.why}")

    def cancel(self, why: str) -> None:
        self.why = why
        self.cancelled.set()


#: A kind's handler: runs the job and returns what it did.
JobHandler = Callable[[JobContext], IngestReport]
#: Every kind a worker can run, by name (``register_kind``).
KINDS: dict[str, JobHandler] = {}


def register_kind(name: str, handler: JobHandler) -> None:
    """Make ``name`` a kind of job the workers run with ``handler``."""
    KINDS[name] = handler


OnFinish = Callable[[IngestJobModel, IngestReport | None], None]


class JobWorker:
    """One thread that runs the jobs of ``queue`` for ``service``, one at a time."""

    def __init__(self, queue: JobQueue, service: IndexService, *, lease: float,
                 kinds: Mapping[str, JobHandler] | None = None, on_finish: OnFinish | None = None,
                 poll: float = POLL_SECONDS) -> None:
        self.queue, self.service, self.lease, self.poll = queue, service, lease, poll
        self.kinds = KINDS if kinds is None else kinds
        self.on_finish = on_finish
        self.id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        #: The jobs running here, their progress fresher than the queue's copy.
        self._live: dict[str, IngestJobModel] = {}
        self._ended = threading.Condition()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="ragloom-jobs", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """A job was queued here: look at once."""
        self._wake.set()

    def live(self, job_id: str) -> IngestJobModel | None:
        """A copy of the job's record if it runs here."""
        job = self._live.get(job_id)
        return job.model_copy(deep=True) if job is not None else None

    def wait_for_an_end(self, timeout: float) -> None:
        """Block until a job of this worker ends, or ``timeout`` seconds."""
        with self._ended:
            self._ended.wait(timeout)

    def close(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                claimed = self.queue.claim(self.id, self.lease, list(self.kinds))
            except Exception:  # the database is away for a moment: look again later
                log.warning("cannot look for jobs", exc_info=True)
                claimed = None
            if claimed is None:
                self._wake.wait(self.poll)
                self._wake.clear()
                continue
            try:
                self._run(claimed)
            except Exception:  # the queue failed while finishing: the lease runs out, another replica retries
                log.exception("job %s could not be finished", claimed.id)

    def _run(self, claim: Claim) -> None:
        job = IngestJobModel.model_validate(claim.job)
        context = JobContext(self.service, job, claim.work, claim.files)
        report: IngestReport | None = None
        self._live[job.id] = job
        try:
            with _Heartbeat(self, context):
                report = self._attempt(claim, context)
            job.finished_at, job.current = time.time(), None
            # A job no longer ours is left as it is: its new holder finishes it (or, its lease run
            # out, the next claim runs it again); a cancelled one stays failed.
            if context.cancelled.is_set() or not self.queue.finish(job.id, self.id, job.model_dump(mode="json")):
                log.warning("job %s: %s; its result here is dropped", job.id,
                            context.why or "another worker took it over before it ended")
                return
            if self.on_finish is not None:
                self.on_finish(job, report)
        finally:
            self._live.pop(job.id, None)
            with self._ended:
                self._ended.notify_all()

    def _attempt(self, claim: Claim, context: JobContext) -> IngestReport | None:
        """Run the job once, its outcome recorded in its record (done with its report, or failed)."""
        job = context.job
        handler = self.kinds[claim.kind]
        if claim.attempts > MAX_ATTEMPTS:
            job.state, job.error = FAILED, error_body(RagloomError(
                f"the replicas running this job stopped {MAX_ATTEMPTS} times; submit it again"))
            return None
        job.state, job.started_at = "running", time.time()
        try:
            report = handler(context)
        except JobCancelled:
            raise
        except Exception as exc:
            if not isinstance(exc, RagloomError):
                log.exception("job %s failed", job.id)
            job.state, job.error = FAILED, error_body(exc)
            return None
        job.report, job.state = report_model(report), DONE
        return report


class _Heartbeat:
    """Saves a running job's record and renews its lease a few times a lease; cancels the job's
    work when the lease is lost. A cancelled job's ``JobCancelled`` ends here: the job is not ours."""

    def __init__(self, worker: JobWorker, context: JobContext) -> None:
        self.worker, self.context = worker, context
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="ragloom-job-heartbeat", daemon=True)

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> bool:
        self._done.set()
        self._thread.join()
        if isinstance(exc, JobCancelled):
            # Said once the work has ended (a write in flight when the lease was lost included), so
            # nothing of this job is written after this line.
            log.warning("job %s: %s; its work has stopped", self.context.job.id, self.context.why)
            return True
        return False

    def _beat(self) -> None:
        worker, context = self.worker, self.context
        renewed = time.monotonic()
        while not self._done.wait(worker.lease / 3):
            try:
                held = worker.queue.heartbeat(context.job.id, worker.id, worker.lease,
                                              context.job.model_dump(mode="json"))
            except Exception:
                log.warning("cannot renew the lease of job %s", context.job.id, exc_info=True)
                if time.monotonic() - renewed < worker.lease:
                    continue
                held = False
                why = f"its lease could not be renewed for {worker.lease:g} s (server.job_lease)"
            else:
                why = "another worker holds it now, or it was cancelled"
            if not held:
                log.warning("job %s: stopping its work (%s)", context.job.id, why)
                context.cancel(why)
                return
            renewed = time.monotonic()
