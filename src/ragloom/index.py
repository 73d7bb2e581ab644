"""``Index``: the object users hold. It opens an index's parts and delegates to them.

Ingesting and removing go to the ingest runner (``ingest/runner.py``), searching to the
searcher and its pipeline (``retrieve/searcher.py``), answering to ``generate/answering.py``
and reporting to the store (``reporting.py``). None of those imports this module: each is given the parts
(``parts.py``) or the few things it needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .config import Config
from .context import Context
from .embed.base import Embedder
from .generate import answering
from .generate.conversation import Conversation, HistoryItem
from .ingest.chunkers.base import Chunker
from .ingest.loaders import LoaderOptions
from .ingest.runner import IngestProgress, IngestRunner
from .models.cross_encoder import shared_cross_encoder
from .models.llm import LLM
from .paths import PathPolicy
from .parts import Parts, check_same_embedder, open_parts, set_aside_index  # noqa: F401 - importable here
from .reporting import IndexReports
from .retrieve.base import SearchContext, SearchResult
from .retrieve.pipeline import Pipeline
from .retrieve.retrievers.basic import hybrid_search  # noqa: F401 - public: benchmarks fuse with it
from .retrieve.searcher import Searcher
from .sources import SyncReport, remote_status, spec_for, sync_remote
from .stores.base import Store
from .types import Answer, Hit, IngestReport

__all__ = ["Index", "IngestProgress", "check_same_embedder", "set_aside_index"]


class Index(IndexReports):
    """A searchable collection of documents, stored in one directory.

    Its reporting methods (``stats``, ``sources``, ``display_paths``, ``audit``, ``audit_events``,
    ``verify_audit``) come from :class:`~ragloom.reporting.IndexReports`.

    >>> index = Index.open("my-index")          # doctest: +SKIP
    >>> index.ingest(["./docs"])                # doctest: +SKIP
    >>> index.search("how do ROS 2 nodes communicate?", k=5)  # doctest: +SKIP
    """

    def __init__(self, path: Path, config: Config, store: Store, embedder: Embedder | None = None) -> None:
        self._open(Parts(path, config, store, embedder))

    def _open(self, parts: Parts) -> None:
        self.parts = parts
        self._runner = IngestRunner(parts)
        self._searcher = Searcher(parts)

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
        index = cls.__new__(cls)
        index._open(open_parts(path, config, create=create, embedder=embedder, read_only=read_only))
        return index

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.parts.close()

    # -- parts ------------------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        return self.parts.path

    @property
    def config(self) -> Config:
        return self.parts.config

    @property
    def store(self) -> Store:
        return self.parts.store

    @property
    def embedder(self) -> Embedder:
        """The embedder this index was built with (or, for a new index, the configured one)."""
        return self.parts.embedder

    def component(self, key: str, factory: Callable[[], Any]) -> Any:
        """A model or client loaded once per index (a cross-encoder, the LLM)."""
        return self.parts.component(key, factory)

    @property
    def loader_options(self) -> LoaderOptions:
        """How files are read (OCR settings), from the ``ingest`` section."""
        return self._runner.loader_options

    @property
    def chunker(self) -> Chunker:
        """The configured chunking strategy."""
        return self._runner.chunkers.for_path(None)

    def chunker_for(self, path: Path | None) -> Chunker:
        """The chunker for a file: ``chunking.by_extension`` may name another strategy."""
        return self._runner.chunkers.for_path(path)

    # -- ingest and remove ------------------------------------------------------------------------
    def ingest(
        self,
        paths: Sequence[str | Path] | str | Path,
        *,
        glob: Sequence[str] | None = None,
        progress: IngestProgress | None = None,
        policy: PathPolicy | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> IngestReport:
        """Index files and folders. Unchanged files are skipped, changed ones replaced,
        and files gone from an ingested folder are removed from the index. With a ``policy``
        (a server's door), every file is checked against its roots where it is opened;
        ``metadata`` is added to every chunk written (a server stamps a tenant's uploads)."""
        return self._runner.ingest([paths] if isinstance(paths, (str, Path)) else paths, glob, progress, policy,
                                   metadata)

    def sync(self, source: str, *, progress: IngestProgress | None = None, wait: float = 0.0,
             check: Callable[[], None] | None = None, holder: str | None = None, lease: float = 30.0) -> SyncReport:
        """Sync a remote source (a name of ``sources.remote``, or a URI: ``s3://``, ``https://``,
        ``git+https://``, ``git+file://``) into the index: new and changed items are read, items gone
        from a remote listed whole are removed. ``wait``: seconds to wait while another process or
        replica syncs it (else SourceBusyError)."""
        return sync_remote(self._runner, spec_for(source, self.config.sources), progress=progress, holder=holder,
                           lease=lease, wait=wait, check=check)

    def remote_sources(self) -> list[dict[str, Any]]:
        """Each remote source's last sync, cursor age and error (configured ones, and those synced once)."""
        state = self.store.sync_state()
        return [] if state is None else remote_status(state, self.config.sources.remote)

    def remove(self, path: str | Path, *, wait: bool = True) -> list[str]:
        """Remove a source (or every source under a folder); return the removed paths. With
        ``wait=False``, IndexLockedError at once while another process or replica writes."""
        return self._runner.remove(path, wait)

    def sources_under(self, path: str | Path) -> list[str]:
        """The indexed sources that ``path`` names: one file, or every file under a folder."""
        return self._runner.sources_under(path)

    def optimize(self) -> dict[str, object]:
        """Rebuild the store's derived indexes (the approximate vector index is retrained)."""
        with self.store.write_lock(self.path):
            return self.store.optimize()

    # -- search -----------------------------------------------------------------------------------
    def search(self, query: str, k: int | None = None, *, where: Mapping[str, Any] | None = None,
               mode: str | None = None, min_score: float | None = None) -> list[Hit]:
        """The ``k`` passages that best match ``query``, best first.

        Args:
            query: what to look for, in words (``source:cors.md`` and the like narrow it).
            k: how many hits (default ``search.k``; clamped to ``search.k_max``).
            where: a metadata filter, ``{"page": {"$gte": 2}}`` (``ragloom.filters``); a key or a
                type no stored passage has is warned about (``FilterWarning``).
            mode: a preset (``dense``, ``lexical``, ``hybrid``, ...); by default the configured
                ``search.pipeline``, or else the ``search.mode`` preset.
            min_score: leave out hits whose ``score`` (the fused rank score) is below this.
        """
        return self._searcher.retrieve(query, k, where, mode, min_score, stacklevel=2).hits

    def retrieve(self, query: str, k: int | None = None, *, where: Mapping[str, Any] | None = None,
                 mode: str | None = None, min_score: float | None = None) -> SearchResult:
        """Like ``search``, with the plan and a per-step trace (what ``--explain`` shows)."""
        return self._searcher.retrieve(query, k, where, mode, min_score)

    def pipeline(self, mode: str | None = None) -> Pipeline:
        """The search pipeline for a preset name (None: the configured pipeline), built once."""
        return self._searcher.pipeline(mode)

    def search_context(self) -> SearchContext:
        """What the pipeline's steps may use; models loaded by a step are kept for the next search."""
        return self._searcher.search_context()

    def clamp_k(self, k: int | None) -> int:
        return self._searcher.clamp_k(k, stacklevel=3)

    def cache_stats(self) -> dict[str, dict[str, int]]:
        """Hits, misses and size of this process's query-result and query-embedding caches."""
        return self._searcher.cache_stats()

    # -- answers ------------------------------------------------------------------------------------
    def context(self, question: str, *, budget: int | None = None, k: int | None = None,
                where: Mapping[str, Any] | None = None, mode: str | None = None) -> Context:
        """The numbered, token-budgeted context an LLM would get for ``question``.

        Args:
            question: the question the passages are retrieved for.
            budget: the context's size in tokens (default ``answer.budget``).
            k: passages to retrieve before the budget is applied (default ``answer.k``).
            where: a metadata filter, as for ``search``.
            mode: a search preset (default ``answer.mode``).
        """
        return answering.context_for(self.answer_services(), question, budget=budget, k=k, where=where, mode=mode)

    def ask(self, question: str, *, strategy: str | None = None, k: int | None = None, budget: int | None = None,
            where: Mapping[str, Any] | None = None, mode: str | None = None, llm: LLM | str | None = None,
            history: Sequence[HistoryItem] | None = None) -> Answer:
        """Answer ``question`` from the index, citing passages as ``[n]``.

        Args:
            question: what to answer.
            strategy: ``auto`` (the default ``answer.strategy``), ``extractive``, ``standard``,
                ``attributed`` or ``cove``.
            k: passages to retrieve (default ``answer.k``).
            budget: the context's size in tokens (default ``answer.budget``).
            where: a metadata filter, as for ``search``.
            mode: a search preset (default ``answer.mode``).
            llm: an ``LLM``, or ``PROVIDER[:MODEL]`` / a local model name, over ``llm`` in the config.
            history: the conversation's earlier ``{"role", "content"}`` messages; the question is
                made standalone with them before it is searched.
        """
        return answering.ask(self.answer_services(), question, strategy=strategy, k=k, budget=budget, where=where,
                             mode=mode, llm=llm, history=history)

    def ask_stream(self, question: str, *, strategy: str | None = None, k: int | None = None,
                   budget: int | None = None, where: Mapping[str, Any] | None = None, mode: str | None = None,
                   llm: LLM | str | None = None, history: Sequence[HistoryItem] | None = None,
                   ) -> Iterator[str | Answer]:
        """Like ``ask`` (the same keywords), yielding the answer's text in pieces as it is
        generated, then the finished ``Answer``."""
        return answering.ask_stream(self.answer_services(), question, strategy=strategy, k=k, budget=budget,
                                    where=where, mode=mode, llm=llm, history=history)

    def conversation(self, **options: Any) -> Conversation:
        """A conversation: each ``ask`` gets the earlier turns as history (follow-ups made standalone)."""
        return Conversation(self.ask_stream, dict(options))

    def answer_services(self) -> answering.AnswerServices:
        """What answering needs from this index (``generate.answering`` takes it): for callers that
        drive answering themselves, as the server does to send the sources before the answer."""
        return answering.AnswerServices(self.config, self.retrieve, lambda: self.embedder,
                                        lambda: shared_cross_encoder(self.parts), shown=self.display_paths())
