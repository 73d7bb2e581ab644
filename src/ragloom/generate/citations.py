"""Citations in answer text: find ``[n]`` markers, drop invalid ones, check each sentence's support.

A support checker is a pure function over (claim, passage) pairs -> scores in 0..1. Three
are offered (``answer.support_checker``): the packaged cross-encoder, bge embedding
cosine, and content-word overlap; ``benchmarks/quality/support_check.py`` measures them on a
labelled set.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from ..types import AnswerSentence

#: ``[1]``, ``[1, 3]``, ``[1][2]``, ``[Source 2]``.
CITATION = re.compile(r"\[(?:sources?\s*)?(\d+(?:\s*[,;]\s*\d+)*)\]", re.IGNORECASE)
_LEADING_MARKS = re.compile(r"^(\s*\[(?:sources?\s*)?\d+(?:\s*[,;]\s*\d+)*\])+", re.IGNORECASE)

SupportChecker = Callable[[Sequence[tuple[str, str]]], np.ndarray]


def cited_numbers(text: str) -> list[int]:
    """Every number cited in ``text``, in order of first appearance."""
    seen: dict[int, None] = {}
    for match in CITATION.finditer(text):
        for number in re.split(r"[,;]", match.group(1)):
            seen.setdefault(int(number), None)
    return list(seen)


def strip_citations(text: str) -> str:
    return re.sub(r"\s+([.,;:!?])", r"\1", CITATION.sub("", text)).strip()


def remove_invalid(text: str, valid: set[int]) -> tuple[str, list[int]]:
    """``text`` without citations of numbers outside ``valid``; and the numbers removed."""
    removed: list[int] = []

    def keep(match: re.Match[str]) -> str:
        numbers = [int(n) for n in re.split(r"[,;]", match.group(1))]
        good = [n for n in numbers if n in valid]
        removed.extend(n for n in numbers if n not in valid)
        return f"[{', '.join(str(n) for n in good)}]" if good else ""

    cleaned = CITATION.sub(keep, text)
    if removed:
        cleaned = re.sub(r"[ \t]+([.,;:!?])", r"\1", re.sub(r"[ \t]{2,}", " ", cleaned))
    return cleaned, removed


def split_sentences(text: str) -> list[AnswerSentence]:
    """The answer's sentences with the numbers each cites; a citation that opens a sentence
    (``... France. [1] Next``) belongs to the sentence before it."""
    from ..context import sentences

    out: list[AnswerSentence] = []
    for raw in sentences(text):
        lead = _LEADING_MARKS.match(raw)
        if lead and out:
            out[-1].citations.extend(n for n in cited_numbers(lead.group(0)) if n not in out[-1].citations)
            out[-1].text += " " + lead.group(0).strip()
            raw = raw[lead.end():]
        raw = raw.strip()
        if raw:
            out.append(AnswerSentence(raw, cited_numbers(raw)))
    return out


def check_support(
    answer: Sequence[AnswerSentence], passages: dict[int, str], checker: SupportChecker, threshold: float,
    exempt: Callable[[str], bool] = lambda text: False,
) -> None:
    """Set ``supported``/``support`` on each sentence: its best-scoring cited passage against ``threshold``.

    A sentence that cites nothing is unsupported; ``exempt`` sentences (e.g. "the sources do not say")
    are left unchecked.
    """
    pairs: list[tuple[str, str]] = []
    owners: list[int] = []
    for i, sentence in enumerate(answer):
        if exempt(sentence.text):
            continue
        claim = strip_citations(sentence.text)
        cited = [n for n in sentence.citations if n in passages]
        if not cited:
            sentence.supported, sentence.support = False, None
            continue
        for number in cited:
            pairs.append((claim, passages[number]))
            owners.append(i)
    if not pairs:
        return
    scores = checker(pairs)
    best: dict[int, float] = {}
    for owner, score in zip(owners, scores):
        best[owner] = max(best.get(owner, 0.0), float(score))
    for owner, score in best.items():
        answer[owner].support = score
        answer[owner].supported = score >= threshold


# -- checkers -------------------------------------------------------------------------------------

_WORD = re.compile(r"\w+")
_STOP = frozenset(
    "a an the of in on at to for from by with and or but is are was were be been being it its this that these "
    "those as not no do does did has have had which who whom what when where why how than then there their they "
    "he she his her him we our you your i s".split()
)


def overlap_support(pairs: Sequence[tuple[str, str]]) -> np.ndarray:
    """Share of the claim's content words that occur in the passage (0..1)."""
    out = np.zeros(len(pairs), dtype=np.float32)
    for i, (claim, passage) in enumerate(pairs):
        words = {w for w in _WORD.findall(claim.lower()) if w not in _STOP}
        if words:
            present = set(_WORD.findall(passage.lower()))
            out[i] = len(words & present) / len(words)
    return out


def cross_encoder_support(scorer) -> SupportChecker:  # noqa: ANN001 - a CrossEncoder
    """The cross-encoder's relevance of the passage to the claim (claim as the query)."""
    return lambda pairs: scorer.score_pairs(list(pairs))


def embedding_support(embedder) -> SupportChecker:  # noqa: ANN001 - an Embedder
    """Cosine of the claim's and the passage's document embeddings, mapped from -1..1 to 0..1."""

    def check(pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        claims = embedder.embed_documents([c for c, _ in pairs])
        passages = embedder.embed_documents([p for _, p in pairs])
        return ((np.sum(claims * passages, axis=1) + 1.0) / 2.0).astype(np.float32)

    return check
