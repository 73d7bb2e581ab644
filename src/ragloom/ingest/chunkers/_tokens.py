"""Token arithmetic over character ranges of one document.

With the tokenizer's offsets (computed once per document) counting the tokens of any
range is a binary search, so chunkers can try as many boundaries as they like. Without
them, ranges are counted with ``count_tokens`` and the searches fall back to bisection
over character positions.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


TokenCounter = Callable[[str], int]
#: Character span of each token of a text (from the embedder's tokenizer), or None.
TokenOffsets = Callable[[str], "list[tuple[int, int]] | None"]


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    section_path: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    #: Text put before the span's own (a table's header, repeated in each piece of the table).
    prefix: str = ""


_WORD = re.compile(r"\w")


#: Longer texts are tokenized in pieces of about this many characters, cut at whitespace,
#: so a 50 MB single-line file never materialises the tokenizer's per-token objects at once.
TOKENIZE_PIECE_CHARS = 200_000


class TokenMeter:
    def __init__(self, text: str, count_tokens: TokenCounter, token_offsets: TokenOffsets | None) -> None:
        self.text = text
        self._count_tokens = count_tokens
        offsets = _token_offsets(text, token_offsets) if token_offsets is not None else None
        # Two integer arrays (8 bytes a token), not a list of tuples (about 200).
        self._starts = offsets[0] if offsets is not None else None
        self._ends = offsets[1] if offsets is not None else None
        self._cache: dict[tuple[int, int], int] = {}

    def count(self, start: int, end: int) -> int:
        """Tokens in ``text[start:end]``."""
        if end <= start:
            return 0
        if self._starts is not None and self._ends is not None:
            return max(0, right_index(self._ends, end) - left_index(self._starts, start))
        key = (start, end)
        if key not in self._cache:
            self._cache[key] = self._count_tokens(self.text[start:end])
        return self._cache[key]

    def limit(self, start: int, budget: int) -> int:
        """The furthest end such that ``text[start:end]`` holds at most ``budget`` tokens."""
        if self._starts is not None:
            first = left_index(self._starts, start)
            return int(self._starts[first + budget]) if first + budget < len(self._starts) else len(self.text)
        return _largest(lambda end: self.count(start, end) <= budget, start, len(self.text))

    def back_limit(self, end: int, budget: int) -> int:
        """The earliest start such that ``text[start:end]`` holds at most ``budget`` tokens."""
        if budget <= 0:
            return end
        if self._starts is not None and self._ends is not None:
            first = right_index(self._ends, end) - budget
            return int(self._starts[first]) if first > 0 else 0
        return end - _largest(lambda width: self.count(end - width, end) <= budget, 0, end)


def left_index(positions: np.ndarray, value: int) -> int:
    """``bisect_left`` on an array; the value is cast to its type, or numpy would copy the array."""
    return int(np.searchsorted(positions, positions.dtype.type(value), side="left"))


def right_index(positions: np.ndarray, value: int) -> int:
    return int(np.searchsorted(positions, positions.dtype.type(value), side="right"))


def _token_offsets(text: str, token_offsets: TokenOffsets) -> tuple[np.ndarray, np.ndarray] | None:
    """Start and end of every token of ``text``, tokenizing long texts piece by piece.

    Pieces end at whitespace, where word-piece and most other pre-tokenizers split anyway,
    so the tokens are those of the whole text. None if the tokenizer stops early.
    """
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    for begin, stop in text_pieces(text, TOKENIZE_PIECE_CHARS):
        piece = text[begin:stop]
        offsets = token_offsets(piece)
        if offsets is None or _truncated(piece, offsets):
            return None
        pairs = np.asarray(offsets, dtype=position_dtype(text)).reshape(-1, 2) + begin
        starts.append(pairs[:, 0].copy())
        ends.append(pairs[:, 1].copy())
        del offsets, pairs
    if not starts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(starts), np.concatenate(ends)


def position_dtype(text: str) -> type[np.signedinteger]:
    """The smallest integer type that holds every character position of ``text``."""
    return np.int32 if len(text) < 2**31 else np.int64


def text_pieces(text: str, size: int, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """``text[start:end]`` as consecutive ranges of about ``size`` characters, cut after whitespace.

    A range without whitespace in its last half is cut at ``size``.
    """
    end = len(text) if end is None else end
    pieces: list[tuple[int, int]] = []
    position = start
    while end - position > size:
        limit = position + size
        space = max(text.rfind(char, position + size // 2, limit) for char in " \n\t\r\f\v")
        cut = space + 1 if space >= 0 else limit
        pieces.append((position, cut))
        position = cut
    pieces.append((position, end))
    return pieces


def _largest(fits: Callable[[int], bool], low: int, high: int) -> int:
    """Largest ``x`` in [low, high] with ``fits(x)``, for a predicate true up to a point.

    Gallops up from ``low`` so that only ranges about as long as the answer are tried.
    """
    step = 256
    while True:
        probe = min(low + step, high)
        if not fits(probe):
            break
        if probe == high:
            return high
        low, step = probe, step * 2
    high = probe
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            low = middle
        else:
            high = middle
    return low


def _truncated(text: str, offsets: list[tuple[int, int]]) -> bool:
    """True when the tokenizer stopped early (a truncating tokenizer) and missed words."""
    covered = offsets[-1][1] if offsets else 0
    return _WORD.search(text, covered) is not None
