"""Extractive answers: no LLM, the context's own sentences that best answer the question.

Every sentence of every passage is scored against the question by the packaged
cross-encoder; the best (up to ``answer.extractive_sentences``, and only those close to
the best score) are kept in reading order, each followed by its passage's number. When
even the best sentence is barely relevant, the answer is "The sources do not say."

Measured on 40 SQuAD-train *train* questions: one sentence F1 0.167 / containment 0.825,
three 0.135 / 0.850; scoring a sentence together with the one before it (so "It ..." keeps
its subject) lost on both (0.119 / 0.45 with one sentence; pronoun-led sentences only,
0.157 / 0.80), so sentences are scored alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ...models.cross_encoder import sigmoid
from ...types import Answer, AnswerSentence
from ..prompts import NO_ANSWER
from .base import AnswerRequest, Piece, Strategy, finish, step

#: Keep sentences whose cross-encoder logit is within this margin of the best one's.
LOGIT_MARGIN = 3.0
#: Shorter fragments (headings, list stubs) are not answers.
MIN_WORDS = 4


@dataclass(frozen=True)
class Candidate:
    number: int
    position: int
    text: str
    #: Cross-encoder logit (ranking) and its sigmoid (0..1, thresholds).
    logit: float = 0.0
    score: float = 0.0


def candidates(request: AnswerRequest) -> list[Candidate]:
    """Each passage's sentences, whitespace flattened; headings and fragments left out."""
    from ...context import sentences

    found = []
    for passage in request.context.passages:
        for i, sentence in enumerate(sentences(passage.text)):
            flat = " ".join(line for line in sentence.splitlines() if not line.lstrip().startswith("#"))
            flat = " ".join(flat.split())
            if len(flat.split()) >= MIN_WORDS:
                found.append(Candidate(passage.number, i, flat))
    return found


def select(scored: list[Candidate], limit: int, floor: float) -> list[Candidate]:
    """The best sentences scoring ``floor`` or more and near the best, at most ``limit``, in reading order."""
    if not scored:
        return []
    best = max(scored, key=lambda c: c.logit)
    if best.score < floor:
        return []
    near = [c for c in scored if c.score >= floor and c.logit >= best.logit - LOGIT_MARGIN]
    chosen = sorted(near, key=lambda c: -c.logit)[:limit]
    return sorted(chosen, key=lambda c: (c.number, c.position))


class Extractive(Strategy):
    name: ClassVar[str] = "extractive"
    needs_llm: ClassVar[bool] = False

    def stream(self, request: AnswerRequest) -> Iterator[Piece]:
        assert request.scorer is not None, "extractive answers need the cross-encoder"
        with step(request, "score sentences") as detail:
            found = candidates(request)
            logits = request.scorer().logits(request.question, [c.text for c in found]) if found else []
            scored = [Candidate(c.number, c.position, c.text, float(x), float(sigmoid(np.array([x]))[0]))
                      for c, x in zip(found, logits)]
            chosen = select(scored, request.settings.extractive_sentences, request.settings.unanswerable_below)
            detail.update(sentences=len(scored), chosen=[[c.number, round(c.score, 4)] for c in chosen])
        if not chosen:
            yield NO_ANSWER
            yield finish(request, NO_ANSWER, self.name)
            return
        parts = []
        for i, c in enumerate(chosen):
            part = f"{c.text} [{c.number}]"
            parts.append(part)
            yield part if i == 0 else " " + part
        answer: Answer = finish(request, " ".join(parts), self.name)
        # Quoted verbatim from the passage it cites, so supported by construction.
        answer.sentences = [AnswerSentence(part, [c.number], True, c.score) for part, c in zip(parts, chosen)]
        yield answer
