"""Query understanding: deterministic rules that turn parts of a query into a plan.

``source:guide.md``, ``tag:x``, ``after:2024-01-01`` (the operators in
``search.understand.operators``) become filters; a ``"quoted phrase"`` (also ``“…”`` or
``'…'``) raises the passages that contain it, and ``+"a phrase"`` must appear in every hit.
An apostrophe inside a word (``I'd``, ``users'``) never opens a quote. Pattern rules (``phase 2`` -> boost or filter ``phase = 2``) become filters
or boost hints; a query that looks like an identifier (``snake_case``, ``CamelCase``,
``E1234``) gets more lexical weight (``hints["alpha"]``). Operators are removed from the
text the retrievers see. Anything that does not parse — an unknown operator, an empty
value, a date that is not one, an unbalanced quote — stays in the text as words: the
user's query is never an error. A long query (more than ``pasted_words`` words: a pasted
paragraph or request) is searched as it is written: its quotes are punctuation, not phrases.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from ..config import MatchRule, OperatorRule, SearchConfig, UnderstandConfig
from ..errors import QueryTooLongError
from ..lang import UNDETERMINED, detect_language
from ..filters import Condition, names_source, parse_where, resolve_sources
from .base import QueryPlan
from .identifiers import query_identifiers
from .pasted import pasted_text, read_traceback
from .symbols import query_symbols

_OPERATOR = re.compile(r'(?<!\S)([A-Za-z_][\w-]*):(?:"([^"]*)"|(\S*))')
#: A quoted phrase, with ``+`` before it when the user asks it to appear in every hit. Single
#: quotes count only at word edges, so the apostrophes of ``I'd`` or ``users' guide`` do not.
_PHRASE = re.compile(
    r'(?P<plus>(?<!\S)\+)?(?:"(?P<double>[^"]+)"|\u201c(?P<curly>[^\u201c\u201d]+)\u201d'
    r"|(?<![\w'])'(?P<single>[^']*?\w[^']*?)'(?![\w']))"
)
#: The same without double quotes, for a query whose double quotes do not pair up.
_PHRASE_UNPAIRED = re.compile(_PHRASE.pattern.replace('"(?P<double>[^"]+)"|', ""))
#: Single quotes inside a longer query are text: an error message quotes its values that way
#: (``URL expected after 'link'``); only a query wholly in single quotes is a phrase.
_SINGLE = r"|(?<![\w'])'(?P<single>[^']*?\w[^']*?)'(?![\w']))"
_PHRASE_DOUBLE = re.compile(_PHRASE.pattern.replace(_SINGLE, ")"))
_PHRASE_NONE = re.compile(_PHRASE_UNPAIRED.pattern.replace(_SINGLE, ")"))
_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


@dataclass
class Understood:
    """What the rules made of a query; ``Index`` copies it into the ``QueryPlan``."""

    text: str
    conditions: list[Condition] = field(default_factory=list)
    where: dict[str, Any] = field(default_factory=dict)
    phrases: list[str] = field(default_factory=list)
    required_phrases: list[str] = field(default_factory=list)
    hints: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def understand(
    query: str, settings: UnderstandConfig, sources: Callable[[], Sequence[str]] = lambda: ()
) -> Understood:
    """Apply the rules to ``query``. ``sources`` lists the index's source paths (for ``source:``)."""
    if not settings.enabled:
        return Understood(query)
    traceback = read_traceback(query) if settings.pasted and "\n" in query.strip() else None
    if traceback is not None:  # its most specific line: the exception's message
        return _traceback(query, traceback, settings)
    if len(query.split()) > settings.pasted_words:
        return Understood(query)
    result = Understood(query)
    text = _operators(query, settings, sources, result)
    if settings.phrases:
        text = _phrases(text, result)
    for rule in settings.rules:
        text = _rule(text, rule, result)
    text = " ".join(text.split())
    if not text:  # only operators: search for their values rather than for nothing
        text = " ".join(result.hints.pop("operator_values", [])) or " ".join(query.replace('"', " ").split()) or query
    result.hints.pop("operator_values", None)
    result.text = text
    if settings.identifiers and (exact := query_identifiers(text)):
        result.hints["identifiers"] = exact
        result.notes.append(f"identifiers {', '.join(exact)} -> the chunks holding them rank first")
    if settings.symbols and (names := query_symbols(text)):
        result.hints["symbols"] = names
        result.notes.append(f"symbol {', '.join(names)} -> its definition ranks first")
    # A wholly quoted query is a phrase search; its phrase is also what raises it first (``lift_pasted``).
    if settings.pasted and (pasted := pasted_text(text)):
        result.hints["pasted"] = pasted
        result.notes.append("the text as written -> the passages holding it rank first")
    language = detect_language(text)[0]
    if language != UNDETERMINED:
        result.hints["lang"] = language
        if language != "en":
            result.notes.append(f"query language: {language}")
    if settings.identifier_alpha is not None and is_identifier(text, settings.identifier_patterns):
        result.hints["alpha"] = settings.identifier_alpha
        result.notes.append(f"identifier-like query -> more lexical weight (hybrid alpha {settings.identifier_alpha})")
    return result


def _wholly_quoted(query: str) -> bool:
    """Whether the whole query is one quoted phrase (``"…"``, ``“…”``, ``'…'``): a phrase search."""
    return _PHRASE.fullmatch(query.strip()) is not None


def _traceback(query: str, traceback: Any, settings: UnderstandConfig) -> Understood:
    """A pasted traceback searched by its exception's message; without one, by its innermost
    frame's function (looked up as a symbol)."""
    text = " ".join(f"{traceback.exception}: {traceback.message}".split()) if traceback.message else ""
    result = Understood(text or " ".join(traceback.functions[:1]) or query)
    if traceback.message and (pasted := pasted_text(traceback.message)):
        result.hints["pasted"] = pasted
    if traceback.functions and settings.symbols and not traceback.message:
        result.hints["symbols"] = list(traceback.functions[:1])
    frames = ", ".join(traceback.functions[:3])
    result.notes.append(f"a traceback -> searched by its message{f' (frames: {frames})' if frames else ''}")
    return result


def plan_query(
    query: str, k: int, where: Mapping[str, Any] | None, min_score: float | None, preset: str,
    settings: SearchConfig, sources: Callable[[], Sequence[str]] = lambda: (),
) -> QueryPlan:
    """The plan of a search: the caller's settings plus what the rules found in the text."""
    if len(query) > settings.max_query_chars:  # before it is embedded, cached or written to the audit log
        raise QueryTooLongError(
            f"the query has {len(query):,} characters; the limit is {settings.max_query_chars:,} "
            "(search.max_query_chars): shorten it, or raise the limit in ragloom.yaml"
        )
    understood = understand(query, settings.understand, sources)
    merged: dict[str, Any] = dict(where or {})
    for key, spec in understood.where.items():  # shown in the audit log; part of the cache key
        merged[key] = {**merged[key], **spec} if isinstance(merged.get(key), dict) else merged.get(key, spec)
    return QueryPlan(
        text=understood.text, original=query, k=k,
        conditions=tuple(resolve_sources(parse_where(where), sources)) + tuple(understood.conditions), where=merged,
        phrases=tuple(understood.phrases), required_phrases=tuple(understood.required_phrases), hints=understood.hints, notes=tuple(understood.notes),
        min_score=settings.min_score if min_score is None else min_score, preset=preset,
    )


def is_identifier(text: str, patterns: Sequence[str]) -> bool:
    words = text.split()
    compiled = [re.compile(p) for p in patterns]
    return bool(words) and len(words) <= 3 and all(any(p.search(w) for p in compiled) for w in words)


def _operators(query: str, settings: UnderstandConfig, sources: Callable[[], Sequence[str]], out: Understood) -> str:
    def replace(match: re.Match[str]) -> str:
        name, value = match.group(1).lower(), match.group(2) if match.group(2) is not None else match.group(3)
        rule = settings.operators.get(name)
        if rule is None or not value:
            return match.group(0)  # not an operator we know, or no value: plain text
        condition = _operator_condition(rule, value, sources)
        if condition is None:
            out.notes.append(f"{match.group(0)!r} is not a valid {name}: value; searched as text")
            return match.group(0)
        out.conditions.append(condition)
        out.where.setdefault(condition.key, {})[condition.op] = condition.value
        out.notes.append(f"{name}:{value} -> filter {_describe(condition)}")
        out.hints.setdefault("operator_values", []).append(re.sub(r"[^\w\s-]", " ", value))
        return " "

    return _OPERATOR.sub(replace, query)


def _operator_condition(rule: OperatorRule, value: str, sources: Callable[[], Sequence[str]]) -> Condition | None:
    if rule.op == "source":
        matching = sorted(path for path in sources() if names_source(path, value))
        return Condition(rule.field, "$in", tuple(matching)) if matching else Condition(rule.field, "$eq", value)
    if rule.value_type == "date":
        if not _DATE.match(value) or not _valid_date(value):
            return None
        return Condition(rule.field, rule.op, value)
    if rule.value_type == "int":
        try:
            return Condition(rule.field, rule.op, int(value))
        except ValueError:
            return None
    return Condition(rule.field, rule.op, value)


def _valid_date(value: str) -> bool:
    parts = [int(p) for p in value.split("-")] + [1, 1]
    try:
        date(parts[0], parts[1], parts[2])
    except ValueError:
        return False
    return True


def _phrases(text: str, out: Understood) -> str:
    if _wholly_quoted(text):
        pattern = _PHRASE
    else:  # an unbalanced " is just a character; single quotes inside a longer query are text
        pattern = _PHRASE_NONE if text.count('"') % 2 else _PHRASE_DOUBLE

    def take(match: re.Match[str]) -> str:
        raw = match.group("double") or match.group("curly") or match.group("single") or ""
        phrase = " ".join(raw.split())
        if phrase:
            if match.group("plus"):
                out.required_phrases.append(phrase)
                out.notes.append(f'+"{phrase}" must appear in every hit')
            else:
                out.phrases.append(phrase)
                out.notes.append(f'"{phrase}" ranks the passages that contain it first')
        # The phrase's words stay in the text, so BM25 and the embedding still see them.
        return f" {raw} "

    return pattern.sub(take, text)


def _rule(text: str, rule: MatchRule, out: Understood) -> str:
    if rule.action == "off":
        return text
    try:
        pattern = re.compile(rule.pattern, re.IGNORECASE)
    except re.error:
        out.notes.append(f"rule for {rule.field}: pattern {rule.pattern!r} is not a valid regex; skipped")
        return text
    match = pattern.search(text)
    if match is None or not match.groups() or match.group(1) is None:
        return text
    raw = match.group(1)
    try:
        value: Any = {"int": int, "float": float, "str": str}[rule.value_type](raw)
    except ValueError:
        return text
    if rule.action == "filter":
        condition = Condition(rule.field, "$eq", value)
        out.conditions.append(condition)
        out.where.setdefault(rule.field, {})["$eq"] = value
        out.notes.append(f"{match.group(0)!r} -> filter {rule.field} = {value!r}")
    else:
        out.hints.setdefault("boost", []).append({"field": rule.field, "value": value, "weight": rule.weight})
        out.notes.append(f"{match.group(0)!r} -> boost {rule.field} = {value!r} by +{rule.weight:g} (boosts stage)")
    return text[: match.start()] + " " + text[match.end():] if rule.strip else text


def _describe(condition: Condition) -> str:
    symbol = {"$eq": "=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<=", "$in": "in"}.get(condition.op, condition.op)
    value = list(condition.value) if isinstance(condition.value, tuple) else condition.value
    return f"{condition.key} {symbol} {value!r}"
