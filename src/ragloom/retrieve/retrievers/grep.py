"""``grep``: literal (or ``/regex/``) search over the stored chunk texts, needing no model.

It is the pipeline's fallback when the embedder fails (server down, model missing) or
nothing scores above ``min_score``, and a retriever of its own (``search.mode: grep``).
A chunk scores the share of the query's words it contains, plus 1 when it contains the
whole query (or matches the regex) — coarse, but it finds the passages that say it.
Hits carry ``metadata["retrieval"] = "grep"``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import ClassVar

from ...filters import matches
from ...stores.base import Candidate, rank_candidates
from ...types import Chunk
from ..base import Configured, NoOptions, QueryPlan, Retrieved, SearchContext

_WORD = re.compile(r"\w+")
_STOP = frozenset("a an and are as at be by for from how in is it of on or that the this to was what when "
                  "where which who why with do does".split())


class GrepRetriever(Configured[NoOptions]):
    name: ClassVar[str] = "grep"
    Options = NoOptions

    def retrieve(self, plan: QueryPlan, context: SearchContext, depth: int) -> Retrieved:
        found = grep_chunks(context.store.iter_chunks(), plan, depth)
        return Retrieved(found, {"grep": {c.chunk_id: c.score for c in found}})


def grep_chunks(chunks: Iterable[Chunk], plan: QueryPlan, depth: int) -> list[Candidate]:
    """The ``depth`` best chunks for ``plan.text`` among those passing the plan's filters."""
    scorer = grep_scorer(plan.text)
    found = []
    for chunk in chunks:
        if plan.conditions and not matches(chunk.metadata, plan.conditions):
            continue
        score = scorer(chunk.text)
        if score > 0:
            found.append(Candidate(chunk.id, score))
    return rank_candidates(found, depth)


def grep_scorer(query: str):  # noqa: ANN201 - a closure
    """A function text -> score for ``query``: ``/pattern/`` is a regex, anything else literal words."""
    text = query.strip()
    if len(text) > 2 and text.startswith("/") and text.endswith("/"):
        try:
            pattern = re.compile(text[1:-1], re.IGNORECASE)
        except re.error:
            pattern = None
        if pattern is not None:
            return lambda body: 1.0 if pattern.search(body) else 0.0
    whole = " ".join(text.split()).casefold()
    words = [w for w in dict.fromkeys(_WORD.findall(whole)) if w not in _STOP] or _WORD.findall(whole)

    def score(body: str) -> float:
        folded = body.casefold()
        present = sum(1 for w in words if w in folded)
        if not present:
            return 0.0
        return present / len(words) + (1.0 if whole and whole in " ".join(folded.split()) else 0.0)

    return score
