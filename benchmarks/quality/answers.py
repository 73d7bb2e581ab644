"""Answer quality and speed, and the LLM query transforms against the plain pipeline.

    # SQuAD (the test split: questions of the last 11 articles): first-sentence baseline,
    # extractive, standard and attributed with the default local LLM
    python -m benchmarks answers squad --limit 200
    # extractive answers, and the share of "The sources do not say." when each question is
    # asked of another article (unanswerable) and of its own (answerable)
    python -m benchmarks answers squad --limit 0 --runs extractive --unanswerable
    # HyDE, multi-query and corrective RAG vs the plain hybrid pipeline, one run, SciFact test
    python -m benchmarks answers transforms --limit 100

Both print Markdown tables. Questions are a fixed subset spread evenly over the sorted ids
(``--limit``); runs are interleaved question by question so machine load hits them alike.
The scratch indexes are the ones ``ragloom eval`` builds and reuses.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from ragloom.config import Config
from ragloom.eval.answers import (
    BASELINE,
    dump,
    evaluate_answers,
    load_answers,
    spread,
    table,
)
from ragloom.eval.beir import load_beir
from ragloom.eval.scratch import default_cache_dir, open_scratch_index

from .. import harness

#: ../shared/datasets from the repository root; RAGLOOM_DATASETS elsewhere (e.g. from a worktree).
SHARED = harness.DATASETS


def config_for(args: argparse.Namespace) -> Config:
    llm = {"threads": args.threads, "context_size": args.context_size}
    if args.llm:
        llm["model"] = args.llm
    return Config.from_dict({"llm": llm, "answer": {"budget": args.budget}})


def squad(args: argparse.Namespace) -> None:
    dataset = load_beir(args.dataset, args.split)
    golds = load_answers(Path(args.dataset) / "answers.jsonl")
    questions = spread([q for q in dataset.queries if q in golds], args.limit)
    index, build = open_scratch_index(dataset.corpus_path, config_for(args), args.cache, shard_corpus=True)
    with index:
        index.ask(dataset.queries[questions[0]], strategy="extractive")  # load the models before the clock
        if any(r not in ("extractive", BASELINE) for r in args.runs):
            index.ask(dataset.queries[questions[0]], strategy="standard")
        done = [0]

        def progress(run: str, qid: str) -> None:
            done[0] += 1
            if args.verbose:
                print(f"  {done[0]}/{len(questions) * len(args.runs)} {run} {qid}", file=sys.stderr, flush=True)

        started = time.perf_counter()
        results, recall = evaluate_answers(index, dataset, golds, args.runs, questions=questions, k=args.k,
                                           progress=progress, unanswerable=args.unanswerable)
    print(f"SQuAD-train {args.split} split, {len(questions)} questions (fixed, spread over sorted ids), k={args.k}, "
          f"budget {args.budget} tokens, llm {args.llm or 'default (qwen2.5-coder-0.5b)'}, threads {args.threads}; "
          f"{time.perf_counter() - started:.0f} s; load average {harness.load_average():.1f}")
    print()
    print(table(results, recall, args.k))
    if args.out:
        dump(results, recall, Path(args.out))


def transforms(args: argparse.Namespace) -> None:
    from ragloom.eval.metrics import mean, per_query_metrics
    from ragloom.eval.runner import initial_depth, search_documents

    dataset = load_beir(args.dataset, "test")
    questions = spread(list(dataset.queries), args.limit)
    index, build = open_scratch_index(dataset.corpus_path, config_for(args), args.cache, shard_corpus=True)
    runs: dict[str, dict[str, dict[str, float]]] = {mode: {} for mode in args.modes}
    latency: dict[str, list[float]] = {mode: [] for mode in args.modes}
    depth = initial_depth(10, build.chunks, build.documents)
    with index:
        for mode in args.modes:  # load models before the clock
            search_documents(index, dataset.queries[questions[0]], 10, mode, depth)
        for n, qid in enumerate(questions, start=1):
            for mode in args.modes:
                started = time.perf_counter()
                runs[mode][qid] = search_documents(index, dataset.queries[qid], 10, mode, depth, exclude=qid)
                latency[mode].append(time.perf_counter() - started)
            if args.verbose:
                print(f"  {n}/{len(questions)}", file=sys.stderr, flush=True)
    qrels = {qid: dataset.qrels[qid] for qid in questions}
    print(f"SciFact test, {len(questions)} queries (fixed subset spread over sorted ids), llm "
          f"{args.llm or 'default (qwen2.5-coder-0.5b)'}, threads {args.threads}; "
          f"load average {harness.load_average():.1f}")
    print()
    print("| pipeline | nDCG@10 | recall@10 | s/query p50 | s/query mean |")
    print("|---|---|---|---|---|")
    for mode in args.modes:
        metrics = per_query_metrics(qrels, runs[mode])
        print(f"| {mode} | {mean(metrics['nDCG@10']):.4f} | {mean(metrics['recall@10']):.4f} | "
              f"{statistics.median(latency[mode]):.2f} | {statistics.mean(latency[mode]):.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, default_dataset in (("squad", "squad-train"), ("transforms", "scifact")):
        p = sub.add_parser(name)
        p.add_argument("--dataset", default=str(SHARED / default_dataset))
        p.add_argument("--limit", type=int, default=100, help="questions (a fixed subset); 0 = all")
        p.add_argument("--llm", default=None, help="llm.model: qwen2.5-coder-0.5b (default), qwen2.5-coder-1.5b, ...")
        p.add_argument("--threads", type=int, default=1, help="llama.cpp threads")
        p.add_argument("--context-size", type=int, default=4096)
        p.add_argument("--budget", type=int, default=800, help="context budget, tokens")
        p.add_argument("--cache", type=Path, default=default_cache_dir())
        p.add_argument("--verbose", "-v", action="store_true")
    sub.choices["squad"].add_argument("--runs", nargs="+",
                                      default=[BASELINE, "extractive", "standard", "attributed"])
    sub.choices["squad"].add_argument("-k", type=int, default=5)
    sub.choices["squad"].add_argument("--split", default="test",
                                      help="qrels split: test (report) or train (tune prompts on this)")
    sub.choices["squad"].add_argument("--unanswerable", action="store_true",
                                      help="also ask each question over another article only (should say no)")
    sub.choices["squad"].add_argument("--out", default=None, help="also write the results (and examples) as JSON")
    sub.choices["transforms"].add_argument("--modes", nargs="+",
                                           default=["hybrid", "hyde", "multi-query", "corrective"])
    args = parser.parse_args()
    squad(args) if args.command == "squad" else transforms(args)


if __name__ == "__main__":
    main()
