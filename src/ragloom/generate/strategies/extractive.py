"""Extractive answers: no LLM, the context's own sentences that best answer the question.

A passage is read as units: a sentence, a run of list items (one unit, so steps stay
together), or a code block with the sentence that leads into it. Every unit is scored
against the question by the packaged cross-encoder; the best (up to
``answer.extractive_sentences``, and only those close to the best score) are kept in
reading order, each followed by its passage's number. A unit that leans on the one before
it ("It ...", "This ...", "The same way, ...") is shown after that one, so an answer never
starts mid-thought; it is still scored alone, which measured better than scoring the pair
(40 SQuAD-train *train* questions: F1 0.119 / containment 0.45 with pairs against 0.167 / 0.825
alone). When even the best unit's probability is below ``answer.extractive_min_relevance``,
the answer is "The sources do not say." (BENCHMARKS.md "Hardening IV (issue 32)": the floor).

A follow-up ("Does it make sense to use them together?") is also scored as read after the
conversation's previous question, which says what "it" and "them" are: when no unit clears the
floor on the question alone, the best are still quoted if one clears
``answer.extractive_followup_min_relevance`` in context (stricter, so that a turn the sources do not
answer is still refused: BENCHMARKS.md "Follow-ups through the chat endpoint"). Units still rank
by the question alone: in context, the sentence that answered the previous question wins.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ...models.cross_encoder import sigmoid
from ...types import Answer, AnswerSentence
from ..prompts import NO_ANSWER
from .base import AnswerRequest, Piece, Strategy, finish, step

#: Keep units whose cross-encoder logit is within this margin of the best one's.
LOGIT_MARGIN = 3.0
#: Shorter fragments (headings, list stubs) are not answers.
MIN_WORDS = 4
#: A sentence that opens like this continues the one before it.
_LEANS_BACK = re.compile(
    r"^(?:this|that|these|those|it|its|they|them|their|such|he|she|his|her|the same way|similarly|likewise|"
    r"also|however|but|and|so|then|thus|therefore|otherwise|instead|in (?:this|that|addition|that case)|"
    r"for (?:this|that) reason|as a result|here|there)\b", re.IGNORECASE)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_FENCE = re.compile(r"^\s*(?:```|~~~)")


@dataclass(frozen=True)
class Candidate:
    number: int
    position: int
    #: What is scored (the unit itself) and what is shown (with the unit it leans on, if any).
    text: str
    shown: str = ""
    #: Cross-encoder logit against the question (ranking) and its sigmoid (0..1, thresholds).
    logit: float = 0.0
    score: float = 0.0
    #: A follow-up's probability against the question read after the previous one (0 otherwise).
    in_context: float = 0.0
    #: A block of source code: where it is (``path:start-end``) and its language, for quoting it whole.
    place: str = ""
    language: str = ""


#: The most lines of code one unit quotes (a longer block is cut between statements).
CODE_UNIT_LINES = 12
_OPENERS, _CLOSERS = "([{", ")]}"
#: A line that starts a definition (or its decorator): a unit of its own begins there.
_DEFINITION = re.compile(r"^\s*(?:@|(?:(?:export|default|pub|public|private|protected|static|async|abstract|final)\s+)*"
                         r"(?:def|class|fn|func|function|interface|struct|impl|trait|module|object|sub)\b)")
_DECORATOR = re.compile(r"^\s*@")


def code_units(lines: Sequence[tuple[int | None, str]]) -> list[tuple[int, int]]:
    """A code passage's own lines grouped into units (row ranges): blocks between blank lines,
    never cut inside a bracket or a multi-line string, at most ``CODE_UNIT_LINES`` where a
    statement ends."""
    out: list[tuple[int, int]] = []
    start, depth, strings = None, 0, 0
    for i, (number, line) in enumerate(lines):
        if number is None:  # a class header or signature put before the passage: not its own code
            continue
        balanced = depth <= 0 and strings % 2 == 0
        starts = _DEFINITION.match(line) is not None and not _DECORATOR.match(lines[i - 1][1] if i else "")
        if start is not None and balanced and (not line.strip() or starts or i - start >= CODE_UNIT_LINES):
            out.append((start, i))
            start = None
        if not line.strip():
            continue
        if start is None:
            start, depth, strings = i, 0, 0
        code = re.sub(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|#.*$|//.*$", "", line.replace('"""', "").replace("'''", ""))
        depth += sum(code.count(c) for c in _OPENERS) - sum(code.count(c) for c in _CLOSERS)
        strings += line.count('"""') + line.count("'''")
    if start is not None:
        out.append((start, len(lines)))
    return out


def _code_candidates(passage: Any, shown: Any) -> list[Candidate]:
    hit = passage.hit
    lines = hit.numbered_lines()
    place = shown(hit.source) if shown is not None else hit.source.rsplit("/", 1)[-1]
    found = []
    for position, (begin, end) in enumerate(code_units(lines)):
        rows = lines[begin:end]
        text = "\n".join(line for _, line in rows).strip("\n")
        if len(text.split()) < MIN_WORDS // 2:
            continue
        numbers = [n for n, _ in rows if n is not None]
        found.append(Candidate(passage.number, position, text, text, place=f"{place}:{numbers[0]}-{numbers[-1]}",
                               language=str(hit.metadata.get("language") or "")))
    return found


def units(sentences: Sequence[str]) -> list[str]:
    """Sentences grouped into what an answer quotes whole: list items run together, and a code
    block joined to the sentence before it (``Import it:`` then the code)."""
    out: list[str] = []
    kinds: list[str] = []
    for sentence in sentences:
        kind = "code" if _FENCE.match(sentence) else "item" if _LIST_ITEM.match(sentence) else "text"
        if out and kind == "item" and kinds[-1] == "item":
            out[-1] += "\n" + sentence
        elif out and kind == "code" and kinds[-1] != "heading":
            out[-1] += "\n" + sentence
            kind = kinds[-1]
        elif sentence.lstrip().startswith("#"):
            out.append(sentence)
            kind = "heading"
        else:
            out.append(sentence)
        if len(kinds) < len(out):
            kinds.append(kind)
        else:
            kinds[-1] = kind
    return out


def flat(unit: str) -> str:
    """A unit on one line: heading lines dropped, whitespace squeezed (code keeps its words)."""
    return " ".join(" ".join(line for line in unit.splitlines() if not line.lstrip().startswith("#")).split())


def leans_back(text: str) -> bool:
    return bool(_LEANS_BACK.match(text))


def candidates(request: AnswerRequest, lean: bool = True) -> list[Candidate]:
    """Each passage's units, flattened; headings and fragments left out. With ``lean``, a unit
    that continues the one before it is shown after it."""
    from ...context import sentences

    found = []
    for passage in request.context.passages:
        if passage.hit.is_code:  # code is quoted as whole lines, never as sentences
            found += _code_candidates(passage, request.shown)
            continue
        previous = ""
        for i, unit in enumerate(units(sentences(passage.text))):
            text = flat(unit)
            if len(text.split()) >= MIN_WORDS:
                shown = f"{previous} {text}" if lean and previous and leans_back(text) else text
                found.append(Candidate(passage.number, i, text, shown))
            previous = text  # a heading between two sentences breaks the thread: "" then
    return found


def select(scored: list[Candidate], limit: int, floor: float, followup_floor: float | None = None) -> list[Candidate]:
    """The best units scoring ``floor`` or more and near the best, at most ``limit``, in reading order.

    ``followup_floor``: a follow-up's units were also scored in context (``in_context``); when none
    clears ``floor`` on the question alone, the best near the best are still taken if one clears
    this in context (the conversation says what the question is about)."""
    if not scored:
        return []
    best = max(scored, key=lambda c: c.logit)
    if best.score >= floor:
        near = [c for c in scored if c.score >= floor and c.logit >= best.logit - LOGIT_MARGIN]
    elif followup_floor is not None and max(c.in_context for c in scored) >= followup_floor:
        near = [c for c in scored if c.logit >= best.logit - LOGIT_MARGIN]
    else:
        return []
    chosen = sorted(near, key=lambda c: -c.logit)[:limit]
    return sorted(chosen, key=lambda c: (c.number, c.position))


def compose(chosen: Sequence[Candidate]) -> list[tuple[str, Candidate]]:
    """Each chosen unit's text as quoted: with the unit it leans on, unless that one is quoted
    just before it anyway (then the two read on as one)."""
    parts = []
    for i, c in enumerate(chosen):
        before = chosen[i - 1] if i else None
        follows = before is not None and before.number == c.number and before.position == c.position - 1
        parts.append((c.text if follows else c.shown or c.text, c))
    return parts


def quoted(parts: Sequence[tuple[str, Candidate]]) -> list[tuple[str, list[Candidate]]]:
    """Each part as the answer quotes it: code as a fenced block after its ``path:start-end``; the
    same code twice (a sync and an async twin) once, with both places named."""
    out: list[tuple[str, list[Candidate]]] = []
    seen: dict[str, int] = {}
    for text, c in parts:
        if not c.place:
            out.append((f"{text} [{c.number}]", [c]))
            continue
        key = twin_key(text)
        if key in seen:
            out[seen[key]][1].append(c)
            continue
        seen[key] = len(out)
        out.append((text, [c]))
    rendered = []
    for text, group in out:
        if group[0].place:
            places = ", ".join(f"{c.place} [{c.number}]" for c in group)
            text = f"{places}\n```{group[0].language}\n{text}\n```\n"
        rendered.append((text, group))
    return rendered


def twin_key(code: str) -> str:
    """Code with ``async``/``await`` and spacing left out: a sync function and its async twin agree."""
    return " ".join(re.sub(r"\b(?:async|await)\b|\ba(?=(?:iter|next|enter|exit|close|read|write)\w*\b)", "",
                           code).split())


def score_candidates(request: AnswerRequest, found: list[Candidate]) -> list[Candidate]:
    assert request.scorer is not None, "extractive answers need the cross-encoder"
    if not found:
        return []
    texts = [c.text for c in found]
    logits = np.asarray(request.scorer().logits(request.question, texts), dtype=np.float64)
    # In context a follow-up only decides whether there is an answer: ranked in context, the sentence
    # that answered the previous question wins ("Where was he born?" after "Who designed it?").
    in_context = (np.asarray(request.scorer().logits(request.in_context, texts), dtype=np.float64)
                  if request.in_context else np.full(len(texts), -np.inf))
    scores, context_scores = sigmoid(logits), sigmoid(in_context)
    return [Candidate(c.number, c.position, c.text, c.shown, float(x), float(p), float(q), c.place, c.language)
            for c, x, p, q in zip(found, logits, scores, context_scores)]


class Extractive(Strategy):
    name: ClassVar[str] = "extractive"
    needs_llm: ClassVar[bool] = False

    def stream(self, request: AnswerRequest) -> Iterator[Piece]:
        settings = request.settings
        with step(request, "score sentences") as detail:
            scored = score_candidates(request, candidates(request))
            followup_floor = settings.extractive_followup_min_relevance if request.in_context else None
            chosen = select(scored, settings.extractive_sentences, settings.extractive_min_relevance, followup_floor)
            detail.update(sentences=len(scored), chosen=[[c.number, round(c.score, 4)] for c in chosen],
                          best=round(max((c.score for c in scored), default=0.0), 4),
                          threshold=settings.extractive_min_relevance)
            if request.in_context:
                detail.update(in_context=request.in_context,
                              best_in_context=round(max((c.in_context for c in scored), default=0.0), 4),
                              followup_threshold=followup_floor)
        if not chosen:
            yield NO_ANSWER
            yield finish(request, NO_ANSWER, self.name)
            return
        parts = quoted(compose(chosen))
        pieces = []
        for i, (part, _) in enumerate(parts):
            # Prose runs on in one paragraph; a code block stands on its own lines.
            glue = "" if i == 0 else "\n" if part.endswith("```\n") or pieces[-1].endswith("```\n") else " "
            pieces.append(glue + part)
            yield pieces[-1]
        answer: Answer = finish(request, "".join(pieces).rstrip("\n"), self.name)
        # Quoted verbatim from the passage it cites, so supported by construction.
        answer.sentences = [AnswerSentence(part.rstrip("\n"), sorted({c.number for c in group}), True,
                                           max(c.score for c in group)) for part, group in parts]
        yield answer
