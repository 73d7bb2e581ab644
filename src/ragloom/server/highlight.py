"""Which words of a passage match a query, as BM25 saw them (stemmed, stop words dropped), in the
query's language: its words are read by English's analyser and by its own language's; in
Chinese or Japanese text the matching character pairs are marked, in Thai text the matching words
(cut as BM25 cuts them)."""

from __future__ import annotations

import re
import threading
from functools import lru_cache

from ..lang import detect_language
from ..lang.analysis import BIGRAM_SCRIPTS, DEFAULT_FAMILY, SEGMENTED_SCRIPTS, Analyzers, family_of, word_spans

# Words as tantivy's simple tokenizer cuts them: runs of letters and digits (not "_").
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_local = threading.local()


class QueryTerms(frozenset):
    """A query's BM25 terms, and the analyser families that read it."""

    families: tuple[str, ...] = (DEFAULT_FAMILY,)

    def __new__(cls, terms: set[str], families: tuple[str, ...]) -> QueryTerms:
        made = super().__new__(cls, terms)
        made.families = families
        return made


def _terms(family: str, text: str) -> tuple[str, ...]:
    # A tantivy analyzer is not shared across threads: one set per thread.
    analyzers = getattr(_local, "analyzers", None)
    if analyzers is None:
        analyzers = _local.analyzers = Analyzers()
    return tuple(analyzers.terms(family, text))


@lru_cache(maxsize=50_000)
def _word_terms(family: str, word: str) -> tuple[str, ...]:
    return _terms(family, word)


def query_terms(query: str) -> QueryTerms:
    """The query's BM25 terms (lower-cased, stemmed, without stop words), as English and the
    query's own language read them."""
    families = tuple(dict.fromkeys([DEFAULT_FAMILY, family_of(detect_language(query)[0]).name]))
    return QueryTerms({term for family in families for term in _terms(family, query)}, families)


def matched_spans(text: str, terms: frozenset[str]) -> list[tuple[int, int]]:
    """(start, end) character spans of the words of ``text`` whose term is in ``terms`` (and, for a
    query in a language without spaces, of the character pairs or segmented words among them)."""
    if not terms:
        return []
    families = getattr(terms, "families", (DEFAULT_FAMILY,))
    worded = [family for family in families if family not in BIGRAM_SCRIPTS]
    spans = [
        (match.start(), match.end())
        for match in _WORD.finditer(text)
        if any(term in terms for family in worded if not _segmented(family, match.group())
               for term in _word_terms(family, match.group().lower()))
    ]
    for family in families:
        if family in BIGRAM_SCRIPTS:
            spans += _bigram_spans(text, terms, family)
        elif family in SEGMENTED_SCRIPTS:
            spans += _segmented_spans(text, terms, family)
    return _merged(spans) if any(f in BIGRAM_SCRIPTS or f in SEGMENTED_SCRIPTS for f in families) else spans


def _segmented(family: str, word: str) -> bool:
    """Whether ``word`` holds the script that ``family`` cuts with a segmenter (``_segmented_spans``
    reads it: Python's word pattern breaks Thai words at their vowel signs)."""
    script = SEGMENTED_SCRIPTS.get(family)
    return script is not None and re.search(f"[{script}]", word) is not None


def _segmented_spans(text: str, terms: frozenset[str], family: str) -> list[tuple[int, int]]:
    spans = []
    for run in re.finditer(f"[{SEGMENTED_SCRIPTS[family]}]+", text):
        spans += [(run.start() + start, run.start() + end) for start, end in word_spans(family, run.group())
                  if run.group()[start:end].lower() in terms]
    return spans


def _bigram_spans(text: str, terms: frozenset[str], family: str) -> list[tuple[int, int]]:
    spans = []
    for run in re.finditer(f"[{BIGRAM_SCRIPTS[family]}]+", text):
        spans += [(i, i + 2) for i in range(run.start(), run.end() - 1) if text[i : i + 2] in terms]
    return spans


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out
