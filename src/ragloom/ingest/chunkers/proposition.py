"""Proposition chunking (Chen et al., 2023, "Dense X Retrieval"): the LLM rewrites each
passage into atomic, self-contained statements, and each statement is a chunk.

Passages are the recursive chunker's. A proposition chunk's offsets are its passage's,
and its metadata holds ``parent_id`` and ``parent_text``, so the ``parent`` stage can
return the passage instead. Answers are validated and cached by passage content hash
and model; without an LLM or after two unusable answers the passage's sentences stand
in for propositions, with a warning.
"""

from __future__ import annotations

import warnings
from typing import Any

from ...errors import RagloomWarning
from ...types import Chunk, Document, content_hash
from ...models.llm_json import ask_json
from ._services import LLMChunkerMixin
from ._units import sentence_ranges
from .base import Chunker, Span
from .recursive import RecursiveChunker

_PROMPT = """Rewrite the passage below as a list of propositions: short, atomic statements that \
each make sense on their own (replace pronouns with the names they refer to). Answer with one JSON \
object and nothing else: {"propositions": ["...", "..."]}

Passage:
%s"""
_MAX_PROPOSITIONS = 40


def parse_propositions(answer: Any) -> list[str]:
    if not isinstance(answer, dict) or not isinstance(answer.get("propositions"), list):
        raise ValueError(f"expected {{'propositions': [...]}}, got {str(answer)[:120]!r}")
    found = [p.strip() for p in answer["propositions"] if isinstance(p, str) and 8 <= len(p.strip()) <= 600]
    if not found:
        raise ValueError("no usable proposition")
    return list(dict.fromkeys(found))[:_MAX_PROPOSITIONS]


class PropositionChunker(LLMChunkerMixin, Chunker):
    name = "proposition"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.passages = RecursiveChunker(*args, **kwargs)

    @property
    def policy(self) -> str:
        llm = self.llm()
        return f"{super().policy}/llm={llm.model_id if llm else 'none'}"

    def split(self, document: Document) -> list[Span]:
        return self.passages.split(document)

    def chunk(self, document: Document) -> list[Chunk]:
        policy = self.policy
        chunks: list[Chunk] = []
        for passage in self.passages.chunk(document):
            for number, text in enumerate(self._propositions(passage)):
                index = len(chunks)
                metadata = {**passage.metadata, "chunk_index": index, "parent_id": passage.id,
                            "parent_text": passage.text, "proposition": number, "token_count": self.count_tokens(text)}
                chunks.append(Chunk(
                    id=Chunk.make_id(document.source, document.doc_id, index, passage.start, passage.end, policy),
                    text=text, source=passage.source, doc_id=passage.doc_id, chunk_index=index,
                    start=passage.start, end=passage.end, policy=policy, content_hash=content_hash(text),
                    token_count=metadata["token_count"], metadata=metadata,
                ))
        return chunks

    def _propositions(self, passage: Chunk) -> list[str]:
        llm = self.llm()
        if llm is None:
            return _sentences(passage.text)
        cache = self.cache()
        key = ("proposition", llm.model_id, passage.content_hash)
        cached = cache.cached(*key) if cache is not None else None
        if cached is not None:
            return list(cached)
        found, problem = ask_json(lambda prompt: llm.complete(prompt, json_mode=True), _PROMPT % passage.text,
                                  parse_propositions)
        if found is None:
            warnings.warn(f"{passage.source}: no usable propositions for a passage ({problem[:160]}); "
                          "its sentences are used instead", RagloomWarning, stacklevel=2)
            return _sentences(passage.text)
        if cache is not None:
            cache.cache(found, *key)
        return found


def _sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in sentence_ranges(text, 0, len(text), "regex")] or [text]
