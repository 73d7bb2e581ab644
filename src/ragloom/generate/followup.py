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
- **llm**: a prompt (``answer.prompts.followup``) asks the LLM for the standalone question.

Either way the result says what it did and why: the first step of ``Answer.trace``
(``ragloom ask --trace``, ``/explain`` in ``ragloom chat``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

#: Words that carry no topic: function words, question words, and chat filler.
STOP_WORDS = frozenset(
    """a about above after again against all also am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during
    each else ever few for from further get gets getting give go got had hadn't has hasn't have haven't having he
    he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't
    it it's its itself just know let let's like make me more most much must mustn't my myself need no nor not now
    of off on once one only or other ought our ours ourselves out over own please really same say see shall shan't
    she she'd she'll she's should shouldn't so some such tell than thank thanks that that's the their theirs them
    themselves then there there's these they they'd they'll they're they've thing things think this those through
    to too under until up us use used very want was wasn't way we we'd we'll we're we've well were weren't what
    what's when when's where where's which while who who's whom why why's will with won't would wouldn't yes yet
    you you'd you'll you're you've your yours yourself yourselves ok okay hi hello sure also maybe i'd many""".split()
)
#: Words that point back at something the conversation has already named.
REFERRING = frozenset(
    """he him his she her hers it its they them their theirs this that these those there then such former latter
    one ones same above aforementioned""".split()
)
_OPENERS = re.compile(r"^\s*(and|or|but|so|also|what about|how about|what else|anything else|then|why not)\b", re.I)
_WORD = re.compile(r"[^\W_][\w'’.\-]*[^\W_]|[^\W_]")
_PROPER = re.compile(r"(?<![.?!]\s)(?<!^)\b([A-Z][\w'’\-]*(?:\s+(?:of|de|the|and|&)?\s*[A-Z][\w'’\-]*)*)")


#: Terms carried into a follow-up: 6 was best of 3/4/6/8/12 on the tune half of convqa-dev
#: (nDCG@10 on MTRAG follow-ups and the share of CANARD's human-added terms, BENCHMARKS.md).
MAX_TERMS = 6
#: The least weight a name of an earlier user turn keeps, however many turns ago it was said.
NAME_FLOOR = 0.6


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


def words(text: str) -> list[str]:
    return [w.replace("’", "'").strip(".-'").lower() for w in _WORD.findall(text)]


def content_words(text: str) -> list[str]:
    return [w for w in words(text) if w not in STOP_WORDS and len(w) > 1 and not w.isdigit()]


def refers_back(question: str, min_content_words: int = 3) -> str | None:
    """Why ``question`` cannot stand alone, or None when it can."""
    tokens = words(question)
    pointing = sorted({t for t in tokens if t in REFERRING})
    if pointing:
        return f"it refers back ({', '.join(pointing)})"
    if _OPENERS.match(question):
        return "it continues the previous turn"
    if len(content_words(question)) < min_content_words:
        return f"it has fewer than {min_content_words} words of its own to search"
    return None


def offline_rewrite(question: str, history: Sequence[Turn], max_terms: int = MAX_TERMS) -> Rewrite:
    """The question with the salient terms of the earlier turns carried into it, when it refers back."""
    earlier = [t for t in history if t.role in ("user", "assistant", "system") and t.content.strip()]
    if not earlier:
        return Rewrite(question, question, "none", "first turn: nothing to carry over")
    reason = refers_back(question)
    if reason is None:
        return Rewrite(question, question, "none", "it stands alone")
    terms = salient_terms(question, earlier, max_terms)
    if not terms:
        return Rewrite(question, question, "none", f"{reason}, but the earlier turns name nothing to carry over")
    query = f"{question.strip()} {' '.join(terms)}"
    return Rewrite(query, question, "offline", f"{reason}: carried {', '.join(terms)}", tuple(terms))


def salient_terms(question: str, history: Sequence[Turn], max_terms: int) -> list[str]:
    """Terms of the earlier turns, best first: the latest user questions' names and content words,
    then the assistant's names; none that the question already has."""
    have = set(words(question))
    scores: dict[str, float] = {}
    order: dict[str, int] = {}
    # A system turn (a document's title, a topic the user set) holds for the whole conversation.
    for position, term in enumerate(_terms(" ".join(t.content for t in history if t.role == "system"), False)):
        _score(scores, order, term, 1.5 if term[0].isupper() else 0.75, position)
    user_turns = [t for t in history if t.role == "user"]
    for age, turn in enumerate(reversed(user_turns)):
        # Content words fade with each turn; names fade to a floor: the subject of a conversation
        # is usually named once, early, and referred to by "it" or "he" afterwards.
        fading = 1.0 / (1 + age)
        for position, term in enumerate(_terms(turn.content, names_only=False)):
            weight = max(2.0 * fading, NAME_FLOOR) if term[0].isupper() else fading
            _score(scores, order, term, weight, 1000 + position + 100 * age)
    assistant = [t for t in history if t.role == "assistant"]
    if assistant:
        for position, term in enumerate(_terms(assistant[-1].content, names_only=True)):
            _score(scores, order, term, 0.5, 100_000 + position)
    ranked = sorted(scores, key=lambda term: (-scores[term], order[term]))
    chosen: list[str] = []
    seen = set(have)
    for term in ranked:
        parts = set(words(term))
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


def _terms(text: str, names_only: bool) -> list[str]:
    names = [m.group(1) for m in _PROPER.finditer(text) if m.group(1).lower() not in STOP_WORDS]
    if names_only:
        return names
    named = {w for name in names for w in words(name)}
    return names + [w for w in content_words(text) if w not in named]


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
