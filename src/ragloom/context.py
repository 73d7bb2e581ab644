"""Hits -> the numbered, budgeted context an LLM reads (and ``ragloom context`` prints).

Each passage gets a number and a header line (source, title, section or page, score),
then its text::

    [1] ros2.md — Communication > Topics (score 0.812)
    Nodes exchange messages over topics ...

The whole, headers included, never costs more than the budget in the given token
counter (the embedder's or the LLM's). A passage that does not fit is cut at a sentence
boundary, never mid-word unless one sentence alone is larger than what is left, and the
context says so in ``notes``; the passages after it are left out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from .types import Hit

TokenCounter = Callable[[str], int]
_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Passage:
    """One numbered passage of a context; ``text`` may be shorter than ``hit.text`` (cut or compressed)."""

    number: int
    hit: Hit
    text: str
    header: str
    tokens: int
    truncated: bool = False

    def render(self) -> str:
        return f"{self.header}\n{self.text}"

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, "chunk_id": self.hit.chunk_id, "source": self.hit.source,
                "section": self.hit.section, "page": self.hit.page, "start_line": self.hit.start_line,
                "end_line": self.hit.end_line, "score": self.hit.score,
                "header": self.header, "text": self.text, "tokens": self.tokens, "truncated": self.truncated}


@dataclass
class Context:
    """Numbered passages within a token budget; ``tokens`` counts the rendered whole."""

    passages: list[Passage]
    budget: int
    tokens: int
    question: str = ""
    notes: list[str] = field(default_factory=list)

    def render(self) -> str:
        return _SEPARATOR.join(p.render() for p in self.passages)

    def passage(self, number: int) -> Passage | None:
        index = number - 1
        return self.passages[index] if 0 <= index < len(self.passages) else None

    @property
    def numbers(self) -> list[int]:
        return [p.number for p in self.passages]

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "budget": self.budget, "tokens": self.tokens,
                "passages": [p.to_dict() for p in self.passages], "notes": list(self.notes)}


def header_for(number: int, hit: Hit, shown: Callable[[str], str] | None = None) -> str:
    """``[n] path — title — section, p. 3 (score 0.812)``, or ``…, lines 12-30`` for a text or code
    file; the path as ``shown`` gives it (relative to the ingested folder), else the file's name."""
    parts = [(shown(hit.source) if shown is not None else Path(hit.source).name) or hit.source]
    title = str(hit.metadata.get("title") or "")
    if title and title not in parts[0]:
        parts.append(title)
    section = hit.section
    if title and section.startswith(title):  # the section path repeats the document's title
        section = section[len(title):].lstrip(" >")
    where = [section] if section else []
    if hit.page is not None:
        where.append(f"p. {hit.page}")
    if hit.start_line is not None:  # an agent can open the file there
        where.append(f"lines {hit.start_line}-{hit.end_line}" if hit.end_line != hit.start_line
                     else f"line {hit.start_line}")
    if where:
        parts.append(", ".join(where))
    return f"[{number}] {' — '.join(parts)} (score {hit.score:.3f})"


def build_context(hits: Sequence[Hit], budget: int, count_tokens: TokenCounter, question: str = "",
                  shown: Callable[[str], str] | None = None) -> Context:
    """Number the hits in order and keep as many as fit in ``budget`` tokens; headers name each
    source as ``shown`` gives it (relative to the ingested folder)."""
    passages: list[Passage] = []
    notes: list[str] = []
    used = 0
    for number, hit in enumerate(hits, start=1):
        header = header_for(number, hit, shown)
        glue = count_tokens(_SEPARATOR) if passages else 0
        head = count_tokens(header + "\n")
        # Code keeps its first line's indentation, so that its lines stay aligned.
        body = hit.text.strip("\n").rstrip() if hit.is_code else hit.text.strip()
        cost = glue + head + count_tokens(body)
        if used + cost <= budget:
            passages.append(Passage(number, hit, body, header, cost - glue))
            used += cost
            continue
        room = budget - used - glue - head
        cut, how = fit_text(body, room, count_tokens)
        if cut:
            passages.append(Passage(number, hit, cut, header, head + count_tokens(cut), truncated=True))
            notes.append(f"passage [{number}] was cut {how} to fit the budget of {budget} tokens")
        left = len(hits) - len(passages)
        if not passages:
            notes.append(f"no passage fits the budget of {budget} tokens (the first one's header alone needs {head})")
        elif left:
            notes.append(f"{left} more passage{'s' if left > 1 else ''} did not fit the budget of {budget} tokens")
        break
    context = Context(passages, budget, 0, question, notes)
    context.tokens = _shrink_to_budget(context, count_tokens)
    return context


def fit_text(text: str, room: int, count_tokens: TokenCounter) -> tuple[str, str]:
    """The longest prefix of ``text`` within ``room`` tokens: whole sentences if one fits, else whole words."""
    if room <= 0:
        return "", ""
    kept = ""
    for start, end in sentence_spans(text):
        candidate = text[: end].strip()
        if count_tokens(candidate) > room:
            break
        kept = candidate
    if kept:
        return kept, "at a sentence boundary"
    words = text.split()
    for n in range(len(words), 0, -1):  # one sentence larger than the budget: whole words only
        candidate = " ".join(words[:n]) + " …"
        if count_tokens(candidate) <= room:
            return candidate, "inside its first sentence (a sentence is longer than the budget)"
    return "", ""


def _shrink_to_budget(context: Context, count_tokens: TokenCounter) -> int:
    """Make sure: token counts need not add up exactly, so drop from the end until the whole fits."""
    tokens = count_tokens(context.render()) if context.passages else 0
    while context.passages and tokens > context.budget:
        last = context.passages.pop()
        spans = sentence_spans(last.text)
        if len(spans) > 1:
            shorter = last.text[: spans[-2][1]].strip()
            context.passages.append(Passage(last.number, last.hit, shorter, last.header,
                                            count_tokens(last.render()), truncated=True))
        tokens = count_tokens(context.render()) if context.passages else 0
    return tokens


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character ranges of the sentences of ``text`` (Punkt, blank lines always end one)."""
    return list(_spans(text))


def sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in sentence_spans(text)]


@lru_cache(maxsize=4096)
def _spans(text: str) -> tuple[tuple[int, int], ...]:
    from .models.sentences import sentence_ranges

    return tuple(sentence_ranges(text, 0, len(text), "punkt"))
