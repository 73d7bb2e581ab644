"""One sync of one remote source, whatever its kind.

1. Take the source in the store (``SyncState.begin_sync``): one holder at a time, on every replica;
   the lease is renewed by a thread while the sync runs, and a dead holder's runs out.
2. The connector walks the remote (``sources/base.py``) and streams changed items into a stage.
3. Every ``sources.batch_items`` items, the batch is ingested through the ingest's own path
   (``IngestRunner.ingest_staged``: the same loaders, sandbox, limits and transactions as files),
   then the items' cursors are committed. An interrupted sync keeps every batch it finished; an item
   ingested but not yet in the cursors is fetched again and found unchanged by its content hash.
4. Only when the remote was listed whole, and nothing failed to list, are the items it no longer
   has removed. A source that could not be reached is one line (``error``), and nothing is removed.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import RagloomError, RemoteSourceError, SourceBusyError
from ..ingest.staged import StagedBatch, StagedItem
from ..stores.sync_state import RemoteItemState, RemoteSourceState, SyncState
from ..types import FileFailure
from .base import Connector, Failed, Fetched, Gone, Skipped, Stage, Unchanged
from .report import SyncReport
from .secrets import Secrets
from .uri import RemoteSpec, mask_uri

if TYPE_CHECKING:
    from ..ingest.runner import IngestProgress, IngestRunner

log = logging.getLogger("ragloom.sources")

#: Seconds a holder keeps a source without renewing it (a dead process's sync is taken over after it).
DEFAULT_LEASE = 30.0


def connector_class(kind: str) -> type[Connector]:
    """The connector of a kind of source (imported when first used: each has its own dependencies)."""
    if kind == "s3":
        from .s3 import S3Connector

        return S3Connector
    if kind == "web":
        from .web import WebConnector

        return WebConnector
    if kind == "git":
        from .git import GitConnector

        return GitConnector
    if kind == "imap":
        from .imap import ImapConnector

        return ImapConnector
    raise RemoteSourceError(f"no connector for sources of kind {kind!r}")


def holder_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def sync_remote(
    runner: IngestRunner, spec: RemoteSpec, *, progress: IngestProgress | None = None, holder: str | None = None,
    lease: float = DEFAULT_LEASE, wait: float = 0.0, check: Callable[[], None] | None = None,
) -> SyncReport:
    """Sync ``spec`` into the runner's index; ``wait``: seconds to wait for another holder's sync
    (or its dead holder's lease) to end, else SourceBusyError at once."""
    state_store = runner.store.sync_state()
    if state_store is None:
        raise RemoteSourceError(f"the {runner.store.name or 'configured'} store cannot keep remote sources' cursors; "
                                "use the embedded, postgres, qdrant or chroma store")
    holder = holder or holder_id()
    state = _begin(state_store, spec, holder, lease, wait)
    with _LeaseKeeper(state_store, spec.name, holder, lease) as keeper:
        def checked() -> None:
            keeper.check()
            if check is not None:
                check()

        return _Sync(runner, state_store, spec, state, holder, progress, checked).run()


def _begin(state_store: SyncState, spec: RemoteSpec, holder: str, lease: float, wait: float) -> RemoteSourceState:
    deadline = time.monotonic() + wait
    while True:
        state = state_store.begin_sync(spec.name, spec.uri, holder, lease)
        if state is not None:
            return state
        if time.monotonic() >= deadline:
            raise SourceBusyError(f"another process or replica is syncing {spec.name!r} now; wait for it to finish "
                                  "(GET /v1/remote-sources or `ragloom sync --status` shows it)")
        time.sleep(min(1.0, max(0.05, deadline - time.monotonic())))


class _LeaseKeeper:
    """Renews the holder's lease on the source a few times a lease; ``check`` raises once it is lost."""

    def __init__(self, state_store: SyncState, name: str, holder: str, lease: float) -> None:
        self.state_store, self.name, self.holder, self.lease = state_store, name, holder, lease
        self.lost: str | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._renew, name="ragloom-sync-lease", daemon=True)

    def __enter__(self) -> _LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    def check(self) -> None:
        if self.lost:
            raise SourceBusyError(f"the sync of {self.name!r} stopped: {self.lost}")

    def _renew(self) -> None:
        renewed = time.monotonic()
        while not self._done.wait(self.lease / 3):
            try:
                if not self.state_store.renew_sync(self.name, self.holder, self.lease):
                    self.lost = "another process or replica took it over (its lease had run out)"
                    return
                renewed = time.monotonic()
            except Exception:  # the database away for a moment: try again until the lease is gone
                log.warning("cannot renew the lease of the sync of %s", self.name, exc_info=True)
                if time.monotonic() - renewed >= self.lease:
                    self.lost = f"its lease could not be renewed for {self.lease:g} s"
                    return


class _Sync:
    def __init__(self, runner: IngestRunner, state_store: SyncState, spec: RemoteSpec, state: RemoteSourceState,
                 holder: str, progress: IngestProgress | None, check: Callable[[], None]) -> None:
        self.runner, self.state_store, self.spec, self.state = runner, state_store, spec, state
        self.holder, self.progress, self.check = holder, progress, check
        config = runner.parts.config
        self.settings = config.sources
        self.report = SyncReport(name=spec.name, uri=mask_uri(spec.uri))
        self.secrets = Secrets()
        max_item = min(self.settings.max_item_mb, config.ingest.max_file_mb) * 1_000_000
        self.stage = Stage(int(max_item), int(self.settings.max_sync_mb * 1_000_000))
        self.batch: list[Fetched] = []
        self.touched: list[RemoteItemState] = []
        self.seen: set[str] = set()
        self.gone: list[str] = []
        self.known: dict[str, RemoteItemState] = {}

    def run(self) -> SyncReport:
        started = time.perf_counter()
        report, connector = self.report, None
        try:
            try:
                connector = connector_class(self.spec.kind)(self.spec, self.settings, self.stage, self.secrets)
            except RagloomError as exc:  # a setting or a missing tool: the source fails, in one line
                report.error = self.secrets.mask(str(exc))
                self._finish(started, None)
                return report
            self.known = self.state_store.remote_items(self.spec.name)
            try:
                for entry in connector.scan(self.known, self.state.cursor):
                    self.check()
                    self._take(entry)
            except RemoteSourceError as exc:
                report.error = self.secrets.mask(str(exc))
            self._flush()
            if report.error is None:
                report.complete = connector.complete
                self._remove(self.gone + ([key for key in self.known if key not in self.seen] if connector.complete
                                          else []))
                if connector.cursor:
                    self.state.cursor = connector.cursor
            self._finish(started, connector)
        except BaseException as exc:
            report.error = report.error or self.secrets.mask(f"{type(exc).__name__}: {exc}" if not isinstance(
                exc, RemoteSourceError) else str(exc))
            self._finish(started, connector, interrupted=True)
            raise
        finally:
            if connector is not None:
                connector.close()
            self.stage.close()
        return report

    # -- entries ------------------------------------------------------------------------------
    def _take(self, entry: Any) -> None:
        report = self.report
        if isinstance(entry, Gone):
            self.gone.append(entry.key)
            return
        report.seen += 1
        self.seen.add(entry.key)
        known = self.known.get(entry.key)
        if isinstance(entry, Fetched):
            self.batch.append(entry)
            if len(self.batch) >= self.settings.batch_items:
                self._flush()
        elif isinstance(entry, Unchanged):
            report.unchanged.append(known.source if known and known.source else entry.key)
            if entry.data is not None and known is not None and entry.data != known.data:
                self.touched.append(RemoteItemState(known.key, known.source, known.version, entry.data))
        elif isinstance(entry, Failed):
            report.failed.append(FileFailure(entry.key, self.secrets.mask(entry.reason)))
        elif isinstance(entry, Skipped):
            self.seen.discard(entry.key)  # not to be indexed: an older version of it goes
            report.skip(entry.key, entry.reason)

    def _flush(self) -> None:
        """Ingest the fetched batch, then commit its items' cursors (and the unchanged ones' new data)."""
        batch, self.batch = self.batch, []
        states, self.touched = self.touched, []
        stale: list[str] = []
        if batch:
            self.check()
            items = [StagedItem(f.path, f.source, f.metadata) for f in batch]
            done = self.runner.ingest_staged(StagedBatch(mask_uri(self.spec.uri), items), self.progress)
            self._count(done)
            failed = {f.path: f.error for f in done.failed}
            for fetched in batch:
                known = self.known.get(fetched.key)
                if fetched.source in failed:  # fetched, but its content cannot be read: kept as it was
                    self.report.failed.append(FileFailure(fetched.source, failed[fetched.source]))
                    states.append(RemoteItemState(fetched.key, known.source if known else "", fetched.version,
                                                  {**fetched.data, "failed": failed[fetched.source]}))
                    continue
                if fetched.source in done.skip_reasons:
                    self.report.skip(fetched.source, done.skip_reasons[fetched.source])
                elif fetched.source in done.unchanged:
                    self.report.unchanged.append(fetched.source)
                elif known is not None and known.source:
                    self.report.updated.append(fetched.source)
                else:
                    self.report.added.append(fetched.source)
                if known is not None and known.source and known.source != fetched.source:
                    stale.append(known.source)  # a file of a commit is indexed under the commit that changed it
                states.append(RemoteItemState(fetched.key, fetched.source, fetched.version, fetched.data))
            self.stage.clear()
        if stale:
            self._delete(stale)
        self.state_store.put_remote_items(self.spec.name, states)
        for state in states:
            self.known[state.key] = state

    def _count(self, done: Any) -> None:
        report = self.report
        report.chunks_written += done.chunks_written
        report.chunks_embedded += done.chunks_embedded
        report.tokens_embedded += done.tokens_embedded
        report.embed_seconds += done.embed_seconds
        report.ocr_pages += done.ocr_pages
        report.warnings.extend(done.warnings)

    def _remove(self, keys: list[str]) -> None:
        keys = list(dict.fromkeys(k for k in keys if k in self.known))
        if not keys:
            return
        sources = [self.known[key].source for key in keys if self.known[key].source]
        self._delete(sources)
        self.report.removed.extend(sources)
        self.state_store.delete_remote_items(self.spec.name, keys)

    def _delete(self, sources: list[str]) -> None:
        """Remove these sources from the index, as ``ragloom remove`` would (one audited operation)."""
        runner, store = self.runner, self.runner.store
        with store.write_lock(runner.parts.path):
            with store.audited("remove", {"path": mask_uri(self.spec.uri), "sources": sources}) as summary:
                for source in sources:
                    store.delete_source(source)
                store.flush()
                summary["removed"] = len(sources)
            self.report.warnings.extend(runner.sync_structures())

    def _finish(self, started: float, connector: Connector | None, interrupted: bool = False) -> None:
        report, state = self.report, self.state
        report.seconds = time.perf_counter() - started
        report.requests, report.bytes_downloaded = self.stage.requests, self.stage.bytes_downloaded
        report.status = ("failed" if report.error and not interrupted else "interrupted" if interrupted
                         else "partial" if report.failed or not report.complete else "ok")
        state.status, state.error = report.status, report.error
        state.finished_at = self.state_store.now()
        if report.error is None:
            state.succeeded_at = state.finished_at
        state.report = {**report.summary(), "failures": [f.__dict__ for f in report.failed[:100]],
                        "skipped_files": report.skipped_files()[:100]}
        state.holder, state.lease_until = None, None
        try:
            self.state_store.end_sync(state, self.holder)
        except Exception:  # the outcome is lost, not the items: their cursors are committed
            log.warning("cannot record the end of the sync of %s", self.spec.name, exc_info=True)


def remote_status(state_store: SyncState, configured: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Each remote source's last sync, cursor age and error, as ``GET /v1/remote-sources`` shows them."""
    now = state_store.now()
    rows = []
    states = {s.name: s for s in state_store.remote_sources()}
    for name in dict.fromkeys([*(configured or {}), *states]):
        state = states.get(name)
        settings = (configured or {}).get(name)
        running = state is not None and state.holder is not None and (state.lease_until or 0) > now
        status = state.status if state else "never synced"
        if status == "running" and not running:
            status = "interrupted"
        report = state.report if state else {}
        rows.append({
            "name": name, "uri": mask_uri(state.uri if state else settings.uri),
            "status": "running" if running else status,
            "interval": getattr(settings, "interval", None), "configured": settings is not None,
            "last_started": state.started_at if state else None,
            "last_finished": state.finished_at if state else None,
            "last_success": state.succeeded_at if state else None,
            "cursor_age_seconds": (now - state.succeeded_at) if state and state.succeeded_at else None,
            "error": state.error if state else None,
            "report": {k: v for k, v in report.items() if k not in ("failures", "skipped_files")},
            "failures": report.get("failures", []),
        })
    return rows
