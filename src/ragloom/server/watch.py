"""Watching folders: changes are debounced into batches and ingested incrementally.

A batch lists paths that changed; each is looked at once, when the batch is applied: a
path that exists is (re)ingested (unchanged content costs a hash, nothing more), a path
that is gone is removed from the index with everything under it. A rename is the old path
gone and the new one present; an editor's save-by-rename ends up as one update.

A watched folder is a door like the API's: its ingests read only inside the watched folders
(a symlink leading out is refused where the file is opened, and reported).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import Config
from ..errors import RagloomError, SourceNotFoundError
from ..index import Index
from ..ingest.files import is_selected, source_id
from ..ingest.ignore import left_out
from ..ingest.loaders import is_supported
from ..optional import require
from ..paths import PathPolicy
from ..types import IngestReport

if TYPE_CHECKING:
    from .jobs import IngestJobs

log = logging.getLogger("ragloom.watch")


@dataclass
class Batch:
    """What one debounced group of changes asks for."""

    ingest: list[str] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)
    #: The folders its files must lie in (the watched ones), checked where each file is opened.
    policy: PathPolicy | None = None

    def __bool__(self) -> bool:
        return bool(self.ingest or self.remove)


#: Applies a batch to an index and returns what the ingest did.
Apply = Callable[[Batch], IngestReport]


class FolderWatcher:
    """Watches ``folders`` and hands each debounced batch of changes to ``apply``."""

    def __init__(
        self, folders: Sequence[str | Path], config: Config, apply: Apply, *,
        ignore: Iterable[str | Path] = (), on_batch: Callable[[Batch, IngestReport | None, Exception | None], None] | None = None,
    ) -> None:
        self.folders = [Path(f).expanduser().resolve() for f in folders]
        for folder in self.folders:
            if not folder.is_dir():
                raise SourceNotFoundError(str(folder))
        self.policy = PathPolicy(self.folders, what="the watched folders")
        self.config = config
        self.apply = apply
        self.ignore = [Path(p).expanduser().resolve() for p in ignore]
        self.on_batch = on_batch
        self.stop_event = threading.Event()
        #: Set once the folders are watched and the first catch-up ingest is done.
        self.ready = threading.Event()

    def batch_for(self, changed: Iterable[str]) -> Batch:
        """Sort changed paths into files to ingest and paths to remove, as they are now."""
        batch = Batch(policy=self.policy)
        for raw in sorted(set(changed)):
            path = Path(source_id(raw))  # a symlink keeps its own name: where it leads is checked when it is read
            root = self._root_of(path)
            if root is None:
                continue
            if path.is_file():
                if self._selected(path, root):
                    batch.ingest.append(str(path))
            elif path.is_dir():
                batch.ingest.extend(str(f) for f in sorted(path.rglob("*")) if f.is_file() and self._selected(f, root))
            else:
                batch.remove.append(str(path))
        batch.ingest = list(dict.fromkeys(batch.ingest))
        return batch

    def _root_of(self, path: Path) -> Path | None:
        if any(path == p or path.is_relative_to(p) for p in self.ignore):
            return None
        return next((root for root in self.folders if path.is_relative_to(root) and path != root), None)

    def _selected(self, file: Path, root: Path) -> bool:
        settings = self.config.ingest
        return (is_supported(file) and is_selected(file.relative_to(root).as_posix(), settings.glob, settings.exclude)
                and not left_out(root, file, settings.ignore_files, settings.vendored))

    def run(self, *, initial: bool = True) -> None:
        """Catch up with the folders (one incremental ingest), then follow changes until ``stop``."""
        watchfiles = require("watchfiles", extra="server", feature="watching folders")
        debounce = self.config.watch.debounce_ms
        changes_seen = watchfiles.watch(
            *self.folders, debounce=debounce, step=min(300, debounce), stop_event=self.stop_event,
            raise_interrupt=False, rust_timeout=1000, yield_on_timeout=True,
        )
        for changes in changes_seen:
            if not self.ready.is_set():
                # The first yield comes once the folders are watched: catching up now misses nothing.
                self._apply(Batch(ingest=[str(f) for f in self.folders], policy=self.policy) if initial else Batch())
                self.ready.set()
                continue
            self._apply(self.batch_for(path for _, path in changes))

    def start(self, *, initial: bool = True) -> threading.Thread:
        thread = threading.Thread(target=self.run, kwargs={"initial": initial}, name="ragloom-watch", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self.stop_event.set()

    def _apply(self, batch: Batch) -> None:
        if not batch:
            return
        report, error = None, None
        try:
            report = self.apply(batch)
        except RagloomError as exc:  # a file may vanish mid-batch; the next batch sees it gone
            error = exc
            log.warning("watch: %s", exc)
        if self.on_batch is not None:
            self.on_batch(batch, report, error)


def apply_to_index(index: Index) -> Apply:
    """Apply batches straight to an index (``ragloom watch``)."""

    def apply(batch: Batch) -> IngestReport:
        removed: list[str] = []
        for path in batch.remove:
            try:
                removed.extend(index.remove(path))
            except SourceNotFoundError:
                pass
        report = index.ingest(batch.ingest, policy=batch.policy) if batch.ingest else IngestReport()
        report.removed[:0] = removed
        return report

    return apply


def apply_through_jobs(jobs: IngestJobs) -> Apply:
    """Apply batches as ingest jobs of a running server, so they queue behind API ingests."""

    def apply(batch: Batch) -> IngestReport:
        job = jobs.wait(jobs.submit(batch.ingest, origin="watch", remove=batch.remove, policy=batch.policy).id)
        if job is None or job.state != "done":
            message = job.error.message if job is not None and job.error else "the ingest job did not finish"
            raise RagloomError(message)
        return jobs.report(job.id) or IngestReport()

    return apply
