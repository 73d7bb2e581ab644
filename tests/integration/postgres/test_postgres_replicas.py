"""Two real `ragloom serve` processes, each in its own empty working directory, over one PostgreSQL:
keys, ingest jobs and the index are the database's, so any replica answers for the others."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

ADMIN = "admin-key-0123456789"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait(check, timeout: float = 120.0):  # noqa: ANN001, ANN202
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout} s")


class Replica:
    def __init__(self, workdir: Path, index_url: str, keys_url: str) -> None:
        workdir.mkdir(parents=True)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
        env.update(RAGLOOM_API_KEY=ADMIN, RAGLOOM_SERVER__JOB_LEASE="1.5", RAGLOOM_SERVER__SEARCH_THREADS="1")
        self.log = open(workdir / "serve.log", "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ragloom", "serve", "--index", index_url, "--keys-file", keys_url,
             "--port", str(self.port)], cwd=workdir, env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def ready(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"the replica stopped: {Path(self.log.name).read_text()[-2000:]}")
        try:
            return httpx.get(f"{self.url}/v1/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def client(self, key: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"X-API-Key": key}, timeout=60)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


@pytest.fixture(scope="module")
def replicas(postgres_server, tmp_path_factory) -> Iterator[tuple[Replica, Replica, str]]:
    root = tmp_path_factory.mktemp("replicas")
    index_url = postgres_server.url("rep" + uuid.uuid4().hex[:8])
    started = [Replica(root / name, index_url, postgres_server.url()) for name in ("a", "b")]
    try:
        for replica in started:
            _wait(replica.ready)
        yield started[0], started[1], index_url
    finally:
        for replica in started:
            replica.stop()


def _upload(replica: Replica, key: str, name: str, text: str) -> str:
    with replica.client(key) as client:
        response = client.post("/v1/ingest", files={"files": (name, text.encode(), "text/markdown")})
    assert response.status_code == 202, response.text
    return response.json()["id"]


def _finished(replica: Replica, key: str, job_id: str) -> dict:
    def done() -> dict | None:
        with replica.client(key) as client:
            job = client.get(f"/v1/ingest/{job_id}").json()
        return job if job.get("state") in ("done", "failed") else None

    return _wait(done)


def _search(replica: Replica, key: str, query: str) -> list[tuple[str, float]]:
    with replica.client(key) as client:
        response = client.post("/v1/search", json={"query": query, "k": 5})
    assert response.status_code == 200, response.text
    return [(hit["chunk_id"], round(hit["score"], 4)) for hit in response.json()["hits"]]


def test_a_job_posted_to_one_replica_is_seen_and_searched_on_the_other(replicas):
    a, b, _ = replicas
    job_id = _upload(a, ADMIN, "volcano.md", "# Volcanoes\n\nBasalt lava from shield volcanoes flows far and cools slowly.\n")
    job = _finished(b, ADMIN, job_id)  # asked of the replica that did not receive it
    assert job["state"] == "done", job
    on_a, on_b = _search(a, ADMIN, "shield volcano basalt lava"), _search(b, ADMIN, "shield volcano basalt lava")
    assert on_a == on_b and on_a


def test_the_same_file_uploaded_to_both_at_once_leaves_one_version(replicas):
    a, b, index_url = replicas
    text = "# Glaciers\n\nA glacier carves a U-shaped valley as the ice moves downhill.\n"
    ids: list[str] = []
    threads = [threading.Thread(target=lambda r=r: ids.append(_upload(r, ADMIN, "glacier.md", text))) for r in (a, b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [_finished(a, ADMIN, job_id)["state"] for job_id in ids] == ["done", "done"]
    with a.client(ADMIN) as client:
        sources = [s for s in client.get("/v1/sources").json() if s["path"].endswith("glacier.md")]
    assert len(sources) == 1
    from ragloom import Config, Index

    with Index.open(index_url, Config(), create=False) as index:
        chunks = index.store.source_chunks(sources[0]["path"])
        assert len(chunks) == sources[0]["chunk_count"] and len({c.id for c in chunks}) == len(chunks)
        assert index.store.verify_audit().ok


def test_a_key_revoked_through_one_replica_is_refused_by_both(replicas, postgres_server):
    from ragloom.server.keys import open_keys

    a, b, _ = replicas
    keys = open_keys(postgres_server.url())
    try:
        key, _ = keys.add("tenant" + uuid.uuid4().hex[:6], scopes=["read"])
        assert _search(a, key, "glacier") == _search(b, key, "glacier")
        keys.revoke(keys.records()[-1].name)
    finally:
        keys.close()
    for replica in (a, b):
        with replica.client(key) as client:
            assert client.post("/v1/search", json={"query": "glacier"}).status_code == 401


def test_a_job_whose_replica_died_is_taken_over(replicas, postgres_server):
    """The rows a replica leaves when it dies mid-job (running, lease run out, its upload's bytes in
    the database and nowhere on disk): another replica runs the job to the end."""
    import psycopg

    from ragloom.stores.postgres.jobs import PostgresJobs

    a, b, index_url = replicas
    upload = Path(tempfile_dir()) / "orphan.md"  # never written here: only its bytes are in the database
    data = b"# Deltas\n\nA river delta forms where sediment settles at the mouth.\n"
    job = {"id": uuid.uuid4().hex[:12], "state": "running", "origin": "upload", "paths": [str(upload)],
           "remove": [], "created_at": time.time()}
    table = PostgresJobs(index_url, index_url.rsplit("index=", 1)[1])
    try:
        table.create(job, {"paths": [str(upload)], "remove": [], "glob": None, "metadata": None, "policy": None},
                     None, {str(upload): data})
    finally:
        table.close()
    with psycopg.connect(postgres_server.url(), autocommit=True) as connection:
        connection.execute("UPDATE ragloom.jobs SET state = 'running', replica = 'dead-replica',"
                           " lease_until = extract(epoch FROM clock_timestamp()) - 1 WHERE id = %s", (job["id"],))
    finished = _finished(b, ADMIN, job["id"])
    assert finished["state"] == "done" and finished["report"]["added"], finished
    with psycopg.connect(postgres_server.url(), autocommit=True) as connection:
        replica, files = connection.execute(
            "SELECT replica, (SELECT count(*) FROM ragloom.job_files WHERE job_id = id) FROM ragloom.jobs WHERE id = %s",
            (job["id"],)).fetchone()
    assert replica != "dead-replica" and files == 0
    assert any("delta" in text.lower() for text in _texts(a, "river delta sediment"))


def tempfile_dir() -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="ragloom-orphan-")


def _texts(replica: Replica, query: str) -> list[str]:
    with replica.client(ADMIN) as client:
        response = client.post("/v1/search", json={"query": query, "k": 3})
    return [hit["text"] for hit in response.json()["hits"]]
