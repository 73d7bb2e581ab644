"""The embedded store at scale: 100k synthetic chunks (384-d), no embedding cost.

Measures ingest time (SQLite + matrix + BM25 build, excluding embedding), search
p50/p95 for dense, lexical and hybrid with and without a 10% metadata filter, the
recall@10 of the filtered search against brute force, peak RSS and disk size.

    python benchmarks/synthetic.py [--chunks 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from ragloom.config import Config
from ragloom.filters import parse_where
from ragloom.index import hybrid_search
from ragloom.stores.embedded import EmbeddedStore
from ragloom.types import Chunk, SourceRecord, content_hash

DIM = 384
WORDS = np.array([f"w{i}" for i in range(20000)])


def make_corpus(n: int, rng: np.random.Generator) -> tuple[np.ndarray, list[str], np.ndarray]:
    centers = rng.normal(size=(200, DIM)).astype(np.float32)
    assignment = rng.integers(0, 200, size=n)
    vectors = centers[assignment] + 0.6 * rng.normal(size=(n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    # Zipf-like vocabulary so BM25 has realistic posting lists.
    ranks = np.minimum(rng.zipf(1.3, size=(n, 60)), len(WORDS)) - 1
    texts = [" ".join(WORDS[row]) for row in ranks]
    return vectors, texts, assignment


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--per-source", type=int, default=1000)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    vectors, texts, assignment = make_corpus(args.chunks, rng)
    folder = Path(tempfile.mkdtemp(prefix="ragloom-synthetic-"))
    try:
        store = EmbeddedStore.open(folder, Config())
        store.set_embedder_info({"model_id": "synthetic", "dimension": DIM})
        started = time.perf_counter()
        for first in range(0, args.chunks, args.per_source):
            rows = range(first, min(first + args.per_source, args.chunks))
            source = f"/synthetic/source-{first // args.per_source:05d}.txt"
            chunks = [
                Chunk(id=f"{i:012d}", text=texts[i], source=source, doc_id=str(i), chunk_index=i - first,
                      start=0, end=len(texts[i]), policy="synthetic", content_hash=content_hash(texts[i] + str(i)),
                      token_count=60, metadata={"group": int(i % 10), "cluster": int(assignment[i])})
                for i in rows
            ]
            record = SourceRecord(source, content_hash(source), 0.0, 0, len(chunks), time.time())
            store.replace_source(record, chunks, vectors[first : first + len(chunks)])
        written = time.perf_counter() - started
        store.flush()
        ingest_seconds = time.perf_counter() - started

        queries = vectors[rng.integers(0, args.chunks, size=args.queries)] + 0.3 * rng.normal(
            size=(args.queries, DIM)).astype(np.float32)
        query_texts = [" ".join(WORDS[np.minimum(rng.zipf(1.3, size=4), len(WORDS)) - 1]) for _ in range(args.queries)]
        where = parse_where({"group": 3})
        allowed = np.nonzero(np.arange(args.chunks) % 10 == 3)[0]

        def timed(fn) -> tuple[float, float, list]:
            fn(0)  # warm up
            times, results = [], []
            for q in range(args.queries):
                t = time.perf_counter()
                results.append(fn(q))
                times.append((time.perf_counter() - t) * 1000)
            return float(np.percentile(times, 50)), float(np.percentile(times, 95)), results

        def hybrid(q: int, conditions=()):
            return hybrid_search(store, queries[q], query_texts[q], 100, conditions, Config().search)[0][:10]

        rows = [
            ("dense", timed(lambda q: store.search_dense(queries[q], 10))),
            ("dense, 10% filter", timed(lambda q: store.search_dense(queries[q], 10, where))),
            ("lexical", timed(lambda q: store.search_lexical(query_texts[q], 10))),
            ("lexical, 10% filter", timed(lambda q: store.search_lexical(query_texts[q], 10, where))),
            ("hybrid", timed(lambda q: hybrid(q))),
            ("hybrid, 10% filter", timed(lambda q: hybrid(q, where))),
        ]
        # Recall of the filtered dense search against brute force over the allowed rows.
        recalls = []
        for q, found in enumerate(rows[1][1][2]):
            scores = vectors[allowed] @ queries[q]
            truth = {f"{allowed[i]:012d}" for i in np.argsort(-scores)[:10]}
            recalls.append(len(truth & {c.chunk_id for c in found}) / 10)
        disk = store.disk_bytes()
        store.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"embedded store, {args.chunks:,} chunks x {DIM}-d, {args.queries} queries")
    print(f"ingest (excluding embedding): {ingest_seconds:.1f} s  (SQLite writes {written:.1f} s, "
          f"matrix + BM25 build {ingest_seconds - written:.1f} s)")
    print(f"peak RSS: {rss_mb:.0f} MB   disk: {disk / 1e6:.0f} MB   filtered dense recall@10: {np.mean(recalls):.3f}")
    print()
    print(f"| {'search (top-10)':<22} | p50 ms | p95 ms |")
    print(f"|{'-' * 24}|--------|--------|")
    for name, (p50, p95, _) in rows:
        print(f"| {name:<22} | {p50:6.2f} | {p95:6.2f} |")


if __name__ == "__main__":
    main()
