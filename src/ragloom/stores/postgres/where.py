"""Metadata conditions as a SQL clause over ``chunks.metadata`` (JSONB), with the semantics of
``filters.matches``.

Each condition is one jsonpath test, ``metadata @? path``, which the GIN index on the column
can answer. In lax mode ``$."key"[*]`` visits a scalar value or each element of a list, so a
list matches when any element does; jsonpath compares only values of the same kind (a number
never equals a string or a boolean, ``2 == 2.0``); a missing key or ``null`` matches nothing,
and ``$ne`` is the negation of ``$eq`` (it holds for them). The path text is built from the
key and the value with JSON escaping and passed as a parameter: user input never becomes SQL.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from ...filters import Condition

_COMPARE = {"$eq": "==", "$lt": "<", "$lte": "<=", "$gt": ">", "$gte": ">="}


def clause(conditions: Sequence[Condition], column: str = "c.metadata") -> tuple[str, list[Any]]:
    """``(sql, params)``: a boolean expression true where every condition holds ("TRUE" for none)."""
    parts: list[str] = []
    params: list[Any] = []
    for condition in conditions:
        test = _test(condition)
        if test is None:
            parts.append("FALSE")
            continue
        path, negated = test
        parts.append(f"NOT ({column} @? %s::jsonpath)" if negated else f"{column} @? %s::jsonpath")
        params.append(path)
    return (" AND ".join(parts) or "TRUE"), params


def _test(condition: Condition) -> tuple[str, bool] | None:
    """The jsonpath whose existence the condition asks for, and whether it is negated; None when
    nothing can match (a value jsonpath cannot write, like NaN)."""
    target = f"$.{json.dumps(condition.key)}[*]"
    op, value = condition.op, condition.value
    if op == "$contains":
        # flag q: the text is matched literally, never read as a regular expression
        return f'{target} ? (@ like_regex {json.dumps(str(value))} flag "iq")', False
    if op == "$in":
        literals = [_literal(item) for item in value]
        tests = [f"@ == {lit}" for lit in literals if lit is not None]
        return (f"{target} ? ({' || '.join(tests)})", False) if tests else None
    literal = _literal(value)
    if literal is None:
        return ("$ ? (false)", True) if op == "$ne" else None
    if op == "$ne":
        return f"{target} ? (@ == {literal})", True
    if isinstance(value, bool) and op != "$eq":
        return None  # booleans are ordered by nothing in the filter language
    return f"{target} ? (@ {_COMPARE[op]} {literal})", False


def _literal(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, str):
        return json.dumps(value)
    return None

