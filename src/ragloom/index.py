"""The orchestrator: ingest files into an index, search it, remove sources, report on it."""

from __future__ import annotations

import hashlib
import os
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .config import Config
from .context import Context
from .embed.base import Embedder, create_embedder
from .errors import (
    IndexNotFoundError,
    LoaderError,
    ModelMismatchError,
    QueryError,
    RagloomError,
    RagloomWarning,
    SourceNotFoundError,
    UnsupportedFormatError,
    UsageError,
)
from .ingest.chunkers.base import Chunker, create_chunker
from .ingest.enrich import enrich_chunks, enrichment_policy
from .ingest.files import (
    FileRejected, display_name, name_problem, read_regular_file, source_id, sources_named, walk,
)
from .ingest.loaders import LoaderOptions, is_supported, load_file, loader_for, supported_extensions
from .ingest.pipeline import WriteBehind, read_ahead
from .paths import PathPolicy
from . import registry
from .audit import AuditEvent, ChainReport
from .retrieve.base import QueryPlan, SearchContext, SearchResult
from .retrieve.cache import QueryCache
from .retrieve.understand import plan_query
from .retrieve.pipeline import Pipeline, build_pipeline
from .retrieve.retrievers.basic import hybrid_search  # noqa: F401 - public: benchmarks fuse with it
from .tracing import set_attributes, span
from .stores.base import AuditEntry, Store, create_store, exclusive_write_lock, store_exists
from .types import Answer, Chunk, FileFailure, Hit, IndexStats, IngestReport, SourceRecord

#: Chunks gathered from several files before they are embedded together.
_EMBED_BATCH_CHUNKS = 256


class IngestProgress:
    """Callbacks an ingest reports to; the CLI draws progress bars with them."""

    def files(self, total: int) -> None: ...
    def file_done(self, path: str, status: str) -> None: ...
    def embedding(self, chunks: int) -> None: ...
    def embedded(self, chunks: int) -> None: ...


@dataclass
class _Pending:
    path: Path
    record: SourceRecord
    chunks: list[Chunk]
    is_update: bool


class Index:
    """A searchable collection of documents, stored in one directory.

    >>> index = Index.open("my-index")          # doctest: +SKIP
    >>> index.ingest(["./docs"])                # doctest: +SKIP
    >>> index.search("how do ROS 2 nodes communicate?", k=5)  # doctest: +SKIP
    """

    def __init__(self, path: Path, config: Config, store: Store, embedder: Embedder | None = None) -> None:
        self.path = path
        self.config = config
        self.store = store
        self._embedder: Embedder | None = None
        self._owns_embedder = embedder is None  # one passed in is the caller's to close
        if embedder is not None:
            recorded = store.embedder_info()
            if recorded:
                check_same_embedder(recorded, embedder, path)
            self._embedder = embedder
        self._chunkers: dict[str, Chunker] = {}
        self._pipelines: dict[str, Pipeline] = {}
        #: Models and clients that pipeline steps load once per index (cross-encoders, LLMs, ...).
        self._components: dict[str, Any] = {}
        self._warned_read_only = False
        self._cache = QueryCache(config.search.cache)

    @classmethod
    def open(
        cls,
        path: str | Path | None = None,
        config: Config | None = None,
        *,
        create: bool = True,
        embedder: Embedder | None = None,
        read_only: bool | None = None,
    ) -> Index:
        """Open the index at ``path`` (default: the config's ``index``), creating it if new.

        With ``create=False`` a missing index is an error instead (a folder that holds no
        index is not turned into one). ``read_only=True`` opens it without writing anything
        (searches are then not written to the audit log); the default, None, opens
        read-only exactly when ``create=False`` and this user may not write the index.
        ``embedder`` passes a ready embedder instance (it must match the one the index
        was built with).
        """
        config = config or Config()
        folder = Path(path if path is not None else config.index).expanduser()
        if folder.exists() and not folder.is_dir():
            raise RagloomError(f"{folder} is a file, not an index directory; pick another --index path")
        if not create and not store_exists(folder, config):
            what = "no index" if not folder.exists() else f"no ragloom index (of the {config.store.backend} store)"
            raise IndexNotFoundError(
                f"there is {what} at {folder}; create one with `ragloom ingest PATH` (or pass --index DIR)"
            )
        if read_only is None:
            read_only = not create and not _writable(folder)
        store = create_store(folder, config, read_only=read_only)
        try:
            return cls(folder, config, store, embedder)
        except BaseException:
            store.close()
            raise

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for component in self._components.values():
            closer = getattr(component, "close", None)
            if callable(closer):
                closer()
        self._components.clear()
        if self._owns_embedder and self._embedder is not None:
            self._embedder.close()
        self.store.close()

    # -- components -----------------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        """The embedder this index was built with (or, for a new index, the configured one)."""
        if self._embedder is None:
            recorded = self.store.embedder_info()
            explicit = "embedder" in self.config.model_fields_set
            if recorded and not explicit and recorded.get("config"):
                from .config import EmbedderConfig

                settings = EmbedderConfig.model_validate(recorded["config"])
                # Runtime knobs may differ from the recorded ones without changing the vectors.
                settings = settings.model_copy(update={
                    "threads": self.config.embedder.threads, "batch_size": self.config.embedder.batch_size})
                embedder = create_embedder(settings)
            else:
                embedder = create_embedder(self.config.embedder)
            if recorded:
                check_same_embedder(recorded, embedder, self.path)
            self._embedder = embedder
        return self._embedder

    @property
    def loader_options(self) -> LoaderOptions:
        settings = self.config.ingest
        return LoaderOptions(ocr=settings.ocr, ocr_languages=settings.ocr_languages, ocr_dpi=settings.ocr_dpi)

    @property
    def chunker(self) -> Chunker:
        """The configured chunking strategy."""
        return self.chunker_for(None)

    def chunker_for(self, path: Path | None) -> Chunker:
        """The chunker for a file: ``chunking.by_extension`` may name another strategy."""
        settings = self.config.chunking
        strategy = settings.strategy
        if path is not None:
            strategy = settings.by_extension.get(path.suffix.lower(), strategy)
        if strategy not in self._chunkers:
            embedder = self.embedder
            chunker = create_chunker(
                settings.model_copy(update={"strategy": strategy}), embedder.count_tokens, embedder.token_offsets,
                embedder.max_input_tokens, embedder.model_id,
            )
            if hasattr(chunker, "bind"):  # model-driven chunkers (semantic, agentic, proposition)
                from .ingest.chunkers._services import ChunkerServices

                chunker.bind(ChunkerServices.of_index(self))
            self._chunkers[strategy] = chunker
        return self._chunkers[strategy]

    # -- ingest -------------------------------------------------------------------------------------
    def ingest(
        self,
        paths: Sequence[str | Path] | str | Path,
        *,
        glob: Sequence[str] | None = None,
        progress: IngestProgress | None = None,
        policy: PathPolicy | None = None,
    ) -> IngestReport:
        """Index files and folders. Unchanged files are skipped, changed ones replaced,
        and files gone from an ingested folder are removed from the index. With a ``policy``
        (a server's door), every file is checked against its roots where it is opened."""
        started = time.perf_counter()
        progress = progress or IngestProgress()
        report = IngestReport()
        if isinstance(paths, (str, Path)):
            paths = [paths]
        plan, folders = self._plan(paths, glob, report, policy)
        with exclusive_write_lock(self.path), self._audited_ingest(paths, glob, report):
            self._record_embedder()
            progress.files(len(plan))
            seen: set[str] = set()
            pending: list[_Pending] = []
            known = {record.path: record for record in self.store.list_sources()}
            self.embedder  # noqa: B018 - created here, not first in the read-ahead thread

            def prepare(file: Path) -> tuple[str, _Pending | None]:
                source = source_id(file)
                return source, self._prepare(file, source, report, known, policy)

            # Files are read and chunked ahead, and sources written behind, while this thread embeds.
            with WriteBehind(lambda job: self._store_batch(*job, report)) as writer:
                for source, item in read_ahead(plan, prepare):
                    seen.add(source)
                    if item is not None:
                        pending.append(item)
                        if sum(len(p.chunks) for p in pending) >= _EMBED_BATCH_CHUNKS:
                            writer.submit((pending, self._vectors_for(_chunks_of(pending), report, progress)))
                            pending = []
                    progress.file_done(source, "unchanged" if item is None else "read")
                if pending:
                    writer.submit((pending, self._vectors_for(_chunks_of(pending), report, progress)))
            # What could not be read this time (a file, an unreadable folder) keeps its indexed version.
            kept = [failure.path for failure in report.failed]
            for folder in folders:
                for record in self.store.list_sources():
                    if _is_under(record.path, folder) and record.path not in seen and not any(
                        record.path == path or _is_under(record.path, path) for path in kept
                    ):
                        self.store.delete_source(record.path)
                        report.removed.append(record.path)
            self.store.flush()
            report.warnings.extend(self._sync_structures())
        report.seconds = time.perf_counter() - started
        return report

    @contextmanager
    def _audited_ingest(
        self, paths: Sequence[str | Path], glob: Sequence[str] | None, report: IngestReport
    ) -> Iterator[None]:
        """The ingest as one operation of the audit log: what the user asked for, then the outcome."""
        parameters = {
            "paths": [str(Path(p).expanduser().resolve()) for p in paths],
            "glob": list(glob or self.config.ingest.glob), "exclude": list(self.config.ingest.exclude),
            "chunking": self.config.chunking.model_dump(mode="json"), "embedder": self.embedder.model_id,
        }
        with self.store.audited("ingest", parameters) as summary:
            yield
            summary.update(report.summary(), failed_files=[f.path for f in report.failed])

    def _plan(
        self, paths: Iterable[str | Path], glob: Sequence[str] | None, report: IngestReport,
        policy: PathPolicy | None = None,
    ) -> tuple[list[Path], list[str]]:
        files: list[Path] = []
        folders: list[str] = []
        settings = self.config.ingest

        def failed(where: str, why: str) -> None:
            report.failed.append(FileFailure(where, why))

        def skipped(where: str, why: str) -> None:
            report.warnings.append(f"{where}: {why}")

        for raw in paths:
            path = Path(raw).expanduser()
            if not path.exists() and not path.is_symlink():
                raise SourceNotFoundError(str(raw))
            if name_problem(path) is not None:
                failed(display_name(path), str(name_problem(path)))
                continue
            if path.is_dir():
                folders.append(str(path.resolve()))
                found = walk(path, glob or settings.glob, settings.exclude, failed, settings.external_links, skipped,
                             policy)
                for file in found:
                    if is_supported(file):
                        files.append(file)
                    else:
                        report.skipped.append(str(file))
            elif is_supported(path):
                files.append(path)
            else:
                raise UnsupportedFormatError(str(raw), supported_extensions())
        return list(dict.fromkeys(files)), folders

    def _prepare(
        self, file: Path, source: str, report: IngestReport, known: Mapping[str, SourceRecord] | None = None,
        policy: PathPolicy | None = None,
    ) -> _Pending | None:
        """Load and chunk a file, or None when it is unchanged since the last ingest (``known``:
        the sources registry read beforehand, so that this can run beside the store's writer)."""
        try:
            content = read_regular_file(file, int(self.config.ingest.max_file_mb * 1_000_000), policy)
        except FileRejected as exc:
            report.failed.append(FileFailure(source, str(exc)))
            return None
        digest = hashlib.sha256(content.data).hexdigest()
        mtime, size = content.mtime, content.size
        existing = known.get(source) if known is not None else self.store.get_source(source)
        chunker = self.chunker_for(file)
        loader = loader_for(file, self.loader_options)
        policy = chunker.policy + enrichment_policy(self.config.ingest.enrich) + (
            f"+{loader.policy()}" if loader.policy() else "")
        if existing and existing.content_hash == digest and existing.policy == policy:
            report.unchanged.append(source)
            return None
        enrich = self.config.ingest.enrich
        try:
            result = load_file(file, source, content.data, self.loader_options)  # the bytes hashed, not the file as it is now
            chunks = [chunk for document in result.documents for chunk in enrich_chunks(chunker.chunk(document), document, enrich)]
        except LoaderError as exc:
            report.failed.append(FileFailure(source, str(exc)))
            return None
        except RagloomError:  # a setting or a service, not this file: stop
            raise
        except Exception as exc:  # a library or plugin failing on one file must not lose the others
            report.failed.append(FileFailure(source, f"could not be read ({type(exc).__name__}: {exc})"))
            return None
        report.warnings.extend(result.warnings)
        report.ocr_pages += result.stats.get("ocr_pages", 0)
        chunks = _unique_ids(chunks, source, report)
        record = SourceRecord(
            path=source, content_hash=digest, mtime=mtime, size=size,
            chunk_count=len(chunks), ingested_at=time.time(), loader=file.suffix.lower(), policy=policy,
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
            (report.updated if item.is_update else report.added).append(item.record.path)

    def _vectors_for(self, chunks: Sequence[Chunk], report: IngestReport, progress: IngestProgress) -> np.ndarray:
        """Vectors for the chunks: from the cache where the same text was embedded before."""
        embedder = self.embedder
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

    def _record_embedder(self) -> None:
        if self.store.embedder_info() is None:
            embedder = self.embedder
            self.store.set_embedder_info({
                **embedder.describe(),
                "config": self.config.embedder.model_dump(),
            })

    def _sync_structures(self) -> list[str]:
        """Bring the entity graph and RAPTOR tree (when enabled or built) up to the sources."""
        from .knowledge.sync import sync

        return sync(self)

    # -- remove ----------------------------------------------------------------------------------
    def remove(self, path: str | Path) -> list[str]:
        """Remove a source (or every source under a folder); return the removed paths."""
        with exclusive_write_lock(self.path):
            removed = self.sources_under(path)
            with self.store.audited("remove", {"path": source_id(path)}) as summary:
                for source in removed:
                    self.store.delete_source(source)
                self.store.flush()
                summary["removed"] = len(removed)
            for note in self._sync_structures():
                warnings.warn(note, RagloomWarning, stacklevel=2)
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

    def optimize(self) -> dict[str, object]:
        """Rebuild the store's derived indexes (the approximate vector index is retrained)."""
        with exclusive_write_lock(self.path):
            return self.store.optimize()

    # -- search -----------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        k: int | None = None,
        *,
        where: Mapping[str, Any] | None = None,
        mode: str | None = None,
        min_score: float | None = None,
    ) -> list[Hit]:
        """The ``k`` passages that best match ``query``, best first.

        ``mode`` names a preset (``dense``, ``lexical``, ``hybrid``, ...); by default the
        configured ``search.pipeline``, or else the ``search.mode`` preset.
        """
        return self.retrieve(query, k, where=where, mode=mode, min_score=min_score).hits

    def retrieve(
        self,
        query: str,
        k: int | None = None,
        *,
        where: Mapping[str, Any] | None = None,
        mode: str | None = None,
        min_score: float | None = None,
    ) -> SearchResult:
        """Like ``search``, with the plan and a per-step trace (what ``--explain`` shows)."""
        started = time.perf_counter()
        settings = self.config.search
        if not isinstance(query, str) or not query.strip():
            raise QueryError("the query is empty; give some words to search for")
        pipeline = self.pipeline(mode)
        plan = plan_query(query, self.clamp_k(k), where, min_score, pipeline.name, settings,
                          lambda: [r.path for r in self.store.list_sources()])
        with span("ragloom.search", **{"ragloom.preset": pipeline.name, "ragloom.k": plan.k}) as current:
            if self.store.count() == 0:
                warnings.warn(
                    f"the index at {self.path} is empty; add documents with `ragloom ingest PATH`",
                    RagloomWarning, stacklevel=2,
                )
                result = SearchResult([], plan)
            else:
                result = self._cached_run(pipeline, plan)
            set_attributes(current, **{"ragloom.hits": len(result.hits)})
        result.elapsed_ms = (time.perf_counter() - started) * 1000
        if self.config.audit.enabled:
            self._audit(result, k, pipeline)
        return result

    def _cached_run(self, pipeline: Pipeline, plan: QueryPlan) -> SearchResult:
        name = self.config.search.fallback
        fallback = None if name == "none" else registry.resolve("retriever", name)()
        return self._cache.run(pipeline, plan, self.store.generation(), self.config.search,
                               lambda: pipeline.run(plan, self.search_context(), fallback))

    def cache_stats(self) -> dict[str, dict[str, int]]:
        """Hits, misses and size of this process's query-result and query-embedding caches."""
        return self._cache.stats()

    # -- answers ------------------------------------------------------------------------------------
    def context(self, question: str, *, budget: int | None = None, k: int | None = None,
                where: Mapping[str, Any] | None = None, mode: str | None = None) -> Context:
        """The numbered, token-budgeted context an LLM would get for ``question``."""
        from .generate.answering import context_for

        return context_for(self, question, budget=budget, k=k, where=where, mode=mode)

    def ask(self, question: str, **options: Any) -> Answer:
        """Answer ``question`` from the index, citing passages. Options: strategy (auto, extractive,
        standard, attributed, cove), k, budget, where, mode, llm (an LLM or ``PROVIDER[:MODEL]``)."""
        from .generate.answering import ask

        return ask(self, question, **options)

    def ask_stream(self, question: str, **options: Any) -> Iterator[str | Answer]:
        """Like ``ask``, yielding the answer's text in pieces as it is generated, then the Answer."""
        from .generate.answering import ask_stream

        return ask_stream(self, question, **options)

    def pipeline(self, mode: str | None = None) -> Pipeline:
        """The search pipeline for a preset name (None: the configured pipeline), built once."""
        settings = self.config.search
        key = mode or ("" if settings.pipeline is not None else settings.mode)
        if key not in self._pipelines:
            if key:
                self._pipelines[key] = build_pipeline(preset=key, custom_presets=settings.presets)
            else:
                self._pipelines[key] = build_pipeline(settings.pipeline)
        return self._pipelines[key]

    def search_context(self) -> SearchContext:
        """What the pipeline's steps may use; models loaded by a step are kept for the next search."""
        return SearchContext(self.store, lambda: self.embedder, self.config, self._components,
                             lambda text: self._cache.query_vector(text, self.embedder.embed_query))

    def clamp_k(self, k: int | None) -> int:
        settings = self.config.search
        if k is None:
            k = settings.k
        clamped = min(max(int(k), settings.k_min), settings.k_max)
        if clamped != k:
            warnings.warn(
                f"k={k} is outside the allowed range {settings.k_min}..{settings.k_max}; using k={clamped}",
                RagloomWarning, stacklevel=3,
            )
        return clamped

    def _audit(self, result: SearchResult, k_requested: int | None, pipeline: Pipeline) -> None:
        settings = self.config.search
        plan = result.plan
        parameters = {
            "k_requested": k_requested, "min_score": plan.min_score, "fusion": settings.fusion,
            "alpha": settings.alpha, "rrf_k": settings.rrf_k, "candidates": settings.candidates,
            "pipeline": pipeline.steps,
        }
        if plan.text != plan.original:
            parameters["query_text"] = plan.text
        if self.store.read_only:
            if not self._warned_read_only:
                warnings.warn(
                    f"the index at {self.path} is open read-only; searches are not written to its audit log",
                    RagloomWarning, stacklevel=3,
                )
                self._warned_read_only = True
            return
        info = self.store.embedder_info() or {}
        self.store.log_search(AuditEntry(
            query=plan.original, mode=pipeline.name, k=plan.k, filters=dict(plan.where), parameters=parameters,
            hits=[{"rank": h.rank, "chunk_id": h.chunk_id, "score": h.score, "source": h.source} for h in result.hits],
            elapsed_ms=result.elapsed_ms, created_at=time.time(), embedder=str(info.get("model_id", "")),
        ))

    # -- reporting ---------------------------------------------------------------------------------
    def stats(self) -> IndexStats:
        info = self.store.embedder_info() or {}
        sources = self.store.list_sources()
        return IndexStats(
            path=str(self.path), sources=len(sources), chunks=self.store.count(),
            embedder=str(info.get("model_id", "(none yet)")), dimension=int(info.get("dimension", 0)),
            store=self.config.store.backend, disk_bytes=self.store.disk_bytes(),
            chunking_policy=", ".join(sorted({s.policy for s in sources if s.policy})),
        )

    def sources(self) -> list[SourceRecord]:
        return self.store.list_sources()

    def audit(self, last: int = 10) -> list[AuditEntry]:
        return self.store.recent_searches(_audit_limit(last))

    def audit_events(
        self, last: int = 10, kinds: Sequence[str] | None = None, exclude: Sequence[str] = ()
    ) -> list[AuditEvent]:
        """The newest entries of the audit log (searches and writes), newest first."""
        return self.store.audit_events(_audit_limit(last), kinds, exclude)

    def verify_audit(self) -> ChainReport:
        """Check the audit log's hash chain; the report names the first broken entry."""
        return self.store.verify_audit()


def _audit_limit(last: int) -> int:
    if last < 1:
        raise UsageError(f"last={last}: ask for at least one audit entry")
    return min(last, 2**62)  # SQLite integers are 64-bit


def _chunks_of(pending: Sequence[_Pending]) -> list[Chunk]:
    return [chunk for item in pending for chunk in item.chunks]


def check_same_embedder(recorded: Mapping[str, Any], embedder: Embedder, path: Path) -> None:
    # Compare names first: learning a remote model's dimension may need a request.
    same = recorded.get("model_id") == embedder.model_id and int(recorded.get("dimension", 0)) == embedder.dimension
    if not same:
        configured = embedder.model_id
        if recorded.get("model_id") == embedder.model_id:
            configured += f" returning {embedder.dimension}-d vectors"
        raise ModelMismatchError(
            f"the index at {path} was built with {recorded.get('model_id')} ({recorded.get('dimension')}-d vectors), "
            f"but the configured embedder is {configured}. Use the same embedder, "
            "or ingest into a new index directory (--index DIR)."
        )


def set_aside_index(folder: str | Path) -> Path | None:
    """Move a (damaged) index folder aside, to ``<folder>.damaged-<time>``, so the next ingest
    builds it anew; return where it went, or None when there was nothing there.

    A Chroma or Qdrant *server* collection is not touched: only the local files move.
    """
    folder = Path(folder).expanduser()
    if not folder.exists():
        return None
    target = folder.with_name(f"{folder.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
    with exclusive_write_lock(folder):
        folder.rename(target)
    return target


def _writable(folder: Path) -> bool:
    """Whether this user may write the index folder and the files in it."""
    if not os.access(folder, os.W_OK):
        return False
    catalogs = [*folder.glob("ragloom.sqlite"), *folder.glob("*/ragloom.sqlite")]
    return all(os.access(entry, os.W_OK) and os.access(entry.parent, os.W_OK) for entry in catalogs)


def _is_under(path: str, folder: str) -> bool:
    return path.startswith(folder.rstrip(os.sep) + os.sep)


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
