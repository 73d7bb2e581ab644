"""One file of an ingest read into chunks, as a stream of events.

``FileReader.events(file)`` is the whole per-file step before embedding: read the bytes (once,
hashed), decide whether the file changed, load its documents, chunk them, derive metadata and
each chunk's language. It runs in the ingest's worker process (``sandbox.py``), under the
file's time and memory budget, and yields what it has as it goes:

- ``Part``: at most ``PART_CHUNKS`` chunks of the file, in order, so a large file never travels
  or waits whole;
- ``Read``: the file's end, with its source record (every part was sent before it);
- ``Outcome``: the file's end without chunks to keep: ``unchanged``, ``failed`` (with the line
  for the report; parts sent before it are dropped) or ``skipped`` (with the reason);
- ``Note``: a warning for the report, or OCR pages counted.

A chunker that needs the embedder or an LLM (semantic, agentic, proposition) cannot run in a
forked worker; for those files the worker yields ``Loaded`` documents and ``chunk_loaded``
chunks them in the ingest's process.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import IngestConfig
from ..errors import LoaderError, RagloomError
from ..types import Chunk, SourceRecord
from .chunkers.base import Chunker
from .enrich import enrich_chunks, enrichment_policy
from .files import FileRejected, read_regular_file, source_id
from .incomplete import available as incomplete_available
from .incomplete import lacked, policy_with, read_again_note
from .languages import language_policy, with_languages
from .loaders import LoaderOptions, LoadResult, load_file, loader_for
from .sandbox import caused_by, memory_message
from .staged import StagedItem

if TYPE_CHECKING:
    from ..paths import PathPolicy
    from .chunkers._services import Chunkers

#: Chunks sent in one part: enough to fill an embedding batch, small enough to stay cheap.
PART_CHUNKS = 128


@dataclass
class Part:
    source: str
    #: The source as known before its end (its ``chunk_count`` comes with ``Read``).
    record: SourceRecord
    chunks: list[Chunk]


@dataclass
class Read:
    source: str
    record: SourceRecord
    is_update: bool


@dataclass
class Outcome:
    source: str
    status: str  # unchanged | failed | skipped
    message: str = ""


@dataclass
class Note:
    warnings: list[str] = field(default_factory=list)
    ocr_pages: int = 0


@dataclass
class Loaded:
    """Documents for the ingest's process to chunk (a chunker that uses a model)."""

    source: str
    result: LoadResult
    record: SourceRecord
    is_update: bool


class FileReader:
    """Reads the files of one ingest; everything it needs is given here, so a forked worker has it."""

    def __init__(
        self, settings: IngestConfig, chunkers: Chunkers, options: LoaderOptions,
        known: Mapping[str, SourceRecord], policy: PathPolicy | None, stamp: Mapping[str, Any], in_worker: bool,
        staged: Mapping[Path, StagedItem] | None = None,
    ) -> None:
        self.settings = settings
        self.chunkers = chunkers
        self.options = options
        self.known = known
        self.policy = policy
        self.stamp = dict(stamp)
        self.in_worker = in_worker
        #: Remote items fetched into local files (``staged.py``), by their local path.
        self.staged = dict(staged or {})
        self._remote = {item.source: dict(item.metadata) for item in self.staged.values()}

    def source_of(self, file: Path) -> str:
        """The source id ``file`` is indexed under: a remote item's own address, else its path."""
        item = self.staged.get(file)
        return item.source if item is not None else source_id(file)

    def stamp_of(self, source: str) -> dict[str, Any]:
        """What the chunks of ``source`` carry besides their own metadata: the server key's fields,
        and a remote item's metadata (its address, commit, ...)."""
        metadata = self._remote.get(source)
        return {**self.stamp, **metadata} if metadata else self.stamp

    def events(self, file: Path) -> Iterator[Any]:
        """What reading ``file`` gives, event by event (see the module)."""
        source = self.source_of(file)
        settings = self.settings
        try:
            content = read_regular_file(file, int(settings.max_file_mb * 1_000_000), self.policy)
        except FileRejected as exc:
            yield Outcome(source, "failed", str(exc))
            return
        digest = hashlib.sha256(content.data).hexdigest()
        existing = self.known.get(source)
        chunker = self.chunkers.for_path(file)
        loader = loader_for(file, self.options)
        chunk_policy = chunker.policy + enrichment_policy(settings.enrich) + language_policy(settings.language) + (
            f"+{loader.policy()}" if loader.policy() else "")
        missing = lacked(existing.policy, chunk_policy) if existing else None
        if existing and existing.content_hash == digest and (
                existing.policy == chunk_policy or (missing is not None and not incomplete_available(missing))):
            yield Outcome(source, "unchanged")
            return
        if existing and existing.content_hash == digest and missing is not None:
            yield Note([read_again_note(source, missing)])
        record = SourceRecord(
            path=source, content_hash=digest, mtime=content.mtime, size=content.size, chunk_count=0,
            ingested_at=time.time(), loader=file.suffix.lower(), policy=chunk_policy,
        )
        data = content.data
        del content
        try:
            # The bytes hashed, not the file as it is now.
            result = load_file(file, source, data, self.options)
            del data
            if result.warnings or result.stats.get("ocr_pages"):
                yield Note(list(result.warnings), result.stats.get("ocr_pages", 0))
            if result.skip_reason is not None:  # minified or generated: nothing of it is stored
                yield Outcome(source, "skipped", result.skip_reason)
                return
            record = replace(record, policy=policy_with(chunk_policy, result.incomplete))
            if hasattr(chunker, "bind"):
                yield Loaded(source, result, record, existing is not None)
                return
            yield from self.chunk_events(source, result, record, existing is not None, chunker)
        except Exception as exc:  # noqa: BLE001 - sorted by what it says about the file
            failure = self.failure(exc)
            if failure is None:
                raise
            yield Outcome(source, "failed", failure)

    def chunk_loaded(self, loaded: Loaded) -> Iterator[Any]:
        """The chunks of documents a worker loaded, chunked here."""
        chunker = self.chunkers.for_path(Path(loaded.source))
        try:
            yield from self.chunk_events(loaded.source, loaded.result, loaded.record, loaded.is_update, chunker)
        except Exception as exc:  # noqa: BLE001
            failure = self.failure(exc)
            if failure is None:
                raise
            yield Outcome(loaded.source, "failed", failure)

    def failure(self, exc: Exception) -> str | None:
        """The report's line for a file whose reading raised ``exc``, or None to raise it on: a
        setting or a service at fault (not the file), or (in the worker) memory run out, which
        the worker reports as over budget however a library wrapped it."""
        if caused_by(exc, MemoryError):
            if self.in_worker:
                return None
            return memory_message(self.settings.max_file_memory_mb).split(" (", 1)[0] + "; the ingest ran out of memory"
        if isinstance(exc, RecursionError):
            return "it is nested too deeply to read (a parser recursed without bound); leave it out or flatten it"
        if isinstance(exc, LoaderError):
            return str(exc)
        if isinstance(exc, RagloomError):
            return None
        return f"could not be read ({type(exc).__name__}: {exc})"  # a library or plugin failing on one file

    def chunk_events(
        self, source: str, result: LoadResult, record: SourceRecord, is_update: bool, chunker: Chunker,
    ) -> Iterator[Any]:
        """Parts of the file's chunks, then ``Read``: duplicate ids left out (said once)."""
        settings = self.settings
        seen: set[str] = set()
        duplicates = 0
        batch: list[Chunk] = []
        for document in result.documents:
            for chunk in chunker.iter_chunks(document):
                if chunk.id in seen:
                    duplicates += 1
                    continue
                seen.add(chunk.id)
                batch.append(chunk)
                if len(batch) >= PART_CHUNKS:
                    yield Part(source, record, self._finish(batch, document))
                    batch = []
            if batch:
                yield Part(source, record, self._finish(batch, document))
                batch = []
        if duplicates:
            yield Note([f"{source}: {duplicates} duplicate chunks (same document id and offsets) skipped"])
        yield Read(source, replace(record, chunk_count=len(seen)), is_update)

    def _finish(self, chunks: list[Chunk], document: Any) -> list[Chunk]:
        chunks = enrich_chunks(chunks, document, self.settings.enrich)
        stamp = self.stamp_of(document.source)
        if stamp:  # a server key's own fields, so that what a tenant uploads its filter lets through
            chunks = [replace(c, metadata={**c.metadata, **stamp}) for c in chunks]
        return with_languages(chunks, self.settings.language)


def sample_task(options: LoaderOptions, max_bytes: int, policy: PathPolicy | None) -> Any:
    """The task of a worker that reads the sample files an embedder is chosen by (``languages.sample_texts``)."""
    from .languages import first_texts

    def task(file: Path) -> Iterator[list[str]]:
        content = read_regular_file(file, max_bytes, policy)
        yield first_texts(load_file(file, str(file), content.data, options))

    return task
