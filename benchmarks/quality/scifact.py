"""The embedded engine on BEIR SciFact: quality, ingest speed and search latency.

Ingests the 5,183 abstracts (reusing the index when unchanged), tunes the hybrid
fusion on the TRAIN queries, then reports every mode on the 300 TEST queries:
nDCG@10 and recall@100 (documents ranked by their best chunk), search latency
p50/p95 including query embedding, ingest time and embedding throughput.

    python -m benchmarks scifact [--data ../shared/datasets/scifact] [--index benchmarks/results/scifact-index]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from ragloom import Config, Index
from ragloom.eval.beir import load_beir
from ragloom.eval.metrics import mean, per_query_metrics
from ragloom.eval.runner import search_documents, search_view

from .. import harness


def evaluate(index: Index, queries: dict[str, str], qrels) -> tuple[dict[str, float], list[float]]:
    run, times = {}, []
    for qid, text in queries.items():
        started = time.perf_counter()
        run[qid] = search_documents(index, text, 100, index.config.search.mode, depth=index.config.search.k_max)
        times.append((time.perf_counter() - started) * 1000)
    values = per_query_metrics(qrels, run)
    return {name: mean(v) for name, v in values.items()}, times


def view(index: Index, **search) -> Index:
    """The open index under other search settings (same store, same model in memory)."""
    settings = index.config.search.model_copy(update=search)
    return search_view(index, index.config.model_copy(update={"search": settings}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default=str(harness.SCIFACT))
    parser.add_argument("--index", default=str(harness.RESULTS / "scifact-index"))
    parser.add_argument("--alphas", default="0.3,0.4,0.5,0.6,0.7,0.8")
    args = parser.parse_args()
    test, train = load_beir(args.data, "test"), load_beir(args.data, "train")
    base = Config.from_dict({"search": {"k_max": 300}})
    index_path = Path(args.index)
    report_file = index_path.parent / "scifact-ingest.json"

    with Index.open(index_path, base) as index:
        report = index.ingest([Path(args.data) / "corpus.jsonl"])
        if report.chunks_embedded:
            report_file.parent.mkdir(parents=True, exist_ok=True)
            report_file.write_text(json.dumps(report.summary()))
        stats = index.stats()
        ingest = json.loads(report_file.read_text()) if report_file.exists() else report.summary()
        print(f"SciFact: {stats.sources} source, {stats.chunks} chunks, {stats.embedder}, "
              f"{os.cpu_count()} cores")
        print(f"ingest: {ingest['seconds']:.0f} s, {ingest['tokens_embedded']:,} tokens embedded "
              f"({ingest['tokens_embedded'] / ingest['seconds']:.0f} tokens/s end to end)\n")

        # Tune on train: convex weight and RRF, nDCG@10.
        print("hybrid tuning on the train queries (nDCG@10):")
        tuning = {}
        for alpha in [float(a) for a in args.alphas.split(",")]:
            idx = view(index, mode="hybrid", fusion="convex", alpha=alpha)
            tuning[f"convex alpha={alpha}"] = evaluate(idx, train.queries, train.qrels)[0]["nDCG@10"]
        rrf = view(index, mode="hybrid", fusion="rrf")
        tuning["rrf k=60"] = evaluate(rrf, train.queries, train.qrels)[0]["nDCG@10"]
        for name, value in tuning.items():
            print(f"  {name:<20} {value:.4f}")
        best = max(tuning, key=tuning.get)
        print(f"  best on train: {best}\n")

        configs = {
            "dense": {"mode": "dense"},
            "lexical (BM25)": {"mode": "lexical"},
            "hybrid rrf": {"mode": "hybrid", "fusion": "rrf"},
            "hybrid (default config)": {"mode": Config().search.mode, "fusion": Config().search.fusion,
                                        "alpha": Config().search.alpha},
        }
        if best.startswith("convex"):
            tuned = {"mode": "hybrid", "fusion": "convex", "alpha": float(best.split("=")[1])}
            configs[f"hybrid {best} (tuned)"] = tuned
        print("| SciFact test (300 queries) | nDCG@10 | recall@100 | MRR@10 | p50 ms | p95 ms |")
        print("|---|---|---|---|---|---|")
        for name, search in configs.items():
            idx = view(index, **search)
            idx.search("warm up", k=1)
            means, times = evaluate(idx, test.queries, test.qrels)
            print(f"| {name} | {means['nDCG@10']:.4f} | {means['recall@100']:.4f} | {means['MRR@10']:.4f} | "
                  f"{np.percentile(times, 50):.1f} | {np.percentile(times, 95):.1f} |")


if __name__ == "__main__":
    main()
