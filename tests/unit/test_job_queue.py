"""The job queue in memory (``stores/jobs.py``) against the queue conformance suite, and the one
worker loop (``server/worker.py``) over it: a kind is one registration, a lost lease stops the work."""

from __future__ import annotations

import threading
import time

import pytest

from ragloom.errors import UsageError
from ragloom.stores.jobs import MemoryJobQueue
from ragloom.testing.jobs import KIND, JobQueueConformance, new_job

pytest.importorskip("fastapi", reason="the server extra is not installed: pip install 'ragloom[server]'")

from ragloom.server.schemas import IngestJobModel  # noqa: E402
from ragloom.server.worker import JobCancelled, JobContext, JobWorker  # noqa: E402
from ragloom.types import IngestReport  # noqa: E402


class TestMemoryJobQueue(JobQueueConformance):
    @pytest.fixture
    def queue(self):
        yield MemoryJobQueue()


def test_the_memory_queue_forgets_the_oldest_finished_jobs():
    queue = MemoryJobQueue(keep=2)
    ids = []
    for _ in range(4):
        job = new_job()
        ids.append(job["id"])
        queue.enqueue(KIND, job, {})
        claim = queue.claim("w", 30, [KIND])
        assert claim is not None and queue.finish(claim.id, "w", {**job, "state": "done"})
    queue.enqueue(KIND, new_job(), {})
    assert [queue.get(i) is not None for i in ids] == [False, False, True, True]


def _wait(check, timeout: float = 30.0):  # noqa: ANN001, ANN202
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, "not within the time guard"
        time.sleep(0.02)
    return value


def test_a_kind_is_one_registration_and_the_worker_runs_only_the_kinds_it_knows():
    queue, finished = MemoryJobQueue(), []

    def greet(context: JobContext) -> IngestReport:
        context.job.files_done = 1
        return IngestReport(added=[f"hello {context.work['name']}"])

    worker = JobWorker(queue, None, lease=30, kinds={"greet": greet},  # type: ignore[arg-type]
                       on_finish=lambda job, report: finished.append((job.state, report)))
    try:
        unknown, known = new_job(), new_job()
        queue.enqueue("sync", unknown, {})
        queue.enqueue("greet", known, {"name": "ragloom"})
        worker.wake()
        _wait(lambda: finished)
        record = IngestJobModel.model_validate(queue.get(known["id"])[0])
        assert (record.state, record.files_done, record.report.added) == ("done", 1, ["hello ragloom"])
        assert finished == [("done", IngestReport(added=["hello ragloom"]))]
        assert queue.get(unknown["id"])[0]["state"] == "queued"  # left for a worker that runs "sync"
    finally:
        worker.close()


def test_a_failing_job_is_failed_with_its_error_and_the_worker_goes_on():
    queue, finished = MemoryJobQueue(), []

    def run(context: JobContext) -> IngestReport:
        if context.work["fail"]:
            raise UsageError("the handler broke")
        return IngestReport()

    worker = JobWorker(queue, None, lease=30, kinds={"k": run},  # type: ignore[arg-type]
                       on_finish=lambda job, report: finished.append(job.state))
    try:
        bad, good = new_job(), new_job()
        queue.enqueue("k", bad, {"fail": True})
        queue.enqueue("k", good, {"fail": False})
        worker.wake()
        _wait(lambda: len(finished) == 2)
        record = queue.get(bad["id"])[0]
        assert record["state"] == "failed" and "the handler broke" in record["error"]["message"]
        assert queue.get(good["id"])[0]["state"] == "done"
    finally:
        worker.close()


def test_a_lost_lease_stops_the_work_and_the_worker_leaves_the_job_to_its_holder():
    """The job is cancelled (as when another replica takes it over, the queue refuses the holder's
    heartbeat): the handler's next check raises, and the worker does not record an outcome."""
    queue, steps, finished = MemoryJobQueue(), [], []
    started = threading.Event()

    def endless(context: JobContext) -> IngestReport:
        while True:
            context.check()
            steps.append(1)
            started.set()
            time.sleep(0.01)

    worker = JobWorker(queue, None, lease=0.3, kinds={"k": endless},  # type: ignore[arg-type]
                       on_finish=lambda job, report: finished.append(job.state))
    try:
        job = new_job()
        queue.enqueue("k", job, {})
        worker.wake()
        assert started.wait(30)
        assert queue.cancel(job["id"], {"code": "cancelled", "message": "stop"})
        _wait(lambda: worker.live(job["id"]) is None)  # the work stopped
        done = len(steps)
        time.sleep(0.1)
        assert len(steps) == done and finished == []
        assert queue.get(job["id"])[0]["state"] == "failed"
    finally:
        worker.close()


def test_a_job_claimed_more_than_the_retry_limit_is_failed_without_running():
    queue, ran = MemoryJobQueue(), []
    job = new_job()
    queue.enqueue("k", job, {})
    for holder in ("dead-1", "dead-2", "dead-3"):  # three replicas died holding it
        assert queue.claim(holder, 0.01, ["k"]) is not None
        time.sleep(0.03)
    worker = JobWorker(queue, None, lease=30, kinds={"k": lambda context: ran.append(1) or IngestReport()})  # type: ignore[arg-type]
    try:
        worker.wake()
        _wait(lambda: queue.get(job["id"])[0]["state"] == "failed")
        assert ran == [] and "stopped 3 times" in queue.get(job["id"])[0]["error"]["message"]
    finally:
        worker.close()


def test_jobcancelled_is_a_ragloom_error():
    from ragloom.errors import RagloomError

    assert issubclass(JobCancelled, RagloomError)


def test_a_new_kind_goes_through_the_same_door_as_ingests(tmp_path):
    """What issue 43's remote sync will do: register a kind, queue it on a served index's jobs,
    read and wait for it as for an ingest."""
    from ragloom.config import Config
    from ragloom.server.jobs import IngestJobs
    from ragloom.server.service import IndexService
    from ragloom.server.worker import KINDS, register_kind

    def sync(context: JobContext) -> IngestReport:
        context.job.files_total = 2
        context.check()
        context.job.files_done = 2
        return IngestReport(added=[f"{context.work['url']}/a", f"{context.work['url']}/b"])

    register_kind("test-sync", sync)
    service = IndexService(Config.from_dict({"index": str(tmp_path / "index")}), readers=1)
    jobs = IngestJobs(service)
    try:
        job = jobs.enqueue("test-sync", {"url": "s3://bucket"}, origin="sync", paths=["s3://bucket"], owner="team-a")
        done = jobs.wait(job.id, timeout=60)
        assert done is not None and (done.state, done.files_done, done.origin) == ("done", 2, "sync")
        assert done.report.added == ["s3://bucket/a", "s3://bucket/b"]
        assert jobs.report(job.id).added == done.report.added
        assert [j.id for j in jobs.recent(5, owner="team-a")] == [job.id] and jobs.get(job.id, owner="b") is None
    finally:
        jobs.close()
        service.close()
        KINDS.pop("test-sync", None)
