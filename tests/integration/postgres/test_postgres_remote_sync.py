"""Two real `ragloom serve` replicas over one PostgreSQL with the same scheduled remote source (a git
repository of 300 files): one replica syncs it, is killed with SIGKILL mid-sync, and the other takes
the sync over from the cursors in the database. Every file ends indexed once, written once."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the git command is not installed")

ADMIN = "admin-key-0123456789"
FILES = 300


def _wait(check, timeout: float = 300.0, what: str = ""):  # noqa: ANN001, ANN202
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout} s: {what}")


class Replica:
    def __init__(self, workdir: Path, index_url: str, repo_uri: str) -> None:
        workdir.mkdir(parents=True)
        (workdir / "ragloom.yaml").write_text(
            "sources:\n  allow_private_hosts: true\n  batch_items: 10\n"
            f"  remote:\n    handbook: {{uri: '{repo_uri}', interval: 1h}}\n")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
        env.update(RAGLOOM_API_KEY=ADMIN, RAGLOOM_SERVER__JOB_LEASE="3", RAGLOOM_SERVER__SEARCH_THREADS="1",
                   RAGLOOM_CACHE_DIR=str(workdir / "cache"))
        if env.get("PYTHONPATH"):
            env["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in env["PYTHONPATH"].split(os.pathsep))
        self.log = open(workdir / "serve.log", "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ragloom", "serve", "--index", index_url, "--port", str(self.port)],
            cwd=workdir, env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()


def make_repository(repo: Path) -> None:
    repo.mkdir()
    for n in range(FILES):
        (repo / f"note-{n:03d}.md").write_text(f"# Note {n}\n\nItem {n} of the handbook: the code word is w{n}x.\n")
    for args in (("init", "-q", "-b", "main"), ("add", "."), ("commit", "-q", "-m", "notes")):
        subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                       check=True, capture_output=True)


def test_a_replica_killed_mid_sync_is_taken_over_and_every_file_is_written_once(postgres_server, tmp_path) -> None:
    import psycopg

    from ragloom.stores.postgres.address import parse_address

    repo = tmp_path / "handbook"
    make_repository(repo)
    index_url = postgres_server.url("sync" + uuid.uuid4().hex[:8])
    schema = parse_address(index_url).schema
    replicas = [Replica(tmp_path / name, index_url, f"git+{repo.as_uri()}@main") for name in ("a", "b")]
    try:
        with psycopg.connect(postgres_server.url(), autocommit=True) as db:
            def query(sql: str) -> tuple:
                try:
                    return db.execute(sql.replace("S.", f"{schema}.")).fetchone()
                except (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName):
                    return None

            # The scheduler of one of them queues the sync; whichever claims it holds the source.
            def holder_mid_sync() -> str | None:
                committed = query("SELECT count(*) FROM S.remote_items")
                row = query("SELECT holder FROM S.remote_sources WHERE name = 'handbook'")
                return row[0] if row and row[0] and committed and 20 <= committed[0] < FILES - 50 else None

            holder = _wait(holder_mid_sync, what="a replica syncing, some batches committed")
            pid = int(holder.split(":")[1])
            victim = next(r for r in replicas if r.process.pid == pid)
            survivor = next(r for r in replicas if r is not victim)
            os.kill(pid, signal.SIGKILL)
            victim.process.wait(10)
            committed_at_kill = query("SELECT count(*) FROM S.remote_items")[0]

            def finished() -> tuple | None:
                row = query("SELECT holder, state->>'status', state->'report' FROM S.remote_sources"
                            " WHERE name = 'handbook'")
                return row if row and row[0] is None and row[1] == "ok" else None

            _, status, report = _wait(finished, what="the survivor finishing the sync")
            assert survivor.process.poll() is None
            assert committed_at_kill < FILES
            # The cursors are the database's: every file's blob id, and the commit.
            assert query("SELECT count(*) FROM S.remote_items WHERE remote = 'handbook'")[0] == FILES
            commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                                    text=True).stdout.strip()
            assert query("SELECT state->'cursor'->>'commit' FROM S.remote_sources")[0] == commit
            # Indexed once each, and written once each: what the dead replica committed was not written again.
            assert query("SELECT count(*) FROM S.sources")[0] == FILES
            assert query("SELECT count(*) FROM S.chunks")[0] == FILES
            added = query("SELECT count(*) FROM S.audit_log WHERE kind = 'source.added'")[0]
            updated = query("SELECT count(*) FROM S.audit_log WHERE kind = 'source.updated'")[0]
            assert (added, updated) == (FILES, 0)
            assert report["seen"] == FILES and report["added"] + report["unchanged"] == FILES
        with httpx.Client(base_url=f"http://127.0.0.1:{survivor.port}", headers={"X-API-Key": ADMIN}) as client:
            hits = client.post("/v1/search", json={"query": "w123x", "k": 1}).json()["hits"]
            assert hits[0]["source"].endswith(":note-123.md")
            rows = client.get("/v1/remote-sources").json()
            assert [(r["name"], r["status"]) for r in rows] == [("handbook", "ok")]
    finally:
        for replica in replicas:
            replica.stop()
