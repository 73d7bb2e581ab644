"""The metadata filter language shared by every store.

A filter is a mapping of metadata key to a condition, all of which must hold::

    {"source": "notes.md"}                       # equality
    {"page": {"$gte": 2, "$lt": 5}}              # ranges
    {"section": {"$in": ["Intro", "Usage"]}}     # one of
    {"section": {"$contains": "cors"}}           # text that contains, ignoring case
    {"$and": [{"team": "a"}, {"page": 2}]}       # all of several filters (a server ANDs a key's own)

The CLI form is ``key=value``, ``key!=value``, ``key<value``, ``key<=value``,
``key>value``, ``key>=value``, ``key*=text`` (contains) and ``key~a,b,c`` (one of:
``~`` is membership, not "contains"; it keeps that meaning so existing scripts do not
change). Stores translate the parsed conditions into their own query language;
``matches`` is the reference semantics.

``source`` values name a file as the user sees it: the index turns them into the stored
paths they name (``resolve_sources``) before a store sees them. ``filter_warnings`` says
when a key or a value's type is one no stored passage has, since such a filter
silently matches nothing.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import FilterError

OPERATORS = ("$eq", "$ne", "$in", "$lt", "$lte", "$gt", "$gte", "$contains")
_CLI_PATTERN = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*(<=|>=|!=|\*=|=|<|>|~)\s*(.*?)\s*$")
_OPERATOR_CHARS = "<>=!~"
_CLI_OPS = {"=": "$eq", "!=": "$ne", "<": "$lt", "<=": "$lte", ">": "$gt", ">=": "$gte", "*=": "$contains",
            "~": "$in"}
_CLI_FORMS = "key=value, key!=value, key<value, key<=value, key>value, key>=value, key*=text (contains) or key~a,b,c (one of)"


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
    elif op == "$contains" and (not isinstance(value, str) or not value):
        raise FilterError(f"$contains on {key!r} needs a non-empty text, got {value!r}; it matches text fields only")
    return Condition(key, op, value)


def parse_cli_filters(expressions: Iterable[str]) -> dict[str, Any]:
    """``["page>=2", "kind=notes"]`` -> ``{"page": {"$gte": 2}, "kind": {"$eq": "notes"}}``."""
    where: dict[str, dict[str, Any]] = {}
    for expression in expressions:
        match = _CLI_PATTERN.match(expression)
        if not match:
            raise FilterError(f"cannot read filter {expression!r}; write {_CLI_FORMS}")
        key, symbol, raw = match.groups()
        if raw[:1] in _OPERATOR_CHARS:  # "page>>2", "kind==x": a mistyped operator, not a value
            raise FilterError(
                f"cannot read filter {expression!r}: {symbol + raw[:1]!r} is not an operator; use one of "
                f"{', '.join(_CLI_OPS)} (quote a value that starts with one of {_OPERATOR_CHARS!r})"
            )
        op = _CLI_OPS[symbol]
        if op == "$in":
            value: Any = [_scalar(part) for part in raw.split(",")]
        elif op == "$contains":
            value = _unquoted(raw)  # "page*=2" looks for the text 2: contains is for text only
        else:
            value = _scalar(raw)
        where.setdefault(key, {})[op] = value
    return where


def _unquoted(raw: str) -> str:
    text = raw.strip()
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" else text


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
    if op == "$contains":
        # lower(), not casefold(): the embedded store's numpy columns can only lower-case
        return isinstance(actual, str) and expected.lower() in actual.lower()
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


# -- source names ------------------------------------------------------------------------------------

SOURCE_KEY = "source"


def names_source(path: str, value: str) -> bool:
    """Whether ``value`` names the stored ``path``: the whole path, a tail of it that starts at
    a folder boundary (``cors.md``, ``tutorial/cors.md``: the path relative to the ingested
    folder or any shorter tail), or a glob (``**/cors.md``, ``docs/*.md``) over the path or a tail."""
    normal = path.replace("\\", "/")
    wanted = value.replace("\\", "/")
    if normal == wanted or normal.endswith("/" + wanted.lstrip("/")):
        return True
    if not any(ch in wanted for ch in "*?["):
        return False
    tail = wanted.lstrip("/")
    if tail.startswith("**/"):  # "**/cors.md" also names a file at the top: "**/" may match no folder
        tail = tail[3:]
    return fnmatch.fnmatchcase(normal, wanted) or fnmatch.fnmatchcase(normal, "*/" + tail)


def resolve_sources(conditions: Sequence[Condition], sources: Callable[[], Sequence[str]]) -> list[Condition]:
    """``source`` conditions with the names a user writes (a relative path, a basename, a glob)
    replaced by the stored paths they name, so every store compares exact paths. A name that
    names no source is kept as written (it matches nothing, and ``filter_warnings`` says so)."""
    if not any(c.key == SOURCE_KEY and c.op in ("$eq", "$ne", "$in") for c in conditions):
        return list(conditions)
    paths = list(sources())
    out = []
    for condition in conditions:
        if condition.key != SOURCE_KEY or condition.op not in ("$eq", "$ne", "$in"):
            out.append(condition)
            continue
        names = condition.value if condition.op == "$in" else (condition.value,)
        named = tuple(sorted({p for p in paths for n in names if isinstance(n, str) and names_source(p, n)}))
        if not named:
            out.append(condition)
        elif condition.op == "$ne":  # "not this file": every other source
            others = tuple(sorted(p for p in paths if p not in named))
            out.append(Condition(SOURCE_KEY, "$in", others) if others else Condition(SOURCE_KEY, "$eq", condition.value))
        else:
            out.append(Condition(SOURCE_KEY, "$in", named))
    return out


# -- warnings: a filter that cannot match ---------------------------------------------------------

#: The kinds of stored values ``kind_of`` tells apart.
KINDS = ("text", "number", "boolean")


def kind_of(value: Any) -> str | None:
    """``text``, ``number`` or ``boolean``; None for anything else (lists give their elements')."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "text"
    return None


def value_kinds(metadata: Iterable[Mapping[str, Any]]) -> dict[str, frozenset[str]]:
    """Each metadata key and the kinds of value stored under it (list elements count as values)."""
    found: dict[str, set[str]] = {}
    for record in metadata:
        for key, value in record.items():
            kinds = found.setdefault(key, set())
            for item in value if isinstance(value, list) else [value]:
                kind = kind_of(item)
                if kind is not None:
                    kinds.add(kind)
    return {key: frozenset(kinds) for key, kinds in found.items()}


def filter_warnings(conditions: Sequence[Condition], stored: Mapping[str, frozenset[str]],
                    sources: Sequence[str] = ()) -> list[str]:
    """One line per condition that matches nothing because of how it is written: a key no
    passage has, a value of a kind no stored value of that key has, ``$contains`` on a key
    without text, or a ``source`` name that names no file. ``stored`` is ``value_kinds``."""
    notes = []
    for condition in conditions:
        if condition.op == "$ne":
            continue  # holds for every passage without the key or the value: never silently empty
        note = _unknown_key(condition, stored) or _wrong_kind(condition, stored[condition.key])
        if note is None and condition.key == SOURCE_KEY and sources and condition.op in ("$eq", "$in"):
            note = _unknown_source(condition, sources)
        if note:
            notes.append(note)
    return notes


def _unknown_key(condition: Condition, stored: Mapping[str, frozenset[str]]) -> str | None:
    if condition.key in stored:
        return None
    close = difflib.get_close_matches(condition.key, list(stored), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (f"filter key {condition.key!r} is in no passage of this index, so it matches nothing{hint}; "
            f"keys: {', '.join(sorted(stored))}")


def _wrong_kind(condition: Condition, kinds: frozenset[str]) -> str | None:
    values = condition.value if condition.op == "$in" else (condition.value,)
    if condition.op == "$contains":
        wanted = {"text"}
    else:
        wanted = {k for k in map(kind_of, values) if k is not None}
    if not wanted or wanted & kinds:
        return None
    shown = json.dumps({condition.key: {condition.op: list(values) if condition.op == "$in" else condition.value}})
    held = " and ".join(f"{k}s" if k != "text" else k for k in KINDS if k in kinds) or "no plain values"
    return (f"filter {shown} matches nothing: {condition.key!r} holds {held}, not "
            f"{' or '.join(sorted(wanted))}"
            + (" (write the value without quotes)" if wanted == {"text"} and "number" in kinds
               and condition.op != "$contains" else ""))


def _unknown_source(condition: Condition, sources: Sequence[str]) -> str | None:
    names = condition.value if condition.op == "$in" else (condition.value,)
    if any(isinstance(n, str) and n in sources for n in names):
        return None
    example = sources[0].replace("\\", "/").rsplit("/", 1)[-1] if sources else "guide.md"
    return (f"filter source={', '.join(map(str, names))!s} names no indexed file; give a path relative to the "
            f"ingested folder, a file name ({example!r}) or a glob ('**/{example}')")
