"""SQL cut by statement, without a grammar.

tree-sitter-sql reads one dialect; a real schema dump (PostgreSQL's ``ALTER TABLE ONLY``,
``CREATE TRIGGER … EXECUTE PROCEDURE``, ``$$``-quoted function bodies, MySQL's ``DELIMITER``)
is mostly syntax errors to it, and fell back to line chunks. Statements are found here by
their ``;`` outside strings, quoted names, comments and dollar-quoted bodies, which every
dialect shares. A statement that creates a named object (a table, a view, a function …) is a
definition named after it; the others (``ALTER``, ``INSERT``, ``GRANT``, an index) are the
file's module code around them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_CREATE = re.compile(
    r"CREATE\s+(?:OR\s+REPLACE\s+)?(?:(?:GLOBAL|LOCAL|TEMP|TEMPORARY|UNLOGGED|RECURSIVE|DEFINER\s*=\s*\S+|"
    r"ALGORITHM\s*=\s*\w+|SQL\s+SECURITY\s+\w+|CONSTRAINT)\s+)*"
    r"(?P<kind>TABLE|MATERIALIZED\s+VIEW|VIEW|FUNCTION|PROCEDURE|TRIGGER|TYPE|DOMAIN|AGGREGATE|SCHEMA|PACKAGE(?:\s+BODY)?)"
    r"\s+(?:IF\s+NOT\s+EXISTS\s+)?(?P<name>(?:[\w$]+|\"[^\"]+\"|`[^`]+`|\[[^\]]+\])(?:\s*\.\s*(?:[\w$]+|\"[^\"]+\"|`[^`]+`|\[[^\]]+\]))*)",
    re.IGNORECASE)
_TOKEN = re.compile(r"--[^\n]*|/\*.*?(?:\*/|\Z)|'(?:[^']|'')*'?|\"[^\"]*\"?|`[^`]*`?|\$(?P<tag>[A-Za-z_]*)\$|;", re.DOTALL)
_KINDS = {"materialized view": "view", "package body": "package"}


@dataclass(frozen=True)
class Statement:
    """A statement's character range (its leading comments included), and the object it creates."""

    start: int
    end: int
    kind: str
    name: str


def statements(text: str) -> Iterator[Statement]:
    """The statements of ``text`` in order; ``kind``/``name`` empty for those that create nothing."""
    start = 0
    position = 0
    while True:
        match = _TOKEN.search(text, position)
        if match is None:
            break
        token = match.group(0)
        if match.group("tag") is not None:  # $$ … $$ or $body$ … $body$: skip to its closing tag
            closing = text.find(token, match.end())
            position = len(text) if closing < 0 else closing + len(token)
            continue
        position = match.end()
        if token == ";":
            yield _statement(text, start, position)
            start = position
    if text[start:].strip():
        yield _statement(text, start, len(text))


def _statement(text: str, start: int, end: int) -> Statement:
    body = _without_comments(text[start:end]).strip()
    created = _CREATE.match(body)
    if created is None:
        return Statement(start, end, "", "")
    kind = " ".join(created.group("kind").lower().split())
    name = re.sub(r"\s*\.\s*", ".", created.group("name")).replace('"', "").replace("`", "").strip("[]")
    return Statement(start, end, _KINDS.get(kind, kind), name)


def _without_comments(text: str) -> str:
    return re.sub(r"--[^\n]*|/\*.*?\*/", " ", text, flags=re.DOTALL)
