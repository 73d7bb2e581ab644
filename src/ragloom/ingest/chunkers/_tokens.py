"""Token arithmetic over character ranges of one document.

With the tokenizer's offsets (computed once per document) counting the tokens of any
range is a binary search, so chunkers can try as many boundaries as they like. Without
them, ranges are counted with ``count_tokens`` and the searches fall back to bisection
over character positions.
"""

from __future__ import annotations

import re
import weakref
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


#: Runs of non-space characters up to this long are counted whole (a cached count per distinct
#: run); longer ones (a URL, a line of minified code, text without spaces) token by token.
LONG_RUN = 24
#: Distinct runs whose counts are kept, per tokenizer, before the cache starts again.
CACHE_RUNS = 200_000
_SPACES = np.zeros(0x3001, dtype=bool)
_SPACES[[code for code in range(0x3001) if chr(code).isspace()]] = True  # every str.isspace() character
_caches: weakref.WeakKeyDictionary[Any, dict[str, int]] = weakref.WeakKeyDictionary()


class TokenMeter:
    """Token counts of ranges of ``text``.

    With the tokenizer's offsets, ``text`` is measured once, in units: each run of non-space
    characters (the tokenizer sees words alone: a BERT word piece, a SentencePiece word) weighs
    the tokens it has, counted once per distinct run and cached; a long run is split into its
    tokens. A range's count is then a difference of two cumulative sums, found by binary search,
    and a text is measured at the speed of a regular expression, whatever its layout. Without
    offsets, ranges are counted with ``count_tokens`` and searches bisect character positions.
    """

    def __init__(self, text: str, count_tokens: TokenCounter, token_offsets: TokenOffsets | None) -> None:
        self.text = text
        self._count_tokens = count_tokens
        units = _units(text, count_tokens, token_offsets) if token_offsets is not None else None
        # Integer arrays (a few bytes a unit), not lists of tuples (about 200).
        self._starts = units[0] if units is not None else None
        self._ends = units[1] if units is not None else None
        self._total = units[2] if units is not None else None  # tokens before each unit; one more at the end
        self._run_ends = units[3] if units is not None else None  # where each run of non-space text ends
        self._cache: dict[tuple[int, int], int] = {}

    def word_breaks(self, start: int, end: int) -> np.ndarray | None:
        """Where white space begins inside ``text[start:end]`` (``start`` not being white space),
        or None when this meter did not find them."""
        if self._run_ends is None:
            return None
        return self._run_ends[left_index(self._run_ends, start + 1) : left_index(self._run_ends, end)]

    def count(self, start: int, end: int) -> int:
        """Tokens in ``text[start:end]``."""
        if end <= start:
            return 0
        if self._starts is not None and self._ends is not None and self._total is not None:
            return max(0, int(self._total[right_index(self._ends, end)] - self._total[left_index(self._starts, start)]))
        key = (start, end)
        if key not in self._cache:
            self._cache[key] = self._count_tokens(self.text[start:end])
        return self._cache[key]

    def limit(self, start: int, budget: int) -> int:
        """The furthest end such that ``text[start:end]`` holds at most ``budget`` tokens."""
        if self._starts is not None and self._total is not None:
            first = left_index(self._starts, start)
            after = int(np.searchsorted(self._total, self._total[first] + budget, side="right")) - 1
            return int(self._starts[after]) if after < len(self._starts) else len(self.text)
        return _largest(lambda end: self.count(start, end) <= budget, start, len(self.text))

    def back_limit(self, end: int, budget: int) -> int:
        """The earliest start such that ``text[start:end]`` holds at most ``budget`` tokens."""
        if budget <= 0:
            return end
        if self._starts is not None and self._ends is not None and self._total is not None:
            last = right_index(self._ends, end)
            first = int(np.searchsorted(self._total, self._total[last] - budget, side="left"))
            return int(self._starts[first]) if first > 0 else 0
        return end - _largest(lambda width: self.count(end - width, end) <= budget, 0, end)


def _units(text: str, count_tokens: TokenCounter, token_offsets: TokenOffsets) -> tuple[np.ndarray, ...] | None:
    """Start, end and cumulative tokens of the units of ``text`` (see ``TokenMeter``), or None if
    the tokenizer stops early on a long run."""
    dtype = position_dtype(text)
    run_starts, run_ends = _runs(text)
    lengths = run_ends - run_starts
    weights = np.ones(len(run_starts), dtype=np.int64)
    short = np.flatnonzero(lengths <= LONG_RUN)
    for begin in range(0, len(short), _RUNS_AT_ONCE):  # a block of strings at a time, never all of them
        block = short[begin : begin + _RUNS_AT_ONCE]
        runs = [text[s:e] for s, e in zip(run_starts[block].tolist(), run_ends[block].tolist())]
        weights[block] = _run_counts(runs, count_tokens, token_offsets)
    long_runs = np.flatnonzero(lengths > LONG_RUN)
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    previous = 0
    for index in long_runs:
        starts.append(run_starts[previous:index])
        ends.append(run_ends[previous:index])
        counts.append(weights[previous:index])
        begin, stop = int(run_starts[index]), int(run_ends[index])
        offsets = _token_offsets(text[begin:stop], token_offsets)
        if offsets is None:
            return None
        starts.append(offsets[0].astype(dtype) + begin)
        ends.append(offsets[1].astype(dtype) + begin)
        counts.append(np.ones(len(offsets[0]), dtype=np.int64))
        previous = index + 1
    starts.append(run_starts[previous:])
    ends.append(run_ends[previous:])
    counts.append(weights[previous:])
    total = np.concatenate(([0], np.cumsum(np.concatenate(counts)))) if counts else np.zeros(1, dtype=np.int64)
    return (np.concatenate(starts).astype(dtype), np.concatenate(ends).astype(dtype), total.astype(np.int64),
            run_ends.astype(dtype))


#: Runs made into strings at a time, to be counted.
_RUNS_AT_ONCE = 16_384
#: Characters turned into code points at a time (bounds the memory of a long text's measuring).
_BLOCK = 262_144


def _runs(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of every maximal run of non-space characters."""
    dtype = position_dtype(text)
    space = np.empty(len(text) + 2, dtype=bool)
    space[0] = space[-1] = True
    for begin in range(0, len(text), _BLOCK):
        codes = np.frombuffer(text[begin : begin + _BLOCK].encode("utf-32-le"), dtype=np.uint32)
        space[begin + 1 : begin + 1 + len(codes)] = (codes <= 0x3000) & _SPACES[np.minimum(codes, 0x3000)]
    edges = np.flatnonzero(space[1:] != space[:-1]).astype(dtype)
    return edges[0::2], edges[1::2]


def _run_counts(runs: list[str], count_tokens: TokenCounter, token_offsets: TokenOffsets) -> np.ndarray:
    """The tokens of each run (short ones), from the cache of the tokenizer or counted now."""
    owner = getattr(count_tokens, "__self__", None)
    try:
        cache = _caches.setdefault(owner, {}) if owner is not None else {}
    except TypeError:  # an owner that takes no weak reference
        cache = {}
    distinct = dict.fromkeys(runs)
    if len(cache) + len(distinct) > CACHE_RUNS:
        cache.clear()
    missing = [run for run in distinct if run not in cache]
    if missing:
        cache.update(zip(missing, _count_runs(missing, count_tokens, token_offsets)))
    return np.fromiter((cache[run] for run in runs), dtype=np.int64, count=len(runs))


def _count_runs(runs: list[str], count_tokens: TokenCounter, token_offsets: TokenOffsets) -> list[int]:
    """Tokens of each run, by tokenizing many at once, joined by spaces (their tokens never span
    a space), and attributing each token to the run it starts in."""
    out: list[int] = []
    for begin in range(0, len(runs), 20_000):
        batch = runs[begin : begin + 20_000]
        joined = " ".join(batch)
        offsets = token_offsets(joined)
        if offsets is None:
            out.extend(count_tokens(run) for run in batch)
            continue
        token_starts = np.fromiter((s for s, _ in offsets), dtype=np.int64, count=len(offsets))
        lengths = np.fromiter((len(run) + 1 for run in batch), dtype=np.int64, count=len(batch))
        run_starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        bounds = np.searchsorted(token_starts, np.concatenate((run_starts, [len(joined) + 1])), side="left")
        out.extend(int(n) for n in np.diff(bounds))
    return out


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
