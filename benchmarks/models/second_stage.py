"""EmbeddingGemma as a second-stage scorer: today's hybrid (bge-small-en) finds the candidates, and
EmbeddingGemma's cosine of the query and each candidate (its vectors cached) reorders the top N.

    python -m benchmarks second_stage scifact --index BGE_INDEX --gemma GEMMA_INDEX --split train --limit 200
    python -m benchmarks second_stage scifact --index BGE_INDEX --gemma GEMMA_INDEX --split test --weight W
    python -m benchmarks second_stage cosqa --index BGE_FOLDER_INDEX --gemma GEMMA_FOLDER_INDEX

``BGE_INDEX`` is the index ``ragloom eval`` builds for SciFact with the default embedder (or the
CoSQA folder index of ``python -m benchmarks code_search``), ``GEMMA_INDEX`` the same documents
embedded with ``embedder: {provider: embeddinggemma}``: its vectors stand for the cache a second
stage would keep (a candidate's score is the best cosine among its document's chunks there, so
chunk boundaries cut by either tokenizer do not matter). Hybrid's and EmbeddingGemma's scores are
min-max scaled over the top N and mixed with weight w on EmbeddingGemma (w=0: hybrid's order, w=1:
EmbeddingGemma's order of hybrid's candidates); documents below the top N keep hybrid's order.
Prints nDCG@10 and recall@10 for every weight, and the milliseconds the stage adds with a warm
cache (EmbeddingGemma's query embedding and the cosines); a cold candidate costs an embedding at
search time, which ``python -m benchmarks embeddinggemma ingest`` measures (~0.26 s a chunk).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

from .. import harness

WEIGHTS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)


def minmax(values: list[float]) -> list[float]:
    lo, hi = min(values), max(values)
    return [(v - lo) / (hi - lo) if hi > lo else 0.0 for v in values]


def rerank(hits: list[tuple[str, float]], late: dict[str, float], top: int, weight: float) -> list[str]:
    """Documents in the mixed order of the top ``top`` hits, then the rest in the first order."""
    head = hits[:top]
    base = minmax([score for _, score in head])
    second = minmax([late.get(doc, 0.0) for doc, _ in head])
    mixed = sorted(range(len(head)), key=lambda i: -((1 - weight) * base[i] + weight * second[i]))
    order = [head[i][0] for i in mixed]
    return order + [doc for doc, _ in hits[top:] if doc not in set(order)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", choices=["scifact", "cosqa"])
    parser.add_argument("--index", required=True, help="the default embedder's index (candidates)")
    parser.add_argument("--gemma", required=True, help="the same documents embedded with EmbeddingGemma")
    parser.add_argument("--split", default="test", help="SciFact's split (CoSQA: dev)")
    parser.add_argument("--limit", type=int, default=0, help="first N queries (0: all)")
    parser.add_argument("--top", type=int, nargs="+", default=[20, 50], help="candidates reordered")
    parser.add_argument("--out", type=Path, default=None, help="write the table as JSON here")
    args = parser.parse_args()

    from ragloom import Index
    from ragloom.eval.beir import load_beir
    from ragloom.eval.metrics import mean, per_query_metrics

    folder = harness.SCIFACT if args.dataset == "scifact" else harness.DATASETS / "cosqa-dev"
    dataset = load_beir(folder, "dev" if args.dataset == "cosqa" else args.split)
    queries = list(dataset.queries.items())[: args.limit or None]
    doc_of = (lambda d: d.removesuffix(".py")) if args.dataset == "cosqa" else (lambda d: d)
    runs: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
    stage_ms: list[float] = []
    with Index.open(args.index, read_only=True) as index, Index.open(args.gemma, read_only=True) as gemma:
        chunks_of: dict[str, list[str]] = defaultdict(list)
        for chunk in gemma.store.iter_chunks():
            chunks_of[doc_of(chunk.doc_id)].append(chunk.id)
        gemma.embedder.embed_query("warm up")
        for n, (qid, text) in enumerate(queries):
            found = index.search(text, k=100, mode="hybrid")
            hits: list[tuple[str, float]] = []
            for hit in found:  # a document's best chunk stands for it, as the eval scores documents
                if doc_of(hit.doc_id) not in {d for d, _ in hits}:
                    hits.append((doc_of(hit.doc_id), hit.score))
            started = time.perf_counter()
            vector = gemma.embedder.embed_query(text)
            head = [doc for doc, _ in hits[: max(args.top)]]
            cosines = gemma.store.dense_scores(vector, [c for doc in head for c in chunks_of.get(doc, [])])
            late = {doc: max((cosines.get(c, 0.0) for c in chunks_of.get(doc, [])), default=0.0) for doc in head}
            stage_ms.append((time.perf_counter() - started) * 1000)
            for top in args.top:
                for weight in WEIGHTS:
                    order = rerank(hits, late, top, weight)
                    runs[f"top {top}, w {weight}"][qid] = {doc: 100.0 - rank for rank, doc in enumerate(order[:10])}
            if n % 50 == 0:
                print(f"{n}/{len(queries)} queries", flush=True)
    qrels = {q: dataset.qrels[q] for q, _ in queries if q in dataset.qrels}
    results = {}
    for name, run in runs.items():
        values = per_query_metrics(qrels, run)
        results[name] = {m: round(mean(values[m]), 4) for m in ("nDCG@10", "recall@10")}
    stage_ms.sort()
    p50, p95 = stage_ms[len(stage_ms) // 2], stage_ms[int(len(stage_ms) * 0.95)]
    print(f"\n{args.dataset} {dataset.split if hasattr(dataset, 'split') else args.split}: {len(queries)} queries; "
          "hybrid (default embedder) reordered by EmbeddingGemma")
    print("| candidates, weight on EmbeddingGemma | nDCG@10 | recall@10 |\n|---|---|---|")
    for name, values in results.items():
        print(f"| {name} | {values['nDCG@10']:.4f} | {values['recall@10']:.4f} |")
    print(f"\nthe stage, warm cache: p50 {p50:.1f} ms, p95 {p95:.1f} ms a query (EmbeddingGemma's query + cosines)")
    if args.out:
        args.out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "results": results,
                                        "stage_ms": {"p50": p50, "p95": p95}}, indent=1))


if __name__ == "__main__":
    main()
