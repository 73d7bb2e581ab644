"""Identifiers in a query, and the chunks that hold them put first.

A user who types a UUID, a commit hash, a version, an error code, a file name or a symbol
wants the passages that hold exactly that, whatever the embedding thinks is near. Query
understanding finds such tokens (``query_identifiers``); the pipeline adds the chunks BM25
finds for them alone to the candidates (``with_identifiers``) and lifts the hits that hold one,
those holding more first, above the rest.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..types import Hit
from .base import QueryPlan, Retrieved, SearchContext

# Shapes that prose does not take: biomedical names written like code ("miRNA", "IgG", "IL-10",
# "H2A.Z", "CD34") matched the looser shapes and lifted passages that merely named them, which cost
# 0.016-0.020 nDCG@10 on SciFact (BENCHMARKS.md "Languages": English unchanged).
_PATTERNS = (
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",  # UUID
    r"(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}",  # a hash
    r"v\d+(?:\.\d+){1,3}(?:[-+][\w.]+)?|\d+(?:\.\d+){2,3}(?:[-+][\w.]+)?",  # a version: v2.3, 2.3.1 (not 2.5)
    r"[A-Z][A-Z0-9]*[-_]?\d{3,}",  # an error code: E1234, ORA-00942, HTTP_404
    r"[\w-]{2,}\.[A-Za-z][A-Za-z0-9]{1,5}",  # a file name (not "e.g")
    r"[A-Za-z_$][\w$]+(?:(?:\.|::|->)[A-Za-z_$][\w$]+)+(?:\(\))?",  # a dotted or qualified symbol
    r"_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*",  # snake_case, SCREAMING_CASE
    # camelCase, PascalCase: whole words (not "mRNA"), every part after the first a capital and a
    # lower-case letter (getUserName, S3Client; not the histone marks H3K4me3 or genes miR7a, FoxO3a)
    r"[a-z]{2,}(?:[A-Z][a-z][a-z0-9]*)+|[A-Z][a-z0-9]+(?:[A-Z][a-z][a-z0-9]*)+",
)
_IDENTIFIER = re.compile("|".join(f"(?:{p})" for p in _PATTERNS))
_TOKEN = re.compile(r"[^\s\"'`,;()\[\]{}<>]+")
#: Candidates fetched for the identifiers alone.
IDENTIFIER_FETCH = 50


def query_identifiers(text: str) -> list[str]:
    """The tokens of ``text`` written like identifiers, in order, without repeats."""
    found = []
    for match in _TOKEN.finditer(text):
        token = match.group(0).rstrip(".:?!")
        if len(token) >= 3 and _IDENTIFIER.fullmatch(token):
            found.append(token)
    return list(dict.fromkeys(found))


def with_identifiers(retrieved: Retrieved, plan: QueryPlan, context: SearchContext) -> Retrieved:
    """``retrieved`` with the chunks BM25 finds for the query's identifiers alone added at its end
    (``lift_identifiers`` then puts the hits that hold them first)."""
    wanted = plan.hint("identifiers")
    if not wanted:
        return retrieved
    found = context.store.search_lexical(" ".join(wanted), IDENTIFIER_FETCH, plan.conditions)
    known = {c.chunk_id for c in retrieved.candidates}
    extra = [c for c in found if c.chunk_id not in known]
    if not extra:
        return retrieved
    bottom = min((c.score for c in retrieved.candidates), default=0.0)
    lowered = [replace(c, score=bottom) for c in extra]
    return replace(retrieved, candidates=[*retrieved.candidates, *lowered])


def lift_identifiers(hits: list[Hit], plan: QueryPlan, depth: int) -> list[Hit]:
    """Hits holding the query's identifiers first (more of them before fewer), each group in its
    order, the rest after; scores raised so that the order is the ranking."""
    wanted = plan.hint("identifiers")
    if not wanted:
        return hits
    patterns = [re.compile(rf"(?<![\w.-]){re.escape(w)}(?![\w-]|\.\w)", re.IGNORECASE) for w in wanted]
    held = [sum(1 for p in patterns if p.search(hit.text)) for hit in hits]
    if not any(held):
        return hits[:depth]
    order = sorted(range(len(hits)), key=lambda i: (-held[i], i))
    top = max(h.score for h in hits)
    ranked = [replace(hits[i], score=top + held[i] + 1e-6 * (len(hits) - n)) if held[i] else hits[i]
              for n, i in enumerate(order)]
    return ranked[:depth]

