"""The embedded store at scale: N synthetic chunks (384-d), no embedding cost.

Builds a store of clustered unit vectors with Zipf-distributed 60-word texts (written
through ``EmbeddedStore`` in sources of 1,000 chunks), then measures search in two fresh
processes that open the finished index, as a user's search process would:

- exact: every vector scored (the approximate index switched off in that process);
- ann: the approximate index (faiss IVF), with hits rescored exactly.

Each reports dense / lexical / hybrid p50 and p95, with and without a 10% metadata filter
(``group = 3``), and its own peak RSS; recall@10 of the approximate search is measured
against the exact process's results, filtered and not.

    python -m benchmarks synthetic [--chunks 100000] [--queries 200] [--json FILE]

``--json`` writes every figure, among them ann_dense_p95_ms, exact_dense_p95_ms,
ann_recall_at_10, hybrid_p95_ms, filtered_hybrid_p95_ms (those two from the process that
uses the approximate index), build_s and peak_rss_mb (the approximate search process's).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from ragloom.config import Config
from ragloom.filters import parse_where
from ragloom.index import hybrid_search
from ragloom.stores.embedded import EmbeddedStore
from ragloom.types import Chunk, SourceRecord, content_hash

from .. import harness

DIM = 384
CLUSTERS = 200
WORDS = np.array([f"w{i}" for i in range(20000)])


EXACT_ROWS = 20_000  # store.embedded.ann.exact_rows (the default); --exact-rows changes it


def ann_config(threshold: int) -> Config:
    settings = {"threshold": threshold, "exact_rows": EXACT_ROWS}
    return Config.model_validate({"store": {"embedded": {"ann": settings}}})


def centers() -> np.ndarray:
    return np.random.default_rng(7).normal(size=(CLUSTERS, DIM)).astype(np.float32)


def make_batch(first: int, count: int, seed: int = 7) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Chunks first..first+count-1 of one source (sources start at multiples of 1,000): the same
    in every run and at every corpus size, and regenerated to make the queries."""
    rng = np.random.default_rng([seed, first])
    assignment = rng.integers(0, CLUSTERS, size=count)
    vectors = centers()[assignment] + 0.6 * rng.normal(size=(count, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    # Zipf-like vocabulary so BM25 has realistic posting lists.
    ranks = np.minimum(rng.zipf(1.3, size=(count, 60)), len(WORDS)) - 1
    return vectors.astype(np.float32), [" ".join(WORDS[row]) for row in ranks], assignment


def make_queries(n: int, chunks: int) -> tuple[np.ndarray, list[str]]:
    rng = np.random.default_rng(11)
    vectors = []
    for target in rng.integers(0, chunks, size=n):
        first = int(target) // 1000 * 1000
        batch, _, _ = make_batch(first, min(1000, chunks - first))
        vectors.append(batch[int(target) - first].copy())  # not a view: it would keep the whole batch
    queries = np.stack(vectors) + 0.3 * rng.normal(size=(n, DIM)).astype(np.float32)
    texts = [" ".join(WORDS[np.minimum(rng.zipf(1.3, size=4), len(WORDS)) - 1]) for _ in range(n)]
    return queries.astype(np.float32), texts


def build(folder: Path, chunks: int, per_source: int, threshold: int) -> dict[str, float]:
    started = time.perf_counter()
    store = EmbeddedStore.open(folder, ann_config(max(threshold, chunks + 1)))  # no ANN during ingest
    store.set_embedder_info({"model_id": "synthetic", "dimension": DIM})
    for first in range(0, chunks, per_source):
        count = min(per_source, chunks - first)
        vectors, texts, assignment = make_batch(first, count)
        source = f"/synthetic/source-{first // per_source:05d}.txt"
        batch = [
            Chunk(id=f"{i:012d}", text=texts[i - first], source=source, doc_id=str(i), chunk_index=i - first,
                  start=0, end=len(texts[i - first]), policy="synthetic",
                  content_hash=content_hash(texts[i - first] + str(i)), token_count=60,
                  metadata={"group": int(i % 10), "cluster": int(assignment[i - first])})
            for i in range(first, first + count)
        ]
        record = SourceRecord(source, content_hash(source), 0.0, 0, count, time.time())
        store.replace_source(record, batch, vectors)
    written = time.perf_counter()
    store.flush()
    flushed = time.perf_counter()
    store.close()
    ann_seconds = 0.0
    if chunks >= threshold:
        store = EmbeddedStore.open(folder, ann_config(threshold))
        t = time.perf_counter()
        store.flush()  # nothing to write: the store trains its IVF index, now past the threshold
        ann_seconds = time.perf_counter() - t
        store.close()
    return {
        "sqlite_write_s": written - started, "matrix_bm25_build_s": flushed - written,
        "ann_build_s": ann_seconds, "build_s": time.perf_counter() - started,
        "disk_bytes": sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()),
        "sqlite_bytes": sum(p.stat().st_size for p in folder.glob("ragloom.sqlite*")),
        "build_peak_rss_mb": harness.peak_rss_mb(),
    }


def search_process(folder: Path, chunks: int, queries: int, threshold: int, mode: str) -> dict:
    """Run in a fresh process: time every search kind; return the figures and the dense hits."""
    store = EmbeddedStore.open(folder, ann_config(threshold))
    vectors, texts = make_queries(queries, chunks)
    where = parse_where({"group": 3})
    store.search_dense(vectors[0], 1)  # load the matrix and indexes
    if mode == "exact":
        store.ann.index = None  # the exact baseline: this process scores every (allowed) vector
    elif not store._ann_current():
        raise SystemExit(f"no approximate index in {folder} (fewer than {threshold:,} chunks?)")
    search = Config().search

    def timed(fn) -> tuple[float, float, list]:
        fn(0)  # warm up
        times, results = [], []
        for q in range(queries):
            t = time.perf_counter()
            results.append(fn(q))
            times.append((time.perf_counter() - t) * 1000)
        return float(np.percentile(times, 50)), float(np.percentile(times, 95)), results

    def hybrid(q: int, conditions=()):
        return hybrid_search(store, vectors[q], texts[q], 100, conditions, search)[0][:10]

    kinds = {
        "dense": timed(lambda q: store.search_dense(vectors[q], 10)),
        "dense_filtered": timed(lambda q: store.search_dense(vectors[q], 10, where)),
        "lexical": timed(lambda q: store.search_lexical(texts[q], 10)),
        "lexical_filtered": timed(lambda q: store.search_lexical(texts[q], 10, where)),
        "hybrid": timed(lambda q: hybrid(q)),
        "hybrid_filtered": timed(lambda q: hybrid(q, where)),
    }
    store.close()
    return {
        "latency": {name: [p50, p95] for name, (p50, p95, _) in kinds.items()},
        "dense_ids": [[c.chunk_id for c in hits] for hits in kinds["dense"][2]],
        "dense_filtered_ids": [[c.chunk_id for c in hits] for hits in kinds["dense_filtered"][2]],
        "peak_rss_mb": harness.peak_rss_mb(),
    }


def run_child(args: argparse.Namespace, folder: Path, mode: str) -> dict:
    command = [*harness.command("synthetic"), "--search-only", str(folder), "--mode", mode, "--chunks", str(args.chunks),
               "--queries", str(args.queries), "--ann-threshold", str(args.ann_threshold),
               "--exact-rows", str(args.exact_rows)]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def recall(approximate: list[list[str]], exact: list[list[str]]) -> float:
    return float(np.mean([len(set(a) & set(e)) / max(len(e), 1) for a, e in zip(approximate, exact)]))


def tables(results: list[dict]) -> str:
    """One row per corpus size, as in BENCHMARKS.md "Scale" (``python -m benchmarks report``)."""
    def ms(pair: list[float]) -> str:
        return " / ".join(f"{x:.2f}" if x < 10 else f"{x:.1f}" for x in pair)

    lines = ["| chunks | build s | disk bytes a chunk | ANN recall@10 (10% filter) | exact dense | ANN dense | exact hybrid "
             "| ANN hybrid | ANN hybrid, 10% filter | peak RSS MB: exact / ANN search process |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(results, key=lambda r: r["chunks"]):
        lines.append(
            f"| {r['chunks']:,} | {r['build_s']:.1f} | {r['disk_bytes_per_chunk']:,.0f} | {r['ann_recall_at_10']:.3f} "
            f"({r['ann_filtered_recall_at_10']:.3f}) | {ms(r['exact']['dense'])} | {ms(r['ann']['dense'])} | "
            f"{ms(r['exact']['hybrid'])} | {ms(r['ann']['hybrid'])} | {ms(r['ann']['hybrid_filtered'])} | "
            f"{r['exact_search_peak_rss_mb']:,.0f} / {r['peak_rss_mb']:,.0f} |")
    return "\n".join(lines)


def main() -> None:
    global EXACT_ROWS
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ann-threshold", type=int, default=1,
                        help="build the approximate index from this many chunks (default: always, to compare)")
    parser.add_argument("--exact-rows", type=int, default=EXACT_ROWS,
                        help="filters leaving at most this many chunks are searched exactly (default: the config's)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    parser.add_argument("--keep", type=Path, help="build the index here and keep it (default: a temporary folder)")
    parser.add_argument("--search-only", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=["exact", "ann"], default="ann", help=argparse.SUPPRESS)
    args = parser.parse_args()
    EXACT_ROWS = args.exact_rows
    if args.search_only:
        print(json.dumps(search_process(args.search_only, args.chunks, args.queries, args.ann_threshold, args.mode)))
        return

    folder = args.keep or Path(tempfile.mkdtemp(prefix="ragloom-synthetic-"))
    try:
        built = build(folder, args.chunks, 1000, args.ann_threshold)
        exact = run_child(args, folder, "exact")
        ann = run_child(args, folder, "ann") if args.chunks >= args.ann_threshold else None
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)

    figures: dict = {"chunks": args.chunks, "dimension": DIM, "queries": args.queries, "exact_rows": args.exact_rows,
                     **built,
                     "disk_bytes_per_chunk": built["disk_bytes"] / args.chunks,
                     "exact": exact["latency"], "exact_search_peak_rss_mb": exact["peak_rss_mb"],
                     "exact_dense_p95_ms": exact["latency"]["dense"][1]}
    served = exact
    if ann:
        served = ann
        figures.update({
            "ann": ann["latency"], "ann_dense_p95_ms": ann["latency"]["dense"][1],
            "ann_recall_at_10": recall(ann["dense_ids"], exact["dense_ids"]),
            "ann_filtered_recall_at_10": recall(ann["dense_filtered_ids"], exact["dense_filtered_ids"]),
        })
    figures.update({
        "hybrid_p95_ms": served["latency"]["hybrid"][1],
        "filtered_hybrid_p95_ms": served["latency"]["hybrid_filtered"][1],
        "peak_rss_mb": served["peak_rss_mb"],
    })

    harness.record(figures)
    print(f"embedded store, {args.chunks:,} chunks x {DIM}-d, {args.queries} queries")
    print(f"build (excluding embedding): {built['build_s']:.1f} s  (SQLite writes {built['sqlite_write_s']:.1f} s, "
          f"matrix + BM25 {built['matrix_bm25_build_s']:.1f} s, approximate index {built['ann_build_s']:.1f} s)")
    print(f"disk: {built['disk_bytes'] / 1e6:.0f} MB ({figures['disk_bytes_per_chunk']:.0f} bytes a chunk, "
          f"SQLite {built['sqlite_bytes'] / 1e6:.0f} MB)   peak RSS: build {built['build_peak_rss_mb']:.0f} MB, "
          f"exact search {exact['peak_rss_mb']:.0f} MB" + (f", approximate search {ann['peak_rss_mb']:.0f} MB" if ann else ""))
    if ann:
        print(f"approximate dense recall@10 against exact: {figures['ann_recall_at_10']:.3f} "
              f"(10% filter: {figures['ann_filtered_recall_at_10']:.3f})")
    print()
    print("| search (top-10) | exact p50 ms | exact p95 ms |" + (" ann p50 ms | ann p95 ms |" if ann else ""))
    print("|---|---|---|" + ("---|---|" if ann else ""))
    for name in exact["latency"]:
        row = f"| {name.replace('_filtered', ', 10% filter')} | {exact['latency'][name][0]:.2f} | {exact['latency'][name][1]:.2f} |"
        if ann:
            row += f" {ann['latency'][name][0]:.2f} | {ann['latency'][name][1]:.2f} |"
        print(row)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
