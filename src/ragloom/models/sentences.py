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
_REGEX_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+|\n[ \t\r]*\n\s*")


def paragraph_ranges(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Stripped ranges of the paragraphs (separated by blank lines) in ``text[start:end]``."""
    return _ranges_between(text, start, end, _BLANK_LINES)


def sentence_ranges(text: str, start: int, end: int, splitter: str) -> list[tuple[int, int]]:
    """Stripped ranges of the sentences in ``text[start:end]``; ``splitter`` is punkt or regex."""
    if splitter == "punkt":
        tokenizer = _punkt()
        ranges = ((start + s, start + e) for s, e in tokenizer.span_tokenize(text[start:end]))
        return [r for r in (strip_span(text, s, e) for s, e in ranges) if r[1] > r[0]]
    return _ranges_between(text, start, end, _REGEX_SENTENCE_END, keep_separator=True)


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
