"""Text pasted as is — an error message, a log line, a traceback — finds what holds it, first.

ripgrep finds a pasted message at once; a ranking by meaning may not. A query of several
words that is not wholly quoted is also looked for as written: the candidates whose text holds
its words in that order (case, punctuation and quotes ignored, so ``'link'`` in a message is
part of the message, and a message split over two string literals still matches) rank before
the others (``lift_pasted``). A multi-line paste that is a traceback is searched by its most
specific lines: the exception's message, and the functions of its frames as symbols
(``read_traceback``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..types import Hit
from .base import EXACT_MATCH, QueryPlan

#: A query of fewer words than this is not a pasted text (``Style.parse``, ``stem cells``).
MIN_WORDS = 4
_WORD = re.compile(r"\w+")
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<function>[\w<>.$]+))?')
_JS_FRAME = re.compile(r"^\s*at (?:async )?(?P<function>[\w$.<>]+) \((?P<path>[^():]+):(?P<line>\d+)")
_EXCEPTION = re.compile(r"^(?:[\w.]+\.)?(?P<type>[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Fault|Failure)|"
                        r"Exception|Error|panic|thread '[^']*' panicked at [^:]*)(?::\s*(?P<message>.+))?$")


@dataclass(frozen=True)
class Traceback:
    """What a pasted traceback says: the exception's message and the functions of its frames."""

    message: str
    exception: str
    functions: tuple[str, ...]


def read_traceback(query: str) -> Traceback | None:
    """The most specific lines of a multi-line paste that is a traceback, or None."""
    lines = [line.rstrip() for line in query.strip().splitlines() if line.strip()]
    if len(lines) < 2:
        return None
    functions: list[str] = []
    for line in lines:
        frame = _FRAME.match(line) or _JS_FRAME.match(line)
        if frame and frame.group("function") and not frame.group("function").startswith("<"):
            functions.append(frame.group("function"))
    for line in reversed(lines):
        found = _EXCEPTION.match(line.strip())
        if found and (functions or found.group("message")):
            message = (found.group("message") or "").strip()
            return Traceback(message, found.group("type"), tuple(dict.fromkeys(reversed(functions))))
    return None


#: A string literal's prefix (``f"``, ``rb'``): not a word of the text it quotes.
_STRING_PREFIX = re.compile(r"(?<![\w])[rRbBuUfF]{1,2}(?=[\"'])")
#: What a line that produces a message looks like: it raises, throws, panics or logs.
_PRODUCES = re.compile(r"\b(?:raise|throw|throws|panic!?|die|abort|fail\w*|warn\w*|error|errorf|log\w*|"
                       r"print\w*|echo|assert\w*)\b|(?<!class )\b\w*(?:Error|Exception)\s*\(", re.IGNORECASE)


def words_of(text: str) -> list[str]:
    """The words of ``text``, case-folded; a string literal's prefix (``f"…"``) is not one."""
    return _WORD.findall(_STRING_PREFIX.sub(" ", text).casefold())


def pasted_text(text: str) -> str | None:
    """The words of a query that is looked for as written, or None (too short)."""
    words = words_of(text)
    if len(words) < MIN_WORDS or sum(1 for w in words if not w.isdigit() and len(w) >= 2) < MIN_WORDS - 1:
        return None
    return " ".join(words)


def holds(text: str, pasted: str) -> bool:
    """Whether ``text`` holds the words of ``pasted`` in order, nothing between them but
    punctuation, quotes and spacing."""
    longest = max(pasted.split(), key=len, default="")
    if longest not in text.casefold():  # most texts lack a word of it: no need to split them into words
        return False
    return f" {pasted} " in f" {' '.join(words_of(text))} "


def found_at(text: str, pasted: str) -> tuple[int, int] | None:
    """Where ``text`` holds the words of ``pasted`` (character offsets), or None."""
    words = pasted.split()
    if not words:
        return None
    between = r"(?:\W|(?<![\w])[rRbBuUfF]{1,2}(?=[\"']))+"
    match = re.search(r"(?<!\w)" + between.join(re.escape(w) for w in words) + r"(?!\w)", text, re.IGNORECASE)
    return match.span() if match else None


def produces(text: str, pasted: str) -> bool:
    """Whether the pasted text is raised, thrown or logged there (the lines up to it say so),
    not only mentioned (a docstring, a comment, a test)."""
    span = found_at(text, pasted)
    if span is None:
        return False
    above = text.rfind("\n", 0, max(text.rfind("\n", 0, span[0]), 0))
    above = text.rfind("\n", 0, max(above, 0))
    return bool(_PRODUCES.search(text, max(above, 0), span[0]))


def lift_pasted(hits: list[Hit], plan: QueryPlan) -> list[Hit]:
    """The hits that hold the pasted text first, the rest after them: those that produce it
    (raise, throw, log) before those that mention it; several in one file (sync and async
    twins) in the file's order."""
    pasted = plan.hint("pasted")
    if not pasted:
        return hits
    holding = [hit for hit in hits if holds(hit.text, pasted)]
    if not holding:
        return hits
    files = {hit.source: n for n, hit in reversed(list(enumerate(holding)))}
    first = sorted(holding, key=lambda hit: (not produces(hit.text, pasted), files[hit.source], hit.start_line or 0))
    chosen = {hit.chunk_id for hit in first}
    rest = [hit for hit in hits if hit.chunk_id not in chosen]
    top = max(hit.score for hit in hits)
    n = len(first)
    return [replace(hit, score=top + 1.0 + 1e-6 * (n - i), scores={**hit.scores, EXACT_MATCH: 1.0})
            for i, hit in enumerate(first)] + rest
