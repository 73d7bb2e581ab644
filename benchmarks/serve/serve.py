"""Search through the HTTP API against the same searches in-process, and searches during an ingest.

Builds an index of SciFact abstracts, then runs the same queries
  1. in-process, through the server's own IndexService (same reader pool, same audit log),
  2. over HTTP against `ragloom serve` in a separate process (POST /v1/search, keep-alive),
with 1, 4 and 16 concurrent clients, and prints throughput, p50/p95 latency and the HTTP
overhead as a ratio; then the same for extractive answers (POST /v1/ask, no LLM) on the first
--answers queries with --answer-clients clients. Then it ingests more abstracts (one file each)
through POST /v1/ingest while 4 clients keep searching, and counts errors (the goal is 0).

    python -m benchmarks serve                      # 4,883 abstracts + 300 during ingest, 300 queries (full run)
    python -m benchmarks serve --docs 300 --queries 60 --during 60 --answers 20   # a quick check
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np

from ragloom import Config, Index
from ragloom.server.service import IndexService

from .. import harness

KEY = "benchmark-key"


def read_jsonl(path: Path, limit: int | None = None, skip: int = 0) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle):
            if number < skip:
                continue
            if limit is not None and len(rows) >= limit:
                break
            rows.append(json.loads(line))
    return rows


def run_clients(clients: int, queries: list[str], search: Callable[[object, str], None],
                make_session: Callable[[], object]) -> tuple[float, list[float], int]:
    """Every query once, shared by ``clients`` threads; (seconds, latencies in ms, errors)."""
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    pending = iter(queries)

    def worker() -> None:
        nonlocal errors
        session = make_session()
        try:
            while True:
                with lock:
                    query = next(pending, None)
                if query is None:
                    return
                started = time.perf_counter()
                try:
                    search(session, query)
                except Exception:  # counted, the run goes on
                    with lock:
                        errors += 1
                elapsed = (time.perf_counter() - started) * 1000
                with lock:
                    latencies.append(elapsed)
        finally:
            close = getattr(session, "close", None)
            if callable(close):
                close()

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        for future in [pool.submit(worker) for _ in range(clients)]:
            future.result()
    return time.perf_counter() - started, latencies, errors


def http_search(url: str, k: int) -> tuple[Callable[[], httpx.Client], Callable[[httpx.Client, str], None]]:
    def session() -> httpx.Client:
        return httpx.Client(base_url=url, timeout=300)

    def search(client: httpx.Client, query: str) -> None:
        response = client.post("/v1/search", json={"query": query, "k": k})
        if response.status_code != 200 or "hits" not in response.json():
            raise RuntimeError(response.text)

    return session, search


def http_ask(url: str, k: int) -> Callable[[httpx.Client, str], None]:
    def ask(client: httpx.Client, question: str) -> None:
        response = client.post("/v1/ask", json={"question": question, "k": k, "strategy": "extractive"})
        if response.status_code != 200 or "citations" not in response.json():
            raise RuntimeError(response.text)

    return ask


def start_server(index: Path, port: int, readers: int, allowed: Path) -> subprocess.Popen:
    return harness.start_ragloom(["--index", str(index), "serve", "--port", str(port)], port, {
        "RAGLOOM_API_KEY": KEY, "RAGLOOM_SERVER__SEARCH_THREADS": str(readers),
        "RAGLOOM_SERVER__ALLOWED_ROOTS": json.dumps([str(allowed)])})


def row(name: str, clients: int, seconds: float, latencies: list[float], errors: int) -> dict:
    return {"path": name, "clients": clients, "searches": len(latencies), "qps": len(latencies) / seconds,
            "p50": float(np.percentile(latencies, 50)), "p95": float(np.percentile(latencies, 95)), "errors": errors}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(harness.SCIFACT))
    parser.add_argument("--docs", type=int, default=None,
                        help="abstracts indexed first (default: all but the --during ones)")
    parser.add_argument("--queries", type=int, default=300, help="queries per concurrency level")
    parser.add_argument("--clients", default="1,4,16")
    parser.add_argument("--readers", type=int, default=4, help="server.search_threads, in-process and over HTTP")
    parser.add_argument("--during", type=int, default=300, help="abstracts ingested while clients search")
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--answers", type=int, default=100, help="extractive answers per concurrency level (0: none)")
    parser.add_argument("--answer-clients", default="1,4")
    parser.add_argument("--answer-k", type=int, default=5, help="passages per answer")
    parser.add_argument("--work", default=None, help="folder for the index and files (default: a temporary one)")
    args = parser.parse_args()
    data = Path(args.data)
    work = Path(args.work or tempfile.mkdtemp(prefix="ragloom-serve-bench-"))
    levels = [int(c) for c in args.clients.split(",")]
    answer_levels = [int(c) for c in args.answer_clients.split(",")] if args.answers else []

    everything = read_jsonl(data / "corpus.jsonl")
    base_count = args.docs if args.docs is not None else len(everything) - args.during
    corpus = work / "base" / "corpus.jsonl"
    corpus.parent.mkdir(parents=True, exist_ok=True)
    corpus.write_text("".join(json.dumps(d) + "\n" for d in everything[:base_count]))
    extra = everything[base_count : base_count + args.during]
    queries = [q["text"] for q in read_jsonl(data / "queries.jsonl", args.queries)]
    incoming = work / "incoming"
    incoming.mkdir(parents=True, exist_ok=True)
    for doc in extra:
        (incoming / f"{doc['_id']}.txt").write_text(f"{doc.get('title', '')}\n\n{doc['text']}\n", encoding="utf-8")

    index_path = work / "index"
    config = Config.from_dict({"index": str(index_path), "server": {"search_threads": args.readers}})
    with Index.open(index_path, config) as index:
        report = index.ingest([corpus])
    print(f"index: {report.chunks_written} chunks from {corpus.name} in {report.seconds:.1f} s ({work})")

    results = []
    service = IndexService(config)
    try:
        service.search(queries[0], args.k)  # warm-up: model and matrix loaded
        for clients in levels:
            seconds, latencies, errors = run_clients(
                clients, queries, lambda _, q: service.search(q, args.k), lambda: None)
            results.append(row("in-process", clients, seconds, latencies, errors))
        questions = queries[: args.answers]
        if answer_levels:
            service.ask(questions[0], strategy="extractive", k=args.answer_k)  # warm-up: the cross-encoder
        for clients in answer_levels:
            seconds, latencies, errors = run_clients(
                clients, questions, lambda _, q: service.ask(q, strategy="extractive", k=args.answer_k), lambda: None)
            results.append(row("in-process ask", clients, seconds, latencies, errors))
    finally:
        service.close()

    port = harness.free_port()
    server = start_server(index_path, port, args.readers, incoming)
    url = f"http://127.0.0.1:{port}"
    try:
        session, search = http_search(url, args.k)
        search(session(), queries[0])  # warm-up
        for clients in levels:
            seconds, latencies, errors = run_clients(clients, queries, search, session)
            results.append(row("HTTP", clients, seconds, latencies, errors))
        ask = http_ask(url, args.answer_k)
        if answer_levels:
            ask(session(), questions[0])
        for clients in answer_levels:
            seconds, latencies, errors = run_clients(clients, questions, ask, session)
            results.append(row("HTTP ask", clients, seconds, latencies, errors))
        during = search_during_ingest(url, queries, args.k, incoming) if extra else None
    finally:
        server.terminate()
        server.wait(60)

    print_table([r for r in results if not r["path"].endswith("ask")], levels)
    if answer_levels:
        print(f"\nextractive answers (k={args.answer_k}, no LLM):")
        print_table([r for r in results if r["path"].endswith("ask")], answer_levels, unit="answers")
    if during is not None:
        print(f"\nsearches during an ingest of {len(extra)} files (4 clients): {during['searches']} searches, "
              f"{during['errors']} errors, p50 {during['p50']:.1f} ms, p95 {during['p95']:.1f} ms; "
              f"ingest job {during['job_state']} in {during['job_seconds']:.1f} s "
              f"({during['added']} files added); new text searchable after: {during['visible']}")


def search_during_ingest(url: str, queries: list[str], k: int, incoming: Path) -> dict:
    headers = {"X-API-Key": KEY}
    with httpx.Client(base_url=url, timeout=300, headers=headers) as client:
        job = client.post("/v1/ingest", json={"paths": [str(incoming)]}).json()
        started = time.perf_counter()
        stop = threading.Event()
        latencies: list[float] = []
        errors = 0
        lock = threading.Lock()

        def searcher(offset: int) -> None:
            nonlocal errors
            with httpx.Client(base_url=url, timeout=300) as own:
                i = offset
                while not stop.is_set():
                    began = time.perf_counter()
                    try:
                        response = own.post("/v1/search", json={"query": queries[i % len(queries)], "k": k})
                        ok = response.status_code == 200
                    except httpx.HTTPError:
                        ok = False
                    with lock:
                        latencies.append((time.perf_counter() - began) * 1000)
                        errors += 0 if ok else 1
                    i += 4

        threads = [threading.Thread(target=searcher, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        while True:
            state = client.get(f"/v1/ingest/{job['id']}").json()
            if state["state"] in ("done", "failed"):
                break
            time.sleep(0.5)
        job_seconds = time.perf_counter() - started
        stop.set()
        for thread in threads:
            thread.join()
        first = sorted(incoming.iterdir())[0].read_text().split("\n", 1)[0]
        hits = client.post("/v1/search", json={"query": first, "k": 3, "mode": "lexical"}).json()["hits"]
        visible = any(Path(h["source"]).parent == incoming for h in hits)
    return {"searches": len(latencies), "errors": errors, "p50": float(np.percentile(latencies, 50)),
            "p95": float(np.percentile(latencies, 95)), "job_state": state["state"], "job_seconds": job_seconds,
            "added": len((state.get("report") or {}).get("added", [])), "visible": visible}


def print_table(results: list[dict], levels: list[int], unit: str = "searches") -> None:
    print(f"\n| clients | path | {unit} | {unit}/s | p50 ms | p95 ms | errors | HTTP/in-process throughput |")
    print("|---|---|---|---|---|---|---|---|")
    baseline = {r["clients"]: r["qps"] for r in results if r["path"].startswith("in-process")}
    for clients in levels:
        for r in (x for x in results if x["clients"] == clients):
            ratio = f"{r['qps'] / baseline[clients]:.2f}" if r["path"].startswith("HTTP") else ""
            print(f"| {clients} | {r['path']} | {r['searches']} | {r['qps']:.1f} | {r['p50']:.1f} | {r['p95']:.1f} "
                  f"| {r['errors']} | {ratio} |")


if __name__ == "__main__":
    main()
