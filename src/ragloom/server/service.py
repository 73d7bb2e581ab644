"""One index served to many callers at once: a pool of readers and a single writer.

An ``Index`` holds one SQLite connection and in-memory copies of the derived indexes, so it
is used by one thread at a time. Searches take a reader from a pool (each reader is its own
``Index`` on the same directory, sharing the embedder); ingest and removal go through one
writer ``Index`` behind a lock, on the ingest worker's thread. SQLite's WAL lets readers
read while the writer commits one source at a time; the index's write lock
(``write.lock``, a per-open-file ``flock``) also tells the readers in this process that a
writer is active, so they never rewrite the derived files under it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from .. import errors
from ..config import Config
from ..context import Context
from ..display import DisplayPaths
from ..errors import ConfigError, IndexLockedError, QueryError, UnknownComponentError
from ..index import Index
from ..models.llm import llm_unavailable
from ..retrieve.pipeline import PRESETS, preset_names, preset_needs_llm
from ..stores.base import AuditEntry
from ..types import Answer, Hit, IndexStats, SourceRecord
from .highlight import matched_spans, query_terms
from .schemas import BLANK, PlanModel, SearchResponse, TraceModel, context_model, hit_model, source_id

#: One lock per loaded LLM (``shared_llm`` builds one per process): a llama.cpp model is not
#: thread-safe, so answers needing it run one at a time; extractive answers run in parallel.
_LLM_LOCKS: dict[int, threading.Lock] = {}
_LLM_LOCKS_GUARD = threading.Lock()


def llm_lock(model: object) -> threading.Lock:
    with _LLM_LOCKS_GUARD:
        return _LLM_LOCKS.setdefault(id(model), threading.Lock())


class IndexService:
    """Searches in parallel, writes one at a time; shared by the HTTP API, MCP and watch."""

    def __init__(self, config: Config, *, readers: int | None = None) -> None:
        self.config = config
        self.writer = Index.open(config.index, config, create=True)
        self.path = self.writer.path  # a server-held index's local cache folder
        self._write_lock = threading.Lock()
        embedder = self.writer.embedder  # loaded once, shared by every reader
        self._readers: queue.LifoQueue[Index] = queue.LifoQueue()
        self._all_readers: list[Index] = []
        # Qdrant's local mode lets one client open its folder: the writer also reads, one at a time.
        self._shared = config.store.backend == "qdrant" and not config.store.qdrant.url
        if self._shared:
            self._readers.put(self.writer)
        for _ in range(0 if self._shared else readers or config.server.search_threads):
            reader = Index.open(config.index, config, embedder=embedder)
            self._all_readers.append(reader)
            self._readers.put(reader)
        self.reader_count = len(self._all_readers) or 1
        self._writes = 0  # bumped after every write; a reader that saw fewer reloads its BM25 view
        self._seen: dict[int, int] = {}

    def close(self) -> None:
        for reader in self._all_readers:
            reader.close()
        with self._write_lock:
            self.writer.close()

    # -- readers ----------------------------------------------------------------------------------
    @contextmanager
    def reader(self) -> Iterator[Index]:
        """An index for this thread alone, returned to the pool afterwards."""
        index = self._readers.get()
        if self._shared:
            self._write_lock.acquire()
        try:
            writes = self._writes
            if self._seen.get(id(index)) != writes:
                # A search right after an ingest sees its chunks on the lexical side too (the
                # embedded store's tantivy readers reload on their own only after a delay).
                index.store.show_latest_writes()
                self._seen[id(index)] = writes
            yield index
        finally:
            if self._shared:
                self._write_lock.release()
            self._readers.put(index)

    def search(
        self, query: str, k: int | None = None, *, where: Mapping[str, Any] | None = None, mode: str | None = None,
        explain: bool = False,
    ) -> SearchResponse:
        started = time.perf_counter()
        settings = self.config.search
        self._check_query(query, mode)
        # Index.search reports these through warnings.warn, which threads serving many requests
        # cannot catch per request (catch_warnings is process-wide): they go into the response.
        notes: list[str] = []
        k_used = settings.k if k is None else min(max(k, settings.k_min), settings.k_max)
        if k is not None and k_used != k:
            notes.append(f"k={k} is outside the allowed range {settings.k_min}..{settings.k_max}; using k={k_used}")
        with self.reader() as index:
            if index.store.count() == 0 and query.strip():
                notes.append("the index is empty; add documents with POST /v1/ingest or `ragloom ingest PATH`")
                result = None
            else:
                with mode_available(mode):
                    result = index.retrieve(query, k_used, where=where, mode=mode)  # checks the query and filter
                notes.extend(result.warnings)
            shown = index.display_paths()
        terms = query_terms(query)
        hits: list[Hit] = result.hits if result is not None else []
        response = SearchResponse(
            query=query, mode=result.plan.preset if result is not None else (mode or settings.mode), k=k_used,
            took_ms=(time.perf_counter() - started) * 1000,
            hits=[hit_model(hit, matched_spans(hit.text, terms), shown) for hit in hits], warnings=notes,
        )
        if explain and result is not None:
            response.plan = PlanModel.model_validate(result.plan, from_attributes=True)
            response.trace = [TraceModel.model_validate(step, from_attributes=True) for step in result.trace]
        return response

    # -- answers ------------------------------------------------------------------------------------
    def context(
        self, question: str, *, budget: int | None = None, k: int | None = None,
        where: Mapping[str, Any] | None = None, mode: str | None = None,
    ) -> Any:
        """The numbered, budgeted context for ``question`` as its response model (``ContextModel``)."""
        self._check_query(question, mode)
        with self.reader() as index:
            with mode_available(mode):
                context = index.context(question, budget=budget, k=k, where=where, mode=mode)
            shown = index.display_paths()
        return context_model(context, self.highlighter(question), shown)

    def ask_stream(
        self, question: str, *, strategy: str | None = None, k: int | None = None, budget: int | None = None,
        where: Mapping[str, Any] | None = None, mode: str | None = None, history: list[Any] | None = None,
        sources_first: bool = False,
    ) -> Iterator[str | Context | Answer]:
        """``Index.ask_stream`` on a reader; an answer that needs the LLM holds its lock throughout.
        ``sources_first``: the numbered Context comes first, as soon as it is built.

        Close the generator when abandoning it early: that returns the reader and the LLM.
        """
        from ..generate import answering
        from ..generate.answering import choose
        from ..generate.strategies import strategy_names

        self._check_query(question, mode)
        wanted = strategy or self.config.answer.strategy
        if wanted != "auto" and wanted not in strategy_names():
            raise UnknownStrategyError(
                f"no answer strategy named {wanted!r}; choose one of: auto, {', '.join(strategy_names())}")
        with self.reader() as index:
            try:
                name, model = choose(index.config, wanted, None)
            except ConfigError as exc:  # the strategy needs an LLM this server does not have
                raise LLMUnavailableError(str(exc)) from exc
            guard: AbstractContextManager[Any] = llm_lock(model) if model is not None else nullcontext()
            empty = index.store.count() == 0
            with guard, mode_available(mode):
                # With the sources first: the numbered context as soon as it is built, then the answer.
                pieces = answering.ask_stream(index.answer_services(), question, strategy=name, llm=model, k=k,
                                              budget=budget, where=where, mode=mode, history=history,
                                              context_first=sources_first)
                for piece in pieces:
                    if isinstance(piece, Answer) and empty:  # said per answer, not through warnings.warn
                        piece.warnings.append(
                            "the index is empty; add documents with POST /v1/ingest or `ragloom ingest PATH`")
                    yield piece

    def runnable_strategies(self) -> list[str]:
        """The answer strategies this server can run: extractive always, the others with a usable LLM."""
        from ..generate.answering import choose
        from ..generate.strategies import strategy_names

        runnable = []
        with self.reader() as index:
            for name in strategy_names():
                try:
                    choose(index.config, name, None)
                except ConfigError:
                    continue
                runnable.append(name)
        return runnable

    def ask(self, question: str, **options: Any) -> Answer:
        answer = None
        for piece in self.ask_stream(question, **options):
            if isinstance(piece, Answer):
                answer = piece
        assert answer is not None, "ask_stream ended without an Answer"
        return answer

    @staticmethod
    def highlighter(question: str) -> Any:
        terms = query_terms(question)
        return lambda text: matched_spans(text, terms)

    def _check_query(self, query: str, mode: str | None = None) -> None:
        """What the OpenAPI document promises of a query before anything runs: not blank (in JSON
        Schema's sense of white space and Python's alike), not too long, and a ``mode`` this server
        can run (an unknown one is a 422; one needing an LLM it cannot use, a 503 at once)."""
        if not query or all(char in BLANK for char in query):
            raise QueryError("the query is empty; give some words to search for")
        if len(query) > self.config.server.max_query_chars:
            raise QueryTooLongError(
                f"the query has {len(query)} characters; the limit is {self.config.server.max_query_chars} "
                "(server.max_query_chars)"
            )
        if mode is not None:
            presets = self.config.search.presets
            if mode not in presets and mode not in PRESETS:  # whatever the index holds, even nothing
                raise UnknownComponentError("search preset", mode, preset_names(presets))
            reason = llm_unavailable(self.config.llm) if preset_needs_llm(mode, presets) else None
            if reason is not None:
                raise ModeUnavailableError(f"the search preset {mode!r} cannot run on this server: it needs an LLM, "
                                           f"and {reason}")

    def display_paths(self) -> DisplayPaths:
        """``source -> path as shown``: relative to the folder that was ingested."""
        with self.reader() as index:
            return index.display_paths()

    def stats(self) -> IndexStats:
        with self.reader() as index:
            return index.stats()

    def sources(self) -> list[SourceRecord]:
        with self.reader() as index:
            return index.sources()

    def source(self, sid: str, among: list[SourceRecord] | None = None) -> SourceRecord:
        """The source with id ``sid`` (among ``among``, by default every source); 404 if none."""
        for record in self.sources() if among is None else among:
            if source_id(record.path) == sid:
                return record
        raise UnknownSourceError(f"no source has the id {sid!r}; list them with GET /v1/sources")

    def source_text(self, sid: str) -> tuple[SourceRecord, list[Hit]]:
        """A source and its chunks in document order (as hits without scores)."""
        record = self.source(sid)
        with self.reader() as index:
            chunks, _ = index.store.export_source(record.path)
        hits = [Hit(chunk_id=c.id, text=c.text, score=0.0, rank=i, source=c.source, metadata=c.metadata)
                for i, c in enumerate(chunks, start=1)]
        return record, hits

    def audit(self, last: int) -> list[AuditEntry]:
        with self.reader() as index:
            return index.audit(last)

    # -- the writer -------------------------------------------------------------------------------
    @contextmanager
    def writing(self, wait: float | None = None) -> Iterator[Index]:
        """The writer index, held by this thread alone; IndexLockedError after ``wait`` seconds."""
        if not self._write_lock.acquire(timeout=-1 if wait is None else wait):
            raise IndexLockedError("an ingest is running on this index; try again when it has finished")
        try:
            yield self.writer
        finally:
            self._writes += 1
            self._write_lock.release()

    def remote_sources(self) -> list[dict[str, Any]]:
        """Each remote source's last sync, cursor age and error (``Index.remote_sources``)."""
        with self.reader() as index:
            return index.remote_sources()

    def remove_source(self, sid: str, wait: float = 5.0) -> list[str]:
        """Remove a source; IndexLockedError (409) after ``wait`` seconds while this process
        ingests, and at once while another process or replica does."""
        record = self.source(sid)
        with self.writing(wait) as index:
            return index.remove(record.path, wait=False)


@contextmanager
def mode_available(mode: str | None) -> Iterator[None]:
    """A preset the request asked for that this server cannot run (it needs an LLM the server has
    not): 503, the server's lack, not 500, a fault."""
    try:
        yield
    except ConfigError as exc:
        if mode is None or isinstance(exc, LLMUnavailableError):
            raise
        raise ModeUnavailableError(f"the search preset {mode!r} cannot run on this server: {exc}") from exc


class QueryTooLongError(errors.QueryTooLongError):
    """The query is longer than server.max_query_chars."""

    status, code = 422, "query_too_long"


class UnknownSourceError(QueryError, LookupError):
    """No source has the given id."""

    status, code = 404, "source_not_found"


class UnknownStrategyError(QueryError):
    """An answer strategy that does not exist."""

    status, code = 422, "unknown_strategy"


class LLMUnavailableError(ConfigError):
    """The answer strategy asked for needs an LLM, and the server's config has none usable."""

    status, code = 503, "llm_unavailable"


class ModeUnavailableError(ConfigError):
    """The search preset asked for needs something (an LLM) the server's config has not."""

    status, code = 503, "mode_unavailable"
