"""What the derived structures need from the database their tables live in: one small
interface, one implementation per database (``tables_sqlite``, ``tables_postgres``).

The knowledge modules write their SQL once, in the dialect SQLite and PostgreSQL share:
``?`` placeholders (an implementation translates them), ``ON CONFLICT ... DO UPDATE``
upserts with the target table's columns qualified by its name, and a name on every
subquery. What the two do differently (placeholders, ``IN`` lists, whether a table exists,
how a transaction is opened and joined) is answered by the implementation, so
``graph.py`` and ``raptor.py`` exist once.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from ..types import sha256_hex


class Rows(Protocol):
    """What a query answers: a DB-API cursor's reading half."""

    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def __iter__(self) -> Iterator[Any]: ...


class Tables(ABC):
    """The structures' tables in one index database; writes join the store's open transaction."""

    @abstractmethod
    def execute(self, query: str, params: Sequence[Any] = ()) -> Rows:
        """Run one statement (``?`` placeholders); its rows, if it returns any."""

    @abstractmethod
    def executemany(self, query: str, rows: Iterable[Sequence[Any]]) -> None: ...

    @abstractmethod
    def transaction(self) -> AbstractContextManager[Tables]:
        """A write transaction, or the caller's when one is open (knowledge writes join the store's)."""

    @abstractmethod
    def select_in(self, query: str, keys: Sequence[Any], *before: Any) -> Iterator[tuple[Any, ...]]:
        """Rows of ``query`` with ``<column> IN keys`` appended (the distinct keys); ``before`` are
        the query's parameters ahead of the list."""

    @abstractmethod
    def has_rows(self, table: str) -> bool:
        """Whether ``table`` exists and holds a row (nothing is created)."""

    def identity_follows(self, table: str, column: str) -> None:  # noqa: B027 - SQLite needs nothing
        """After rows were inserted with explicit ids: new rows get ids above them (SQLite's
        AUTOINCREMENT follows by itself; a PostgreSQL identity column does not)."""

    # -- derived from the above ------------------------------------------------------------------
    def upsert(self, table: str, columns: Sequence[str], key: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """Insert ``rows``, replacing the row with the same ``key``. Table and column names are the
        knowledge modules' constants, never input."""
        rest = [c for c in columns if c not in key]
        action = ("DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in rest)) if rest else "DO NOTHING"
        self.executemany(
            f"INSERT INTO {table}({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
            f" ON CONFLICT({', '.join(key)}) {action}",
            rows,
        )

    # -- cache of model outputs (agentic boundaries, propositions, LLM extractions, tree meta) ----
    def cached(self, *key_parts: object) -> Any:
        row = self.execute("SELECT value FROM knowledge_cache WHERE key = ?", (sha256_hex(*key_parts),)).fetchone()
        return None if row is None else json.loads(row[0])

    def cache(self, value: Any, *key_parts: object) -> None:
        with self.transaction():
            self.upsert("knowledge_cache", ("key", "value"), ("key",), [(sha256_hex(*key_parts), json.dumps(value))])
