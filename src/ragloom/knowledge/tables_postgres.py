"""The structures' tables in an index's PostgreSQL schema (the postgres store, and the
PostgreSQL catalog of chroma and qdrant), so every replica reads the same graph and tree.

The tables are made by the store's schema code (``stores/postgres/schema.py``) with the
index's other tables and its version, so nothing is created here. ``database`` is the
store's ``Database``: ``connection()`` gives the connection of the transaction this thread
is in (or one from the pool), ``transaction()`` opens one under the index's write lock or
joins the open one, so a knowledge write commits or rolls back with the store's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .tables_base import Rows, Tables


def _dialect(query: str) -> str:
    """``?`` placeholders as psycopg's; the knowledge SQL holds no other ``?`` and no ``%``."""
    return query.replace("?", "%s")


class _Fetched(list):  # type: ignore[type-arg]
    """Rows read whole before the connection goes back to the pool."""

    def fetchone(self) -> Any:
        return self[0] if self else None

    def fetchall(self) -> list[Any]:
        return list(self)


class PostgresTables(Tables):
    def __init__(self, database: Any) -> None:
        self.database = database

    def execute(self, query: str, params: Sequence[Any] = ()) -> Rows:
        with self.database.connection() as connection:
            cursor = connection.execute(_dialect(query), tuple(params) or None)
            return _Fetched(cursor.fetchall() if cursor.description is not None else [])

    def executemany(self, query: str, rows: Iterable[Sequence[Any]]) -> None:
        batch = [tuple(row) for row in rows]
        if batch:
            with self.database.connection() as connection:
                connection.cursor().executemany(_dialect(query), batch)

    @contextmanager
    def transaction(self) -> Iterator[Tables]:
        with self.database.transaction():
            yield self

    def select_in(self, query: str, keys: Sequence[Any], *before: Any) -> Iterator[tuple[Any, ...]]:
        unique = list(dict.fromkeys(keys))
        if not unique:
            return iter(())
        return iter(self.execute(f"{query} = ANY(?)", [*before, unique]))

    def has_rows(self, table: str) -> bool:
        return self.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is not None

    def identity_follows(self, table: str, column: str) -> None:
        self.execute(
            f"SELECT setval(pg_get_serial_sequence(?, ?), GREATEST(COALESCE(MAX({column}), 0), 1),"
            f" COALESCE(MAX({column}), 0) > 0) FROM {table}", (table, column))
