"""What tenancy costs: a key's filter on search latency, and several indexes on one server.

1. Filter cost. A 100k-chunk embedded store built without embedding costs (``synthetic.py``'s
   helpers: clustered 384-d vectors, Zipf texts), whose ``group`` field splits it into 10
   tenants of 10% each. Queries go through the path the server takes for a scoped key:
   ``ScopedIndex.search`` -> ``IndexService.search`` -> the configured pipeline (hybrid, audit
   entry and all), as an admin key (no filter) and as a tenant key (``group = N``, ANDed by the
   server), alternating query by query in one process. The result cache is off; query
   embeddings are computed once beforehand (the packaged bge-small), so both sides time the
   search, not the embedder. Target: tenant p50 and p95 within 1.5x of unfiltered (issue 24),
   lexical within 1.3x (issue 32).
2. Throughput of 20 concurrent HTTP clients against ``ragloom serve``: one index, then three
   indexes (copies of it) with the clients spread over them (/v1/indexes/NAME/search). Target
   (issue 32): three indexes serve at least 0.9x the searches per second of one.

    python -m benchmarks tenancy                     # 100k chunks, 300 queries; 300 abstracts x 3 indexes
    python -m benchmarks tenancy --chunks 20000 --queries 100 --http-queries 200   # a quick check
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from ragloom import Config, Index
from ragloom.server.access import ADMIN, Caller, ScopedIndex, Served
from ragloom.server.service import IndexService

from .. import harness
from ..store.synthetic import build, make_queries
from .serve import KEY, read_jsonl, row, run_clients

SCIFACT = harness.SCIFACT
TENANTS = 10


def embedder_info(work: Path) -> dict:
    """The packaged embedder's record, so the synthetic store opens with the server's real embedder."""
    (work / "one.md").write_text("# One\n\nA single passage to record the embedder.\n")
    with Index.open(work / "probe", Config()) as index:
        index.ingest([work / "one.md"])
        return dict(index.store.embedder_info() or {})


def filter_cost(work: Path, chunks: int, queries: int) -> list[dict]:
    folder = work / "synthetic"
    info = embedder_info(work)
    started = time.perf_counter()
    build(folder, chunks, 1000, threshold=chunks + 1)
    print(f"built {chunks:,} chunks in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    from ragloom.stores.embedded import EmbeddedStore

    store = EmbeddedStore.open(folder, Config())
    store.set_embedder_info(info)
    store.close()
    config = Config.model_validate({"index": str(folder), "search": {"cache": {"size": 0, "embeddings": 4 * queries}},
                                    "server": {"search_threads": 1}})
    service = IndexService(config)
    served = Served("synthetic", service, None, folder)
    _, texts = make_queries(queries, chunks)
    admin = ScopedIndex(served, ADMIN)
    tenants = [ScopedIndex(served, Caller(f"tenant-{t}", "read", (), {"group": t})) for t in range(TENANTS)]
    rows = []
    try:
        for mode in ("hybrid", "dense", "lexical"):
            for text in texts[:20]:  # embeddings cached, models and matrices loaded
                admin.search(text, 10, mode=mode)
            plain, scoped, counts = [], [], []
            for q, text in enumerate(texts):
                t = time.perf_counter()
                admin.search(text, 10, mode=mode)
                plain.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                result = tenants[q % TENANTS].search(text, 10, mode=mode)
                scoped.append((time.perf_counter() - t) * 1000)
                counts.append(bool(result.hits) and all(h.metadata.get("group") == q % TENANTS for h in result.hits))
            if not all(counts):
                raise SystemExit(f"{mode}: a tenant search returned nothing, or another tenant's chunk")
            p = {name: (float(np.percentile(v, 50)), float(np.percentile(v, 95))) for name, v in
                 (("plain", plain), ("tenant", scoped))}
            rows.append({"mode": mode, "unfiltered_p50": p["plain"][0], "unfiltered_p95": p["plain"][1],
                         "tenant_p50": p["tenant"][0], "tenant_p95": p["tenant"][1],
                         "ratio_p50": p["tenant"][0] / p["plain"][0], "ratio_p95": p["tenant"][1] / p["plain"][1]})
    finally:
        service.close()
    return rows


def start_serve(indexes: dict[str, Path], port: int) -> subprocess.Popen:
    args = [a for name, path in indexes.items() for a in ("--index", f"{name}={path}")]
    return harness.start_ragloom(["serve", "--port", str(port), *args], port, {"RAGLOOM_API_KEY": KEY})


def throughput(work: Path, docs: int, queries: int, clients: int) -> list[dict]:
    corpus = work / "corpus"
    corpus.mkdir()
    for row_ in read_jsonl(SCIFACT / "corpus.jsonl", docs):
        (corpus / f"{row_['_id']}.md").write_text(f"# {row_['title']}\n\n{row_['text']}\n", encoding="utf-8")
    with Index.open(work / "idx-a", Config()) as index:
        index.ingest([corpus])
    for name in ("b", "c"):
        shutil.copytree(work / "idx-a", work / f"idx-{name}")
    texts = [q["text"] for q in read_jsonl(SCIFACT / "queries.jsonl", queries)]
    rows = []
    for layout in (["a"], ["a", "b", "c"]):
        port = harness.free_port()
        process = start_serve({name: work / f"idx-{name}" for name in layout}, port)
        url = f"http://127.0.0.1:{port}"
        spread = iter(range(len(texts) * 2))

        def session(url: str = url) -> httpx.Client:
            return httpx.Client(base_url=url, timeout=300)

        def search(client: httpx.Client, query: str, layout: list[str] = layout, spread=spread) -> None:  # noqa: ANN001
            name = layout[next(spread) % len(layout)]
            response = client.post(f"/v1/indexes/{name}/search", json={"query": query, "k": 10})
            if response.status_code != 200:
                raise RuntimeError(response.text)

        try:
            run_clients(clients, texts[:clients], search, session)  # warm every reader
            seconds, latencies, errors = run_clients(clients, texts, search, session)
            rows.append(row(f"{len(layout)} index{'es' if len(layout) > 1 else ''}", clients, seconds, latencies,
                            errors))
        finally:
            process.terminate()
            process.wait(30)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300, help="queries of the filter-cost part")
    parser.add_argument("--docs", type=int, default=300, help="SciFact abstracts per index of the HTTP part")
    parser.add_argument("--http-queries", type=int, default=300)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ragloom-tenancy-bench-"))
    try:
        cost = filter_cost(work, args.chunks, args.queries)
        print(f"\nTenant filter cost, {args.chunks:,} chunks, {TENANTS} tenants x 10%, embedded store, "
              f"{args.queries} queries, ScopedIndex.search (ms)")
        print("| preset | unfiltered p50 | unfiltered p95 | tenant p50 | tenant p95 | ratio p50 | ratio p95 |")
        print("|---|---|---|---|---|---|---|")
        for r in cost:
            print(f"| {r['mode']} | {r['unfiltered_p50']:.1f} | {r['unfiltered_p95']:.1f} | {r['tenant_p50']:.1f} | "
                  f"{r['tenant_p95']:.1f} | {r['ratio_p50']:.2f}x | {r['ratio_p95']:.2f}x |")
        http = [] if args.skip_http else throughput(work, args.docs, args.http_queries, args.clients)
        if http:
            print(f"\n{args.clients} concurrent HTTP clients, POST /v1/indexes/NAME/search, {args.docs} abstracts "
                  "per index")
            print("| layout | searches | per second | p50 ms | p95 ms | errors |")
            print("|---|---|---|---|---|---|")
            for r in http:
                print(f"| {r['path']} | {r['searches']} | {r['qps']:.1f} | {r['p50']:.0f} | {r['p95']:.0f} | "
                      f"{r['errors']} |")
        if args.json:
            args.json.write_text(json.dumps({"filter_cost": cost, "throughput": http}, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
