"""From read files to committed sources: embedding in batches, writing behind, each file
committed as soon as it can be.

The events ``reader.py`` yields arrive here in order. A small file's chunks wait, whole, for
others to fill an embedding batch (``EMBED_BATCH_CHUNKS``), but never behind a slow file: when
the reader has nothing new for ``IDLE_SECONDS``, what is waiting is embedded and committed. A
file larger than a batch is embedded and written part by part (``Store.begin_source``), so
neither its chunks nor its vectors are ever held whole, and committed at its end. A file is done
(``IngestProgress.file_done``) when its commit returns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..lang import UNDETERMINED
from ..types import Chunk, FileFailure, IngestReport, SourceRecord
from .reader import Note, Outcome, Part, Read

if TYPE_CHECKING:
    from collections import Counter

    from ..stores.base import SourceWrite, Store
    from .pipeline import WriteBehind
    from .progress import IngestProgress

#: Chunks gathered (from several files) before they are embedded together: the model runs one
#: text at a time anyway, and a small batch is written soon (and quickly, when interrupted).
EMBED_BATCH_CHUNKS = 64
#: When the reader has had nothing new for this long, the files waiting are embedded and committed.
IDLE_SECONDS = 0.5


@dataclass
class _File:
    source: str
    record: SourceRecord
    chunks: list[Chunk] = field(default_factory=list)
    is_update: bool = False
    #: Written part by part: the store's open write (set by the writer thread).
    write: SourceWrite | None = None
    streaming: bool = False


class FileBatcher:
    """Takes the reader's events; embeds; hands writes to the writer thread (``WriteBehind``)."""

    def __init__(
        self, store: Store, vectors_for: Callable[[Sequence[Chunk]], np.ndarray], writer: WriteBehind,
        report: IngestReport, progress: IngestProgress, languages: Counter[str],
    ) -> None:
        self.store = store
        self.vectors_for = vectors_for
        self.writer = writer
        self.report = report
        self.progress = progress
        self.languages = languages
        self.waiting: list[_File] = []  # read whole, not embedded yet
        self.current: _File | None = None  # being read
        #: Files committed in this ingest (added or updated).
        self.kept = 0

    # -- events (the ingest's thread) ---------------------------------------------------------
    def take(self, event: Any) -> None:
        if isinstance(event, Part):
            self._part(event)
        elif isinstance(event, Read):
            self._read(event)
        elif isinstance(event, Outcome):
            self._outcome(event)
        elif isinstance(event, Note):
            self.report.warnings.extend(event.warnings)
            self.report.ocr_pages += event.ocr_pages

    def idle(self) -> None:
        """The reader is slow: commit what is waiting rather than hold it."""
        self.flush()

    def flush(self) -> None:
        """Embed the waiting files and hand them to the writer."""
        if not self.waiting:
            return
        files = self.waiting
        vectors = self.vectors_for([c for f in files for c in f.chunks])
        self.writer.submit(("files", files, vectors))
        self.waiting = []  # only once handed over: an interrupt while embedding keeps them waiting

    def stop(self) -> None:
        """Interrupted: drop the file being read (its open write rolls back), keep the rest."""
        current, self.current = self.current, None
        if current is not None and current.streaming:
            self.writer.submit(("abort", current))

    def _part(self, event: Part) -> None:
        current = self.current
        if current is None or current.source != event.source:
            current = self.current = _File(event.source, event.record)
        current.chunks.extend(event.chunks)
        if len(current.chunks) >= EMBED_BATCH_CHUNKS:  # a large file: written part by part
            if not current.streaming:
                self.flush()  # what waits goes first, in order
                current.streaming = True
            self._write_part(current)

    def _write_part(self, file: _File) -> None:
        chunks = file.chunks
        vectors = self.vectors_for(chunks)
        self.writer.submit(("part", file, chunks, vectors))
        file.chunks = []

    def _read(self, event: Read) -> None:
        current = self.current
        if current is None or current.source != event.source:
            current = _File(event.source, event.record)
        self.current = None
        current.record, current.is_update = event.record, event.is_update
        if current.streaming:
            if current.chunks:
                self._write_part(current)
            self.writer.submit(("commit", current))
            return
        self.waiting.append(current)
        if sum(len(f.chunks) for f in self.waiting) >= EMBED_BATCH_CHUNKS:
            self.flush()

    def _outcome(self, event: Outcome) -> None:
        current = self.current
        if current is not None and current.source == event.source:
            self.current = None
            if current.streaming:  # failed after some parts: the open write rolls back
                self.writer.submit(("abort", current))
        if event.status == "unchanged":
            self.report.unchanged.append(event.source)
        elif event.status == "skipped":
            self.report.skip(event.source, event.message)
        else:
            self.report.failed.append(FileFailure(event.source, event.message))
        self.progress.file_done(event.source, event.status)

    # -- writes (the writer's thread) ----------------------------------------------------------
    def write(self, job: tuple) -> None:
        kind = job[0]
        if kind != "abort" and self._stopped():  # a stopped ingest (a lost lease) writes nothing more
            if kind in ("part", "commit"):
                self.write(("abort", job[1]))
            return
        if kind == "files":
            _, files, vectors = job
            offset = 0
            for file in files:
                count = len(file.chunks)
                self.store.replace_source(file.record, file.chunks, vectors[offset : offset + count])
                offset += count
                self._done(file, file.chunks)
        elif kind == "part":
            _, file, chunks, vectors = job
            if file.write is None:
                file.write = self.store.begin_source(file.record)
            file.write.add(chunks, vectors)
            self._count_languages(chunks)
            self.report.chunks_written += len(chunks)
        elif kind == "commit":
            file = job[1]
            if file.write is None:
                file.write = self.store.begin_source(file.record)
            file.write.commit(file.record)
            file.write = None
            self._done(file, ())
        elif kind == "abort":
            file = job[1]
            if file.write is not None:
                file.write.abort()
                file.write = None

    def _stopped(self) -> bool:
        """Whether the ingest was told to stop (``IngestProgress.check`` raises): asked before
        every write, so that nothing is committed once it was, whatever is queued."""
        try:
            self.progress.check()
        except Exception:  # noqa: BLE001 - the ingest's own loop raises it
            return True
        return False

    def _done(self, file: _File, chunks: Sequence[Chunk]) -> None:
        self.report.chunks_written += len(chunks)
        self._count_languages(chunks)
        (self.report.updated if file.is_update else self.report.added).append(file.record.path)
        self.kept += 1
        self.progress.file_done(file.record.path, "updated" if file.is_update else "added")

    def _count_languages(self, chunks: Sequence[Chunk]) -> None:
        for chunk in chunks:
            self.languages[str(chunk.metadata.get("lang", UNDETERMINED))] += len(chunk.text)
