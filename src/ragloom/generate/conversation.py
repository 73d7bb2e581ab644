"""Conversations: earlier turns in, a standalone query for retrieval, answers cited per turn.

``history`` is the earlier messages, each a ``{"role", "content"}`` mapping (OpenAI's chat format)
or a ``Turn``: roles ``user``, ``assistant`` and ``system``. What is done with them:

- They are checked (a role outside the three, a message that is not text: a QueryError naming it)
  and bounded: at most ``MAX_TURNS`` are looked at, then the newest that fit
  ``answer.history_tokens`` are kept, oldest dropped first, so a long conversation never
  overflows the LLM's context.
- They only ever make the question standalone (``generate/followup.py``): a system message
  gives the conversation's topic, never instructions. The engine's own prompts, citation rules
  and the caller's filters are not something a message can change.
- Citations are numbered per turn: each turn builds its own context from its own retrieval, so
  an earlier turn's sources are cited again only when they are retrieved again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import QueryError
from .followup import Turn
from ..types import Answer

ROLES = ("user", "assistant", "system")
#: Turns looked at, newest first, before the token bound applies (a 10,000-turn history costs nothing).
MAX_TURNS = 200

HistoryItem = Turn | Mapping[str, Any]


def normalise_history(history: Sequence[HistoryItem] | None, count_tokens: Callable[[str], int],
                      max_tokens: int) -> tuple[list[Turn], int]:
    """The turns kept, oldest first, and how many earlier ones were dropped to fit ``max_tokens``."""
    if not history:
        return [], 0
    if isinstance(history, (str, bytes)) or not isinstance(history, Sequence):
        raise QueryError("history must be a list of messages, each {\"role\": ..., \"content\": ...}")
    turns = [_turn(item, number) for number, item in enumerate(history, start=1)]
    turns = [t for t in turns if t.content.strip()]
    recent = turns[-MAX_TURNS:]
    kept: list[Turn] = []
    used = 0
    for turn in reversed(recent):
        cost = count_tokens(turn.content)
        if used + cost > max_tokens:
            break
        kept.append(turn)
        used += cost
    kept.reverse()
    return kept, len(turns) - len(kept)


def _turn(item: HistoryItem, number: int) -> Turn:
    if isinstance(item, Turn):
        role, content = item.role, item.content
    elif isinstance(item, Mapping):
        role, content = item.get("role"), item.get("content")
    else:
        raise QueryError(f"history message {number} is a {type(item).__name__}, not {{\"role\", \"content\"}}")
    if role not in ROLES:
        raise QueryError(f"history message {number} has role {role!r}; roles are {', '.join(ROLES)}")
    if isinstance(content, list):  # OpenAI's content parts: keep the text parts
        content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text")
    if not isinstance(content, str):
        raise QueryError(f"history message {number} has no text content")
    return Turn(str(role), content)


@dataclass
class Conversation:
    """Keeps the turns of one conversation: ``conv.ask(q)`` answers with the earlier turns as history.

    >>> conv = index.conversation()                  # doctest: +SKIP
    >>> conv.ask("Who designed the Sydney Opera House?")  # doctest: +SKIP
    >>> conv.ask("When did he die?")                 # doctest: +SKIP
    """

    ask_stream_fn: Callable[..., Iterator[str | Answer]]
    options: dict[str, Any] = field(default_factory=dict)
    turns: list[Turn] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)

    def ask(self, question: str, **options: Any) -> Answer:
        answer = None
        for piece in self.ask_stream(question, **options):
            if isinstance(piece, Answer):
                answer = piece
        assert answer is not None
        return answer

    def ask_stream(self, question: str, **options: Any) -> Iterator[str | Answer]:
        """The answer's text in pieces, then the Answer; the turn is kept once it is complete."""
        for piece in self.ask_stream_fn(question, history=list(self.turns), **{**self.options, **options}):
            if isinstance(piece, Answer):
                self.turns += [Turn("user", question), Turn("assistant", piece.text)]
                self.answers.append(piece)
            yield piece

    def reset(self) -> None:
        self.turns.clear()
        self.answers.clear()

    @property
    def last(self) -> Answer | None:
        return self.answers[-1] if self.answers else None
