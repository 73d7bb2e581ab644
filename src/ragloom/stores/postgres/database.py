"""The connection pool of one index and its schema, with failures said in one line.

Each index is a PostgreSQL schema ``ragloom_<name>``; its connections put that schema first
on their ``search_path``, so the handler modules name tables plainly. Stores of the same
index in one process share one pool. Every write runs in a transaction that first takes the
index's advisory lock, so writers on any number of replicas are serialized: the audit
chain never forks and the generation never skips. Reads take no lock.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ...errors import AuthenticationError, IndexLockedError, IndexReadOnlyError, ServiceUnavailableError, StoreError
from ...optional import require
from .address import Address, mask_password
from .schema import SCHEMA_VERSION, UPGRADABLE_FROM, create_schema, upgrade_schema

#: The extension that holds the vectors (a module constant, so a test can name a missing one).
EXTENSION = "vector"

_pools: dict[tuple[str, str, str], tuple[Any, int]] = {}
_pools_lock = threading.Lock()


def lock_key(*parts: str) -> int:
    """A stable signed 64-bit advisory lock key for these names."""
    text = "\x1f".join(parts).encode()
    return (zlib.crc32(text) << 32 | zlib.crc32(text[::-1])) - (1 << 63)


class Database:
    """One index's pool, schema check and transactions."""

    def __init__(self, address: Address, *, language: str = "english", pool_size: int = 8,
                 connect_timeout: int = 10, read_only: bool = False,
                 prepare: Callable[[Any, bool], None] | None = None, pool_name: str = "") -> None:
        """``pool_name``: a pool of its own beside the one every other ``Database`` of this address shares."""
        self.address = address
        self._pool_key = (address.conninfo, address.schema, pool_name)
        self.read_only = read_only
        self.language = language
        self.connect_timeout = connect_timeout
        self.psycopg = require("psycopg", extra="postgres", feature="the postgres store")
        require("pgvector.psycopg", extra="postgres", feature="the postgres store", package="pgvector")
        self.write_key = lock_key("ragloom.write", address.schema)
        self.session_key = lock_key("ragloom.writer", address.schema)
        #: The audit chain's own lock, taken by each append: a search's entry waits for other
        #: appends only, not for a source's write to finish.
        self.audit_key = lock_key("ragloom.audit", address.schema)
        self._local = threading.local()
        self._prepare(create=not read_only, tables=prepare or self._index_tables)
        self.pool = _shared_pool(self._pool_key, address, self._options(), pool_size)

    def _options(self) -> dict[str, Any]:
        return {"autocommit": True, "connect_timeout": self.connect_timeout,
                "options": f"-c search_path={self.address.schema},public"}

    # -- opening ------------------------------------------------------------------------------
    def connect(self, **extra: Any) -> Any:
        """A connection of its own (not from the pool), errors translated."""
        try:
            connection = self.psycopg.connect(self.address.conninfo, **{**self._options(), **extra})
        except self.psycopg.OperationalError as exc:
            raise connect_error(exc, self.address) from None
        _register_vector(connection)
        return connection

    def _prepare(self, create: bool, tables: Callable[[Any, bool], None]) -> None:
        try:
            connection = self.psycopg.connect(self.address.conninfo, **self._options())
        except self.psycopg.OperationalError as exc:
            raise connect_error(exc, self.address) from None
        with connection:
            self._ensure_extension(connection)
            _register_vector(connection)
            tables(connection, create)

    def _index_tables(self, connection: Any, create: bool) -> None:
        """Create the index's tables when missing (and allowed); check their version."""
        with connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (self.write_key,))
            found = _schema_version(connection, self.address.schema)
            if found is None and create:
                create_schema(connection, self.address.schema, self.language)
                found = SCHEMA_VERSION
            elif found is not None and UPGRADABLE_FROM <= found < SCHEMA_VERSION and create:
                upgrade_schema(connection, self.address.schema, found)
                found = SCHEMA_VERSION
            check_version(found, self.address)

    def _ensure_extension(self, connection: Any) -> None:
        errors = self.psycopg.errors
        row = connection.execute("SELECT 1 FROM pg_extension WHERE extname = %s", (EXTENSION,)).fetchone()
        if row is not None:
            return
        try:
            with connection.transaction():  # two replicas starting at once: one creates it
                connection.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key("ragloom.extension"),))
                connection.execute(f"CREATE EXTENSION IF NOT EXISTS {EXTENSION}")  # a constant, not input
        except (errors.FeatureNotSupported, errors.UndefinedFile, errors.InsufficientPrivilege,
                errors.UndefinedObject) as exc:
            raise StoreError(
                f"the database at {mask_password(self.address.conninfo)} has no pgvector extension "
                f"({first_line(exc)}); install pgvector on the server and run `CREATE EXTENSION vector` in "
                "that database as its owner"
            ) from None

    # -- using --------------------------------------------------------------------------------
    @contextmanager
    def connection(self) -> Iterator[Any]:
        """The connection of the transaction this thread is in, or one from the pool."""
        current = getattr(self._local, "connection", None)
        if current is not None:
            yield current
            return
        try:
            with self.pool.connection() as connection:
                yield connection
        except self.psycopg.OperationalError as exc:
            if not lost_connection(exc):  # the server answered: a statement failed, the server is fine
                raise StoreError(f"PostgreSQL at {self.address.shown()} refused a statement: {first_line(exc)}") \
                    from None
            raise connect_error(exc, self.address) from None

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """A write transaction holding the index's write lock (joined when one is open already)."""
        with self._transaction(self.write_key) as connection:
            yield connection

    @contextmanager
    def audit_transaction(self) -> Iterator[Any]:
        """A transaction that only appends to the audit chain (a search's entry): no write lock,
        ``audit.append`` takes the chain's (joins a write transaction when one is open)."""
        with self._transaction(None) as connection:
            yield connection

    @contextmanager
    def _transaction(self, lock: int | None) -> Iterator[Any]:
        """A transaction holding ``lock``; joined when a write transaction is open on this thread.
        Only a write transaction (one holding a lock) is offered to writes nested in it."""
        if self.read_only:
            raise IndexReadOnlyError(f"the index {self.address.shown()} is open read-only")
        current = getattr(self._local, "connection", None)
        if current is not None:
            yield current
            return
        with self.connection() as connection, connection.transaction():
            if lock is None:
                yield connection
                return
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))
            self._local.connection = connection
            try:
                yield connection
            finally:
                self._local.connection = None

    @contextmanager
    def writer_session(self, wait: bool = True) -> Iterator[None]:
        """Hold the index's writer lock (ingest, migrate, optimize) for the whole block; waits
        for another process holding it, or (``wait=False``) raises IndexLockedError at once.
        The lock goes with the connection if this process dies."""
        connection = self.connect()
        try:
            if wait:
                connection.execute("SELECT pg_advisory_lock(%s)", (self.session_key,))
            elif not connection.execute("SELECT pg_try_advisory_lock(%s)", (self.session_key,)).fetchone()[0]:
                raise IndexLockedError(f"another process or replica is writing to the index {self.address.shown()} "
                                       "(an ingest); try again when it has finished")
            yield
        finally:
            connection.close()

    def close(self) -> None:
        _release_pool(self._pool_key)


def _register_vector(connection: Any) -> None:
    from pgvector.psycopg import register_vector

    register_vector(connection)


def _shared_pool(key: tuple[str, str, str], address: Address, options: dict[str, Any], size: int) -> Any:
    pool_module = require("psycopg_pool", extra="postgres", feature="the postgres store", package="psycopg-pool")
    with _pools_lock:
        pool, users = _pools.get(key, (None, 0))
        if pool is None:
            pool = pool_module.ConnectionPool(
                address.conninfo, kwargs=options, min_size=1, max_size=size, open=True,
                configure=_register_vector, name="-".join(filter(None, ("ragloom", address.index, key[2]))),
            )
        _pools[key] = (pool, users + 1)
        return pool


def _release_pool(key: tuple[str, str, str]) -> None:
    with _pools_lock:
        pool, users = _pools.get(key, (None, 0))
        if pool is None:
            return
        if users <= 1:
            del _pools[key]
            pool.close()
        else:
            _pools[key] = (pool, users - 1)


def _schema_version(connection: Any, schema: str) -> int | None:
    exists = connection.execute(
        "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = 'meta'", (schema,)
    ).fetchone()
    if exists is None:
        return None
    from psycopg import sql

    row = connection.execute(
        sql.SQL("SELECT value FROM {}.meta WHERE key = 'schema_version'").format(sql.Identifier(schema))
    ).fetchone()
    return None if row is None else int(row[0])


def check_version(found: int | None, address: Address) -> None:
    if found is None or found == SCHEMA_VERSION:
        return
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"the index {address.shown()} was written by a newer ragloom (schema {found}, this one reads "
            f"{SCHEMA_VERSION}); upgrade ragloom to use it"
        )
    if found >= UPGRADABLE_FROM:  # only a read-only open gets here: upgrading writes
        raise StoreError(
            f"the index {address.shown()} was written by an older ragloom (schema {found}, this one reads "
            f"{SCHEMA_VERSION}); open it once writable (e.g. `ragloom --index URL audit`) to add the new tables "
            "in place"
        )
    raise StoreError(
        f"the index {address.shown()} was written by an older ragloom (schema {found}, this one reads "
        f"{SCHEMA_VERSION}); copy it out with that ragloom (`ragloom migrate --to embedded`) and into a new "
        "index with this one"
    )


def exists(address: Address, connect_timeout: int = 10) -> bool:
    """Whether the database holds this index (False when it is unreachable too: nothing to read)."""
    psycopg = require("psycopg", extra="postgres", feature="the postgres store")
    try:
        with psycopg.connect(address.conninfo, connect_timeout=connect_timeout, autocommit=True) as connection:
            return _schema_version(connection, address.schema) is not None
    except psycopg.OperationalError as exc:
        raise connect_error(exc, address) from None


def first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def lost_connection(exc: BaseException) -> bool:
    """Whether an ``OperationalError`` means the connection failed or was lost (no SQLSTATE, class
    08, or the server shutting down) rather than a statement the server refused: psycopg files
    both under ``OperationalError`` (e.g. 54000, "memory required is 272 MB")."""
    state = getattr(exc, "sqlstate", None) or ""
    return not state or state.startswith(("08", "57P"))


def connect_error(exc: BaseException, address: Address) -> Exception:
    """The one-line error for a failed connection: a wrong password, a missing database, or no server."""
    text = str(exc)
    where = mask_password(address.conninfo)
    if "password authentication failed" in text or "no password supplied" in text:
        return AuthenticationError(
            f"PostgreSQL at {where} refused the login ({first_line(exc)}); check the user and password in the "
            "URL (or PGPASSWORD, ~/.pgpass)"
        )
    if "does not exist" in text and "database" in text:
        return StoreError(f"{first_line(exc)} at {where}; create it (`createdb NAME`) or fix the URL")
    return ServiceUnavailableError(
        f"PostgreSQL is not reachable at {where} ({first_line(exc)}); start the server, or check the host, "
        "port and database in the URL"
    )
