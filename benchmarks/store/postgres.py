"""The postgres store measured: SciFact quality against the embedded store, and scale.

``quality``: ingests SciFact into an embedded index (reused when present), copies it into
PostgreSQL with ``migrate`` (no re-embedding), then scores the 300 test queries in every mode
on both stores (nDCG@10, documents ranked by their best chunk), and the lexical side a second
way: PostgreSQL's own ``ts_rank_cd`` over the same analysis, to decide between it and BM25
computed from the postings table.

``depth``: what reading each query term's best postings only (``store.postgres.bm25_depth``)
costs in quality: SciFact's documents (one chunk each, no embedding) written to PostgreSQL,
the test queries' top 100 by BM25 at the default depth and with every posting read (exact),
nDCG@10 of both and how many queries get the same top 10 / top 100.

``scale``: N synthetic 384-d chunks (``benchmarks/store/synthetic.py``'s data, vectors precomputed)
written through ``PostgresStore`` in sources of 1,000: load rate, the approximate index's build
time (``--ann``: IVFFlat, the default, or HNSW), dense / 10%-filtered dense / lexical / hybrid p50
and p95, recall@10 of dense against exact search and of BM25 against every posting read,
database size, and the memory of this process and of the PostgreSQL server. A second run on the
same ``--pg-dir`` finds the chunks loaded and only searches.

A PostgreSQL with pgvector is started from the ``pgserver`` wheel in ``--pg-dir`` unless
``--url`` names one.

    python -m benchmarks postgres quality [--index /tmp/scifact-embedded] [--pg-dir /tmp/ragloom-bench-pg]
    python -m benchmarks postgres depth [--pg-dir /tmp/ragloom-bench-pg]
    python -m benchmarks postgres scale [--chunks 100000] [--queries 200] [--ann ivfflat|hnsw]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from ragloom import Config, Index
from ragloom.eval.beir import load_beir
from ragloom.eval.metrics import mean, per_query_metrics
from ragloom.eval.runner import search_documents, top_documents
from ragloom.stores.migrate import migrate

from .. import harness

SCIFACT = harness.SCIFACT
MODES = ("lexical", "dense", "hybrid")

_TS_RANK_CD = """
SELECT c.doc_id, ts_rank_cd(to_tsvector(%(language)s::regconfig, c.text), q.q) AS score
FROM chunks c, (SELECT to_tsquery('simple', coalesce(string_agg(quote_literal(t.lexeme), ' | '), ''))
                AS q FROM unnest(to_tsvector(%(language)s::regconfig, %(query)s)) t) q
WHERE to_tsvector(%(language)s::regconfig, c.text) @@ q.q
ORDER BY score DESC, c.id LIMIT %(n)s
"""


def database_url(args: argparse.Namespace, index: str) -> str:
    if args.url:
        return f"{args.url}{'&' if '?' in args.url else '?'}index={index}"
    from ragloom.testing.postgres import PostgresServer

    server = PostgresServer(Path(args.pg_dir), keep=True).start()
    return server.url(index)


def evaluate(index: Index, queries: dict[str, str], qrels, mode: str) -> float:
    run = {qid: search_documents(index, text, 100, mode, depth=index.config.search.k_max)
           for qid, text in queries.items()}
    return mean(per_query_metrics(qrels, run)["nDCG@10"])


def evaluate_ts_rank_cd(index: Index, queries: dict[str, str], qrels) -> float:
    store = index.store
    with store.database.connection() as connection:
        def fetch(query: str, n: int) -> list[tuple[str, float]]:
            rows = connection.execute(_TS_RANK_CD, {"language": store.language, "query": query, "n": n}).fetchall()
            return [(doc, float(score)) for doc, score in rows]

        run = {qid: top_documents(lambda n, t=text: fetch(t, n), 100, 300) for qid, text in queries.items()}
    return mean(per_query_metrics(qrels, run)["nDCG@10"])


def quality(args: argparse.Namespace) -> None:
    test = load_beir(args.data, "test")
    config = Config.from_dict({"search": {"k_max": 300}})
    started = time.perf_counter()
    with Index.open(args.index, config) as embedded:
        report = embedded.ingest([Path(args.data) / "corpus.jsonl"])
        print(f"embedded index: {embedded.stats().chunks} chunks ({report.chunks_embedded} embedded now, "
              f"{time.perf_counter() - started:.0f} s)")
        url = database_url(args, "scifact")
        with Index.open(url, config) as postgres:
            t = time.perf_counter()
            copied = migrate(embedded.store, postgres.store)
            print(f"migrated to postgres: {copied.chunks} chunks in {time.perf_counter() - t:.1f} s (load average {harness.load_average():.2f})\n")
            print(f"| SciFact test ({len(test.queries)} queries), nDCG@10 | embedded | postgres | difference |")
            print("|---|---|---|---|")
            for mode in MODES:
                a = evaluate(embedded, test.queries, test.qrels, mode)
                b = evaluate(postgres, test.queries, test.qrels, mode)
                print(f"| {mode} | {a:.4f} | {b:.4f} | {b - a:+.4f} |", flush=True)
            ts = evaluate_ts_rank_cd(postgres, test.queries, test.qrels)
            print(f"| lexical, ts_rank_cd instead of BM25 | | {ts:.4f} | |")


def depth(args: argparse.Namespace) -> None:
    import json

    from ragloom.stores.base import create_store
    from ragloom.types import Chunk, SourceRecord, content_hash

    test = load_beir(args.data, "test")
    url = database_url(args, "scifactdocs")
    stores = {name: create_store(Path(args.pg_dir), Config.from_dict(
        {"store": {"backend": "postgres", "postgres": {"url": url, "bm25_depth": value}}}))
        for name, value in (("default depth", 1000), ("exact", 10**9))}
    store = stores["exact"]
    if store.count() == 0:
        store.set_embedder_info({"model_id": "none", "dimension": 4})
        lines = (Path(args.data) / "corpus.jsonl").read_text().splitlines()
        for first in range(0, len(lines), 500):
            source = f"/scifact/{first // 500:03d}"
            docs = [json.loads(line) for line in lines[first:first + 500]]
            chunks = [Chunk(id=d["_id"], text=f"{d['title']}\n{d['text']}", source=source, doc_id=d["_id"],
                            chunk_index=i, start=0, end=0, policy="doc", content_hash=content_hash(d["_id"]),
                            token_count=0, metadata={}) for i, d in enumerate(docs)]
            vectors = np.tile(np.array([1, 0, 0, 0], dtype=np.float32), (len(chunks), 1))
            store.replace_source(SourceRecord(source, content_hash(source), 0.0, 0, len(chunks), time.time()),
                                 chunks, vectors)
    runs = {name: {qid: {c.chunk_id: c.score for c in s.search_lexical(text, 100)} for qid, text in test.queries.items()}
            for name, s in stores.items()}
    same10 = sum(list(runs["exact"][q])[:10] == list(runs["default depth"][q])[:10] for q in test.queries)
    same100 = sum(list(runs["exact"][q]) == list(runs["default depth"][q]) for q in test.queries)
    print(f"SciFact test ({len(test.queries)} queries), {store.count()} documents, BM25 top 100")
    print("| postings read per term | nDCG@10 |\n|---|---|")
    for name, run in runs.items():
        print(f"| {name} | {mean(per_query_metrics(test.qrels, run)['nDCG@10']):.4f} |")
    print(f"same top 10: {same10}/{len(test.queries)}; same top 100: {same100}/{len(test.queries)}")
    for s in stores.values():
        s.close()


def scale(args: argparse.Namespace) -> None:
    from .synthetic import DIM, make_batch, make_queries

    from ragloom.filters import parse_where
    from ragloom.stores.base import create_store
    from ragloom.types import Chunk, SourceRecord, content_hash

    url = database_url(args, f"synthetic{args.chunks}")
    config = Config.from_dict({"store": {"backend": "postgres", "postgres": {"url": url, "ann_index": args.ann}}})
    store = create_store(Path(args.pg_dir), config)
    if store.count() != args.chunks:
        for record in store.list_sources():
            store.delete_source(record.path)
        if store.embedder_info() is None:
            store.set_embedder_info({"model_id": "synthetic", "dimension": DIM})
        started = time.perf_counter()
        for first in range(0, args.chunks, 1000):
            count = min(1000, args.chunks - first)
            vectors, texts, assignment = make_batch(first, count)
            source = f"/synthetic/source-{first // 1000:05d}.txt"
            batch = [Chunk(id=f"{i:012d}", text=texts[i - first], source=source, doc_id=str(i), chunk_index=i - first,
                           start=0, end=len(texts[i - first]), policy="synthetic",
                           content_hash=content_hash(texts[i - first] + str(i)), token_count=60,
                           metadata={"group": int(i % 10), "cluster": int(assignment[i - first])})
                     for i in range(first, first + count)]
            store.replace_source(SourceRecord(source, content_hash(source), 0.0, 0, count, time.time()), batch, vectors)
        load = time.perf_counter() - started
        print(f"load: {args.chunks:,} chunks in {load:.0f} s = {args.chunks / load:,.0f} chunks/s (load average {harness.load_average():.2f})")
    started = time.perf_counter()
    store.flush()  # builds the approximate index (or rebuilds one of another kind)
    found = store.optimize()["approximate_index"]
    print(f"approximate index: {found}, built (or found) and analysed in {time.perf_counter() - started:.0f} s",
          flush=True)
    queries, texts = make_queries(args.queries, args.chunks)
    ten_percent = parse_where({"group": 3})
    exact = Config.from_dict({"store": {"backend": "postgres", "postgres": {"url": url, "exact_rows": 10**9,
                                                                          "bm25_depth": 10**9}}})
    exact_store = create_store(Path(args.pg_dir), exact)
    rows = []
    for name, run in [
        ("dense", lambda q, t: store.search_dense(q, 10)),
        ("dense, 10% filter", lambda q, t: store.search_dense(q, 10, ten_percent)),
        ("lexical (BM25)", lambda q, t: store.search_lexical(t, 10)),
        ("hybrid (both halves)", lambda q, t: store.search_both(q, t, 10)),
        ("hybrid, 10% filter", lambda q, t: store.search_both(q, t, 10, ten_percent)),
    ]:
        times, found = [], []
        for q, t in zip(queries, texts):
            began = time.perf_counter()
            found.append(run(q, t))
            times.append((time.perf_counter() - began) * 1000)
        rows.append((name, times, found))
    truth = [[c.chunk_id for c in exact_store.search_dense(q, 10)] for q in queries]
    truth_filtered = [[c.chunk_id for c in exact_store.search_dense(q, 10, ten_percent)] for q in queries]
    checked = min(50, len(texts))  # BM25 reading every posting takes seconds a query
    lexical_truth = [[c.chunk_id for c in exact_store.search_lexical(t, 10)] for t in texts[:checked]]
    print(f"\n{args.chunks:,} synthetic 384-d chunks, {args.queries} queries, database {store.disk_bytes() / 1e6:,.0f} MB"
          f" (load average {harness.load_average():.2f})")
    print("| search | p50 ms | p95 ms | recall@10 vs exact |")
    print("|---|---|---|---|")
    for name, times, found in rows:
        recall = ""
        if name.startswith("dense"):
            expected = truth_filtered if "filter" in name else truth
            hits = [[c.chunk_id for c in f] for f in found]
            recall = f"{np.mean([len(set(h) & set(e)) / max(len(e), 1) for h, e in zip(hits, expected)]):.3f}"
        elif name.startswith("lexical"):
            hits = [[c.chunk_id for c in f] for f in found[:checked]]
            shared = np.mean([len(set(h) & set(e)) / max(len(e), 1) for h, e in zip(hits, lexical_truth)])
            recall = f"{shared:.3f} (every posting read; {checked} queries)"
        print(f"| {name} | {np.percentile(times, 50):.1f} | {np.percentile(times, 95):.1f} | {recall} |")
    exact_store.close()
    store.close()
    print(f"\nmemory: this ragloom process peak RSS {harness.peak_rss_mb():,.0f} MB; the PostgreSQL server's processes "
          f"{postgres_pss_mb():,.0f} MB (PSS: shared buffers counted once)")


def postgres_pss_mb() -> float:
    """The proportional set size of every process named ``postgres`` on this machine, summed."""
    total_kb = 0
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit() or (proc / "comm").read_text().strip() != "postgres":
                continue
            total_kb += harness.memory_kb(int(proc.name))[1]
        except OSError:
            continue
    return total_kb / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["quality", "depth", "scale"])
    parser.add_argument("--data", default=str(SCIFACT))
    parser.add_argument("--index", default="/tmp/ragloom-bench-scifact")
    parser.add_argument("--pg-dir", default="/tmp/ragloom-bench-pg")
    parser.add_argument("--url", default=None, help="a PostgreSQL with pgvector to use instead of pgserver")
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ann", choices=["ivfflat", "hnsw"], default="ivfflat", help="store.postgres.ann_index")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}, python {sys.version.split()[0]}")
    {"quality": quality, "depth": depth, "scale": scale}[args.what](args)


if __name__ == "__main__":
    main()
