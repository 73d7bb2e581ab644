"""The tables a database's replicas share across indexes, in schema ``ragloom``: API keys, their
rate-limit buckets, and ingest jobs with the bytes uploaded for them.

Created on first use under an advisory lock (two replicas starting at once create them once);
the version in ``ragloom.meta`` is checked like an index's.
"""

from __future__ import annotations

from typing import Any

from ...errors import StoreError
from .address import Address
from .database import Database, lock_key

SHARED_VERSION = 1
SCHEMA = "ragloom"

_TABLES = """
CREATE SCHEMA IF NOT EXISTS ragloom;
CREATE TABLE IF NOT EXISTS ragloom.meta (key TEXT PRIMARY KEY, value JSONB NOT NULL);
CREATE TABLE IF NOT EXISTS ragloom.api_keys (
    name TEXT PRIMARY KEY,
    hash TEXT NOT NULL UNIQUE,
    record JSONB NOT NULL
);
CREATE TABLE IF NOT EXISTS ragloom.rate_buckets (
    name TEXT PRIMARY KEY,
    tokens DOUBLE PRECISION NOT NULL,
    at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS ragloom.jobs (
    id TEXT PRIMARY KEY,
    index_name TEXT NOT NULL,
    owner TEXT,
    state TEXT NOT NULL,
    job JSONB NOT NULL,
    work JSONB NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    lease_until DOUBLE PRECISION,
    replica TEXT
);
CREATE INDEX IF NOT EXISTS jobs_pending ON ragloom.jobs(index_name, state, created_at);
CREATE TABLE IF NOT EXISTS ragloom.job_files (
    job_id TEXT NOT NULL REFERENCES ragloom.jobs(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (job_id, name)
)
"""


#: The name the shared tables' connections go by (``Address.index``): no index may take it
#: (``address.RESERVED``), or the two would share a pool and advisory locks.
SHARED_NAME = "shared"


def open_shared(conninfo: str, pool_size: int, role: str) -> Database:
    """A pool of ``pool_size`` connections for ``role`` (keys, jobs: each its own, so one cannot
    starve the other) on the database at ``conninfo``, whose shared tables exist and are of this version."""
    return Database(Address(conninfo, SHARED_NAME), pool_size=pool_size, prepare=_prepare, pool_name=role)


def _prepare(connection: Any, create: bool) -> None:
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key("ragloom.shared"),))
        for statement in _TABLES.split(";"):
            connection.execute(statement)
        connection.execute(
            "INSERT INTO ragloom.meta(key, value) VALUES ('version', %s) ON CONFLICT (key) DO NOTHING",
            (str(SHARED_VERSION),),
        )
        found = int(connection.execute("SELECT value FROM ragloom.meta WHERE key = 'version'").fetchone()[0])
    if found != SHARED_VERSION:
        raise StoreError(
            f"the shared tables (keys, jobs) in this database are of version {found}, this ragloom reads "
            f"{SHARED_VERSION}; use the ragloom that made them, or another database"
        )
