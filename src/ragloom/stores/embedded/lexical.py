"""BM25 over chunk texts with tantivy.

English analysis: simple tokenizer, lower-casing, English stop words, Porter-style
stemming. The index is a derived cache of SQLite, stamped with the generation it has
caught up with; a stale or damaged index is rebuilt from SQLite.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import weakref
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import tantivy

from ...errors import DiskFullError
from ...types import Chunk
from ..base import Candidate
from ..derived import is_damage, warn_rebuilding
from .identifiers import camel_parts, identifiers

ANALYZER = "ragloom_en"
#: The most distinct terms of one query that BM25 scores: a 16,000-character request has about a
#: thousand; past that, the rest of a pasted text adds cost, not ranking.
MAX_QUERY_TERMS = 1024
#: Files tantivy writes readable by their owner only; other users who may read the index need them.
_PRIVATE_FILES = ("meta.json", ".managed.json")


def english_analyzer() -> tantivy.TextAnalyzer:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stopword("english"))
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field("row", stored=False, indexed=True, fast=True)
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("source", stored=False, tokenizer_name="raw")
    builder.add_text_field("text", stored=False, tokenizer_name=ANALYZER, index_option="freq")
    builder.add_text_field(IDENTIFIER_FIELD, stored=False, tokenizer_name="raw", index_option="freq")
    return builder.build()


def _document(row: int, chunk: Chunk) -> tantivy.Document:
    document = tantivy.Document()
    document.add_unsigned("row", int(row))
    document.add_text("id", chunk.id)
    document.add_text("source", chunk.source)
    document.add_text("text", chunk.text)
    add_identifiers(document, chunk.text)
    return document


#: The field holding each chunk's identifiers whole (``identifiers.py``).
IDENTIFIER_FIELD = "ident"


def add_identifiers(document: tantivy.Document, text: str) -> None:
    """A chunk's identifiers, whole, in their own field; its camelCase words' parts beside its text."""
    for identifier in identifiers(text):
        document.add_text(IDENTIFIER_FIELD, identifier)
    parts = camel_parts(text)
    if parts:
        document.add_text("text", parts)


def identifier_clauses(schema: tantivy.Schema, query: str, analyzer: tantivy.TextAnalyzer,
                       ) -> list[tuple[tantivy.Occur, tantivy.Query]]:
    """Clauses that find a query's identifiers whole, and the parts of its camelCase words."""
    clauses = [(tantivy.Occur.Should, tantivy.Query.term_query(schema, IDENTIFIER_FIELD, term))
               for term in identifiers(query)]
    parts = camel_parts(query)
    clauses += [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "text", term))
                for term in dict.fromkeys(analyzer.analyze(parts))] if parts else []
    return clauses


def _nearly_full(folder: Path) -> bool:
    """Whether the disk holding ``folder`` has less than a megabyte left."""
    try:
        return shutil.disk_usage(folder).free < 1_000_000
    except OSError:
        return False


def _share_like(model: Path, files: Sequence[Path]) -> None:
    """Give ``files`` the permissions of ``model`` (a file written with the user's umask)."""
    try:
        mode = stat.S_IMODE(model.stat().st_mode)
        for file in files:
            if file.exists():
                os.chmod(file, mode)
    except OSError:  # not ours to change: readers who cannot read it rebuild BM25 in memory
        pass


class LexicalIndex:
    """A tantivy index of (row, chunk id, source, text)."""

    def __init__(self, folder: Path, threads: int = 0, read_only: bool = False) -> None:
        self.folder = folder
        self.threads = threads or min(2, os.cpu_count() or 1)
        self.read_only = read_only
        #: Built in memory (a read-only index whose files are missing or damaged): never saved.
        self.in_memory = False
        self._memory_generation = -1
        self._analyzer = english_analyzer()
        self._writer: tantivy.IndexWriter | None = None
        self._dirty = False
        #: Where the files were copied to be read without a lock (``_open_unlocked``), if they were.
        self._copy: Path | None = None
        self.index = self._open()

    def _open(self) -> tantivy.Index:
        schema = _schema()
        self.schema = schema
        if self.read_only:
            try:
                index = self._open_unlocked()
            except BaseException as exc:  # missing or damaged (tantivy may panic): rebuilt in memory
                if not is_damage(exc):
                    raise
                if (self.folder / "meta.json").exists():
                    warn_rebuilding(f"the BM25 index at {self.folder}", exc)
                return self._in_memory()
            index.register_tokenizer(ANALYZER, self._analyzer)
            return index
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            index = tantivy.Index(schema, path=str(self.folder), reuse=True)
        except BaseException as exc:
            if not is_damage(exc):
                raise
            # Damaged or from an incompatible schema: it is only a cache, start afresh.
            warn_rebuilding(f"the BM25 index at {self.folder}", exc)
            self._clear_folder()
            index = tantivy.Index(schema, path=str(self.folder), reuse=False)
        index.register_tokenizer(ANALYZER, self._analyzer)
        return index

    def _open_unlocked(self) -> tantivy.Index:
        """The index on disk, for reading. Tantivy takes a lock file to open one, which this user
        cannot create in a folder they may not write (another user's index, a read-only mount):
        then a private copy of the files is opened instead, which needs no lock where it lies."""
        try:
            return tantivy.Index.open(str(self.folder))
        except ValueError as exc:
            if "Lockfile" not in str(exc) or not (self.folder / "meta.json").is_file():
                raise
        self._copy = Path(tempfile.mkdtemp(prefix="ragloom-bm25-"))
        weakref.finalize(self, shutil.rmtree, self._copy, True)
        # meta.json first: the segments it names outlive it, so a commit meanwhile cannot strand it.
        for name in ["meta.json", *sorted(os.listdir(self.folder))]:
            if not name.startswith(".tantivy-") and not (self._copy / name).exists():
                shutil.copyfile(self.folder / name, self._copy / name)
        return tantivy.Index.open(str(self._copy))

    def _in_memory(self) -> tantivy.Index:
        self.in_memory = True
        self._memory_generation = -1
        index = tantivy.Index(self.schema)
        index.register_tokenizer(ANALYZER, self._analyzer)
        return index

    def _clear_folder(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True, exist_ok=True)

    def reset(self, in_memory: bool = False) -> None:
        """Throw the index away (it is damaged): start an empty one on disk, or in memory
        when this process may not write the folder. ``rebuild`` fills it."""
        self.close()
        if in_memory or self.read_only:
            self.index = self._in_memory()
            return
        self.in_memory = False
        self._clear_folder()
        self.index = tantivy.Index(self.schema, path=str(self.folder), reuse=False)
        self.index.register_tokenizer(ANALYZER, self._analyzer)

    # -- generation stamp -------------------------------------------------------------------
    def generation(self) -> int:
        if self.in_memory:
            return self._memory_generation
        try:
            return int(json.loads((self.folder / "ragloom-state.json").read_text())["generation"])
        except (OSError, ValueError, KeyError):
            return -1

    def _stamp(self, generation: int) -> None:
        if self.in_memory:
            self._memory_generation = generation
            return
        tmp = self.folder / "ragloom-state.tmp"
        tmp.write_text(json.dumps({"generation": generation}))
        os.replace(tmp, self.folder / "ragloom-state.json")
        _share_like(self.folder / "ragloom-state.json", [self.folder / name for name in _PRIVATE_FILES])

    # -- writing ------------------------------------------------------------------------------
    def _w(self) -> tantivy.IndexWriter:
        if self._writer is None:
            self._writer = self.index.writer(heap_size=128_000_000, num_threads=self.threads)
        return self._writer

    def replace_source(self, source: str, rows_and_chunks: Iterable[tuple[int, Chunk]]) -> None:
        writer = self._w()
        writer.delete_documents_by_term("source", source)
        for row, chunk in rows_and_chunks:
            writer.add_document(_document(row, chunk))
        self._dirty = True

    def delete_source(self, source: str) -> None:
        self._w().delete_documents_by_term("source", source)
        self._dirty = True

    def rebuild(self, rows_and_chunks: Iterable[tuple[int, Chunk]], generation: int) -> None:
        writer = self._w()
        writer.delete_all_documents()
        for row, chunk in rows_and_chunks:
            writer.add_document(_document(row, chunk))
        self._dirty = True
        self.commit(generation)

    def commit(self, generation: int) -> None:
        """Make writes visible and record that the index has caught up with ``generation``."""
        if self._dirty and self._writer is not None:
            try:
                self._writer.commit()
            except ValueError:  # "an index writer was killed": tantivy does not say that the disk is full
                if _nearly_full(self.folder):
                    raise DiskFullError(f"the BM25 index at {self.folder}") from None
                raise
            self._writer.wait_merging_threads()
            self._writer = None
            self._dirty = False
            self.index.reload()
        self._stamp(generation)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.rollback()
            self._writer = None

    # -- searching ---------------------------------------------------------------------------
    def terms(self, query: str) -> list[str]:
        """The query's distinct terms, in order, at most ``MAX_QUERY_TERMS`` (a pasted page stays cheap)."""
        return list(self.term_weights(query))

    def term_weights(self, query: str) -> dict[str, int]:
        """Each distinct term of the query (as ``terms``) with how often the query says it: a
        term said twice counts twice, as in BM25's sum over the query's words (Lucene, bm25s)."""
        counts = Counter(self._analyzer.analyze(query))
        return {term: counts[term] for term in list(counts)[:MAX_QUERY_TERMS]}

    def query_of(self, query: str) -> tantivy.Query:
        """The BM25 query of ``query``'s words, each weighted by how often it is said, and of its
        identifiers (``identifier_clauses``)."""
        return tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, _weighted(tantivy.Query.term_query(self.schema, "text", t), w))
             for t, w in self.term_weights(query).items()]
            + identifier_clauses(self.schema, query, self._analyzer)
        )

    def search(self, query: str, k: int, allowed_rows: Sequence[int] | None = None) -> list[Candidate]:
        """BM25 top ``k`` (plus ties at the k-th score); ``allowed_rows`` (ascending) restricts the rows."""
        if not self.terms(query) or k <= 0:
            return []
        text_query = self.query_of(query)
        searcher = self.index.searcher()
        if allowed_rows is None:
            hits = _top(searcher, text_query, k)
        else:
            allowed = np.asarray(allowed_rows, dtype=np.int64)
            if len(allowed) == 0:
                return []
            hits = _top_over_fetched(searcher, text_query, k, allowed)
            if hits is None:
                hits = _top(searcher, _restricted(self.schema, text_query, allowed), k)
        candidates = [Candidate(searcher.doc(address)["id"][0], float(score)) for score, address in hits]
        candidates.sort(key=lambda c: (-c.score, c.chunk_id))
        return candidates[:k]


# A filtered search first fetches the unfiltered top hits and keeps the allowed ones; measured
# at 100k chunks (10% filter, k=100) that costs ~1.7 ms where tantivy's term-set clause over the
# allowed rows costs ~9 ms. Fetching more than this many hits costs more than the clause does
# (a filter keeping ~1% of the rows), so such selective filters go to the clause instead.
OVER_FETCH_LIMIT = 10_000


def _weighted(query: tantivy.Query, weight: int) -> tantivy.Query:
    return query if weight == 1 else tantivy.Query.boost_query(query, float(weight))


def _top(searcher: tantivy.Searcher, query: tantivy.Query, k: int) -> list[tuple[float, tantivy.DocAddress]]:
    limit = k + 16
    while True:
        hits = searcher.search(query, limit, count=False).hits
        # Widen the window until the k-th score has no tied neighbours cut off.
        if len(hits) < limit or len(hits) <= k or hits[-1][0] < hits[k - 1][0]:
            return hits
        limit *= 4


def _top_over_fetched(
    searcher: tantivy.Searcher, query: tantivy.Query, k: int, allowed: np.ndarray, limit: int = 0
) -> list[tuple[float, tantivy.DocAddress]] | None:
    """The allowed rows' top ``k`` (and ties) out of the unfiltered ranking, fetching twice the
    hits the filter's share predicts and widening until k pass; None when that needs too many."""
    if not hasattr(searcher, "fast_field_values"):  # older tantivy-py
        return None
    share = len(allowed) / max(searcher.num_docs, 1)
    limit = limit or int(2 * (k + 16) / share) + 1
    while limit <= OVER_FETCH_LIMIT:
        hits = searcher.search(query, limit, count=False).hits
        rows = np.asarray(searcher.fast_field_values("row", [address for _, address in hits]), dtype=np.int64)
        found = np.clip(np.searchsorted(allowed, rows), 0, len(allowed) - 1)
        kept = [hit for hit, ok in zip(hits, allowed[found] == rows) if ok]
        # Done when the ranking is exhausted, or k passed and nothing unfetched can tie the k-th.
        if len(hits) < limit or (len(kept) >= k and hits[-1][0] < kept[k - 1][0]):
            return kept
        limit *= 4
    return None


def _restricted(schema: tantivy.Schema, text_query: tantivy.Query, allowed: np.ndarray) -> tantivy.Query:
    row_filter = tantivy.Query.term_set_query(schema, "row", [int(r) for r in allowed])
    # A zero-weight filter clause: it selects rows without adding to the BM25 score.
    return tantivy.Query.boolean_query(
        [(tantivy.Occur.Must, text_query), (tantivy.Occur.Must, tantivy.Query.const_score_query(row_filter, 0.0))]
    )
