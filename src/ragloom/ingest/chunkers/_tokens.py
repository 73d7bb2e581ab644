"""Token arithmetic over character ranges of one document.

With the tokenizer's offsets (computed once per document) counting the tokens of any
range is a binary search, so chunkers can try as many boundaries as they like. Without
them, ranges are counted with ``count_tokens`` and the searches fall back to bisection
over character positions.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable

from .base import TokenCounter, TokenOffsets

_WORD = re.compile(r"\w")


class TokenMeter:
    def __init__(self, text: str, count_tokens: TokenCounter, token_offsets: TokenOffsets | None) -> None:
        self.text = text
        self._count_tokens = count_tokens
        offsets = token_offsets(text) if token_offsets is not None else None
        if offsets is not None and _truncated(text, offsets):
            offsets = None
        self._starts = [start for start, _ in offsets] if offsets is not None else None
        self._ends = [end for _, end in offsets] if offsets is not None else None
        self._cache: dict[tuple[int, int], int] = {}

    def count(self, start: int, end: int) -> int:
        """Tokens in ``text[start:end]``."""
        if end <= start:
            return 0
        if self._starts is not None and self._ends is not None:
            return max(0, bisect_right(self._ends, end) - bisect_left(self._starts, start))
        key = (start, end)
        if key not in self._cache:
            self._cache[key] = self._count_tokens(self.text[start:end])
        return self._cache[key]

    def limit(self, start: int, budget: int) -> int:
        """The furthest end such that ``text[start:end]`` holds at most ``budget`` tokens."""
        if self._starts is not None:
            first = bisect_left(self._starts, start)
            return self._starts[first + budget] if first + budget < len(self._starts) else len(self.text)
        return _largest(lambda end: self.count(start, end) <= budget, start, len(self.text))

    def back_limit(self, end: int, budget: int) -> int:
        """The earliest start such that ``text[start:end]`` holds at most ``budget`` tokens."""
        if budget <= 0:
            return end
        if self._starts is not None and self._ends is not None:
            first = bisect_right(self._ends, end) - budget
            return self._starts[first] if first > 0 else 0
        return end - _largest(lambda width: self.count(end - width, end) <= budget, 0, end)


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


def strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` moved inwards past leading and trailing whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end
