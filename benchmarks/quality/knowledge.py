"""Knowledge structures and model-driven chunkers, measured on BEIR-layout datasets.

For each dataset (default: the HotpotQA sample and SciFact test):

1. Structures: one index (recursive chunks), then the entity graph (spaCy) and the
   RAPTOR tree are built on it and timed; every search preset runs on the same queries:
   hybrid, graph (fused, at several weights), graph-boost at several factors, raptor.
   Reports nDCG@10, recall@10, recall@100, p50 latency, build times and sizes.
2. LLM extraction: time per 1k chunks of the LLM extractor (the configured local model)
   on a sample of chunks, against spaCy on the same chunks, with how many were skipped.
3. Chunkers: recursive vs semantic vs agentic vs proposition, each its own index:
   nDCG@10 (hybrid; proposition also with the parent stage), chunks per document, ingest time.

Subsets keep a run small: ``--queries N`` takes the first N judged queries and
``--docs N`` their relevant documents plus distractors up to N documents.

    python -m benchmarks knowledge --queries 30 --docs 300 --llm-chunks 5 --chunkers recursive,semantic
    python -m benchmarks knowledge                      # full: both datasets, every part (hours with an LLM)
    python -m benchmarks knowledge --llm-model /path/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from ragloom import Config, Index
from ragloom.eval.beir import BeirDataset, load_beir
from ragloom.eval.metrics import mean, per_query_metrics
from ragloom.eval.runner import initial_depth, search_documents
from ragloom.knowledge.extract import LLMExtractor, SpacyExtractor
from ragloom.knowledge.raptor import rebuild
from ragloom.knowledge.structures import knowledge_llm
from ragloom.knowledge.sync import status, sync

from .. import harness

DATASETS = harness.DATASETS
METRICS = ("nDCG@10", "recall@10", "recall@100")


def subset(dataset: BeirDataset, queries: int | None, docs: int | None, folder: Path) -> tuple[Path, dict, dict]:
    """A corpus file with the judged documents of the first ``queries`` queries plus distractors."""
    chosen = dict(list(dataset.queries.items())[:queries]) if queries else dict(dataset.queries)
    qrels = {q: dataset.qrels[q] for q in chosen}
    needed = {d for judged in qrels.values() for d in judged}
    lines = dataset.corpus_path.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if json.loads(line)["_id"] in needed]
    for line in lines:
        if docs is not None and len(kept) >= docs:
            break
        if json.loads(line)["_id"] not in needed:
            kept.append(line)
    folder.mkdir(parents=True, exist_ok=True)
    corpus = folder / "corpus.jsonl"
    corpus.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return corpus, chosen, qrels


def evaluate(index: Index, mode: str, queries: dict, qrels: dict, documents: int) -> tuple[dict, float]:
    depth = initial_depth(100, index.store.count(), documents)
    run, times = {}, []
    for qid, text in queries.items():
        started = time.perf_counter()
        run[qid] = search_documents(index, text, 100, mode, depth, exclude=qid)
        times.append((time.perf_counter() - started) * 1000)
    values = per_query_metrics(qrels, run)
    return {m: mean(values[m]) for m in METRICS}, statistics.median(times)


def db_bytes(index: Index) -> int:
    db = index.store.catalog.db
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return (index.path / "ragloom.sqlite").stat().st_size


def table_bytes(index: Index, prefix: str) -> int | None:
    """Bytes of the tables and indexes whose name starts with ``prefix`` (needs SQLite's dbstat)."""
    try:
        row = index.store.catalog.db.execute(
            "SELECT SUM(pgsize) FROM dbstat WHERE name LIKE ?", (prefix + "%",)).fetchone()
    except Exception:  # noqa: BLE001 - dbstat is a compile-time option
        return None
    return int(row[0] or 0)


def structures(name: str, corpus: Path, queries: dict, qrels: dict, work: Path, args: argparse.Namespace) -> None:
    presets = {
        **{f"graph w={w}": [{"graph": {"weight": float(w)}}] for w in args.graph_weights.split(",")},
        **{f"graph-boost x{f}": [{"hybrid": {}}, {"graph-boost": {"factor": float(f)}}] for f in args.factors.split(",")},
        "raptor": [{"raptor": {}}],
    }
    settings = {"search": {"k_max": 1000, "presets": presets},
                "raptor": {"summarizer": args.summarizer}, "llm": _llm_settings(args)}
    config = Config.from_dict(settings)
    documents = sum(1 for _ in corpus.open())
    folder = work / f"{name}-structures"
    shutil.rmtree(folder, ignore_errors=True)  # build times are measured from scratch
    with Index.open(folder, config) as index:
        started = time.perf_counter()
        index.ingest([corpus])
        ingest_s = time.perf_counter() - started
        chunks, base_bytes = index.store.count(), db_bytes(index)
        graph_on = index.config.model_copy(update={"graph": index.config.graph.model_copy(update={"enabled": True})})
        graph_view = Index(index.path, graph_on, index.store, index.embedder)
        started = time.perf_counter()
        sync(graph_view)
        graph_s = time.perf_counter() - started
        graph_bytes = db_bytes(index) - base_bytes
        started = time.perf_counter()
        rebuild(index)
        raptor_s = time.perf_counter() - started
        raptor_bytes = db_bytes(index) - base_bytes - graph_bytes
        state = status(index)
        print(f"\n## {name}: {documents} documents, {chunks} chunks, {len(queries)} queries, {os.cpu_count()} cores")
        print(f"ingest (recursive, hybrid) {ingest_s:.1f} s; graph (spaCy) {graph_s:.1f} s = "
              f"{graph_s / max(chunks, 1) * 1000:.1f} s per 1k chunks, {state.graph.counts['entities']} entities, "
              f"{state.graph.counts['relations']} relations, +{graph_bytes / 1e6:.1f} MB "
              f"(tables {_mb(table_bytes(index, 'kg_'))}); raptor ({args.summarizer}) {raptor_s:.1f} s, "
              f"levels {state.raptor.counts['levels']}, +{raptor_bytes / 1e6:.1f} MB (tables {_mb(table_bytes(index, 'raptor_'))})")
        print("\n| run | nDCG@10 | recall@10 | recall@100 | p50 ms |\n|---|---|---|---|---|")
        for mode in ["hybrid", *presets]:
            means, p50 = evaluate(index, mode, queries, qrels, documents)
            print(f"| {mode} | {means['nDCG@10']:.4f} | {means['recall@10']:.4f} | {means['recall@100']:.4f} | {p50:.1f} |",
                  flush=True)


def extraction(name: str, corpus: Path, work: Path, args: argparse.Namespace) -> None:
    if not args.llm_chunks:
        return
    with Index.open(work / f"{name}-structures", Config.from_dict({"llm": _llm_settings(args)})) as index:
        texts = [c.text for _, c in index.store.catalog.iter_chunks()][: args.llm_chunks]
        spacy = SpacyExtractor(index.config.graph)
        spacy.extract(texts[:1])  # load the model before the clock starts
        started = time.perf_counter()
        found = spacy.extract(texts)
        spacy_s = time.perf_counter() - started
        llm = LLMExtractor(index.config.graph.model_copy(update={"extractor": "llm"}), lambda: knowledge_llm(index))
        llm.extract(texts[:1]) if args.warm else None
        started = time.perf_counter()
        answers = llm.extract(texts)
        llm_s = time.perf_counter() - started
        skipped = sum(1 for a in answers if a.skipped)
        print(f"\nextraction on {len(texts)} chunks of {name}: spaCy {spacy_s / len(texts) * 1000:.1f} s per 1k chunks "
              f"({sum(len(f.entities) for f in found)} entities); LLM {knowledge_llm(index).model_id} "
              f"{llm_s / len(texts) * 1000:.0f} s per 1k chunks ({sum(len(a.entities) for a in answers)} entities, "
              f"{skipped} chunks skipped after a retry)")


def chunkers(name: str, corpus: Path, queries: dict, qrels: dict, work: Path, args: argparse.Namespace) -> None:
    if not args.chunkers:
        return
    documents = sum(1 for _ in corpus.open())
    print(f"\n| {name} chunker | nDCG@10 | recall@10 | chunks/doc | ingest s |\n|---|---|---|---|---|")
    for strategy in args.chunkers.split(","):
        settings = {"chunking": {"strategy": strategy, "by_extension": {}}, "llm": _llm_settings(args),
                    "search": {"k_max": 1000, "presets": {"parent": [{"hybrid": {}}, "parent"]}}}
        folder = work / f"{name}-chunker-{strategy}"
        shutil.rmtree(folder, ignore_errors=True)
        with Index.open(folder, Config.from_dict(settings)) as index:
            started = time.perf_counter()
            index.ingest([corpus])
            seconds = time.perf_counter() - started
            modes = ["hybrid", "parent"] if strategy == "proposition" else ["hybrid"]
            for mode in modes:
                means, _ = evaluate(index, mode, queries, qrels, documents)
                label = strategy if mode == "hybrid" else f"{strategy} + parent"
                print(f"| {label} | {means['nDCG@10']:.4f} | {means['recall@10']:.4f} | "
                      f"{index.store.count() / documents:.2f} | {seconds:.1f} |", flush=True)


def _llm_settings(args: argparse.Namespace) -> dict:
    return {"model": args.llm_model, "threads": args.llm_threads, "max_tokens": args.llm_max_tokens}


def _mb(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 1e6:.1f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default=f"{DATASETS / 'hotpotqa-sample'},{DATASETS / 'scifact'}")
    parser.add_argument("--split", default="test")
    parser.add_argument("--queries", type=int, default=None, help="first N judged queries (default all)")
    parser.add_argument("--docs", type=int, default=None, help="documents kept: the judged ones plus distractors up to N")
    parser.add_argument("--work", default=None, help="folder for the indexes (default: a temporary one)")
    parser.add_argument("--graph-weights", default="0.2,0.3,0.5")
    parser.add_argument("--factors", default="1.1,1.2,1.5")
    parser.add_argument("--summarizer", choices=["extractive", "llm"], default="extractive")
    parser.add_argument("--llm-chunks", type=int, default=100, help="chunks for the LLM extraction timing (0: skip)")
    parser.add_argument("--llm-model", default=None, help=".gguf file or catalog name (default: the llm section's model)")
    parser.add_argument("--llm-threads", type=int, default=1)
    parser.add_argument("--llm-max-tokens", type=int, default=512)
    parser.add_argument("--warm", action="store_true", help="load the LLM before timing extraction")
    parser.add_argument("--chunkers", default="recursive,semantic,agentic,proposition", help="'' to skip")
    parser.add_argument("--skip-structures", action="store_true")
    args = parser.parse_args()
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="ragloom-knowledge-"))
    print(f"indexes under {work}; LLM {args.llm_model or 'the llm section default'} ({args.llm_threads} thread(s))")
    for root in args.datasets.split(","):
        dataset = load_beir(root, args.split)
        name = Path(root).name
        corpus, queries, qrels = subset(dataset, args.queries, args.docs, work / f"{name}-data")
        if not args.skip_structures:
            structures(name, corpus, queries, qrels, work, args)
            extraction(name, corpus, work, args)
        chunkers(name, corpus, queries, qrels, work, args)


if __name__ == "__main__":
    main()
