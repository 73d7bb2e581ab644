"""Sentence and paragraph boundaries: Punkt (the packaged model) or a regular expression.

Chunkers, the context builder, extractive answers and RAPTOR summaries all cut text at
sentences; they share these ranges, which sit below all of them.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from punkt import PunktSentenceTokenizer

_BLANK_LINES = re.compile(r"\n[ \t\r]*\n\s*")
# A sentence ends with . ! or ? (and any closing quotes or brackets) before whitespace,
# or at a blank line.
_REGEX_SENTENCE_END = re.compile(r"[.!?\u061f][\"')\]]*\s+|\n[ \t\r]*\n\s*")
# Sentence ends that Punkt (trained on English) does not know, whatever follows them: the full-width
# 。！？ of Chinese and Japanese, the Devanagari danda । and ॥, the Arabic question mark ؟ and the
# Burmese and Khmer full stops; each with any closing quotes or brackets, and the spaces after it.
_OTHER_SENTENCE_END = re.compile("[\u3002\uff01\uff1f\u0964\u0965\u061f\u104b\u17d4]+"
                                 "[\"'\u300d\u300f\uff09)\u201d\u2019]*\\s*")


def paragraph_ranges(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Stripped ranges of the paragraphs (separated by blank lines) in ``text[start:end]``."""
    return _ranges_between(text, start, end, _BLANK_LINES)


def sentence_ranges(text: str, start: int, end: int, splitter: str) -> list[tuple[int, int]]:
    """Stripped ranges of the sentences in ``text[start:end]``; ``splitter`` is punkt or regex."""
    if splitter == "punkt":
        tokenizer = _punkt()
        ranges = ((start + s, start + e) for s, e in tokenizer.span_tokenize(text[start:end]))
        found = [r for r in (strip_span(text, s, e) for s, e in ranges) if r[1] > r[0]]
    else:
        found = _ranges_between(text, start, end, _REGEX_SENTENCE_END, keep_separator=True)
    if not _OTHER_SENTENCE_END.search(text, start, end):
        return found
    return [r for s, e in found for r in _ranges_between(text, s, e, _OTHER_SENTENCE_END, keep_separator=True)]


@lru_cache(maxsize=1)
def _punkt() -> PunktSentenceTokenizer:
    import punkt

    # "paragraph": a blank line always ends a sentence, a single newline does not.
    return punkt.tokenizer_for("english", line_breaks="paragraph", prefixes=True)


def _ranges_between(
    text: str, start: int, end: int, separator: re.Pattern[str], keep_separator: bool = False
) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    position = start
    for match in separator.finditer(text, start, end):
        ranges.append(strip_span(text, position, match.end() if keep_separator else match.start()))
        position = match.end()
    ranges.append(strip_span(text, position, end))
    return [(s, e) for s, e in ranges if e > s]


def strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` moved inwards past leading and trailing whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end
