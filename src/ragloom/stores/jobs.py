"""The job queue role: background work (an upload's ingest, a watched folder's batch, later a remote
source's sync) queued, claimed under a lease, kept alive by heartbeats, finished or cancelled.

``JobQueue`` is what a server's worker loop (``server/worker.py``) asks. Two homes implement it:
``MemoryJobQueue`` here (one process; what a server over an embedded index uses) and
``stores/postgres/jobs.py`` (a table every replica over one database shares, claimed with
``FOR UPDATE SKIP LOCKED``). The model is procrastinate's: a job is a row with a kind, a state and
a lease; a worker claims the oldest job of a kind it can run, renews the lease while it works,
and finishes the job only while it still holds it.

A job carries three things: ``job``, its public record (what ``GET /v1/ingest/{id}`` shows: the
queue keeps its ``state`` in step and stores the rest as the worker saves it); ``work``, what to
do (the kind's own parameters); and ``files``, bytes that travel with it (an upload's files, so
any replica can run it). A job whose lease ran out (its worker died) is claimed again; each claim
counts an attempt, and the worker fails a job claimed more than ``MAX_ATTEMPTS`` times.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

#: Claims of one job (its workers stopped mid-job) before it is failed instead of run again.
MAX_ATTEMPTS = 3
#: The states of a job; a finished job (done or failed) is never claimed again.
QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
FINISHED = (DONE, FAILED)


@dataclass(frozen=True)
class Claim:
    """A job a worker now holds under a lease."""

    id: str
    kind: str
    job: dict[str, Any]
    work: dict[str, Any]
    files: dict[str, bytes] = field(default_factory=dict)
    #: How many times the job has been claimed, this claim included.
    attempts: int = 1


class JobQueue(ABC):
    """Where the jobs of one index wait, run and are remembered."""

    #: Whether several processes claim from this queue (then uploads travel with their job).
    shared: bool = False

    @abstractmethod
    def enqueue(self, kind: str, job: Mapping[str, Any], work: Mapping[str, Any], owner: str | None = None,
                files: Mapping[str, bytes] | None = None) -> None:
        """Queue a job (``job["id"]`` names it) of ``kind``; ``owner``: the key that asked for it."""

    @abstractmethod
    def claim(self, worker: str, lease: float, kinds: Collection[str]) -> Claim | None:
        """The oldest job of one of ``kinds`` that is queued, or running under a lease that ran out,
        now held by ``worker`` for ``lease`` seconds; None when there is none."""

    @abstractmethod
    def heartbeat(self, job_id: str, worker: str, lease: float, job: Mapping[str, Any]) -> bool:
        """Save a running job's record and extend its lease; False when ``worker`` no longer holds
        it (another took it over, or it was cancelled): the worker must stop its work."""

    @abstractmethod
    def finish(self, job_id: str, worker: str, job: Mapping[str, Any]) -> bool:
        """Record the end of a job ``worker`` holds (``job["state"]`` done or failed) and drop its
        files; False, and nothing changed, when it no longer holds it."""

    @abstractmethod
    def cancel(self, job_id: str, error: Mapping[str, Any]) -> bool:
        """Fail a queued or running job with ``error`` (a running one's worker learns it at its next
        heartbeat and stops); False when the job is unknown or already finished."""

    @abstractmethod
    def get(self, job_id: str) -> tuple[dict[str, Any], str | None] | None:
        """A job's record and owner, or None."""

    @abstractmethod
    def recent(self, limit: int, owner: object = all) -> list[dict[str, Any]]:
        """The latest jobs' records, newest first; with an ``owner``, only that key's."""

    @abstractmethod
    def pending(self) -> int:
        """Jobs queued or running."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""


@dataclass
class _Row:
    kind: str
    owner: str | None
    job: dict[str, Any]
    work: dict[str, Any]
    files: dict[str, bytes]
    attempts: int = 0
    worker: str | None = None
    lease_until: float = 0.0

    @property
    def state(self) -> str:
        return str(self.job["state"])


class MemoryJobQueue(JobQueue):
    """The jobs of one process, in memory; the ``keep`` latest finished ones are remembered."""

    def __init__(self, keep: int = 200) -> None:
        self.keep = keep
        self._rows: OrderedDict[str, _Row] = OrderedDict()
        self._lock = threading.Lock()

    def enqueue(self, kind: str, job: Mapping[str, Any], work: Mapping[str, Any], owner: str | None = None,
                files: Mapping[str, bytes] | None = None) -> None:
        with self._lock:
            self._rows[str(job["id"])] = _Row(kind, owner, {**job, "state": QUEUED}, dict(work), dict(files or {}))
            self._forget_old()

    def claim(self, worker: str, lease: float, kinds: Collection[str]) -> Claim | None:
        now = time.monotonic()
        with self._lock:
            for job_id, row in self._rows.items():
                if row.kind in kinds and (row.state == QUEUED or (row.state == RUNNING and row.lease_until < now)):
                    row.attempts += 1
                    row.worker, row.lease_until = worker, now + lease
                    row.job = {**row.job, "state": RUNNING}
                    return Claim(job_id, row.kind, dict(row.job), dict(row.work), dict(row.files), row.attempts)
        return None

    def heartbeat(self, job_id: str, worker: str, lease: float, job: Mapping[str, Any]) -> bool:
        with self._lock:
            row = self._held(job_id, worker)
            if row is None:
                return False
            row.job, row.lease_until = {**job, "state": RUNNING}, time.monotonic() + lease
            return True

    def finish(self, job_id: str, worker: str, job: Mapping[str, Any]) -> bool:
        with self._lock:
            row = self._held(job_id, worker)
            if row is None:
                return False
            row.job, row.files, row.worker = dict(job), {}, None
            return True

    def cancel(self, job_id: str, error: Mapping[str, Any]) -> bool:
        with self._lock:
            row = self._rows.get(job_id)
            if row is None or row.state in FINISHED:
                return False
            row.job, row.files, row.worker = {**row.job, "state": FAILED, "error": dict(error)}, {}, None
            return True

    def get(self, job_id: str) -> tuple[dict[str, Any], str | None] | None:
        with self._lock:
            row = self._rows.get(job_id)
            return None if row is None else (dict(row.job), row.owner)

    def recent(self, limit: int, owner: object = all) -> list[dict[str, Any]]:
        with self._lock:
            rows = [row for row in self._rows.values() if owner is all or row.owner == owner][-limit:]
            return [dict(row.job) for row in reversed(rows)]

    def pending(self) -> int:
        with self._lock:
            return sum(1 for row in self._rows.values() if row.state not in FINISHED)

    def _held(self, job_id: str, worker: str) -> _Row | None:
        row = self._rows.get(job_id)
        return row if row is not None and row.state == RUNNING and row.worker == worker else None

    def _forget_old(self) -> None:
        finished = [job_id for job_id, row in self._rows.items() if row.state in FINISHED]
        for job_id in finished[: max(0, len(finished) - self.keep)]:
            del self._rows[job_id]
