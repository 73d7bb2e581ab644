"""Chunk metadata as exact terms of the BM25 index, so an equality filter runs inside tantivy.

A tenant's key filters by equalities (``group = 3``). Restricting BM25 to the rows such a
filter allows, given as a list of rows, cost tantivy a term-set clause over every allowed row
or an over-fetch of the unfiltered ranking (+1.7x at 100k chunks, BENCHMARKS.md); a term
query on the chunk's own ``key = value`` term costs about what no filter does. Each scalar
value (and each element of a list) is one term of its key, tagged with its kind, so the
semantics are those of ``filters.matches`` and the numpy columns (``columns.py``): numbers
equal as floats, texts exactly, booleans only booleans. Conditions the terms cannot answer
(ranges, ``$ne``, ``$contains``, a long text) return None: the caller filters by rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ...filters import Condition

#: Text values longer than this are not indexed as terms (a heading or a path is shorter; a
#: paragraph-long field would only grow the term dictionary); an equality on one filters by rows.
MAX_TEXT = 200


def value_term(key: str, value: Any) -> str | None:
    """The term of ``key`` holding the scalar ``value``; None for a value no term holds."""
    if isinstance(value, bool):
        tagged = "b:1" if value else "b:0"
    elif isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:  # an integer beyond float range: the columns cannot compare it either
            return None
        if math.isnan(number):
            return None
        tagged = f"n:{number + 0.0!r}"  # -0.0 and 0.0 are equal, and so one term
    elif isinstance(value, str) and len(value) <= MAX_TEXT:
        tagged = f"t:{value}"
    else:
        return None
    # json.dumps escapes the key, so no key's quote-and-equals can be mistaken for this one's.
    return f"{json.dumps(key)}={tagged}"


def metadata_terms(metadata: Mapping[str, Any]) -> Iterator[str]:
    """Every term of a chunk's metadata: its scalar values and its lists' elements (nested lists too)."""
    for key, value in metadata.items():
        for item in _scalars(value):
            term = value_term(key, item)
            if term is not None:
                yield term


def _scalars(value: Any) -> Iterator[Any]:
    if isinstance(value, list):  # ``matches``: a list matches when any element does, at any depth
        for item in value:
            yield from _scalars(item)
    else:
        yield value


def filter_terms(conditions: Sequence[Condition]) -> list[list[str]] | None:
    """Per condition, the terms of which a passing chunk holds at least one; None when some
    condition is not an equality (``$eq``, ``$in``) on values the terms hold."""
    clauses = []
    for condition in conditions:
        if condition.op not in ("$eq", "$in"):
            return None
        values = condition.value if condition.op == "$in" else (condition.value,)
        terms = [term for value in values if (term := value_term(condition.key, value)) is not None]
        if not terms or len(terms) != len(values):  # a value no term holds
            return None
        clauses.append(list(dict.fromkeys(terms)))
    return clauses
