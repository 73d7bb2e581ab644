"""Which words of a passage match a query, as BM25 saw them (stemmed, stop words dropped)."""

from __future__ import annotations

import re
import threading
from functools import lru_cache

from ..stores.embedded.lexical import english_analyzer

# Words as tantivy's simple tokenizer cuts them: runs of letters and digits (not "_").
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_local = threading.local()


def _terms(text: str) -> tuple[str, ...]:
    # A tantivy analyzer is not shared across threads: one per thread.
    analyzer = getattr(_local, "analyzer", None)
    if analyzer is None:
        analyzer = _local.analyzer = english_analyzer()
    return tuple(analyzer.analyze(text))


@lru_cache(maxsize=50_000)
def _word_terms(word: str) -> tuple[str, ...]:
    return _terms(word)


def query_terms(query: str) -> frozenset[str]:
    """The query's BM25 terms (lower-cased, stemmed, without English stop words)."""
    return frozenset(_terms(query))


def matched_spans(text: str, terms: frozenset[str]) -> list[tuple[int, int]]:
    """(start, end) character spans of the words of ``text`` whose term is in ``terms``."""
    if not terms:
        return []
    return [
        (match.start(), match.end())
        for match in _WORD.finditer(text)
        if any(term in terms for term in _word_terms(match.group().lower()))
    ]
