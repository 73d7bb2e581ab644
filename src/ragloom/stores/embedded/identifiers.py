"""Identifiers for BM25: what the word analyzer cuts apart or leaves whole, indexed both ways.

The text analyzer splits ``snake_case`` at the underscore and a UUID at its hyphens, and keeps
``camelCase`` as one word. Beside it, every identifier-like token (one with ``_ . - / :`` inside, or
a lower-to-upper case change) is indexed whole and lower-cased in
its own field, so ``parse_config``, ``v2.3.1``, ``report.pdf`` or a UUID match exactly;
and the parts of a ``camelCase`` word (``get``, ``user``, ``name``) are added to the text, so
``get user name`` finds ``getUserName``.
"""

from __future__ import annotations

import re

#: A token that may be an identifier: word characters joined by ``. - / : _``.
_TOKEN = re.compile(r"[\w$@#]+(?:[./:\-][\w$@#]+)*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z0-9])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_INNER_MARK = re.compile(r"[_./:\-]")
_CASE_CHANGE = re.compile(r"[a-z][A-Z]")
_LETTER = re.compile(r"[^\W\d_]")
#: Whole identifiers longer than this are not indexed (base64, minified lines).
MAX_IDENTIFIER_CHARS = 80


def is_identifier(token: str) -> bool:
    """Whether ``token`` is written like an identifier rather than a plain word or number."""
    core = token.strip("_.-/:")
    if not core or len(core) > MAX_IDENTIFIER_CHARS:
        return False
    if _INNER_MARK.search(core) or _CASE_CHANGE.search(core):
        return bool(_LETTER.search(core)) or core.count("-") >= 2 or core.count(".") >= 2
    return False  # a plain word, or letters and digits (E1234): the text field holds it whole already


def identifiers(text: str) -> list[str]:
    """The identifier-like tokens of ``text``, lower-cased, in order, without repeats."""
    found = (match.group(0).strip("_.-/:") for match in _TOKEN.finditer(text))
    return list(dict.fromkeys(token.lower() for token in found if is_identifier(token)))


def camel_parts(text: str) -> str:
    """The words inside the ``camelCase`` and ``PascalCase`` tokens of ``text``, space-separated
    (empty when it has none): indexed beside the text, which keeps such a token whole."""
    parts: list[str] = []
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if _CASE_CHANGE.search(token) or re.search(r"[A-Z]{2}[a-z]", token):
            parts.extend(_CAMEL.findall(token))
    return " ".join(parts)
