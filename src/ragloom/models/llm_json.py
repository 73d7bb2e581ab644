"""Asking an LLM for JSON: one retry, and an answer cut off by the token limit salvaged.

Entity extraction, the agentic and the proposition chunkers all ask a small model for a
JSON object; this is the one helper they share, below all of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import ProviderError

T = TypeVar("T")


def ask_json(
    complete: Callable[[str], str], prompt: str, parse: Callable[[Any], T],
    errors: tuple[type[BaseException], ...] = (ProviderError, ValueError),
) -> tuple[T | None, str]:
    """Ask for JSON (``complete`` sends the prompt to an LLM in JSON mode) and ``parse`` it, an
    answer cut off by the token limit salvaged, with one retry: the parsed value and "", or None
    and the last problem's first line."""
    problem = ""
    for _attempt in range(2):
        try:
            return parse(salvage_json(complete(prompt))), ""
        except errors as exc:
            problem = str(exc).splitlines()[0]
    return None, problem


def salvage_json(text: str) -> Any:
    """``text`` as JSON; an answer cut off by the token limit keeps its complete items.

    A small model often runs out of tokens inside the tenth entity: rather than lose the
    nine before it, the answer is cut after its last complete ``}`` and the brackets still
    open are closed. Raises ValueError when nothing parses."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    ends = [i for i, ch in enumerate(text) if ch == "}"]
    for end in reversed(ends[-200:]):
        closers = _unclosed(text[: end + 1])
        if closers is None:
            continue
        try:
            return json.loads(text[: end + 1] + closers)
        except ValueError:
            continue
    raise ValueError(f"the answer is not JSON, even cut short: {text[:120]!r}")


def _unclosed(prefix: str) -> str | None:
    """The closing brackets that ``prefix`` lacks, or None when it ends inside a string."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in prefix:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            stack.append("]" if ch == "[" else "}")
        elif ch in "]}":
            if not stack:
                return None
            stack.pop()
    return None if in_string else "".join(reversed(stack))
