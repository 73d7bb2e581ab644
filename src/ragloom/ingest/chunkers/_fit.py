"""Cutting a chunk the embedder could not read whole into pieces that it can.

A strategy may keep a code block or a table whole, or meet text with no break in it (an
unclosed code fence, a minified line). The embedder reads only its first ``max_tokens``
tokens and drops the rest in silence, so the middle of such a chunk could never be found.
Here a chunk over the limit is cut: a table by rows, each piece repeating the table's
header; anything else by paragraphs, then lines, then sentences, then words, and inside a
word by tokens as a last resort (``split_recursive``).
"""

from __future__ import annotations

import re
from dataclasses import replace

from ._tokens import TokenMeter
from ._tokens import Span, TokenCounter
from ._split import split_recursive

_TABLE_LINE = re.compile(r"[ \t]*\|")
_DELIMITER_ROW = re.compile(r"[ \t]*\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*")
#: Tries to cut a piece to the limit: the tokens of a cut piece, counted on their own, may
#: differ from its share of the document's tokens at the edges, so each try aims lower.
_ATTEMPTS = 4


def fit_spans(meter: TokenMeter, span: Span, limit: int, count_tokens: TokenCounter) -> list[Span]:
    """``span`` as it is if its text holds at most ``limit`` tokens, else pieces that each do."""
    text = meter.text
    lines = _lines(text, span.start, span.end)
    first = next((i for i, (s, _) in enumerate(lines) if _TABLE_LINE.match(text, s)), len(lines))
    if len(lines) - first > 1 and all(_TABLE_LINE.match(text, s) for s, _ in lines[first:]):
        # A table, perhaps after its section's header: the first piece keeps what precedes it.
        pieces = _table_pieces(meter, span, lines[first:], limit, lead_start=span.start)
    else:
        pieces = [replace(span, start=s, end=e) for s, e in split_recursive(meter, span.start, span.end, limit, 0)]
    return [fitted for piece in pieces for fitted in _checked(meter, piece, limit, count_tokens)]


def _checked(meter: TokenMeter, span: Span, limit: int, count_tokens: TokenCounter) -> list[Span]:
    """``span`` cut again, each time a little shorter, until every piece counts at most ``limit``."""
    budget = limit
    for _ in range(_ATTEMPTS):
        pieces = [span] if budget == limit else [
            replace(span, start=s, end=e) for s, e in split_recursive(meter, span.start, span.end, budget, 0)
        ]
        if all(count_tokens(piece_text(meter.text, p)) <= limit for p in pieces):
            return pieces
        budget = max(1, int(budget * 0.9))
    return pieces


def piece_text(text: str, span: Span) -> str:
    return span.prefix + text[span.start : span.end]


def _table_pieces(
    meter: TokenMeter, span: Span, lines: list[tuple[int, int]], limit: int, lead_start: int
) -> list[Span]:
    """Rows packed up to ``limit``; every piece after the first starts with the header rows.
    The first piece starts at ``lead_start`` (before the table, when text precedes it)."""
    text = meter.text
    header_end = 2 if len(lines) > 2 and _DELIMITER_ROW.fullmatch(text, *lines[1]) else 1
    header = text[lines[0][0] : lines[header_end - 1][1]] + "\n"
    header_tokens = meter.count(lines[0][0], lines[header_end - 1][1]) + 1
    if header_tokens * 2 > limit:  # a header that large leaves no room to repeat it
        header, header_tokens = "", 0
    pieces: list[Span] = []
    start, prefix = lead_start, ""
    for row_start, row_end in lines[header_end:]:
        room = limit - (header_tokens if prefix else 0)
        if meter.count(start, row_end) <= room:
            continue
        if meter.count(start, row_start) > 0 and start < row_start:
            pieces.append(replace(span, start=start, end=_trim(text, start, row_start), prefix=prefix))
        start, prefix = row_start, header
    pieces.append(replace(span, start=start, end=span.end, prefix=prefix))
    # A single row longer than the room left is cut like text.
    out: list[Span] = []
    for piece in pieces:
        room = limit - (header_tokens if piece.prefix else 0)
        if meter.count(piece.start, piece.end) <= room:
            out.append(piece)
        else:
            out.extend(replace(piece, start=s, end=e) for s, e in split_recursive(meter, piece.start, piece.end, room, 0))
    return out


def _lines(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Ranges of the non-blank lines of ``text[start:end]``, without their line breaks."""
    ranges = []
    position = start
    while position < end:
        stop = text.find("\n", position, end)
        stop = end if stop < 0 else stop
        if text[position:stop].strip():
            ranges.append((position, stop))
        position = stop + 1
    return ranges


def _trim(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end
