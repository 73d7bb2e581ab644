"""A conformance suite every ``JobQueue`` (``stores/jobs.py``) passes: subclass it and give a
``queue`` fixture (a new, empty queue) and ``LEASE``, a lease short enough to run out in a test.

::

    class TestMyQueue(JobQueueConformance):
        @pytest.fixture
        def queue(self):
            yield MyQueue(...)

Needs pytest.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from ..stores.jobs import MAX_ATTEMPTS, JobQueue

KIND = "ingest"


def new_job(**extra: Any) -> dict[str, Any]:
    return {"id": uuid.uuid4().hex[:12], "state": "queued", "origin": "api", "paths": [], "remove": [],
            "created_at": time.time(), **extra}


class JobQueueConformance:
    #: Seconds of a lease that must run out within the test (the queue's clock may be a server's).
    LEASE = 0.3

    def expire(self) -> None:
        time.sleep(self.LEASE * 2)

    def test_a_job_is_queued_with_its_owner_and_listed_newest_first(self, queue: JobQueue) -> None:
        first, second = new_job(), new_job()
        queue.enqueue(KIND, first, {"paths": ["/a"]}, owner="team-a")
        queue.enqueue(KIND, second, {"paths": ["/b"]})
        record, owner = queue.get(first["id"])  # type: ignore[misc]
        assert record["state"] == "queued" and owner == "team-a"
        assert queue.get("nope") is None
        assert [r["id"] for r in queue.recent(10)] == [second["id"], first["id"]]
        assert [r["id"] for r in queue.recent(10, owner="team-a")] == [first["id"]]
        assert [r["id"] for r in queue.recent(1)] == [second["id"]]
        assert queue.pending() == 2

    def test_the_oldest_job_of_a_known_kind_is_claimed_once_with_its_files(self, queue: JobQueue) -> None:
        other, first, second = new_job(), new_job(), new_job()
        queue.enqueue("sync", other, {"url": "s3://x"})
        queue.enqueue(KIND, first, {"paths": ["/a"]}, files={"/a": b"\x00bytes"})
        queue.enqueue(KIND, second, {"paths": ["/b"]})
        a = queue.claim("w1", 30, [KIND])
        b = queue.claim("w2", 30, [KIND])
        assert a is not None and b is not None and queue.claim("w3", 30, [KIND]) is None
        assert (a.id, a.kind, a.work["paths"], a.files, a.attempts) == (first["id"], KIND, ["/a"], {"/a": b"\x00bytes"}, 1)
        assert b.id == second["id"] and queue.get(a.id)[0]["state"] == "running"  # type: ignore[index]
        claimed = queue.claim("w3", 30, ["sync"])
        assert claimed is not None and (claimed.id, claimed.kind, claimed.work) == (other["id"], "sync", {"url": "s3://x"})

    def test_the_holder_saves_progress_and_finishes_another_worker_cannot(self, queue: JobQueue) -> None:
        job = new_job()
        queue.enqueue(KIND, job, {})
        claim = queue.claim("w1", 30, [KIND])
        assert claim is not None
        assert queue.heartbeat(job["id"], "w1", 30, {**job, "files_done": 3})
        assert queue.get(job["id"])[0]["files_done"] == 3  # type: ignore[index]
        assert not queue.heartbeat(job["id"], "w2", 30, {**job, "files_done": 9})
        assert not queue.finish(job["id"], "w2", {**job, "state": "done"})
        assert queue.get(job["id"])[0]["files_done"] == 3  # type: ignore[index]
        assert queue.finish(job["id"], "w1", {**job, "state": "done", "files_done": 4})
        record = queue.get(job["id"])[0]  # type: ignore[index]
        assert (record["state"], record["files_done"]) == ("done", 4) and queue.pending() == 0
        assert not queue.finish(job["id"], "w1", {**job, "state": "done"})  # finished once
        assert not queue.heartbeat(job["id"], "w1", 30, job)
        self.expire()
        assert queue.claim("w1", self.LEASE, [KIND]) is None  # a finished job is never run again

    def test_a_lease_that_ran_out_is_claimed_again_and_the_old_holder_changes_nothing(self, queue: JobQueue) -> None:
        job = new_job()
        queue.enqueue(KIND, job, {"paths": ["/up.md"]}, files={"/up.md": b"uploaded"})
        assert queue.claim("w1", self.LEASE, [KIND]) is not None
        assert queue.claim("w2", self.LEASE, [KIND]) is None  # held
        self.expire()
        again = queue.claim("w2", 30, [KIND])
        assert again is not None and again.attempts == 2 and again.files == {"/up.md": b"uploaded"}
        # The first holder wakes up: its heartbeat and its finish are refused, and change nothing,
        # not even the uploaded bytes the new holder (or a third attempt) still needs.
        assert not queue.heartbeat(job["id"], "w1", 30, {**job, "files_done": 7})
        assert not queue.finish(job["id"], "w1", {**job, "state": "failed"})
        record = queue.get(job["id"])[0]  # type: ignore[index]
        assert record["state"] == "running" and record.get("files_done", 0) == 0
        assert queue.heartbeat(job["id"], "w2", self.LEASE, job)
        self.expire()
        third = queue.claim("w3", 30, [KIND])
        assert third is not None and third.attempts == 3 and third.files == {"/up.md": b"uploaded"}
        assert MAX_ATTEMPTS == 3  # the worker fails a job claimed more often than this

    def test_cancel_fails_a_queued_or_running_job_and_its_holder_learns_it(self, queue: JobQueue) -> None:
        queued, running = new_job(), new_job()
        queue.enqueue(KIND, running, {})
        queue.enqueue(KIND, queued, {})
        assert queue.claim("w1", 30, [KIND]) is not None  # the older one: running
        error = {"code": "cancelled", "message": "cancelled by the test"}
        assert queue.cancel(queued["id"], error) and queue.cancel(running["id"], error)
        for job in (queued, running):
            record = queue.get(job["id"])[0]  # type: ignore[index]
            assert record["state"] == "failed" and record["error"] == error
        assert not queue.heartbeat(running["id"], "w1", 30, running)
        assert not queue.finish(running["id"], "w1", {**running, "state": "done"})
        assert queue.get(running["id"])[0]["state"] == "failed"  # type: ignore[index]
        assert queue.claim("w2", 30, [KIND]) is None and queue.pending() == 0
        assert not queue.cancel(running["id"], error) and not queue.cancel("nope", error)

