"""Recursive splitting to a token budget, with overlap (the default chunker's method).

Below the chunker interface so that the chunkers, their units and the fitting of an
oversize span to the embedder's input all use it without importing each other.
"""

from __future__ import annotations

import re

import numpy as np

from ...models.sentences import strip_span
from ._tokens import TokenMeter, left_index, position_dtype, right_index

#: Separators from strongest to weakest; a cut falls at the position each match gives.
_SEPARATORS: tuple[tuple[re.Pattern[str], bool], ...] = (
    (re.compile(r"\n[ \t\r]*\n"), False),  # paragraph break: cut before it
    (re.compile(r"\n"), False),  # line break
    (re.compile(r"[.!?][\"')\]]*(?=\s)"), True),  # sentence end: cut after it
    (re.compile(r"\s+"), False),  # between words
)
#: Number of separator levels that start a sentence or line (preferred overlap starts).
_STRONG_LEVELS = 3
#: A chunk is not cut before this fraction of its window, so a heading or a short
#: paragraph at the start of the window does not become a chunk of its own.
_MIN_FILL = 0.25


def split_recursive(meter: TokenMeter, start: int, end: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Stripped ``(start, end)`` ranges of ``meter.text[start:end]``, each at most ``size`` tokens."""
    text = meter.text
    start, end = strip_span(text, start, end)
    cuts = [_cut_positions(pattern, after, text, start, end) for pattern, after in _SEPARATORS[:-1]]
    breaks = meter.word_breaks(start, end)  # the last level, found already by the meter
    cuts.append(breaks if breaks is not None else _cut_positions(*_SEPARATORS[-1], text, start, end))
    ranges: list[tuple[int, int]] = []
    position, previous_end = start, start
    while position < end:
        limit = meter.limit(position, size)
        if limit >= end:
            ranges.append(strip_span(text, position, end))
            break
        floor = max(position + int((limit - position) * _MIN_FILL), previous_end)
        cut = max(_last_cut(cuts, floor, limit), position + 1)
        ranges.append(strip_span(text, position, cut))
        previous_end = cut
        position = _skip_space(text, _overlap_start(meter, cuts, position, cut, overlap), end)
    return [(s, e) for s, e in ranges if e > s]


def _cut_positions(pattern: re.Pattern[str], after: bool, text: str, start: int, end: int) -> np.ndarray:
    # An array, not a list of ints: a long single-line file has millions of word breaks.
    matches = pattern.finditer(text, start, end)
    return np.fromiter((m.end() if after else m.start() for m in matches), dtype=position_dtype(text))


def _last_cut(cuts: list[np.ndarray], floor: int, limit: int) -> int:
    """The last cut in (floor, limit] of the strongest level that has one; else ``limit``."""
    for positions in cuts:
        index = right_index(positions, limit) - 1
        if index >= 0 and positions[index] > floor:
            return int(positions[index])
    return limit


def _overlap_start(meter: TokenMeter, cuts: list[np.ndarray], start: int, cut: int, overlap: int) -> int:
    """Where the chunk after ``text[start:cut]`` begins, reaching back ``overlap`` tokens."""
    if overlap <= 0:
        return cut
    earliest = max(meter.back_limit(cut, overlap), start + 1)
    if earliest >= cut:
        return cut
    for levels in (cuts[:_STRONG_LEVELS], cuts[_STRONG_LEVELS:]):
        candidates = [_first_at_or_after(positions, earliest) for positions in levels]
        found = [c for c in candidates if c is not None and c < cut]
        if found:
            return min(found)
    return earliest


def _first_at_or_after(positions: np.ndarray, floor: int) -> int | None:
    index = left_index(positions, floor)
    return int(positions[index]) if index < len(positions) else None


def _skip_space(text: str, position: int, end: int) -> int:
    while position < end and text[position].isspace():
        position += 1
    return position
