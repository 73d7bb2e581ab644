"""Code search on CoSQA dev: the functions read as a folder of .py files against the same
functions read as plain JSONL text (today's path before the code loader).

CoSQA pairs real web queries ("python check if a variable is iterable") with the one Python
function that answers each; the dev split has 500 queries over 6,267 functions, also laid out as
one ``corpus/<id>.py`` file per function. Both ingests use the default configuration; each is
searched in every mode and with the ``code`` preset. A function's score is its best chunk's.
Prints nDCG@10, MRR@10 and recall@10 for each, and the hybrid weights tried (the ``code``
preset's ``alpha`` was chosen here: CoSQA has only this split, so the figures are on the split
that tuned it).

    python -m benchmarks code_search [--data ../shared/datasets/cosqa-dev] [--work benchmarks/results/code]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from ragloom import Config, Index
from ragloom.eval.beir import load_beir
from ragloom.eval.metrics import mean, per_query_metrics
from ragloom.eval.runner import search_view, top_documents

from .. import harness

METRICS = ("nDCG@10", "MRR@10", "recall@10")


def run_queries(index: Index, queries: dict[str, str], mode: str | None) -> dict[str, dict[str, float]]:
    """Each query's 10 best functions (by their best chunk), the ``.py`` of a file's name dropped."""
    def fetch(query: str):
        return lambda n: [(hit.doc_id.removesuffix(".py"), hit.score) for hit in index.search(query, k=n, mode=mode)]

    return {qid: top_documents(fetch(text), 10, 30) for qid, text in queries.items()}


def scores(index: Index, queries: dict[str, str], qrels, mode: str | None) -> dict[str, float]:
    values = per_query_metrics(qrels, run_queries(index, queries, mode))
    return {name: mean(values[name]) for name in METRICS}


def ingest(path: Path, corpus: Path, config: Config) -> tuple[Index, dict]:
    index = Index.open(path, config)
    started = time.perf_counter()
    report = index.ingest([corpus])
    summary = {**report.summary(), "seconds": round(time.perf_counter() - started, 1),
               "skipped_files": report.skipped_files()[:5]}
    return index, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default=str(harness.DATASETS / "cosqa-dev"))
    parser.add_argument("--work", default=str(harness.RESULTS / "code"))
    parser.add_argument("--alphas", default="0.5,0.6,0.7,0.8,0.9")
    parser.add_argument("--limit", type=int, default=0, help="only the first N queries (a quick look)")
    parser.add_argument("--corpora", default="jsonl,folder", help="which ingests: jsonl (plain text), folder (.py files)")
    parser.add_argument("--modes", default="dense,lexical,hybrid,code", help="search presets to score")
    parser.add_argument("--embedder", default=None, help="an embedder provider instead of the default "
                        "(embeddinggemma; its index goes to WORK/<provider>/)")
    parser.add_argument("--query-task", default=None, choices=["search", "code"],
                        help="--embedder embeddinggemma: the query prompt (the index is the same for both)")
    args = parser.parse_args()
    data, work = Path(args.data), Path(args.work)
    dev = load_beir(data, "dev")
    queries = dict(list(dev.queries.items())[: args.limit]) if args.limit else dev.queries
    settings: dict = {"search": {"k_max": 100}}
    if args.embedder:
        work = work / args.embedder
        settings["embedder"] = {"provider": args.embedder,
                                **({args.embedder: {"query_task": args.query_task}} if args.query_task else {})}
    config = Config.from_dict(settings)
    results: dict[str, dict[str, float]] = {}
    ingests = {}
    corpora = {"jsonl": ("jsonl text", data / "corpus.jsonl"), "folder": ("folder of .py", data / "corpus")}
    for name, corpus in (corpora[c] for c in args.corpora.split(",")):
        index, ingests[name] = ingest(work / name.replace(" ", "-").replace(".", ""), corpus, config)
        with index:
            for mode in args.modes.split(","):
                results[f"{name}, {mode}{' (default)' if mode == 'hybrid' else ''}"] = scores(
                    index, queries, dev.qrels, mode)
            if name == "folder of .py":
                for alpha in [float(a) for a in args.alphas.split(",") if a]:
                    tuned = search_view(index, index.config.model_copy(update={
                        "search": index.config.search.model_copy(update={"alpha": alpha})}))
                    results[f"{name}, hybrid alpha={alpha}"] = scores(tuned, queries, dev.qrels, "hybrid")
    print(f"CoSQA dev: {len(queries)} queries, {len(dev.qrels)} judged, 6,267 functions\n")
    print(f"| run | {' | '.join(METRICS)} |\n|---|{'---|' * len(METRICS)}")
    for run, values in results.items():
        print(f"| {run} | {' | '.join(f'{values[m]:.3f}' for m in METRICS)} |")
    print("\ningests:")
    for name, summary in ingests.items():
        print(f"  {name}: {json.dumps(summary)}")


if __name__ == "__main__":
    main()
