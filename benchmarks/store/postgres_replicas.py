"""Replicas over one PostgreSQL: three `ragloom serve` processes, each in its own empty working
directory, serve one index; clients go round-robin over them while uploads go through all three.

Reports: searches a second and errors with 20 clients over three replicas and over one, uploads
missing after the jobs finish, whether every replica returns identical results for the same
queries, and a kill -9 of the replica running a large ingest: the job finished by another one,
chunks lost or doubled, and the audit chain.

    python -m benchmarks postgres_replicas [--seconds 30] [--clients 20] [--uploads 30] [--pg-dir /tmp/ragloom-replicas-pg]
"""

from __future__ import annotations

import argparse
import itertools
import os
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx

from .. import harness

ADMIN = "bench-admin-key-0123456789"
SCIFACT = harness.SCIFACT


def start_replica(root: Path, url: str) -> tuple[subprocess.Popen, str]:
    folder = root / uuid.uuid4().hex[:6]
    folder.mkdir(parents=True)
    port = harness.free_port()
    # No result or query-embedding cache: every search does the work (the clients repeat 40 queries).
    settings = {"RAGLOOM_API_KEY": ADMIN, "RAGLOOM_SERVER__JOB_LEASE": "5", "RAGLOOM_SERVER__SEARCH_THREADS": "2",
                "RAGLOOM_SEARCH__CACHE__SIZE": "0", "RAGLOOM_SEARCH__CACHE__EMBEDDINGS": "0"}
    process = harness.start_ragloom(["serve", "--index", url, "--port", str(port)], port, settings, cwd=folder,
                                    log=folder / "serve.log", timeout=180, every=0.5)
    return process, f"http://127.0.0.1:{port}"


def documents(n: int, offset: int = 0) -> list[tuple[str, str]]:
    import json

    rows = [json.loads(line) for _, line in zip(range(offset + n), (SCIFACT / "corpus.jsonl").open())][offset:]
    return [(f"doc-{r['_id']}.md", f"# {r.get('title', '')}\n\n{r['text']}\n") for r in rows]


def upload(base: str, name: str, text: str) -> str:
    response = httpx.post(f"{base}/v1/ingest", headers={"X-API-Key": ADMIN}, timeout=60,
                          files={"files": (name, text.encode(), "text/markdown")})
    response.raise_for_status()
    return response.json()["id"]


def wait_jobs(base: str, ids: list[str], timeout: float = 900) -> dict[str, str]:
    deadline, states = time.monotonic() + timeout, {}
    while time.monotonic() < deadline:
        states = {i: httpx.get(f"{base}/v1/ingest/{i}", headers={"X-API-Key": ADMIN}, timeout=30).json().get("state")
                  for i in ids}
        if all(s in ("done", "failed") for s in states.values()):
            break
        time.sleep(1)
    return states


def load(bases: list[str], seconds: float, clients: int, queries: list[str], during=None) -> tuple[int, int]:  # noqa: ANN001
    """``clients`` threads searching round-robin over ``bases`` for ``seconds``: (searches, errors)."""
    counts = {"ok": 0, "errors": 0}
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(number: int) -> None:
        targets = itertools.cycle(bases[number % len(bases):] + bases[:number % len(bases)])
        texts = itertools.cycle(queries[number:] + queries[:number])
        with httpx.Client(headers={"X-API-Key": ADMIN}, timeout=60) as http:
            while time.monotonic() < stop:
                try:
                    ok = http.post(f"{next(targets)}/v1/search", json={"query": next(texts), "k": 10}).status_code == 200
                except httpx.HTTPError:
                    ok = False
                with lock:
                    counts["ok" if ok else "errors"] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    if during is not None:
        during()
    for thread in threads:
        thread.join()
    return counts["ok"], counts["errors"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--uploads", type=int, default=30)
    parser.add_argument("--pg-dir", default="/tmp/ragloom-replicas-pg")
    args = parser.parse_args()
    from ragloom import Config, Index
    from ragloom.testing.postgres import PostgresServer

    url = PostgresServer(Path(args.pg_dir), keep=True).start().url("rep" + uuid.uuid4().hex[:6])
    root = Path(tempfile.mkdtemp(prefix="ragloom-replicas-"))
    replicas = [start_replica(root, url) for _ in range(3)]
    bases = [base for _, base in replicas]
    print(f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')}, 3 replicas over {url.split('?')[0]} (load average {harness.load_average():.2f} before)")
    seed = [upload(bases[0], n, t) for n, t in documents(100)]
    wait_jobs(bases[0], seed)
    queries = [text.split("\n")[0].lstrip("# ")[:80] for _, text in documents(40, 500)]

    single = load(bases[:1], args.seconds, args.clients, queries)
    spread = load(bases, args.seconds, args.clients, queries)
    ids: list[str] = []
    docs = documents(args.uploads, 100)

    def uploads() -> None:
        for i, (name, text) in enumerate(docs):
            ids.append(upload(bases[i % 3], name, text))
            time.sleep(args.seconds / max(len(docs), 1) * 0.8)

    three = load(bases, args.seconds, args.clients, queries, during=uploads)
    states = wait_jobs(bases[0], ids)
    with httpx.Client(headers={"X-API-Key": ADMIN}, timeout=60) as http:
        sources = {s["path"].rsplit("/", 1)[-1] for s in http.get(f"{bases[0]}/v1/sources").json()}
        answers = [[tuple((h["chunk_id"], round(h["score"], 5)) for h in
                          http.post(f"{b}/v1/search", json={"query": q, "k": 10}).json()["hits"]) for q in queries]
                   for b in bases]
    missing = [name for name, _ in docs if name not in sources]
    print("| run | searches/s | errors |")
    print("|---|---|---|")
    print(f"| 1 replica, {args.clients} clients, {args.seconds:.0f} s | {single[0] / args.seconds:.1f} | {single[1]} |")
    print(f"| 3 replicas round-robin | {spread[0] / args.seconds:.1f} | {spread[1]} |")
    print(f"| 3 replicas round-robin, {len(ids)} uploads through all three meanwhile | {three[0] / args.seconds:.1f} | "
          f"{three[1]} |")
    print(f"throughput 3 replicas / 1: {spread[0] / max(single[0], 1):.2f}x; uploads {len(ids)}, "
          f"failed jobs {sum(s != 'done' for s in states.values())}, missing {len(missing)}; "
          f"identical results on every replica for {len(queries)} queries: {answers[0] == answers[1] == answers[2]}")

    # kill -9 the replica that runs a large ingest
    big = "\n\n".join(text for _, text in documents(300, 1000))
    job = upload(bases[0], "big.md", big)
    from ragloom.stores.postgres.jobs import PostgresJobs

    table = PostgresJobs(url, url.rsplit("index=", 1)[1])
    holder = None
    while holder is None:
        with table.database.connection() as connection:
            holder = connection.execute("SELECT replica FROM ragloom.jobs WHERE id = %s AND state = 'running'",
                                        (job,)).fetchone()
        time.sleep(0.2)
    time.sleep(2)  # into the ingest
    pid = int(holder[0].split(":")[1])
    victim = next(i for i, (p, _) in enumerate(replicas) if p.pid == pid)
    os.kill(pid, signal.SIGKILL)
    survivor = bases[(victim + 1) % 3]
    state = wait_jobs(survivor, [job])[job]
    table.close()
    with Index.open(url, Config(), create=False) as index:
        record = next(r for r in index.store.list_sources() if r.path.endswith("big.md"))
        chunks = index.store.source_chunks(record.path)
        report = index.store.verify_audit()
    print(f"kill -9 of the replica running a {len(big):,}-character ingest: job {state} by another replica; "
          f"{len(chunks)} chunks stored, registry says {record.chunk_count}, "
          f"{len(chunks) - len({c.id for c in chunks})} doubled; audit: {report.describe()}")
    for process, _ in replicas:
        if process.poll() is None:
            process.terminate()
            process.wait(30)


if __name__ == "__main__":
    main()
