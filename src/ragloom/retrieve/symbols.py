"""A query that names a symbol finds its definition first, as an IDE's "go to symbol" does.

``Parser.parse_set``, ``parse_set``, ``rich.style.Style``, ``class Style``, ``def parse``,
``fn main``, ``func (s *Server) Start``: query understanding reads the name
(``query_symbols``); the pipeline looks it up among the chunks' symbol keys
(``ragloom.symbols``, a list-valued metadata field that every store filters on), exact first,
then case- and separator-insensitive, then inside the definition that encloses it, then by a
shorter tail of the name (``style.Style`` for ``rich.style.Style`` when ``rich/`` itself was
ingested), and puts the definitions found before every other hit (``lift_symbols``). When none
is found, the candidates whose symbol starts with the name come first. Only chunks of source code carry symbol keys, so the rule cannot fire on prose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from ..filters import Condition
from ..symbols import SYMBOLS_FIELD, loose, query_keys, split_symbol
from ..types import Hit
from .base import EXACT_MATCH, QueryPlan, Retrieved, SearchContext

#: Definitions fetched for a name (a bare ``parse`` may be defined in many classes).
SYMBOL_FETCH = 20
#: The signal (``Retrieved.components``, ``Hit.scores``) of the definitions a name lookup found:
#: their cosine to the query, which orders several definitions of one name.
SYMBOL_SIGNAL = "symbol"
_NAME = r"[A-Za-z_$][\w$]*(?:(?:\.|::|->|#)[A-Za-z_$~][\w$]*)*"
_WORDS = ("def", "class", "fn", "func", "function", "interface", "struct", "enum", "trait", "impl", "type",
          "module", "object", "record", "namespace", "protocol", "extension", "sub", "proc", "procedure", "macro",
          "method", "package", "typedef", "union", "table", "view", "trigger")
_MODIFIERS = ("export", "default", "pub", "pub(crate)", "public", "private", "protected", "internal", "static",
              "async", "abstract", "final", "override", "inline", "virtual", "unsafe", "const", "open", "sealed",
              "data", "case", "partial", "create", "or", "replace", "declare")
_DECLARATION = re.compile(
    rf"^(?:(?:{'|'.join(re.escape(m) for m in _MODIFIERS)})\s+)*(?:{'|'.join(_WORDS)})\s+"
    rf"(?:\(\s*(?:\w+\s+)?[*&]?\s*(?P<receiver>[\w.]+)\s*\)\s*)?(?P<name>{_NAME})\s*(?:[(<:{{\[].*)?$",
    re.IGNORECASE)
_BARE = re.compile(rf"^{_NAME}(?:\(\))?$")
#: A multi-word query is a name written with spaces (``ProgressBar __repr__``) only when every
#: word is written like code (has ``_`` or ``.``, or a case change inside it).
_CODE_WORD = re.compile(r"[_.$]|::|[a-z][A-Z]|^[A-Z][a-z0-9]+[A-Z]")


def query_symbols(text: str) -> list[str]:
    """The symbol names ``text`` asks for, as written (``[]`` when it names none)."""
    query = " ".join(text.split()).rstrip("(){};:")
    if not query or len(query) > 200:
        return []
    declared = _DECLARATION.match(query)
    if declared:
        name = declared.group("name")
        receiver = declared.group("receiver")
        return [f"{receiver.split('.')[-1]}.{name}" if receiver else name]
    words = query.split()
    if len(words) == 1 and _BARE.match(words[0]):
        return [words[0]]
    if 1 < len(words) <= 3 and all(_BARE.match(w) and _CODE_WORD.search(w) for w in words):
        return [".".join(w.removesuffix("()") for w in words)]
    return []


@dataclass(frozen=True)
class _Keys:
    """The keys a query's names are looked up by, strongest first."""

    exact: frozenset[str]
    loose: frozenset[str]
    #: The definitions enclosing a name (``Table._render`` for ``Table._render.align_cell``: a
    #: function nested in another is inside its parent's chunks).
    parents: frozenset[str]
    #: A name's shorter tails (``style.Style`` for ``rich.style.Style``): the folder ingested may
    #: be the package itself, whose own name is then in no path.
    tails: frozenset[str]

    def strong(self) -> tuple[str, ...]:
        return tuple(sorted(self.exact | self.loose | self.parents))


def _keys(names: list[str]) -> _Keys:
    exact: set[str] = set()
    loose_keys: set[str] = set()
    parents: set[str] = set()
    tails: set[str] = set()
    for name in names:
        e, lo = query_keys(name)
        exact.update(e)
        loose_keys.update(lo)
        parts = split_symbol(name)
        for end in range(len(parts) - 1, 0, -1):  # every enclosing definition: a class nested in a function too
            pe, plo = query_keys(".".join(parts[:end]))
            parents.update(pe + plo)
        for start in range(1, len(parts)):
            te, tlo = query_keys(".".join(parts[start:]))
            tails.update(te + tlo)
    return _Keys(frozenset(exact), frozenset(loose_keys), frozenset(parents), frozenset(tails))


def with_symbols(retrieved: Retrieved, plan: QueryPlan, context: SearchContext) -> Retrieved:
    """``retrieved`` with the definitions of the query's symbols added at its end (scored
    lowest; ``lift_symbols`` puts them first)."""
    names = plan.hint("symbols")
    if not names:
        return retrieved
    looked_up = _keys(names)
    vector = context.query_vector(plan.text)
    found = context.store.search_dense(
        vector, SYMBOL_FETCH, (*plan.conditions, Condition(SYMBOLS_FIELD, "$in", looked_up.strong())))
    if not found and looked_up.tails:  # a shorter tail only when the whole name finds nothing
        found = context.store.search_dense(
            vector, SYMBOL_FETCH, (*plan.conditions, Condition(SYMBOLS_FIELD, "$in", tuple(sorted(looked_up.tails)))))
    if not found:
        return retrieved
    known = {c.chunk_id for c in retrieved.candidates}
    bottom = min((c.score for c in retrieved.candidates), default=0.0)
    extra = [replace(c, score=bottom) for c in found if c.chunk_id not in known]
    components = {**retrieved.components, SYMBOL_SIGNAL: {c.chunk_id: c.score for c in found}}
    return replace(retrieved, candidates=[*retrieved.candidates, *extra], components=components)


def lift_symbols(hits: list[Hit], plan: QueryPlan) -> list[Hit]:
    """Definitions of the query's symbols first: exact names before loose ones, a name that is
    the whole definition path before a tail of a longer one (``parse`` before ``Style.parse``),
    definitions before module code, a definition's first piece before the rest; then, when no
    definition matched, the hits whose symbol starts with the name; the others after them."""
    names = plan.hint("symbols")
    if not names:
        return hits
    looked_up = _keys(names)
    nested = [re.compile(rf"\b{re.escape(split_symbol(n)[-1])}\b") for n in names if len(split_symbol(n)) > 1]
    asked = max(len(split_symbol(n)) for n in names)
    ranks: dict[int, tuple[Any, ...]] = {}
    for i, hit in enumerate(hits):
        keys = set(hit.metadata.get(SYMBOLS_FIELD) or ())
        if keys & looked_up.exact:
            tier = 0
        elif keys & looked_up.loose:
            tier = 1
        elif keys & looked_up.parents and any(p.search(hit.text) for p in nested):
            tier = 2
        elif keys & looked_up.tails:
            tier = 3
        else:
            continue
        own = len(split_symbol(str(hit.metadata.get("symbol", ""))))
        module_code = hit.metadata.get("kind") in ("module", "lines")
        # A stub (``.pyi``, ``.d.ts``) declares what its source defines: the definition comes first.
        stub = hit.source.endswith((".pyi", ".d.ts"))
        ranks[i] = (tier, 0 if asked >= own or module_code else 1, module_code, stub)
    if not ranks:
        ranks = _prefixed(hits, names)
    if not ranks:
        return hits
    best = _best_of_each(hits, ranks)
    order = sorted(ranks, key=lambda i: (*ranks[i], i not in best, i))
    chosen = set(order)
    first = [hits[i] for i in order]
    rest = [hit for i, hit in enumerate(hits) if i not in chosen]
    return _raised(first, rest)


def _prefixed(hits: list[Hit], names: list[str]) -> dict[int, tuple[Any, ...]]:
    """Hits whose symbol's last part starts with a name's last part (loosely), shortest symbol first."""
    heads = [loose(split_symbol(n)[-1]) for n in names if split_symbol(n)]
    heads = [h for h in heads if len(h) >= 3]
    ranks: dict[int, tuple[Any, ...]] = {}
    for i, hit in enumerate(hits):
        parts = split_symbol(str(hit.metadata.get("symbol", "")))
        if hit.metadata.get(SYMBOLS_FIELD) and parts and any(loose(parts[-1]).startswith(h) for h in heads):
            ranks[i] = (4, len(parts[-1]), hit.metadata.get("kind") in ("module", "lines"), False)
    return ranks


def _best_of_each(hits: list[Hit], ranks: dict[int, tuple[Any, ...]]) -> set[int]:
    """Of the chosen hits, the one to show for each symbol of a file: a definition's first piece
    (a long function is cut in pieces, ``part``), and of several definitions of one name
    (``@overload`` stubs, then the implementation) the longest."""
    best: dict[tuple[str, str], tuple[tuple[int, int, int], int]] = {}
    for i in ranks:
        hit = hits[i]
        key = (hit.source, str(hit.metadata.get("symbol", "")))
        start, end = hit.start_line or 0, hit.end_line or 0
        # A class cut in pieces starts with its header; of a function's several definitions the longest.
        longest = start - end if hit.metadata.get("kind") in ("function", "method") else 0
        order = (int(hit.metadata.get("part") or 1) > 1, longest, start)
        if key not in best or order < best[key][0]:
            best[key] = (order, i)
    return {i for _, i in best.values()}


def _raised(first: list[Hit], rest: list[Hit]) -> list[Hit]:
    """``first`` above ``rest``, in order, each marked as matched by name (``scores["symbol"]``)."""
    top = max((h.score for h in first + rest), default=0.0)
    n = len(first)
    return [replace(hit, score=top + 1.0 + 1e-6 * (n - i), scores={**hit.scores, EXACT_MATCH: 1.0})
            for i, hit in enumerate(first)] + rest

