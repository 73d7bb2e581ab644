"""BM25 computed by a vector database's server: each chunk a sparse vector, IDF kept by the engine.

Qdrant's sparse vectors with the ``IDF`` modifier score a query as the sum, over the terms it
shares with a point, of ``query value x point value x idf(term)``, the IDF counted by the
engine over the collection (``ln(1 + (N - n + 0.5) / (n + 0.5))``, BM25's). A point's value for
a term is therefore BM25's term-frequency part, computed here when the chunk is written:

    tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))

with tantivy's k1 and b. ``avgdl``, the mean chunk length in terms, cannot follow the collection
(every point would change when it moves), so it is fixed when the collection gets its first
chunks: their mean length, recorded in the catalog. A query's value for a term is how often it
says it, as in the tantivy index.

Terms are read as the tantivy index reads them (``lang.analysis``): a chunk's text by its
language's family, the query by every family (terms of a family no chunk has match nothing), the
identifiers whole and the camelCase parts beside the text. The query is read by every family the
collection holds (recorded in the catalog as chunks of a new family are written), as the
tantivy index reads it by the families its fields hold. A term becomes its sparse index by
hashing ``family:term`` to 32 bits; two terms sharing an index (about one pair in 4 billion)
would add to each other's score.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable

from ..lang.analysis import FAMILIES, Analyzers, family_of
from ..types import Chunk
from .embedded.identifiers import camel_parts, identifiers

#: tantivy's BM25 parameters, so the engine's scores read like the embedded store's.
K1, B = 1.2, 0.75
#: The mean chunk length assumed before any chunk is written (a 1,000-character chunk of English).
DEFAULT_AVGDL = 150.0
#: The catalog's key for the fixed mean length.
AVGDL_META = "sparse_bm25_avgdl"
#: How a key of an identifier, read whole, begins (``id:parse_set``).
IDENTIFIER_PREFIX = "id:"
#: The catalog's key for the language families the collection's chunks are read by.
FAMILIES_META = "sparse_bm25_families"


def term_index(key: str) -> int:
    """The sparse index of a ``family:term`` key: the first 32 bits of its BLAKE2b digest."""
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=4).digest(), "little")


class SparseBM25:
    """Sparse vectors of chunks and queries (indices sorted, values as floats)."""

    def __init__(self, avgdl: float = DEFAULT_AVGDL) -> None:
        self.avgdl = max(float(avgdl), 1.0)
        self._analyzers = Analyzers()

    def chunk_terms(self, chunk: Chunk) -> Counter[str]:
        """The chunk's terms as the tantivy index holds them, with their counts."""
        family = family_of(chunk.metadata.get("lang")).name
        counts: Counter[str] = Counter()
        for term, count in self._analyzers.term_counts(family, chunk.text).items():
            counts[f"{family}:{term}"] += count
        parts = camel_parts(chunk.text)
        if parts:
            for term, count in self._analyzers.term_counts("en", parts).items():
                counts[f"en:{term}"] += count
        for identifier in identifiers(chunk.text):
            counts[f"{IDENTIFIER_PREFIX}{identifier}"] += 1
        return counts

    def length(self, chunk: Chunk) -> int:
        """The chunk's length in terms of its own family (what ``dl`` counts)."""
        family = family_of(chunk.metadata.get("lang")).name
        return sum(self._analyzers.term_counts(family, chunk.text).values())

    def document(self, chunk: Chunk) -> tuple[list[int], list[float]]:
        counts = self.chunk_terms(chunk)
        dl = self.chunk_length(counts)
        norm = K1 * (1 - B + B * dl / self.avgdl)
        weights: dict[int, float] = {}
        for key, tf in counts.items():
            index = term_index(key)
            weights[index] = weights.get(index, 0.0) + tf * (K1 + 1) / (tf + norm)
        return _sorted(weights)

    def families(self, chunks: Iterable[Chunk]) -> set[str]:
        """The families these chunks are read by."""
        return {family_of(chunk.metadata.get("lang")).name for chunk in chunks}

    def query_terms(self, text: str, families: Iterable[str] = FAMILIES, limit: int | None = None) -> dict[str, float]:
        """The query's ``family:term`` keys, read by each of ``families`` (every one by default)
        with how often it says each (at most ``limit`` terms a family), plus its identifiers and
        camelCase parts."""
        weights: dict[str, float] = {}
        for family in families:
            counts = list(self._analyzers.term_counts(family, text).items())
            for term, count in counts[:limit] if limit else counts:
                key = f"{family}:{term}"
                weights[key] = weights.get(key, 0.0) + count
        parts = camel_parts(text)
        if parts:
            for term in dict.fromkeys(self._analyzers.term_counts("en", parts)):
                weights[f"en:{term}"] = weights.get(f"en:{term}", 0.0) + 1.0
        for identifier in identifiers(text):
            key = f"{IDENTIFIER_PREFIX}{identifier}"
            weights[key] = weights.get(key, 0.0) + 1.0
        return weights

    def query(self, text: str, families: Iterable[str] = FAMILIES) -> tuple[list[int], list[float]]:
        """The query's sparse vector (``query_terms``, each key hashed to its index)."""
        weights: dict[int, float] = {}
        for key, count in self.query_terms(text, families).items():
            index = term_index(key)
            weights[index] = weights.get(index, 0.0) + count
        return _sorted(weights)

    def chunk_length(self, counts: Counter[str]) -> int:
        """A chunk's length in terms (``dl``) from its ``chunk_terms``: identifiers whole not counted."""
        return sum(n for key, n in counts.items() if not key.startswith(IDENTIFIER_PREFIX))


def mean_length(model: SparseBM25, chunks: Iterable[Chunk]) -> float:
    """The mean length in terms of ``chunks`` (``DEFAULT_AVGDL`` when there are none)."""
    lengths = [model.length(chunk) for chunk in chunks]
    return sum(lengths) / len(lengths) if lengths else DEFAULT_AVGDL


def _sorted(weights: dict[int, float]) -> tuple[list[int], list[float]]:
    indices = sorted(weights)
    return indices, [float(weights[i]) for i in indices]
