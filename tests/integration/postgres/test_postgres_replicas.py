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
        table.enqueue("ingest", job, {"paths": [str(upload)], "remove": [], "glob": None, "metadata": None,
                                      "policy": None}, None, {str(upload): data})
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


# -- the job queue's leases, the write lock, the shared pools ------------------------------------
_WORDS = ("basalt delta glacier moraine fjord estuary lagoon atoll mesa butte canyon geyser caldera tundra "
          "savanna steppe taiga marsh bog fen dune karst sinkhole cirque arete esker drumlin loess scree "
          "talus pumice obsidian granite gneiss schist quartz feldspar mica shale chalk flint").split()


def _paragraphs(seed: int, count: int = 12) -> str:
    import random

    rng = random.Random(seed)
    return "\n\n".join(" ".join(rng.choice(_WORDS) for _ in range(60)) + "." for _ in range(count))


def _sources(replica: Replica, prefix: str) -> list[str]:
    with replica.client(ADMIN) as client:
        return [s["path"] for s in client.get("/v1/sources").json() if Path(s["path"]).name.startswith(prefix)]


def _database(postgres_server):  # noqa: ANN001, ANN202
    import psycopg

    return psycopg.connect(postgres_server.url(), autocommit=True)


def test_a_replica_that_lost_its_lease_stops_its_ingest_between_two_sources(replicas, postgres_server):
    """Another replica holds the job now (as after a pause longer than the lease): the first one's
    heartbeat is refused, so it stops writing; the job's new holder runs it to the end."""
    a, b, _ = replicas
    prefix = "lease" + uuid.uuid4().hex[:6]
    files = [("files", (f"{prefix}-{i:02d}.md", _paragraphs(i).encode(), "text/markdown")) for i in range(40)]
    with a.client(ADMIN) as client:
        response = client.post("/v1/ingest", files=files)
    assert response.status_code == 202, response.text
    job_id = response.json()["id"]

    def started() -> bool:
        with a.client(ADMIN) as client:
            job = client.get(f"/v1/ingest/{job_id}").json()
        assert job["state"] in ("queued", "running"), job  # not finished before the takeover
        return job["files_done"] >= 2

    _wait(started)
    with _database(postgres_server) as connection:
        holder = connection.execute(
            "UPDATE ragloom.jobs SET replica = 'thief', lease_until = extract(epoch FROM clock_timestamp()) + 3600"
            " WHERE id = %s AND state = 'running' RETURNING 1", (job_id,)).fetchone()
    assert holder is not None
    # Whichever replica ran it says so in its log once its heartbeat is refused, and writes no more.
    _wait(lambda: any(f"job {job_id}: another worker holds it now" in Path(r.log.name).read_text() for r in (a, b)))
    stopped = len(_sources(a, prefix))
    time.sleep(3)  # a replica still writing would add sources meanwhile
    assert len(_sources(a, prefix)) == stopped < 40
    with _database(postgres_server) as connection:  # the thief dies: its lease runs out
        connection.execute("UPDATE ragloom.jobs SET lease_until = extract(epoch FROM clock_timestamp()) - 1"
                           " WHERE id = %s", (job_id,))
    finished = _finished(b, ADMIN, job_id)
    assert finished["state"] == "done", finished
    assert len(_sources(b, prefix)) == 40


def test_delete_answers_409_at_once_while_another_replica_writes(replicas, postgres_server):
    from ragloom.stores.postgres.address import parse_address
    from ragloom.stores.postgres.database import lock_key

    a, b, index_url = replicas
    prefix = "held" + uuid.uuid4().hex[:6]
    assert _finished(a, ADMIN, _upload(a, ADMIN, f"{prefix}.md", "# Held\n\nA source to delete.\n"))["state"] == "done"
    with a.client(ADMIN) as client:
        sid = next(s["id"] for s in client.get("/v1/sources").json() if Path(s["path"]).name == f"{prefix}.md")
    writer = lock_key("ragloom.writer", parse_address(index_url).schema)
    with _database(postgres_server) as ingest:  # another replica's ingest holds the index's writer lock
        ingest.execute("SELECT pg_advisory_lock(%s)", (writer,))
        with b.client(ADMIN) as client:
            refused = client.delete(f"/v1/sources/{sid}")
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"]["code"] == "index_locked" and "try again" in refused.json()["error"]["message"]
    with b.client(ADMIN) as client:
        assert client.delete(f"/v1/sources/{sid}").status_code == 200
    assert _sources(a, prefix) == []


def test_a_locked_job_table_does_not_stop_the_event_loop(replicas, postgres_server):
    a, _, _ = replicas
    answers: list[int] = []
    with _database(postgres_server) as locker:
        locker.execute("BEGIN")
        locker.execute("LOCK TABLE ragloom.jobs IN ACCESS EXCLUSIVE MODE")
        asking = threading.Thread(target=lambda: answers.append(_status(a)))
        asking.start()
        time.sleep(1)  # the status request now waits for the table
        with httpx.Client(base_url=a.url, timeout=15) as client:  # answered meanwhile: the loop is free
            assert client.get("/v1/healthz").status_code == 200
        assert answers == []
        locker.execute("COMMIT")
    asking.join(60)
    assert answers == [200]


def _status(replica: Replica) -> int:
    with replica.client(ADMIN) as client:
        return client.get("/v1/status").status_code


def test_key_checks_waiting_on_the_database_neither_block_the_loop_nor_starve_the_jobs(replicas, postgres_server):
    """Key checks that wait (the key table locked) hold connections of the keys' pool, in worker
    threads: the server still answers, and a job (the jobs' own pool) still runs to the end."""
    from ragloom.server.keys import open_keys

    a, _, _ = replicas
    keys = open_keys(postgres_server.url())
    try:
        key, _ = keys.add("slow" + uuid.uuid4().hex[:6], scopes=["read"])
    finally:
        keys.close()
    answers: list[int] = []
    with _database(postgres_server) as locker:
        locker.execute("BEGIN")
        locker.execute("LOCK TABLE ragloom.api_keys IN ACCESS EXCLUSIVE MODE")
        waiting = [threading.Thread(target=lambda: answers.append(_search_status(a, key))) for _ in range(3)]
        for thread in waiting:
            thread.start()
        time.sleep(1)  # three key checks now wait for the table
        with httpx.Client(base_url=a.url, timeout=15) as client:
            assert client.get("/v1/healthz").status_code == 200
        job = _finished(a, ADMIN, _upload(a, ADMIN, f"pool{uuid.uuid4().hex[:6]}.md", "# Pools\n\nSized for the load.\n"))
        assert job["state"] == "done" and answers == []
        locker.execute("COMMIT")
    for thread in waiting:
        thread.join(60)
    assert answers == [200, 200, 200]


def _search_status(replica: Replica, key: str) -> int:
    with replica.client(key) as client:
        return client.post("/v1/search", json={"query": "pools", "k": 1}).status_code


def test_mcp_over_http_checks_keys_off_the_event_loop(replicas, postgres_server, tmp_path):
    """`ragloom mcp --transport http --keys-file postgresql://...`: a key check waiting on the
    database (its table locked) does not hold up a request that needs none (the admin key), and a
    wrong key is a 401."""
    pytest.importorskip("mcp")
    from ragloom.server.keys import open_keys

    _, _, index_url = replicas
    keys = open_keys(postgres_server.url())
    try:
        key, _ = keys.add("mcp" + uuid.uuid4().hex[:6], scopes=["read"])
    finally:
        keys.close()
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    env.update(RAGLOOM_API_KEY=ADMIN, RAGLOOM_SERVER__SEARCH_THREADS="1")
    with open(tmp_path / "mcp.log", "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "ragloom", "--index", index_url, "mcp", "--transport", "http", "--port", str(port),
             "--keys-file", postgres_server.url()], cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}/mcp"

            def post(presented: str) -> int:
                return httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=60,
                                  headers={"Authorization": f"Bearer {presented}",
                                           "Accept": "application/json, text/event-stream"}).status_code

            def up() -> bool:
                assert process.poll() is None, (tmp_path / "mcp.log").read_text()[-2000:]
                try:
                    return post("wrong-key") == 401
                except httpx.HTTPError:
                    return False

            _wait(up)
            answers: list[int] = []
            with _database(postgres_server) as locker:
                locker.execute("BEGIN")
                locker.execute("LOCK TABLE ragloom.api_keys IN ACCESS EXCLUSIVE MODE")
                waiting = threading.Thread(target=lambda: answers.append(post(key)))
                waiting.start()
                time.sleep(1)  # the key's check now waits for the table
                with httpx.Client(timeout=15) as client:  # the admin key needs no look-up: answered meanwhile
                    admin = client.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                        headers={"Authorization": f"Bearer {ADMIN}",
                                                 "Accept": "application/json, text/event-stream"})
                assert admin.status_code != 401 and answers == []
                locker.execute("COMMIT")
            waiting.join(60)
            assert answers and answers[0] != 401
        finally:
            process.terminate()
            process.wait(30)
