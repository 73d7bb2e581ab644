"""Copy an index from one store to another without re-embedding.

Chunks, vectors, metadata, the sources registry and the embedder identity are
copied source by source through the ``Store`` interface, so a migration is an
ordinary sequence of ``replace_source`` calls: each is atomic on the target, an
interrupted migration is resumed by running it again (sources already copied
unchanged are skipped), and sources the origin no longer has are removed.

The derived structures (the entity graph, its communities, the RAPTOR tree, the
model-output cache) are not the store's to copy: ``ragloom migrate`` copies their tables
after this, with ``knowledge.copy.copy_structures``, in one transaction on the target.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field


from ..errors import ModelMismatchError
from .base import Store


@dataclass
class MigrationReport:
    copied: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    chunks: int = 0
    seconds: float = 0.0

    def summary(self) -> dict[str, float | int]:
        return {"copied": len(self.copied), "unchanged": len(self.unchanged), "removed": len(self.removed),
                "chunks": self.chunks, "seconds": round(self.seconds, 3)}


def migrate(origin: Store, target: Store, progress: Callable[[str, int], None] | None = None) -> MigrationReport:
    """Make ``target`` hold what ``origin`` holds; ``progress(path, chunks)`` after each source."""
    started = time.perf_counter()
    report = MigrationReport()
    parameters = {"from": origin.name, "to": target.name, "from_index": str(getattr(origin, "path", "") or
                                                                           getattr(origin, "folder", ""))}
    with target.audited("migrate", parameters) as summary:
        _copy(origin, target, report, progress)
        summary.update(report.summary())
    report.seconds = time.perf_counter() - started
    return report


def _copy(origin: Store, target: Store, report: MigrationReport, progress: Callable[[str, int], None] | None) -> None:
    _copy_identity(origin, target)
    wanted = origin.list_sources()
    for record in wanted:
        if target.get_source(record.path) == record:
            report.unchanged.append(record.path)
            continue
        chunks, vectors = origin.export_source(record.path)
        target.replace_source(record, chunks, vectors)
        report.copied.append(record.path)
        report.chunks += len(chunks)
        if progress:
            progress(record.path, len(chunks))
    keep = {r.path for r in wanted}
    for record in target.list_sources():
        if record.path not in keep:
            target.delete_source(record.path)
            report.removed.append(record.path)
    target.flush()


def _copy_identity(origin: Store, target: Store) -> None:
    info, existing = origin.embedder_info(), target.embedder_info()
    if info is None:
        return
    if existing is None:
        target.set_embedder_info(info)
        return
    same = (existing.get("model_id"), existing.get("dimension")) == (info.get("model_id"), info.get("dimension"))
    if not same:
        raise ModelMismatchError(
            f"the target already holds vectors of {existing.get('model_id')} ({existing.get('dimension')}-d), "
            f"the origin has {info.get('model_id')} ({info.get('dimension')}-d); migrate into an empty "
            "collection (another collection name or index directory)"
        )
