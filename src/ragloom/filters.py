"""The metadata filter language shared by every store.

A filter is a mapping of metadata key to a condition, all of which must hold::

    {"source": "notes.md"}                       # equality
    {"page": {"$gte": 2, "$lt": 5}}              # ranges
    {"section": {"$in": ["Intro", "Usage"]}}     # membership
    {"$and": [{"team": "a"}, {"page": 2}]}       # all of several filters (a server ANDs a key's own)

The CLI form is ``key=value``, ``key!=value``, ``key<value``, ``key<=value``,
``key>value``, ``key>=value`` and ``key~a,b,c`` (in). Stores translate the parsed
conditions into their own query language; ``matches`` is the reference semantics.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import FilterError

OPERATORS = ("$eq", "$ne", "$in", "$lt", "$lte", "$gt", "$gte")
_CLI_PATTERN = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*(<=|>=|!=|=|<|>|~)\s*(.*?)\s*$")
_OPERATOR_CHARS = "<>=!~"
_CLI_OPS = {"=": "$eq", "!=": "$ne", "<": "$lt", "<=": "$lte", ">": "$gt", ">=": "$gte", "~": "$in"}


@dataclass(frozen=True)
class Condition:
    key: str
    op: str
    value: Any


def parse_where(where: Mapping[str, Any] | None) -> list[Condition]:
    """Turn a filter mapping into a list of conditions; an error for anything unknown."""
    if not where:
        return []
    conditions: list[Condition] = []
    for key, spec in where.items():
        if key == "$and":  # every part must hold, so no part can widen another
            conditions.extend(_all_of(spec))
            continue
        if not isinstance(key, str) or not key:
            raise FilterError(f"filter keys must be non-empty strings, got {key!r}")
        if isinstance(spec, Mapping):
            if not spec:
                raise FilterError(f"filter on {key!r} is empty; give a value or an operator")
            for op, value in spec.items():
                if op not in OPERATORS:
                    raise FilterError(
                        f"unknown filter operator {op!r} on {key!r}; use one of: {', '.join(OPERATORS)}"
                    )
                conditions.append(_condition(key, op, value))
        else:
            conditions.append(_condition(key, "$eq", spec))
    return conditions


def _all_of(parts: Any) -> list[Condition]:
    if isinstance(parts, (str, bytes, Mapping)) or not isinstance(parts, Iterable):
        raise FilterError(f"$and needs a list of filters, got {parts!r}")
    return [condition for part in parts for condition in parse_where(part)]


def all_of(*wheres: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """One filter that holds where every given one holds (None and empty ones are left out)."""
    present = [dict(w) for w in wheres if w]
    if len(present) <= 1:
        return present[0] if present else None
    return {"$and": present}


def _condition(key: str, op: str, value: Any) -> Condition:
    if op == "$in":
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise FilterError(f"$in on {key!r} needs a list of values, got {value!r}")
        value = tuple(value)
        if not value:
            raise FilterError(f"$in on {key!r} needs at least one value")
    elif op in ("$lt", "$lte", "$gt", "$gte") and not isinstance(value, (int, float, str)):
        raise FilterError(f"{op} on {key!r} needs a number or a string, got {value!r}")
    return Condition(key, op, value)


def parse_cli_filters(expressions: Iterable[str]) -> dict[str, Any]:
    """``["page>=2", "kind=notes"]`` -> ``{"page": {"$gte": 2}, "kind": {"$eq": "notes"}}``."""
    where: dict[str, dict[str, Any]] = {}
    for expression in expressions:
        match = _CLI_PATTERN.match(expression)
        if not match:
            raise FilterError(
                f"cannot read filter {expression!r}; write key=value, key!=value, key<value, "
                "key<=value, key>value, key>=value or key~a,b,c"
            )
        key, symbol, raw = match.groups()
        if raw[:1] in _OPERATOR_CHARS:  # "page>>2", "kind==x": a mistyped operator, not a value
            raise FilterError(
                f"cannot read filter {expression!r}: {symbol + raw[:1]!r} is not an operator; use one of "
                f"{', '.join(_CLI_OPS)} (quote a value that starts with one of {_OPERATOR_CHARS!r})"
            )
        op = _CLI_OPS[symbol]
        value: Any = [_scalar(part) for part in raw.split(",")] if op == "$in" else _scalar(raw)
        where.setdefault(key, {})[op] = value
    return where


def _scalar(raw: str) -> Any:
    text = raw.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def matches(metadata: Mapping[str, Any], conditions: Iterable[Condition]) -> bool:
    """Reference semantics: every condition holds. A missing key fails every operator but $ne."""
    return all(_holds(metadata.get(c.key, _MISSING), c) for c in conditions)


_MISSING = object()


def _holds(actual: Any, condition: Condition) -> bool:
    op, expected = condition.op, condition.value
    if actual is _MISSING or actual is None:
        return op == "$ne"
    if isinstance(actual, list):  # a list-valued field matches if any element does
        return any(_holds(item, condition) for item in actual) if op != "$ne" else all(
            _holds(item, condition) for item in actual
        )
    if op == "$eq":
        return _same(actual, expected)
    if op == "$ne":
        return not _same(actual, expected)
    if op == "$in":
        return any(_same(actual, item) for item in expected)
    if isinstance(actual, bool) != isinstance(expected, bool):
        return False  # booleans are not numbers, as in every store's own filters
    try:
        if op == "$lt":
            return actual < expected
        if op == "$lte":
            return actual <= expected
        if op == "$gt":
            return actual > expected
        return actual >= expected
    except TypeError:
        return False


def _same(actual: Any, expected: Any) -> bool:
    if isinstance(actual, bool) or isinstance(expected, bool):
        return actual is expected or actual == expected and type(actual) is type(expected)
    return actual == expected
