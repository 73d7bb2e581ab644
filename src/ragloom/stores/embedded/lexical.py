"""BM25 over chunk texts with tantivy.

Each chunk is read by its language's analyser, in that analyser family's own field
(``lang/analysis.py``: English as always, stemmers and stop words for 18 languages, character
bigrams for Chinese and Japanese, segmented words for Thai, Unicode-aware tokens for the rest); a
query is read by every family the index holds. The index is a derived cache of SQLite, stamped
with the generation it has caught up with (and the families it holds, and what segmented their
words); a stale or damaged index is rebuilt from SQLite. Each chunk's metadata is also indexed as exact terms (``metaterms.py``),
so a tenant's equality filter is a term query inside tantivy.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import warnings
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import tantivy

from ...errors import DiskFullError, RagloomWarning
from ...lang import detect_language
from .identifiers import camel_parts, identifiers
from .metaterms import filter_terms, metadata_terms
from ...lang.analysis import FAMILIES, SEGMENTATIONS, Analyzers, english_analyzer, family_of, prepare
from ...filters import Condition
from ...types import Chunk
from ..base import Candidate
from ..derived import is_damage, warn_rebuilding

__all__ = ["LexicalIndex", "english_analyzer"]

#: The most distinct terms of one query that BM25 scores (per analyser family): a 16,000-character
#: request has about a thousand; past that, the rest of a pasted text adds cost, not ranking.
MAX_QUERY_TERMS = 1024
#: In an index of several languages, how much more a query's terms count in its own language's field.
QUERY_LANGUAGE_BOOST = 1.0
#: Files tantivy writes readable by their owner only; other users who may read the index need them.
_PRIVATE_FILES = ("meta.json", ".managed.json")


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field("row", stored=False, indexed=True, fast=True)
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("source", stored=False, tokenizer_name="raw")
    for name, family in FAMILIES.items():
        if name not in FAMILIES_AFTER_METADATA:
            builder.add_text_field(family.field, stored=False, tokenizer_name=family.analyzer_name, index_option="freq")
    builder.add_text_field(IDENTIFIER_FIELD, stored=False, tokenizer_name="raw", index_option="freq")
    # Fields added later come last, so the fields before them keep their numbers in an index
    # written before them: a reader that may not rebuild such an index queries it with this schema.
    builder.add_text_field(METADATA_FIELD, stored=False, tokenizer_name="raw", index_option="basic")
    for name in FAMILIES_AFTER_METADATA:
        family = FAMILIES[name]
        builder.add_text_field(family.field, stored=False, tokenizer_name=family.analyzer_name, index_option="freq")
    return builder.build()


#: Families whose fields came after the metadata field (Thai, once read as bigrams in `sea`).
#: A writer that opens an index without them finds another schema and rebuilds it from SQLite.
FAMILIES_AFTER_METADATA = ("th",)


def _document(row: int, chunk: Chunk) -> tuple[tantivy.Document, str]:
    """The chunk as a tantivy document, its text in its language family's field; and that family."""
    family = family_of(chunk.metadata.get("lang"))
    document = tantivy.Document()
    document.add_unsigned("row", int(row))
    document.add_text("id", chunk.id)
    document.add_text("source", chunk.source)
    document.add_text(family.field, prepare(family.name, chunk.text))
    add_identifiers(document, chunk.text)
    for term in metadata_terms(chunk.metadata):
        document.add_text(METADATA_FIELD, term)
    return document, family.name


#: The field holding each chunk's identifiers whole (``identifiers.py``).
IDENTIFIER_FIELD = "ident"
#: The field holding each chunk's metadata as ``key=value`` terms (``metaterms.py``).
METADATA_FIELD = "meta"


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


def _segmentation(families: Iterable[str]) -> dict[str, str]:
    """What cut the words of those of ``families`` that a segmenter reads (``SEGMENTATIONS``)."""
    return {family: SEGMENTATIONS[family]() for family in sorted(families) if family in SEGMENTATIONS}


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
    """A tantivy index of (row, chunk id, source, text, metadata terms)."""

    def __init__(self, folder: Path, threads: int = 0, read_only: bool = False) -> None:
        self.folder = folder
        self.threads = threads or min(2, os.cpu_count() or 1)
        self.read_only = read_only
        #: Built in memory (a read-only index whose files are missing or damaged): never saved.
        self.in_memory = False
        self._memory_generation = -1
        self._analyzers = Analyzers()
        #: The analyser families whose fields hold text (a query is read by each of them).
        self.families: set[str] = set()
        #: Whether every chunk's metadata terms are indexed (not in an index written before them).
        self.metadata_terms = False
        self._writer: tantivy.IndexWriter | None = None
        self._dirty = False
        #: Where the files were copied to be read without a lock (``_open_unlocked``), if they were.
        self._copy: Path | None = None
        self.index = self._open()
        self.generation()  # reads the families the index holds

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
            self._analyzers.register(index)
            return index
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            index = tantivy.Index(schema, path=str(self.folder), reuse=True)
        except BaseException as exc:
            if not is_damage(exc):
                raise
            # Damaged or from an incompatible schema: it is only a cache, start afresh.
            if "schema does not match" in str(exc):
                warnings.warn(f"the BM25 index at {self.folder} was written with other fields (by an earlier "
                              "ragloom); rebuilding it from the index database", RagloomWarning, stacklevel=3)
            else:
                warn_rebuilding(f"the BM25 index at {self.folder}", exc)
            self._clear_folder()
            index = tantivy.Index(schema, path=str(self.folder), reuse=False)
        self._analyzers.register(index)
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
        self._analyzers.register(index)
        return index

    def _clear_folder(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True, exist_ok=True)

    def reset(self, in_memory: bool = False) -> None:
        """Throw the index away (it is damaged): start an empty one on disk, or in memory
        when this process may not write the folder. ``rebuild`` fills it."""
        self.close()
        self.metadata_terms = False
        if in_memory or self.read_only:
            self.index = self._in_memory()
            return
        self.in_memory = False
        self._clear_folder()
        self.index = tantivy.Index(self.schema, path=str(self.folder), reuse=False)
        self._analyzers.register(self.index)

    # -- generation stamp -------------------------------------------------------------------
    def generation(self) -> int:
        if self.in_memory:
            return self._memory_generation
        try:
            state = json.loads((self.folder / "ragloom-state.json").read_text())
            generation = int(state["generation"])
        except (OSError, ValueError, KeyError, TypeError):
            return -1
        # An index stamped before families were recorded holds English text only.
        recorded = set(state.get("families", ["en"])) & set(FAMILIES)
        self.families |= recorded
        if state.get("segmentation", {}) != _segmentation(recorded):
            return -1  # its Thai was cut by another segmenter or dictionary: stale
        # Only this code writes to an index of this schema (another one is rebuilt), so every
        # chunk in an index stamped so holds its terms.
        self.metadata_terms = bool(state.get("metadata_terms"))
        return generation

    def _stamp(self, generation: int) -> None:
        self.metadata_terms = True
        if self.in_memory:
            self._memory_generation = generation
            return
        tmp = self.folder / "ragloom-state.tmp"
        state = {"generation": generation, "families": sorted(self.families), "metadata_terms": True,
                 "segmentation": _segmentation(self.families)}
        tmp.write_text(json.dumps(state))
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
        self._add(writer, rows_and_chunks)

    def delete_source(self, source: str) -> None:
        self._w().delete_documents_by_term("source", source)
        self._dirty = True

    def rebuild(self, rows_and_chunks: Iterable[tuple[int, Chunk]], generation: int) -> None:
        writer = self._w()
        writer.delete_all_documents()
        self.families = set()
        self._add(writer, rows_and_chunks)
        self.commit(generation)

    def _add(self, writer: tantivy.IndexWriter, rows_and_chunks: Iterable[tuple[int, Chunk]]) -> None:
        for row, chunk in rows_and_chunks:
            document, family = _document(row, chunk)
            writer.add_document(document)
            self.families.add(family)
        self._dirty = True

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

    def reload(self) -> None:
        """Show this process's searches the last commit now (tantivy's readers reload on their own
        only after a delay of about half a second)."""
        self.index.reload()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.rollback()
            self._writer = None

    # -- searching ---------------------------------------------------------------------------
    def terms(self, query: str) -> dict[str, list[str]]:
        """The query's distinct terms as each family the index holds reads it (English alone when
        empty), at most ``MAX_QUERY_TERMS`` each (a pasted page stays cheap)."""
        return {family: list(weights) for family, weights in self.term_weights(query).items()}

    def term_weights(self, query: str) -> dict[str, dict[str, int]]:
        """Per family, each distinct term (as ``terms``) with how often the query says it: a term
        said twice counts twice, as in BM25's sum over the query's words (Lucene, bm25s)."""
        families = sorted(self.families) or ["en"]
        found = {family: self._analyzers.term_counts(family, query) for family in families}
        return {family: dict(list(counts.items())[:MAX_QUERY_TERMS]) for family, counts in found.items() if counts}

    def query_of(self, query: str, weights: dict[str, dict[str, int]] | None = None) -> tantivy.Query:
        """One clause per (family, term), weighted by how often the query says the term; in an
        index of several families, those of the query's own language weigh ``QUERY_LANGUAGE_BOOST``
        times more; and the clauses of the query's identifiers (``identifier_clauses``)."""
        weights = self.term_weights(query) if weights is None else weights
        own = family_of(detect_language(query)[0]).name if len(weights) > 1 and QUERY_LANGUAGE_BOOST != 1.0 else None

        def clause(family: str, term: str, count: int) -> tantivy.Query:
            found = tantivy.Query.term_query(self.schema, FAMILIES[family].field, term)
            boost = count * (QUERY_LANGUAGE_BOOST if family == own else 1.0)
            return found if boost == 1.0 else tantivy.Query.boost_query(found, float(boost))

        return tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, clause(family, term, count))
             for family, counts in weights.items() for term, count in counts.items()]
            + identifier_clauses(self.schema, query, self._analyzers.english))

    def metadata_filter(self, conditions: Sequence[Condition]) -> tantivy.Query | None:
        """A clause selecting the chunks that pass ``conditions``, made of metadata terms; None when
        the index cannot answer them so (``metaterms.filter_terms``): then filter by rows."""
        clauses = filter_terms(conditions) if self.metadata_terms else None
        if not clauses:
            return None
        every = [(tantivy.Occur.Must, tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(self.schema, METADATA_FIELD, term)) for term in terms]))
            for terms in clauses]
        return tantivy.Query.boolean_query(every)

    def search(self, query: str, k: int, allowed_rows: Sequence[int] | None = None,
               conditions: Sequence[Condition] = ()) -> list[Candidate]:
        """BM25 top ``k`` (plus ties at the k-th score) among the chunks passing ``conditions``,
        answered by metadata terms where they can; else among ``allowed_rows`` (ascending, the
        rows passing them) when given."""
        weights = self.term_weights(query)  # the query is analysed once
        if not weights or k <= 0:
            return []
        text_query = self.query_of(query, weights)
        searcher = self.index.searcher()
        selected = self.metadata_filter(conditions) if conditions else None
        if conditions and selected is None and allowed_rows is None:
            raise ValueError("a filter the metadata terms cannot answer needs its allowed rows")
        if selected is not None:
            hits = _top(searcher, _only(text_query, selected), k)
        elif allowed_rows is None:
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
    return _only(text_query, tantivy.Query.term_set_query(schema, "row", [int(r) for r in allowed]))


def _only(text_query: tantivy.Query, selection: tantivy.Query) -> tantivy.Query:
    # A zero-weight filter clause: it selects chunks without adding to the BM25 score.
    return tantivy.Query.boolean_query(
        [(tantivy.Occur.Must, text_query), (tantivy.Occur.Must, tantivy.Query.const_score_query(selection, 0.0))]
    )
