"""Agentic chunking: the LLM reads numbered sentences and says where sections start.

The model answers ``{"sections": [{"title": ..., "start": N}, ...]}`` for each window of
sentences; starts are validated (integers in range, increasing; the first sentence
always starts a section). Sections larger than ``chunk_size`` are packed into pieces
at sentence boundaries, and each chunk carries its section title. The boundaries are
cached by the window's content hash and the model, so re-ingesting costs nothing. On
an unusable answer, or with no LLM, the window is chunked recursively, with a warning.
"""

from __future__ import annotations

import warnings
from typing import Any

from ...errors import RagloomWarning
from ...types import Document, content_hash
from ...models.llm_json import ask_json
from ._services import LLMChunkerMixin
from ._tokens import TokenMeter
from ._units import UnitChunker, fitting_units, pack, sentence_ranges
from .base import Span
from ._split import split_recursive

#: Tokens of sentences shown to the model at once.
_WINDOW_TOKENS = 1200
_PROMPT = """Below are the numbered sentences of a document. Group consecutive sentences into \
sections that each cover one topic. Answer with one JSON object and nothing else:
{"sections": [{"title": "short title", "start": <number of the section's first sentence>}]}

%s"""


def parse_boundaries(answer: Any, count: int) -> list[tuple[int, str]]:
    """(0-based first sentence, title) per section, validated; ValueError when unusable."""
    if not isinstance(answer, dict) or not isinstance(answer.get("sections"), list):
        raise ValueError(f"expected {{'sections': [...]}}, got {str(answer)[:120]!r}")
    starts: dict[int, str] = {}
    for item in answer["sections"]:
        if not isinstance(item, dict):
            continue
        try:
            start = int(item.get("start"))
        except (TypeError, ValueError):
            continue
        if 1 <= start <= count:
            starts.setdefault(start - 1, str(item.get("title") or "").strip()[:120])
    if not starts:
        raise ValueError("no section start inside the document")
    starts.setdefault(0, "")
    return sorted(starts.items())


class AgenticChunker(LLMChunkerMixin, UnitChunker):
    name = "agentic"

    @property
    def policy(self) -> str:
        llm = self.llm()
        return f"{super().policy}/llm={llm.model_id if llm else 'none'}"

    def split(self, document: Document) -> list[Span]:
        text = document.text
        meter = TokenMeter(text, self.count_tokens, self.token_offsets)
        sentences = sentence_ranges(text, 0, len(text), self.config.sentence_splitter)
        spans: list[Span] = []
        for window in _windows(meter, sentences):
            spans.extend(self._window(meter, window, document.source))
        return spans

    def _window(self, meter: TokenMeter, sentences: list[tuple[int, int]], source: str) -> list[Span]:
        size = self.config.chunk_size
        sections = self._sections(meter.text, sentences, source)
        if sections is None:
            start, end = sentences[0][0], sentences[-1][1]
            return [Span(s, e) for s, e in split_recursive(meter, start, end, size, self.config.chunk_overlap)]
        spans = []
        bounds = [first for first, _ in sections] + [len(sentences)]
        for (first, title), last in zip(sections, bounds[1:]):
            units = fitting_units(meter, sentences[first:last], size, self.config.sentence_splitter)
            path = (title,) if title else ()
            spans.extend(Span(s, e, path) for s, e in pack(meter, units, size))
        return spans

    def _sections(self, text: str, sentences: list[tuple[int, int]], source: str) -> list[tuple[int, str]] | None:
        llm = self.llm()
        if llm is None:
            return None
        numbered = "\n".join(f"{i}. {text[s:e]}" for i, (s, e) in enumerate(sentences, start=1))
        cache = self.cache()
        key = ("agentic", llm.model_id, content_hash(numbered))
        cached = cache.cached(*key) if cache is not None else None
        if cached is not None:
            return [(int(a), str(b)) for a, b in cached]
        sections, problem = ask_json(lambda prompt: llm.complete(prompt, json_mode=True), _PROMPT % numbered,
                                     lambda answer: parse_boundaries(answer, len(sentences)))
        if sections is None:
            warnings.warn(f"{source}: agentic chunking got no usable boundaries ({problem[:160]}); "
                          "chunked recursively instead", RagloomWarning, stacklevel=2)
            return None
        if cache is not None:
            cache.cache(sections, *key)
        return sections


def _windows(meter: TokenMeter, sentences: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    windows: list[list[tuple[int, int]]] = []
    current: list[tuple[int, int]] = []
    for sentence in sentences:
        if current and meter.count(current[0][0], sentence[1]) > _WINDOW_TOKENS:
            windows.append(current)
            current = []
        current.append(sentence)
    if current:
        windows.append(current)
    return windows
