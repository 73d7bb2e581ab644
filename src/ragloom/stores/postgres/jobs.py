"""Ingest jobs in PostgreSQL, for every replica of one index: a job's description, its progress,
the bytes uploaded for it, and a lease.

A replica claims the oldest queued job with ``FOR UPDATE SKIP LOCKED`` (two replicas never
claim the same one) and renews its lease while the job runs. A running job whose lease ran
out belongs to a replica that died: the next replica to look claims it again and runs it from
the start (ingest is incremental and writes each source in one transaction, so a second run
neither loses nor duplicates anything); after ``MAX_ATTEMPTS`` runs it is marked failed. All
times are the database server's clock, so replicas' clocks need not agree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .address import parse_address
from .shared import open_shared

MAX_ATTEMPTS = 3
_NOW = "extract(epoch FROM clock_timestamp())::float8"


class PostgresJobs:
    """The job table rows of one index (``index_name``) in the shared schema."""

    def __init__(self, url: str, index_name: str) -> None:
        self.database = open_shared(parse_address(url).conninfo)
        self.index_name = index_name

    def create(self, job: Mapping[str, Any], work: Mapping[str, Any], owner: str | None,
               files: Mapping[str, bytes]) -> None:
        """Queue a job with the bytes of its uploaded files, in one transaction."""
        with self.database.connection() as connection, connection.transaction():
            connection.execute(
                "INSERT INTO ragloom.jobs(id, index_name, owner, state, job, work, created_at)"
                f" VALUES (%s, %s, %s, 'queued', %s, %s, {_NOW})",
                (job["id"], self.index_name, owner, json.dumps(job), json.dumps({**work, "attempts": 0})),
            )
            for name, data in files.items():
                connection.execute("INSERT INTO ragloom.job_files(job_id, name, data) VALUES (%s, %s, %s)",
                                   (job["id"], name, data))

    def get(self, job_id: str) -> tuple[dict[str, Any], str | None] | None:
        with self.database.connection() as connection:
            row = connection.execute("SELECT job, owner FROM ragloom.jobs WHERE id = %s AND index_name = %s",
                                     (job_id, self.index_name)).fetchone()
        return None if row is None else (row[0], row[1])

    def recent(self, limit: int, owner: object) -> list[dict[str, Any]]:
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

    def claim(self, replica: str, lease: float) -> tuple[dict[str, Any], dict[str, Any], dict[str, bytes]] | None:
        """The oldest job no live replica holds, now held by ``replica`` for ``lease`` seconds:
        (job, work, uploaded files); None when there is none."""
        with self.database.connection() as connection, connection.transaction():
            row = connection.execute(
                "SELECT id, job, work FROM ragloom.jobs WHERE index_name = %s AND (state = 'queued' OR"
                f" (state = 'running' AND lease_until < {_NOW})) ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED",
                (self.index_name,),
            ).fetchone()
            if row is None:
                return None
            job_id, job, work = row
            work["attempts"] = int(work.get("attempts", 0)) + 1
            connection.execute(
                f"UPDATE ragloom.jobs SET state = 'running', replica = %s, lease_until = {_NOW} + %s, work = %s"
                " WHERE id = %s", (replica, lease, json.dumps(work), job_id))
            files = {name: bytes(data) for name, data in connection.execute(
                "SELECT name, data FROM ragloom.job_files WHERE job_id = %s", (job_id,)).fetchall()}
        return job, work, files

    def renew(self, job: Mapping[str, Any], replica: str, lease: float) -> bool:
        """Save a running job's progress and extend its lease; False when another replica took it over."""
        with self.database.connection() as connection:
            updated = connection.execute(
                f"UPDATE ragloom.jobs SET job = %s, lease_until = {_NOW} + %s WHERE id = %s AND replica = %s"
                " AND state = 'running'", (json.dumps(job), lease, job["id"], replica)).rowcount
        return bool(updated)

    def finish(self, job: Mapping[str, Any], replica: str | None) -> None:
        """Record a job's end (done or failed); its uploaded bytes are no longer needed."""
        with self.database.connection() as connection, connection.transaction():
            connection.execute(
                "UPDATE ragloom.jobs SET state = %s, job = %s, lease_until = NULL WHERE id = %s"
                " AND (%s::text IS NULL OR replica = %s)",
                (job["state"], json.dumps(job), job["id"], replica, replica))
            connection.execute("DELETE FROM ragloom.job_files WHERE job_id = %s", (job["id"],))

    def close(self) -> None:
        self.database.close()
