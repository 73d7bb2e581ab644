"""The query pipeline on BEIR SciFact: each technique on top of hybrid, and each preset.

Two phases, both on the index `ragloom eval` builds (reused from its cache when present):

1. ``--tune`` (TRAIN queries, a fixed subset of ``--train-queries``): hybrid candidates and
   the cross-encoder's scores of the best ``--rerank-depth`` chunks are computed once per
   query (kept in ``--tune-cache``), then the rerank blend weight and depth and the
   document roll-up share are swept offline with the stages' own pure functions.
   ``--colbert`` adds the short late-interaction check of DESIGN.md (MaxSim over the
   packaged "colbert" encoder's L2-normalised token states, fused 0.7/0.3 with hybrid).
2. The table (TEST queries): nDCG@10, recall@100, MRR@10 (documents ranked by their best
   chunk, as ``ragloom eval`` does), query latency p50/p95 including the query embedding,
   index bytes per chunk and extra ingest time. The query cache is off, so every query
   is computed.

    python -m benchmarks pipeline --tune                        # train sweep, then the test table
    python -m benchmarks pipeline --test-queries 20 --rows hybrid,fast   # a quick check
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import numpy as np

from ragloom import Config, Index
from ragloom.eval.beir import load_beir
from ragloom.eval.metrics import mean, per_query_metrics
from ragloom.eval.runner import initial_depth, search_documents, search_view
from ragloom.eval.scratch import default_cache_dir, open_scratch_index
from ragloom.ingest.enrich import enrich_chunks
from ragloom.retrieve.fusion import min_max
from ragloom.retrieve.pipeline import PRESETS
from ragloom.retrieve.stages.rerank import rerank_scores
from ragloom.retrieve.stages.rollup import rolled_up
from ragloom.types import Document, Hit

from .. import harness


#: Each technique alone on top of hybrid (settings as tuned on train), then the presets.
TECHNIQUES: dict[str, list[Any]] = {
    "hybrid": [{"hybrid": {}}],
    "+ rerank (blend)": [{"hybrid": {}}, {"rerank": {}}],
    "+ rerank (replace)": [{"hybrid": {}}, {"rerank": {"mode": "replace"}}],
    "+ rollup": [{"hybrid": {}}, {"rollup": {}}],
    "+ mmr (λ 0.7)": [{"hybrid": {}}, {"mmr": {"lambda": 0.7, "fetch": 1.5}}],
    "+ dedup": [{"hybrid": {}}, {"dedup": {}}],
    "+ boosts": [{"hybrid": {}}, {"boosts": {}}],
}


def rows(selected: str | None) -> dict[str, list[Any] | str]:
    table: dict[str, list[Any] | str] = {**TECHNIQUES, **{f"preset {p}": p for p in ("fast", "balanced", "precise")}}
    if not selected:
        return table
    wanted = [s.strip() for s in selected.split(",")]
    return {name: spec for name, spec in table.items()
            if any(w == name or w == name.removeprefix("preset ") or w == name.removeprefix("+ ").split(" ")[0]
                   for w in wanted)}


def open_index(data: Path, cache: Path) -> tuple[Index, int]:
    started = time.perf_counter()
    index, build = open_scratch_index(data / "corpus.jsonl", Config(), cache, shard_corpus=True)
    print(f"index {build.path}: {build.chunks} chunks of {build.documents} documents "
          f"({'reused' if build.reused else 'built'} in {time.perf_counter() - started:.0f} s; build took "
          f"{build.build_seconds:.0f} s, {build.tokens_per_second:.0f} tokens/s)")
    return index, build.documents


def view(index: Index, steps: list[Any] | None = None, preset: str | None = None) -> Index:
    """The open index with cache off, k uncapped, and the given pipeline."""
    update: dict[str, Any] = {"k_max": 1_000_000, "cache": {"size": 0, "embeddings": 0},
                              "pipeline": steps, "mode": preset or "hybrid"}
    settings = index.config.search.model_validate({**index.config.search.model_dump(), **update})
    return search_view(index, index.config.model_copy(update={"search": settings}))


def subset(queries: dict[str, str], n: int | None, seed: int = 13) -> dict[str, str]:
    if not n or n >= len(queries):
        return dict(queries)
    chosen = sorted(random.Random(seed).sample(sorted(queries), n))
    return {qid: queries[qid] for qid in chosen}


def scores_of(run: dict[str, dict[str, float]], qrels) -> dict[str, float]:
    judged = {qid: qrels[qid] for qid in run if qid in qrels}
    return {name: mean(v) for name, v in per_query_metrics(judged, run).items()}


# -- phase 1: tuning on train ------------------------------------------------------------------

def tune(index: Index, train, n_queries: int, depth_ce: int, cache_file: Path, colbert: bool,
         depth: int, prf: bool, ce_batch: int = 1) -> dict[str, Any]:
    queries = subset(train.queries, n_queries)
    cached: dict[str, Any] = json.loads(cache_file.read_text()) if cache_file.is_file() else {}
    hybrid = view(index)
    ce_model = None
    started = time.perf_counter()
    todo = [qid for qid in queries if qid not in cached or len(cached[qid]["ce"]) < depth_ce]
    print(f"\ntuning on {len(queries)} train queries ({len(todo)} to score with the cross-encoder)")
    for i, qid in enumerate(todo):
        hits = hybrid.search(queries[qid], k=depth)
        if ce_model is None:
            from ragloom.models.cross_encoder import CrossEncoder
            from ragloom.retrieve.stages.rerank import RerankOptions

            # As the rerank stage runs it: its window, the raw logits.
            ce_model = CrossEncoder(max_length=RerankOptions().max_tokens, batch_size=ce_batch)
        ce = ce_model.logits(queries[qid], [h.text for h in hits[:depth_ce]])
        cached[qid] = {"docs": [h.doc_id for h in hits], "scores": [h.score for h in hits],
                       "texts": [h.text for h in hits[:30]], "ce": [float(x) for x in ce]}
        if (i + 1) % 20 == 0:
            cache_file.parent.mkdir(parents=True, exist_ok=True)
            cache_file.write_text(json.dumps(cached))
            print(f"  {i + 1}/{len(todo)} ({time.perf_counter() - started:.0f} s)")
    if todo:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        cache_file.write_text(json.dumps(cached))
    data = {qid: cached[qid] for qid in queries}

    def evaluate(rescore) -> float:
        run = {}
        for qid, item in data.items():
            docs: dict[str, float] = {}
            for doc, score in rescore(qid, item):
                docs.setdefault(doc, score)
            run[qid] = dict(list(docs.items())[:100])
        return scores_of(run, train.qrels)["nDCG@10"]

    def hybrid_only(qid, item):
        return list(zip(item["docs"], item["scores"]))

    def blended(weight: float, top_n: int, mode: str = "blend"):
        def rescore(qid, item):
            hits = [Hit(str(i), "", s, i + 1, "", {"doc_id": d}) for i, (d, s) in enumerate(zip(item["docs"], item["scores"]))]
            out = rerank_scores(hits, np.array(item["ce"][:top_n]), mode, weight)
            return [(h.metadata["doc_id"], h.score) for h in out]
        return rescore

    def rollup(share: float):
        def rescore(qid, item):
            new = rolled_up(item["docs"], item["scores"], share)
            return sorted(zip(item["docs"], new), key=lambda p: -p[1])
        return rescore

    results: dict[str, float] = {"hybrid": evaluate(hybrid_only)}
    for top_n in (10, 20, 30):
        if top_n > depth_ce:
            continue
        results[f"rerank replace top {top_n}"] = evaluate(blended(1.0, top_n, "replace"))
        for weight in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
            results[f"rerank blend w={weight} top {top_n}"] = evaluate(blended(weight, top_n))
    for share in (0.05, 0.1, 0.2, 0.3, 0.5):
        results[f"rollup share={share}"] = evaluate(rollup(share))

    def rerank_then_rollup(weight: float, top_n: int, share: float):
        first = blended(weight, top_n)

        def rescore(qid, item):
            docs, scores = zip(*first(qid, item))
            return sorted(zip(docs, rolled_up(list(docs), list(scores), share)), key=lambda p: -p[1])
        return rescore

    for top_n in (10, 20, 30):
        for weight in (0.2, 0.3, 0.4):
            if top_n <= depth_ce:
                results[f"rerank blend w={weight} top {top_n} + rollup 0.1"] = evaluate(
                    rerank_then_rollup(weight, top_n, 0.1))
    if colbert:
        results.update(colbert_check(data, queries, evaluate))
    if prf:
        for docs, weight in ((3, 0.2), (3, 0.4), (5, 0.3), (10, 0.3)):
            idx = view(index, [{"hybrid": {"prf_docs": docs, "prf_weight": weight}}])
            run = {qid: search_documents(idx, text, 100, None, depth) for qid, text in queries.items()}
            results[f"hybrid + Rocchio prf_docs={docs} prf_weight={weight}"] = scores_of(run, train.qrels)["nDCG@10"]
    print("| train nDCG@10 | value |\n|---|---|")
    for name, value in results.items():
        print(f"| {name} | {value:.4f} |")
    return results


def colbert_check(data: dict[str, Any], queries: dict[str, str], evaluate) -> dict[str, float]:
    """MaxSim over the packaged 'colbert' encoder's L2-normalised token states, top 30 chunks encoded per query."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    from ragloom.models import packaged_model_dir

    folder = packaged_model_dir("colbert")
    session = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=320)
    tokenizer.no_padding()

    def encode(text: str) -> np.ndarray:
        e = tokenizer.encode(text)
        ids = np.array([e.ids], dtype=np.int64)
        states = session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                    "token_type_ids": np.zeros_like(ids)})[0][0]
        return states / np.linalg.norm(states, axis=1, keepdims=True)

    maxsim: dict[str, list[float]] = {}
    started = time.perf_counter()
    for qid, item in data.items():
        q = encode(queries[qid])
        maxsim[qid] = [float((encode(t) @ q.T).max(axis=0).sum()) for t in item["texts"][:30]]
    print(f"  colbert: {(time.perf_counter() - started) / max(1, len(data)):.2f} s per query to encode 30 chunks")

    def fused(weight: float):
        def rescore(qid, item):
            n = len(maxsim[qid])
            hyb = min_max({str(i): s for i, s in enumerate(item["scores"][:n])})
            col = min_max({str(i): s for i, s in enumerate(maxsim[qid])})
            top = [(item["docs"][i], (1 - weight) * hyb[str(i)] + weight * col[str(i)]) for i in range(n)]
            top.sort(key=lambda p: -p[1])
            return top + [(d, -1.0) for d in item["docs"][n:]]
        return rescore

    return {"colbert MaxSim alone (top 30)": evaluate(fused(1.0)),
            "colbert fused 0.7 hybrid + 0.3 MaxSim": evaluate(fused(0.3))}


# -- phase 2: the test table -------------------------------------------------------------------

def measure(index: Index, name: str, spec: list[Any] | str, test, depth: int) -> dict[str, Any]:
    idx = view(index, spec if isinstance(spec, list) else None, spec if isinstance(spec, str) else None)
    idx.search("warm up the models", k=depth)
    run, times = {}, []
    for qid, text in test.queries.items():
        began = time.perf_counter()
        run[qid] = search_documents(idx, text, 100, None, depth)
        times.append((time.perf_counter() - began) * 1000)
    return {"name": name, **scores_of(run, test.qrels),
            "p50": float(np.percentile(times, 50)), "p95": float(np.percentile(times, 95))}


def enrichment_seconds(index: Index) -> float:
    """Ingest time the metadata enrichment adds: its rules run over every stored chunk."""
    chunks = list(index.store.iter_chunks())
    document = Document(text="", source="", doc_id="")
    began = time.perf_counter()
    enrich_chunks(chunks, document, index.config.ingest.enrich)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=harness.SCIFACT)
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    parser.add_argument("--tune", action="store_true", help="sweep the weights on train first")
    parser.add_argument("--train-queries", type=int, default=200, help="fixed random subset of train (0 = all 809)")
    parser.add_argument("--rerank-depth", type=int, default=30, help="chunks the cross-encoder scores when tuning")
    parser.add_argument("--tune-cache", type=Path, default=harness.RESULTS / "pipeline-tune.json")
    parser.add_argument("--ce-batch", type=int, default=1, help="pairs per cross-encoder call when tuning")
    parser.add_argument("--colbert", action="store_true", help="also the short ColBERT check (slow: encodes chunks)")
    parser.add_argument("--prf", action="store_true", help="also sweep Rocchio feedback (runs real searches)")
    parser.add_argument("--test-queries", type=int, default=0, help="subset of the 300 test queries (0 = all)")
    parser.add_argument("--rows", default="", help="comma-separated rows (e.g. hybrid,rerank,balanced)")
    parser.add_argument("--skip-table", action="store_true")
    args = parser.parse_args()

    index, documents = open_index(args.data, args.cache_dir)
    try:
        depth = initial_depth(100, index.store.count(), documents)
        if args.tune:
            tune(index, load_beir(args.data, "train"), args.train_queries, args.rerank_depth, args.tune_cache,
                 args.colbert, depth, args.prf, args.ce_batch)
        if args.skip_table:
            return
        test = load_beir(args.data, "test")
        test = dataclasses.replace(test, queries=subset(test.queries, args.test_queries))
        chunks = index.store.count()
        bytes_per_chunk = index.store.disk_bytes() / max(chunks, 1)
        extra = enrichment_seconds(index)
        print(f"\nSciFact test, {len(test.queries)} queries; {os.cpu_count()} cores; load average "
              f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}; presets: "
              + "; ".join(f"{p} = {PRESETS[p]}" for p in ("fast", "balanced", "precise") if p in PRESETS))
        print(f"index: {bytes_per_chunk:,.0f} bytes per chunk; ingest enrichment adds {extra:.2f} s over "
              f"{chunks} chunks; no technique here stores anything else per chunk\n")
        print("| SciFact test | nDCG@10 | recall@100 | MRR@10 | p50 ms | p95 ms | extra bytes/chunk | extra ingest |")
        print("|---|---|---|---|---|---|---|---|")
        for name, spec in rows(args.rows).items():
            if isinstance(spec, str) and spec not in PRESETS:
                print(f"| {name} | (not registered) | | | | | | |")
                continue
            r = measure(index, name, spec, test, depth)
            print(f"| {name} | {r['nDCG@10']:.4f} | {r['recall@100']:.4f} | {r['MRR@10']:.4f} | "
                  f"{r['p50']:.0f} | {r['p95']:.0f} | 0 | {'%.2f s' % extra if 'boosts' in name else '0'} |",
                  flush=True)
    finally:
        index.close()


if __name__ == "__main__":
    main()
