"""What an index reports about itself: its size, its sources, how paths are shown, its audit log.

``Index`` takes these methods from :class:`IndexReports`; they only read the opened parts
(``parts.py``), so they live beside the facade rather than in it, and do not import it.
"""

from __future__ import annotations

from collections.abc import Sequence

from .audit import AuditEvent, ChainReport
from .display import DisplayPaths
from .errors import UsageError
from .parts import Parts
from .stores.base import AuditEntry
from .stores.location import is_remote, shown
from .types import IndexStats, SourceRecord


class IndexReports:
    """Reporting methods of an index, read from its opened parts."""

    parts: Parts
    #: (store generation, paths as shown) for indexes that recorded no ingest roots.
    _shared_folder: tuple[int | None, DisplayPaths] | None = None

    def stats(self) -> IndexStats:
        """Sources, chunks, embedder, store and size on disk of this index."""
        store, config = self.parts.store, self.parts.config
        info = store.embedder_info() or {}
        sources = store.list_sources()
        return IndexStats(
            path=shown(config.index) if is_remote(config.index) else str(self.parts.path),
            sources=len(sources), chunks=store.count(),
            embedder=str(info.get("model_id", "(none yet)")), dimension=int(info.get("dimension", 0)),
            store=config.store.backend, disk_bytes=store.disk_bytes(),
            chunking_policy=", ".join(sorted({s.policy for s in sources if s.policy})),
            languages=store.value_counts("lang") if store.abilities.value_counts else {},
        )

    def display_paths(self) -> DisplayPaths:
        """``source -> path as shown``: relative to the folder that was ingested (``ragloom.display``)."""
        recorded = self.parts.store.ingest_roots()
        if recorded:
            return DisplayPaths(recorded)
        # An index from before roots were recorded: the folder its sources share, found by listing
        # them, which a server asking on every request does once per write.
        generation = self.parts.store.generation()
        cached = self._shared_folder
        if cached is None or generation is None or cached[0] != generation:
            cached = (generation, DisplayPaths.of([], [r.path for r in self.parts.store.list_sources()]))
            self._shared_folder = cached
        return cached[1]

    def sources(self) -> list[SourceRecord]:
        """Every indexed source (file), with its hash, size and chunk count."""
        return self.parts.store.list_sources()

    def audit(self, last: int = 10) -> list[AuditEntry]:
        """The newest ``last`` searches of the audit log, newest first."""
        return self.parts.store.recent_searches(_audit_limit(last))

    def audit_events(
        self, last: int = 10, kinds: Sequence[str] | None = None, exclude: Sequence[str] = ()
    ) -> list[AuditEvent]:
        """The newest entries of the audit log (searches and writes), newest first."""
        return self.parts.store.audit_events(_audit_limit(last), kinds, exclude)

    def verify_audit(self) -> ChainReport:
        """Check the audit log's hash chain; the report names the first broken entry."""
        return self.parts.store.verify_audit()


def _audit_limit(last: int) -> int:
    if last < 1:
        raise UsageError(f"last={last}: ask for at least one audit entry")
    return min(last, 2**62)  # SQLite integers are 64-bit
