"""Store backends compared: embedded, Chroma (embedded client) and Qdrant (local mode).

For each store, on 100k synthetic chunks (384-d clustered unit vectors) and on SciFact
(5,183 abstracts, bge-small vectors): ingest time excluding embedding, dense top-10
latency p50/p95 without and with a 10% metadata filter, recall@10 against exact
search, peak RSS and disk size. Each (dataset, store) cell runs in its own process so
RSS is its own. A last cell measures hybrid search on SciFact three ways, to choose
between ragloom's BM25 beside the backend and Qdrant's own (sparse vectors with IDF,
or BM25 text queries), each fused inside Qdrant or by ragloom.

    python -m benchmarks stores                      # everything (~15 min on 2 cores)
    python -m benchmarks stores --only synthetic:embedded
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from .. import harness

RESULTS = harness.RESULTS
SCIFACT = harness.SCIFACT
STORES = ["embedded", "chroma", "qdrant"]
SOURCE_SIZE = 100  # chunks per source, as an ingest of many files writes them
K = 10
FILTER = {"bucket": 3}  # every chunk has bucket = i % 10: a 10% filter


# -- data --------------------------------------------------------------------------------------
def synthetic(n: int, dim: int = 384, clusters: int = 200, queries: int = 100, seed: int = 7) -> dict[str, Any]:
    """Clustered unit vectors, 30-word texts from a 5,000-word vocabulary, bucket = i % 10."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((clusters, dim)).astype(np.float32)
    vectors = centers[rng.integers(0, clusters, n)] + 0.6 * rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    words = np.array([f"w{i}" for i in range(5000)])
    texts = [" ".join(row) for row in words[rng.zipf(1.3, (n, 30)) % 5000]]
    query_vectors = centers[rng.integers(0, clusters, queries)] + 0.6 * rng.standard_normal((queries, dim))
    query_vectors = (query_vectors / np.linalg.norm(query_vectors, axis=1, keepdims=True)).astype(np.float32)
    return {"ids": [f"c{i}" for i in range(n)], "texts": texts, "vectors": vectors,
            "buckets": np.arange(n) % 10, "queries": query_vectors}


def load_scifact_corpus(folder: Path = SCIFACT) -> list[dict]:
    return [json.loads(line) for line in (folder / "corpus.jsonl").open(encoding="utf-8")]


def doc_text(row: dict) -> str:
    return f"{row.get('title', '')}\n{row['text']}".strip()


def scifact_vectors(corpus: list[dict], queries: dict[str, str]) -> tuple[np.ndarray, np.ndarray]:
    """Document and query vectors from the packaged ONNX embedder, cached under results/."""
    docs_file, queries_file = RESULTS / "scifact_docs.npy", RESULTS / "scifact_queries.npy"
    if docs_file.exists() and queries_file.exists():
        return np.load(docs_file), np.load(queries_file)
    from ragloom.config import EmbedderConfig
    from ragloom.embed.onnx import OnnxEmbedder

    embedder = OnnxEmbedder.from_config(EmbedderConfig())
    started = time.perf_counter()
    docs = embedder.embed_documents([doc_text(row) for row in corpus])
    query_vectors = embedder.embed_queries(list(queries.values()))
    print(f"embedded SciFact in {time.perf_counter() - started:.0f} s (cached for next runs)", file=sys.stderr)
    RESULTS.mkdir(parents=True, exist_ok=True)
    np.save(docs_file, docs)
    np.save(queries_file, query_vectors)
    return docs, query_vectors


def scifact() -> dict[str, Any]:
    from ragloom.eval.beir import load_beir

    dataset = load_beir(SCIFACT, "test")
    corpus = load_scifact_corpus()
    vectors, query_vectors = scifact_vectors(corpus, dataset.queries)
    return {"ids": [row["_id"] for row in corpus], "texts": [doc_text(row) for row in corpus],
            "vectors": vectors.astype(np.float32), "buckets": np.arange(len(corpus)) % 10,
            "queries": query_vectors.astype(np.float32), "query_texts": list(dataset.queries.values()),
            "query_ids": list(dataset.queries), "qrels": dataset.qrels}


# -- one cell: one store on one dataset -----------------------------------------------------------
def run_cell(dataset: str, variant: str, n: int, max_queries: int) -> dict[str, Any]:
    from ragloom.config import Config
    from ragloom.filters import parse_where
    from ragloom.stores.base import create_store

    data = synthetic(n) if dataset == "synthetic" else scifact()
    base_rss = _rss()["VmRSS"]
    backend = variant.removesuffix("-tmpfs")
    with tempfile.TemporaryDirectory(dir=RESULTS) as tmp, tempfile.TemporaryDirectory(dir="/dev/shm") as shm:
        settings: dict[str, Any] = {"backend": backend}
        if variant.endswith("-tmpfs"):  # the database's files in RAM: no fsync per write
            settings[backend] = {"path": shm}
        store = create_store(Path(tmp) / "index", Config.from_dict({"store": settings}))
        ingest = _ingest(store, data)
        queries = data["queries"][:max_queries]
        result: dict[str, Any] = {"dataset": dataset, "store": variant, "chunks": len(data["ids"]),
                                  "ingest_s": ingest, "queries": len(queries)}
        for label, where in (("", None), ("filtered_", FILTER)):
            conditions = parse_where(where)
            truth = _exact_top_k(data, queries, where)
            latencies, recalls = [], []
            for query, expected in zip(queries, truth):
                started = time.perf_counter()
                got = store.search_dense(query, K, conditions)
                latencies.append((time.perf_counter() - started) * 1000)
                recalls.append(len({c.chunk_id for c in got} & expected) / len(expected))
            result[f"{label}p50_ms"] = float(np.percentile(latencies, 50))
            result[f"{label}p95_ms"] = float(np.percentile(latencies, 95))
            result[f"{label}recall"] = float(np.mean(recalls))
        result["disk_mb"] = store.disk_bytes() / 2**20
        rss = _rss()
        result["rss_mb"] = rss["VmHWM"] / 1024
        result["data_rss_mb"] = base_rss / 1024
        store.close()
    return result


def _ingest(store: Any, data: dict[str, Any]) -> float:
    from ragloom.types import Chunk, SourceRecord, content_hash

    store.set_embedder_info({"model_id": "benchmark", "dimension": int(data["vectors"].shape[1])})
    ids, texts, vectors = data["ids"], data["texts"], data["vectors"]
    batches = []
    for start in range(0, len(ids), SOURCE_SIZE):
        source = f"source-{start // SOURCE_SIZE:05d}"
        chunks = [
            Chunk(id=ids[i], text=texts[i], source=source, doc_id=ids[i], chunk_index=0, start=0,
                  end=len(texts[i]), policy="bench", content_hash=content_hash(texts[i]), token_count=30,
                  metadata={"source": source, "bucket": int(data["buckets"][i])})
            for i in range(start, min(start + SOURCE_SIZE, len(ids)))
        ]
        record = SourceRecord(path=source, content_hash=source, mtime=0.0, size=0, chunk_count=len(chunks),
                              ingested_at=time.time())
        batches.append((record, chunks, vectors[start : start + len(chunks)]))
    started = time.perf_counter()
    for record, chunks, part in batches:
        store.replace_source(record, chunks, part)
    store.flush()
    return time.perf_counter() - started


def _exact_top_k(data: dict[str, Any], queries: np.ndarray, where: dict | None) -> list[set[str]]:
    vectors = data["vectors"]
    mask = np.ones(len(vectors), bool) if where is None else data["buckets"] == where["bucket"]
    positions = np.nonzero(mask)[0]
    scores = queries.astype(np.float64) @ vectors[positions].astype(np.float64).T
    top = np.argsort(-scores, axis=1)[:, :K]
    return [{data["ids"][positions[j]] for j in row} for row in top]


def _rss() -> dict[str, int]:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0])
    return fields


# -- hybrid on SciFact: ragloom's BM25 beside the store vs Qdrant's own -----------------------------
def run_hybrid() -> dict[str, Any]:
    from ragloom.config import Config
    from ragloom.eval.metrics import mean, per_query_metrics
    from ragloom.retrieve.fusion import convex_combination, reciprocal_rank_fusion
    from ragloom.stores.base import create_store

    data = scifact()
    qids, texts, queries = data["query_ids"], data["query_texts"], data["queries"]

    def ndcg(runs: list[list[tuple[str, float]]]) -> float:
        run = {qid: {cid: float(len(hits) - r) for r, (cid, _) in enumerate(hits)} for qid, hits in zip(qids, runs)}
        return round(mean(per_query_metrics(data["qrels"], run)["nDCG@10"]), 4)

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(dir="/dev/shm") as tmp:  # quality only: no need to wait for fsyncs
        settings = {"backend": "qdrant", "qdrant": {"path": str(Path(tmp) / "qdrant")}}
        store = create_store(Path(tmp) / "index", Config.from_dict({"store": settings}))
        _ingest(store, data)
        dense = [store.search_dense(q, 100) for q in queries]
        lexical = [store.search_lexical(t, 100) for t in texts]
        out["dense"] = ndcg([[(c.chunk_id, c.score) for c in d[:10]] for d in dense])
        out["ragloom_bm25"] = ndcg([[(c.chunk_id, c.score) for c in lx[:10]] for lx in lexical])
        convex = [convex_combination({c.chunk_id: c.score for c in d}, {c.chunk_id: c.score for c in lx}, 0.6)
                  for d, lx in zip(dense, lexical)]
        out["ragloom_bm25+dense convex(0.6)"] = ndcg([[(c.chunk_id, c.score) for c in f[:10]] for f in convex])
        rrf = [reciprocal_rank_fusion([d, lx]) for d, lx in zip(dense, lexical)]
        out["ragloom_bm25+dense rrf"] = ndcg([[(c.chunk_id, c.score) for c in f[:10]] for f in rrf])
        store.close()
        out.update(_qdrant_native_hybrid(data, Path(tmp) / "native", ndcg))
    return out


def _qdrant_native_hybrid(data: dict[str, Any], folder: Path, ndcg: Any) -> dict[str, Any]:
    """Qdrant's own lexical ranking: sparse BM25 vectors (IDF modifier) and BM25 text queries."""
    from qdrant_client import QdrantClient, models

    from ragloom.stores.embedded.lexical import english_analyzer

    analyzer = english_analyzer()
    client = QdrantClient(path=str(folder))
    client.create_collection(
        "native",
        vectors_config={"dense": models.VectorParams(size=data["vectors"].shape[1], distance=models.Distance.COSINE)},
        sparse_vectors_config={"bm25": models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    client.create_payload_index("native", "text", models.TextIndexParams(
        type=models.TextIndexType.TEXT, tokenizer=models.TokenizerType.WORD, lowercase=True, scoring=True))
    tokens = [analyzer.analyze(t) for t in data["texts"]]
    avg_len = float(np.mean([len(t) for t in tokens]))
    points = [
        models.PointStruct(id=i, vector={"dense": data["vectors"][i].tolist(), "bm25": _bm25_document(tok, avg_len)},
                           payload={"doc": data["ids"][i], "text": data["texts"][i]})
        for i, tok in enumerate(tokens)
    ]
    for start in range(0, len(points), 256):
        client.upsert("native", points[start : start + 256])
    out: dict[str, Any] = {}
    variants = {
        "qdrant_sparse_bm25": lambda q, t: models.SparseVector(**_sparse(dict.fromkeys(analyzer.analyze(t), 1.0))),
        "qdrant_text_bm25": lambda q, t: models.TextQuery(text=t),
    }
    for name, lexical_query in variants.items():
        using = "bm25" if name == "qdrant_sparse_bm25" else "text"
        alone, fused = [], []
        started = time.perf_counter()
        for q, t in zip(data["queries"], data["query_texts"]):
            hits = client.query_points("native", query=lexical_query(q, t), using=using, limit=10).points
            alone.append([(p.payload["doc"], p.score) for p in hits])
            both = client.query_points("native", prefetch=[
                models.Prefetch(query=q.tolist(), using="dense", limit=100),
                models.Prefetch(query=lexical_query(q, t), using=using, limit=100),
            ], query=models.FusionQuery(fusion=models.Fusion.RRF), limit=10).points
            fused.append([(p.payload["doc"], p.score) for p in both])
        out[name] = ndcg(alone)
        out[f"{name}+dense rrf (Qdrant fusion)"] = ndcg(fused)
        out[f"{name} ms/query (lexical + fused)"] = round((time.perf_counter() - started) * 1000 / len(alone), 1)
    client.close()
    return out


def _bm25_document(tokens: list[str], avg_len: float, k1: float = 1.2, b: float = 0.75) -> Any:
    """BM25's term-frequency part per term; Qdrant's IDF modifier supplies the rest at query time."""
    from qdrant_client import models

    counts = Counter(tokens)
    norm = k1 * (1 - b + b * len(tokens) / avg_len)
    return models.SparseVector(**_sparse({t: tf * (k1 + 1) / (tf + norm) for t, tf in counts.items()}))


def _sparse(weights: dict[str, float]) -> dict[str, list]:
    merged: dict[int, float] = {}
    for term, weight in weights.items():
        index = zlib.crc32(term.encode())
        merged[index] = merged.get(index, 0.0) + weight
    return {"indices": list(merged), "values": list(merged.values())}


# -- driver ----------------------------------------------------------------------------------------
def _table(rows: list[dict[str, Any]]) -> str:
    head = ("| dataset | store | chunks | ingest s | p50 ms | p95 ms | recall@10 | filtered p50 ms | "
            "filtered p95 ms | filtered recall@10 | peak RSS MB (data alone) | disk MB |")
    lines = [head, "|" + "---|" * 12]
    for r in rows:
        lines.append(
            f"| {r['dataset']} | {r['store']} | {r['chunks']:,} | {r['ingest_s']:.1f} | {r['p50_ms']:.1f} | "
            f"{r['p95_ms']:.1f} | {r['recall']:.3f} | {r['filtered_p50_ms']:.1f} | {r['filtered_p95_ms']:.1f} | "
            f"{r['filtered_recall']:.3f} | {r['rss_mb']:.0f} ({r['data_rss_mb']:.0f}) | {r['disk_mb']:.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic", type=int, default=100_000, help="chunks in the synthetic set")
    parser.add_argument("--queries", type=int, default=100, help="queries per store (Qdrant local: a fifth)")
    parser.add_argument("--qdrant-on-disk", type=int, default=20_000,
                        help="synthetic chunks for Qdrant local mode on disk (100k runs with its files in RAM)")
    parser.add_argument("--only", help="run one cell in this process, e.g. synthetic:chroma, or hybrid")
    parser.add_argument("--skip", action="append", default=[], help="cells to leave out, e.g. synthetic:qdrant")
    parser.add_argument("--report", action="store_true", help="print the tables from the last run's results/")
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    if args.report:
        _report()
        return
    if args.only:
        if args.only == "hybrid":
            print(json.dumps(run_hybrid()))
            return
        dataset, variant = args.only.split(":")
        n, queries = args.synthetic, args.queries
        if dataset == "synthetic" and variant.startswith("qdrant"):
            queries = max(10, queries // 5)  # local mode scans in Python: ~0.15-1 s a query at 100k
            if variant == "qdrant":
                n = min(n, args.qdrant_on_disk)  # and commits every point to SQLite: ~15 ms each here
        print(json.dumps(run_cell(dataset, variant, n, queries)))
        return
    scifact()  # embed once, before the cells time anything
    cells = [f"synthetic:{s}" for s in STORES] + ["synthetic:qdrant-tmpfs"] + [f"scifact:{s}" for s in STORES]
    for cell in cells + ["hybrid"]:
        if cell in args.skip:
            continue
        command = [*harness.command("stores"), "--only", cell, "--synthetic", str(args.synthetic),
                   "--queries", str(args.queries), "--qdrant-on-disk", str(args.qdrant_on_disk)]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{cell} failed:\n{done.stderr[-3000:]}", file=sys.stderr)
            continue
        result = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{cell}: {time.perf_counter() - started:.0f} s wall", file=sys.stderr)
        harness.record({cell: result})
        (RESULTS / f"stores-{cell.replace(':', '-')}.json").write_text(json.dumps(result, indent=2))
    _report()


def _report() -> None:
    rows, hybrid = [], None
    for cell in sorted(RESULTS.glob("stores-*.json"), key=lambda p: (p.stem.split("-")[1] != "synthetic", p.stem)):
        result = json.loads(cell.read_text())
        if cell.stem == "stores-hybrid":
            hybrid = result
        else:
            rows.append(result)
    print(_table(rows))
    if hybrid:
        print("\nSciFact test queries, nDCG@10 (choosing how Qdrant does hybrid):")
        for name, value in hybrid.items():
            print(f"  {name}: {value}")


if __name__ == "__main__":
    main()
