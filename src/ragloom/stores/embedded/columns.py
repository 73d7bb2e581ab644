"""Metadata filters evaluated over in-memory columns, one per filtered key.

Evaluating JSON in SQL for every row costs ~3 µs a row; a column is read from SQLite
once per key and generation, after which a filter is a few numpy comparisons. The
semantics are those of ``filters.matches``: values compare only with values of the
same kind, a list-valued field matches when any element does, a missing key satisfies
only ``$ne``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...filters import Condition, matches
from .catalog import Catalog


@dataclass
class _Column:
    number: np.ndarray  # float64, NaN where the value is not a number
    text: np.ndarray  # unicode, "" where the value is not text
    is_text: np.ndarray  # bool
    boolean: np.ndarray  # int8: 1 true, 0 false, -1 not a boolean
    lists: dict[int, list[Any]]  # position -> elements, for list-valued rows


#: SQLite's json_type names -> ``filters.kind_of``'s.
_KINDS = {"integer": "number", "real": "number", "text": "text", "true": "boolean", "false": "boolean"}


class MetadataColumns:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.generation = -1
        self._columns: dict[str, _Column] = {}

    def mask(self, conditions: Sequence[Condition], rows: np.ndarray, generation: int) -> np.ndarray:
        """Boolean mask over ``rows`` (SQLite row ids, ascending) of the rows matching every condition."""
        if generation != self.generation:
            self._columns.clear()
            self.generation = generation
        keep = np.ones(len(rows), dtype=bool)
        for condition in conditions:
            keep &= self._holds(self._column(condition.key, rows), condition, len(rows))
        return keep

    def kinds(self) -> dict[str, frozenset[str]]:
        """``filters.value_kinds`` over every chunk, asked of SQLite (one pass over the JSON)."""
        found: dict[str, set[str]] = {}
        for key, kind in self.catalog.db.execute(
            "SELECT j.key, j.type FROM chunks, json_each(chunks.metadata) j GROUP BY 1, 2"
            " UNION SELECT j.key, e.type FROM chunks, json_each(chunks.metadata) j, json_each(j.value) e"
            " WHERE j.type = 'array' GROUP BY 1, 2"
        ):
            found.setdefault(key, set())
            if kind in _KINDS:
                found[key].add(_KINDS[kind])
        return {key: frozenset(kinds) for key, kinds in found.items()}

    def _column(self, key: str, rows: np.ndarray) -> _Column:
        column = self._columns.get(key)
        if column is None:
            column = self._columns[key] = self._read(key, rows)
        return column

    def _read(self, key: str, rows: np.ndarray) -> _Column:
        n = len(rows)
        number = np.full(n, np.nan)
        texts: list[str] = [""] * n
        is_text = np.zeros(n, dtype=bool)
        boolean = np.full(n, -1, dtype=np.int8)
        lists: dict[int, list[Any]] = {}
        path = "$." + json.dumps(key)
        cursor = self.catalog.db.execute(
            "SELECT row, json_extract(metadata, ?), json_type(metadata, ?) FROM chunks"
            " WHERE json_type(metadata, ?) IS NOT NULL ORDER BY row",
            (path, path, path),
        )
        for row, value, kind in cursor:
            i = int(np.searchsorted(rows, row))
            if i >= n or rows[i] != row:
                continue
            if kind in ("integer", "real"):
                number[i] = value
            elif kind == "text":
                texts[i] = value
                is_text[i] = True
            elif kind in ("true", "false"):
                boolean[i] = 1 if kind == "true" else 0
            elif kind == "array":
                lists[i] = json.loads(value)
        return _Column(number, np.array(texts, dtype=str) if n else np.zeros(0, dtype=str), is_text, boolean, lists)

    def _holds(self, column: _Column, condition: Condition, n: int) -> np.ndarray:
        result = _holds_scalar(column, condition.op, condition.value, n)
        for i, elements in column.lists.items():  # list values: the element-wise rules of ``matches``
            result[i] = matches({condition.key: elements}, [condition])
        return result


def _holds_scalar(column: _Column, op: str, value: Any, n: int) -> np.ndarray:
    if op == "$ne":
        return ~_compare(column, "$eq", value, n)
    if op == "$contains":
        if not n:
            return np.zeros(0, dtype=bool)
        return column.is_text & (np.char.find(np.char.lower(column.text), value.lower()) >= 0)
    if op == "$in":
        result = np.zeros(n, dtype=bool)
        for item in value:
            result |= _compare(column, "$eq", item, n)
        return result
    return _compare(column, op, value, n)


def _compare(column: _Column, op: str, value: Any, n: int) -> np.ndarray:
    if isinstance(value, bool):
        if op != "$eq":
            return np.zeros(n, dtype=bool)
        return column.boolean == (1 if value else 0)
    if isinstance(value, (int, float)):
        values, present = column.number, ~np.isnan(column.number)
    elif isinstance(value, str):
        values, present = column.text, column.is_text
    else:
        return np.zeros(n, dtype=bool)
    with np.errstate(invalid="ignore"):
        if op == "$eq":
            hit = values == value
        elif op == "$lt":
            hit = values < value
        elif op == "$lte":
            hit = values <= value
        elif op == "$gt":
            hit = values > value
        else:
            hit = values >= value
    return present & hit
