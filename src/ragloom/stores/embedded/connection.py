"""Opening an index database read-write or read-only, with damage reported as such.

Every statement runs through ``GuardedCursor``, so a damaged file ("file is not a
database", "database disk image is malformed") or a write to a read-only index is a
``RagloomError`` that says what to do, wherever in the store it is first noticed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self, TypeVar, overload

from ...errors import DiskFullError, IndexDamagedError, IndexNotFoundError, IndexReadOnlyError, StoreError

SQLITE_READONLY, SQLITE_CORRUPT, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_NOTADB = 8, 11, 13, 14, 26
#: Extended code: a WAL database whose folder cannot hold the ``-shm`` file (not this user's folder).
SQLITE_READONLY_DIRECTORY = 1544


def translated(exc: sqlite3.Error, path: Path) -> Exception:
    """The ragloom error for a SQLite error, or ``exc`` itself when it is not about the file."""
    code = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF
    text = str(exc)
    if code in (SQLITE_CORRUPT, SQLITE_NOTADB) or "malformed" in text or "not a database" in text:
        return IndexDamagedError(
            f"the index database {path} is damaged ({text}); rebuild the index with "
            "`ragloom ingest --rebuild PATH...` (the damaged one is kept beside it), or restore it from a backup"
        )
    if code == SQLITE_FULL or "disk is full" in text:
        return DiskFullError(f"the index at {path.parent}")
    if code == SQLITE_READONLY or "readonly database" in text:
        return IndexReadOnlyError(
            f"the index at {path.parent} is read-only here ({text}); reading works, writing needs "
            "write permission on the folder and its files"
        )
    return exc


class GuardedCursor(sqlite3.Cursor):
    def _guard(self, run: Any, *args: Any) -> Any:
        try:
            return run(*args)
        except sqlite3.Error as exc:
            error = translated(exc, getattr(self.connection, "index_path", Path("ragloom.sqlite")))
            if error is exc:
                raise
            raise error from exc

    def execute(self, sql: str, parameters: Any = (), /) -> Self:
        return self._guard(super().execute, sql, parameters)

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any], /) -> Self:
        return self._guard(super().executemany, sql, seq_of_parameters)

    def fetchone(self) -> Any:
        return self._guard(super().fetchone)

    def fetchmany(self, *args: Any) -> list[Any]:
        return self._guard(super().fetchmany, *args)

    def fetchall(self) -> list[Any]:
        return self._guard(super().fetchall)

    def __next__(self) -> Any:
        return self._guard(super().__next__)


_CursorT = TypeVar("_CursorT", bound=sqlite3.Cursor)


class GuardedConnection(sqlite3.Connection):
    index_path: Path

    @overload
    def cursor(self, factory: None = None) -> GuardedCursor: ...

    @overload
    def cursor(self, factory: Callable[[sqlite3.Connection], _CursorT]) -> _CursorT: ...

    def cursor(self, factory: Callable[[sqlite3.Connection], sqlite3.Cursor] | None = None) -> sqlite3.Cursor:
        """A ``GuardedCursor`` unless another factory is asked for."""
        return super().cursor(GuardedCursor if factory is None else factory)

    def execute(self, sql: str, parameters: Any = (), /) -> GuardedCursor:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> GuardedCursor:
        return self.cursor().executemany(sql, parameters)


def connect(path: Path, read_only: bool = False) -> GuardedConnection:
    """A connection in autocommit mode (transactions are explicit).

    Read-only opens with ``mode=ro``: SQLite itself refuses every write. A WAL database in
    a folder the user cannot write needs its ``-shm`` file; when that cannot be created
    the file is opened as immutable (no other process can be writing it then anyway).
    """
    if read_only and not path.is_file():
        raise IndexNotFoundError(f"there is no index database at {path}; create one with `ragloom ingest PATH`")
    attempts = [f"{path.resolve().as_uri()}?mode=ro", f"{path.resolve().as_uri()}?mode=ro&immutable=1"] \
        if read_only else [str(path)]
    for attempt, target in enumerate(attempts, start=1):
        try:
            db = sqlite3.connect(target, uri=read_only, timeout=30.0, isolation_level=None,
                                 check_same_thread=False, factory=GuardedConnection)
            db.index_path = path
            # A plain cursor: the probe's SQLite error decides the next attempt before it is translated.
            sqlite3.Cursor(db).execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return db
        except sqlite3.Error as exc:
            extended = getattr(exc, "sqlite_errorcode", 0) or 0
            if attempt < len(attempts) and (extended & 0xFF == SQLITE_CANTOPEN or extended == SQLITE_READONLY_DIRECTORY):
                continue
            error = translated(exc, path)
            if error is not exc:
                raise error from None
            raise StoreError(f"cannot open the index database {path}: {exc}") from None
    raise AssertionError("unreachable")


@contextmanager
def immediate_transaction(db: sqlite3.Connection, join: bool = False) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on any exception. With ``join``, a caller
    already inside a transaction gets that one instead (its commit or rollback covers both)."""
    if join and db.in_transaction:
        yield db
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    else:
        db.execute("COMMIT")


def select_in(db: sqlite3.Connection, query: str, keys: Sequence[Any], *before: Any) -> Iterator[tuple[Any, ...]]:
    """Rows of ``query + " IN (...)"`` over the distinct ``keys``, in batches SQLite accepts;
    ``before`` are the query's parameters that come ahead of the IN list."""
    unique = list(dict.fromkeys(keys))
    for start in range(0, len(unique), 500):
        batch = unique[start : start + 500]
        yield from db.execute(f"{query} IN ({','.join('?' * len(batch))})", [*before, *batch])
