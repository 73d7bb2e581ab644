"""Follow-up questions made standalone, so that each turn of a conversation is searched on its own.

"When did he die?" after "Who designed the Sydney Opera House?" finds nothing about Jørn Utzon
on its own words. Before retrieval, a follow-up is rewritten with what the conversation has
established:

- **offline** (no LLM, well under a millisecond): when the question refers back (a pronoun or a
  demonstrative, an opening "and"/"what about", or too few words of its own to be searched), the
  salient terms of the earlier turns are carried into it: names and capitalised phrases first,
  then the content words of the latest user questions, most recent first, never a word the
  question already has. The rewrite is the question followed by those terms (on convqa-dev it
  beat the question alone, the LLM rewrite and every question concatenated: BENCHMARKS.md).
  Words are read in the language the user writes in (``lang/lexicon.py``: its stop words,
  pronouns and openers; Chinese, Japanese and Thai split at their stop words); English keeps
  the lists it was tuned with.
- **llm**: a prompt (``answer.prompts.followup``) asks the LLM for the standalone question.

Either way the result says what it did and why: the first step of ``Answer.trace``
(``ragloom ask --trace``, ``/explain`` in ``ragloom chat``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..lang.detect import detect_language
from ..lang.lexicon import ENGLISH, ENGLISH_REFERRING, ENGLISH_STOP_WORDS, Lexicon, lexicon

#: The English word lists (every language's are in ``lang/lexicon.py``).
STOP_WORDS = ENGLISH_STOP_WORDS
REFERRING = ENGLISH_REFERRING


#: Terms carried into a follow-up: 6 was best of 3/4/6/8/12 on the tune half of convqa-dev
#: (nDCG@10 on MTRAG follow-ups and the share of CANARD's human-added terms, BENCHMARKS.md).
MAX_TERMS = 6
#: The least weight a name of an earlier user turn keeps, however many turns ago it was said.
NAME_FLOOR = 0.6
#: The user turns (the latest) read with the question to tell the conversation's language.
LANGUAGE_TURNS = 3


@dataclass(frozen=True)
class Turn:
    """One message of a conversation: ``role`` is "user", "assistant" or "system"."""

    role: str
    content: str


@dataclass(frozen=True)
class Rewrite:
    """The query a turn is searched with, and why."""

    query: str
    original: str
    method: str  # "none" | "offline" | "llm"
    reason: str
    added: tuple[str, ...] = field(default_factory=tuple)

    @property
    def rewritten(self) -> bool:
        return self.query != self.original

    def to_dict(self) -> dict:
        return {"query": self.query, "original": self.original, "method": self.method, "reason": self.reason,
                "added": list(self.added)}


def words(text: str, reading: Lexicon = ENGLISH) -> list[str]:
    return reading.words(text)


def content_words(text: str, reading: Lexicon = ENGLISH) -> list[str]:
    return reading.content_words(text)


def conversation_lexicon(question: str, history: Sequence[Turn]) -> Lexicon:
    """The lexicon of the language the user writes in: the question and the latest user turns,
    read together (a follow-up alone is often too short to tell)."""
    users = [t.content for t in history if t.role == "user"][-LANGUAGE_TURNS:]
    code, _ = detect_language(" ".join([*users, question]))
    return lexicon(code)


def refers_back(question: str, min_content_words: int = 3, reading: Lexicon = ENGLISH) -> str | None:
    """Why ``question`` cannot stand alone, or None when it can."""
    tokens = reading.words(question)
    pointing = sorted({t for t in tokens if reading.fold(t) in reading.referring})
    if pointing:
        return f"it refers back ({', '.join(pointing)})"
    if reading.openers.match(question):
        return "it continues the previous turn"
    if reading.word_count(question) < min_content_words:
        return f"it has fewer than {min_content_words} words of its own to search"
    return None


def offline_rewrite(question: str, history: Sequence[Turn], max_terms: int = MAX_TERMS,
                    reading: Lexicon | None = None) -> Rewrite:
    """The question with the salient terms of the earlier turns carried into it, when it refers back.

    ``reading``: the language's words (default: the language the user writes in)."""
    earlier = [t for t in history if t.role in ("user", "assistant", "system") and t.content.strip()]
    if not earlier:
        return Rewrite(question, question, "none", "first turn: nothing to carry over")
    reading = reading or conversation_lexicon(question, earlier)
    reason = refers_back(question, reading=reading)
    if reason is None:
        return Rewrite(question, question, "none", "it stands alone")
    terms = salient_terms(question, earlier, max_terms, reading)
    if not terms:
        return Rewrite(question, question, "none", f"{reason}, but the earlier turns name nothing to carry over")
    query = f"{question.strip()} {' '.join(terms)}"
    return Rewrite(query, question, "offline", f"{reason}: carried {', '.join(terms)}", tuple(terms))


def salient_terms(question: str, history: Sequence[Turn], max_terms: int, reading: Lexicon = ENGLISH) -> list[str]:
    """Terms of the earlier turns, best first: the latest user questions' names and content words,
    then the assistant's names; none that the question already has."""
    have = set(reading.words(question))
    scores: dict[str, float] = {}
    order: dict[str, int] = {}
    # A system turn (a document's title, a topic the user set) holds for the whole conversation.
    for position, term in enumerate(_terms(" ".join(t.content for t in history if t.role == "system"), False, reading)):
        _score(scores, order, term, 1.5 if term[0].isupper() else 0.75, position)
    user_turns = [t for t in history if t.role == "user"]
    for age, turn in enumerate(reversed(user_turns)):
        # Content words fade with each turn; names fade to a floor: the subject of a conversation
        # is usually named once, early, and referred to by "it" or "he" afterwards.
        fading = 1.0 / (1 + age)
        for position, term in enumerate(_terms(turn.content, False, reading)):
            weight = max(2.0 * fading, NAME_FLOOR) if term[0].isupper() else fading
            _score(scores, order, term, weight, 1000 + position + 100 * age)
    assistant = [t for t in history if t.role == "assistant"]
    if assistant:
        for position, term in enumerate(_terms(assistant[-1].content, True, reading)):
            _score(scores, order, term, 0.5, 100_000 + position)
    ranked = sorted(scores, key=lambda term: (-scores[term], order[term]))
    chosen: list[str] = []
    seen = set(have)
    for term in ranked:
        parts = set(reading.words(term))
        if parts <= seen:
            continue
        chosen.append(term)
        seen |= parts
        if len(chosen) >= max_terms:
            break
    return chosen


def _score(scores: dict[str, float], order: dict[str, int], term: str, weight: float, position: int) -> None:
    scores[term] = scores.get(term, 0.0) + weight
    order.setdefault(term, position)


def _terms(text: str, names_only: bool, reading: Lexicon) -> list[str]:
    names = reading.names(text)
    if names_only:
        return names
    named = {w for name in names for w in reading.words(name)}
    return names + [w for w in reading.content_words(text) if w not in named]


#: How much of the conversation the LLM is shown: the latest turns, each cut to this many characters.
LLM_HISTORY_TURNS = 6
LLM_TURN_CHARS = 400
_ANSWER_PREFIX = re.compile(r"^\s*(rewritten question|standalone question|question)\s*:\s*", re.I)


def llm_rewrite(question: str, history: Sequence[Turn], complete: Callable[[str], str], template: str) -> Rewrite:
    """The LLM's standalone version of ``question``; the offline rewrite when the reply is unusable.

    ``template`` has ``{history}`` and ``{question}`` (``answer.prompts.followup``); ``complete``
    sends a prompt and returns the reply.
    """
    earlier = [t for t in history if t.role in ("user", "assistant") and t.content.strip()]
    if not earlier:
        return Rewrite(question, question, "none", "first turn: nothing to carry over")
    shown = "\n".join(
        f"{'User' if t.role == 'user' else 'Assistant'}: {' '.join(t.content.split())[:LLM_TURN_CHARS]}"
        for t in earlier[-LLM_HISTORY_TURNS:]
    )
    reply = complete(template.format(history=shown, question=question.strip()))
    line = next((ln for ln in reply.strip().splitlines() if ln.strip()), "")
    candidate = _ANSWER_PREFIX.sub("", line).strip().strip('"\'“”').strip()
    if not candidate or len(candidate) > 4 * len(question) + 200:
        fallback = offline_rewrite(question, history)
        return Rewrite(fallback.query, question, fallback.method,
                       f"the LLM's rewrite was unusable ({'empty' if not candidate else 'too long'}); {fallback.reason}",
                       fallback.added)
    if " ".join(words(candidate)) == " ".join(words(question)):
        return Rewrite(question, question, "llm", "the LLM kept the question as it was")
    added = tuple(w for w in dict.fromkeys(words(candidate)) if w not in set(words(question)))
    return Rewrite(candidate, question, "llm", "rewritten by the LLM with the conversation", added)
