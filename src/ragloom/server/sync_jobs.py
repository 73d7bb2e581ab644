"""Remote sources in a server: the job kind ``sync`` and the scheduler that queues it.

``POST /v1/ingest`` with remote URIs, ``POST /v1/remote-sources/{name}/sync`` and the scheduler all
queue a ``sync`` job (``server/worker.py``): whichever replica's worker claims it runs the sync, its
lease renewed by the worker; a replica that dies mid-sync loses the job's lease and the source's
(``SyncState.begin_sync``), and another takes both over and continues from the committed cursors.

The scheduler is a thread per served index that asks the store, every few seconds, whether each
configured source is due (``SyncState.claim_schedule``: atomic, on the database's clock where
replicas share one), so each due sync is queued once whichever replicas run the scheduler.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ..config import SourcesConfig
from ..sources import spec_for
from ..types import FileFailure, IngestReport
from .jobs import IngestJobs, _JobProgress
from .worker import JobContext, register_kind

log = logging.getLogger("ragloom.server")

SYNC = "sync"
#: The scheduler looks at least this often (seconds) whether a source is due.
TICK_SECONDS = 5.0


def run_sync_job(context: JobContext) -> IngestReport:
    """The ``sync`` kind: sync ``work.sources`` (names or URIs) in turn, holding the service's writer.
    A source whose sync another holder's lease still covers (its replica just died) is waited for."""
    lease = float(context.service.config.server.job_lease)
    reports = []
    with context.service.writing() as index:
        for name in context.work["sources"]:
            context.check()
            reports.append(index.sync(name, progress=_JobProgress(context), check=context.check,
                                      lease=lease, wait=2 * lease))
    return reports[0] if len(reports) == 1 else merged(reports)


def merged(reports: list[Any]) -> IngestReport:
    total = IngestReport()
    for report in reports:
        for name in ("added", "updated", "unchanged", "removed", "failed", "skipped", "warnings"):
            getattr(total, name).extend(getattr(report, name))
        if report.error:
            total.failed.append(FileFailure(report.uri, report.error))
        total.skip_reasons.update(report.skip_reasons)
        for name in ("chunks_written", "chunks_embedded", "tokens_embedded", "seconds", "embed_seconds", "ocr_pages"):
            setattr(total, name, getattr(total, name) + getattr(report, name))
    return total


register_kind(SYNC, run_sync_job)


def queue_sync(jobs: IngestJobs, sources: list[str], sources_config: SourcesConfig, *, origin: str,
               owner: str | None = None) -> Any:
    """Queue one job syncing ``sources`` (checked here: a bad URI is refused at the door)."""
    uris = [spec_for(name, sources_config).uri for name in sources]
    return jobs.enqueue(SYNC, {"sources": list(sources)}, origin=origin, paths=uris, owner=owner)


class SyncScheduler:
    """Queues a sync of each configured remote source when it is due (its ``interval``, else
    ``sources.interval``); every replica runs one, the store lets one of them queue each sync."""

    def __init__(self, jobs: IngestJobs, sources: SourcesConfig) -> None:
        self.jobs, self.sources = jobs, sources
        self.state = jobs.service.writer.store.sync_state()
        self._stop = threading.Event()
        intervals = [s.interval or sources.interval for s in sources.remote.values()]
        self.tick = min([TICK_SECONDS, *(i / 2 for i in intervals)])
        self._thread = threading.Thread(target=self._loop, name="ragloom-sync-schedule", daemon=True)
        if self.state is not None and sources.remote:
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            for name, settings in self.sources.remote.items():
                try:
                    if self.state.claim_schedule(name, settings.uri, settings.interval or self.sources.interval):
                        queue_sync(self.jobs, [name], self.sources, origin="schedule")
                except Exception:  # the database away for a moment: the next tick asks again
                    log.warning("cannot schedule the sync of %s", name, exc_info=True)
            self._stop.wait(self.tick)

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)
