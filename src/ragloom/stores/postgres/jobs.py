"""The job queue (``stores/jobs.py`` ``JobQueue``) in PostgreSQL, for every replica of one index: a
job's record, what it does, the bytes uploaded for it, and a lease.

A replica claims the oldest queued job of a kind it runs with ``FOR UPDATE SKIP LOCKED`` (two
replicas never claim the same one) and renews its lease while the job runs. A running job whose
lease ran out belongs to a replica that died: the next replica to look claims it again and runs
it from the start (ingest is incremental and writes each source in one transaction, so a second
run neither loses nor duplicates anything). Renewing and finishing name the replica, so one that
lost its lease learns it and changes nothing, and the bytes of a job go only with the job's end.
All times are the database server's clock, so replicas' clocks need not agree. The kind and the
attempts are kept in ``work`` (the table is unchanged since shared version 1; a job without a
kind is an ingest).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

from ..jobs import MAX_ATTEMPTS, Claim, JobQueue  # noqa: F401 - MAX_ATTEMPTS: importable here as before
from .address import parse_address
from .shared import open_shared

_NOW = "extract(epoch FROM clock_timestamp())::float8"
#: Connections of the jobs' own pool: the worker's claim or finish, its heartbeat, and requests
#: reading jobs meanwhile (the keys have a pool of their own, so a burst of key checks never
#: starves a heartbeat and loses a lease).
POOL_SIZE = 4


class PostgresJobs(JobQueue):
    """The job table rows of one index (``index_name``) in the shared schema."""

    shared = True

    def __init__(self, url: str, index_name: str) -> None:
        self.database = open_shared(parse_address(url).conninfo, pool_size=POOL_SIZE, role="jobs")
        self.index_name = index_name

    def enqueue(self, kind: str, job: Mapping[str, Any], work: Mapping[str, Any], owner: str | None = None,
                files: Mapping[str, bytes] | None = None) -> None:
        """Queue a job with the bytes of its uploaded files, in one transaction."""
        record = {**job, "state": "queued"}
        with self.database.connection() as connection, connection.transaction():
            connection.execute(
                "INSERT INTO ragloom.jobs(id, index_name, owner, state, job, work, created_at)"
                f" VALUES (%s, %s, %s, 'queued', %s, %s, {_NOW})",
                (job["id"], self.index_name, owner, json.dumps(record),
                 json.dumps({**work, "kind": kind, "attempts": 0})),
            )
            for name, data in (files or {}).items():
                connection.execute("INSERT INTO ragloom.job_files(job_id, name, data) VALUES (%s, %s, %s)",
                                   (job["id"], name, data))

    def claim(self, worker: str, lease: float, kinds: Collection[str]) -> Claim | None:
        with self.database.connection() as connection, connection.transaction():
            row = connection.execute(
                "SELECT id, job, work FROM ragloom.jobs WHERE index_name = %s AND (state = 'queued' OR"
                f" (state = 'running' AND lease_until < {_NOW})) AND coalesce(work->>'kind', 'ingest') = ANY(%s)"
                " ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED",
                (self.index_name, list(kinds)),
            ).fetchone()
            if row is None:
                return None
            job_id, job, work = row
            work["attempts"] = int(work.get("attempts", 0)) + 1
            job["state"] = "running"
            connection.execute(
                f"UPDATE ragloom.jobs SET state = 'running', replica = %s, lease_until = {_NOW} + %s, job = %s,"
                " work = %s WHERE id = %s", (worker, lease, json.dumps(job), json.dumps(work), job_id))
            files = {name: bytes(data) for name, data in connection.execute(
                "SELECT name, data FROM ragloom.job_files WHERE job_id = %s", (job_id,)).fetchall()}
        kind = str(work.pop("kind", "ingest"))
        return Claim(job_id, kind, job, work, files, int(work.pop("attempts")))

    def heartbeat(self, job_id: str, worker: str, lease: float, job: Mapping[str, Any]) -> bool:
        with self.database.connection() as connection:
            updated = connection.execute(
                f"UPDATE ragloom.jobs SET job = %s, lease_until = {_NOW} + %s WHERE id = %s AND index_name = %s"
                " AND replica = %s AND state = 'running'",
                (json.dumps({**job, "state": "running"}), lease, job_id, self.index_name, worker)).rowcount
        return bool(updated)

    def finish(self, job_id: str, worker: str, job: Mapping[str, Any]) -> bool:
        with self.database.connection() as connection, connection.transaction():
            owned = connection.execute(
                "UPDATE ragloom.jobs SET state = %s, job = %s, lease_until = NULL WHERE id = %s AND index_name = %s"
                " AND replica = %s AND state = 'running'",
                (job["state"], json.dumps(job), job_id, self.index_name, worker)).rowcount
            if owned:  # the bytes go with the job's end, never from under the replica that holds it now
                connection.execute("DELETE FROM ragloom.job_files WHERE job_id = %s", (job_id,))
        return bool(owned)

    def cancel(self, job_id: str, error: Mapping[str, Any]) -> bool:
        with self.database.connection() as connection, connection.transaction():
            cancelled = connection.execute(
                "UPDATE ragloom.jobs SET state = 'failed', lease_until = NULL,"
                " job = job || jsonb_build_object('state', 'failed', 'error', %s::jsonb)"
                " WHERE id = %s AND index_name = %s AND state IN ('queued', 'running')",
                (json.dumps(dict(error)), job_id, self.index_name)).rowcount
            if cancelled:
                connection.execute("DELETE FROM ragloom.job_files WHERE job_id = %s", (job_id,))
        return bool(cancelled)

    def get(self, job_id: str) -> tuple[dict[str, Any], str | None] | None:
        with self.database.connection() as connection:
            row = connection.execute("SELECT job, owner FROM ragloom.jobs WHERE id = %s AND index_name = %s",
                                     (job_id, self.index_name)).fetchone()
        return None if row is None else (row[0], row[1])

    def recent(self, limit: int, owner: object = all) -> list[dict[str, Any]]:
        with self.database.connection() as connection:
            rows = connection.execute(
                "SELECT job FROM ragloom.jobs WHERE index_name = %s AND (%s OR owner IS NOT DISTINCT FROM %s)"
                " ORDER BY created_at DESC, id LIMIT %s",
                (self.index_name, owner is all, None if owner is all else owner, limit),
            ).fetchall()
        return [row[0] for row in rows]

    def pending(self) -> int:
        with self.database.connection() as connection:
            row = connection.execute("SELECT count(*) FROM ragloom.jobs WHERE index_name = %s"
                                     " AND state IN ('queued', 'running')", (self.index_name,)).fetchone()
        return int(row[0])

    def close(self) -> None:
        self.database.close()
