"""Does a hit's score mean the same across queries? Related vs unrelated queries on one corpus.

    python -m benchmarks relevance --split train --limit 300     # tune search.weak_cosine here
    python -m benchmarks relevance --split test --limit 300 --modes hybrid precise

Related queries are SciFact's own (``--split``); unrelated ones are SQuAD-train questions of the
same split (Wikipedia articles about universities, cities, companies...), asked of the SciFact
corpus. For the top hit of each query the table gives the mean fused rank score (``score``,
min–max normalised per query), the mean ``relevance`` (cosine, or the cross-encoder's probability
with a rerank step), the AUC of relevance for telling related from unrelated queries (0.5 is
chance), and the share of top hits marked weak. With ``--split train`` it also prints the cosine
threshold that best separates the two (balanced accuracy): how ``search.weak_cosine`` was chosen.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from ragloom.config import Config
from ragloom.eval.answers import spread
from ragloom.eval.beir import load_beir
from ragloom.eval.scratch import default_cache_dir, open_scratch_index

from .. import harness

SHARED = harness.DATASETS


def auc(related: list[float], unrelated: list[float]) -> float:
    """P(a related query's relevance > an unrelated one's), ties counting half (Mann–Whitney)."""
    wins = sum((r > u) + 0.5 * (r == u) for r in related for u in unrelated)
    return wins / (len(related) * len(unrelated))


def best_threshold(related: list[float], unrelated: list[float]) -> tuple[float, float]:
    """The cut with the best balanced accuracy (related at or above it, unrelated below)."""
    best = (0.0, 0.0)
    for cut in sorted(set(related) | set(unrelated)):
        accuracy = (sum(r >= cut for r in related) / len(related) + sum(u < cut for u in unrelated) / len(unrelated)) / 2
        best = max(best, (accuracy, cut))
    return best[1], best[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit", type=int, default=300, help="queries of each kind (a fixed subset); 0 = all")
    parser.add_argument("--modes", nargs="+", default=["hybrid"])
    parser.add_argument("--cache", type=Path, default=default_cache_dir())
    args = parser.parse_args()
    related_set = load_beir(SHARED / "scifact", args.split)
    unrelated_set = load_beir(SHARED / "squad-train", args.split)
    queries = {"related": [related_set.queries[q] for q in spread(list(related_set.queries), args.limit)],
               "unrelated": [unrelated_set.queries[q] for q in spread(list(unrelated_set.queries), args.limit)]}
    index, _ = open_scratch_index(related_set.corpus_path, Config(), args.cache, shard_corpus=True)
    print(f"SciFact corpus; {args.split} split; {len(queries['related'])} SciFact queries (related) and "
          f"{len(queries['unrelated'])} SQuAD-train questions (unrelated); top hit of each; "
          f"load average {harness.load_average():.1f}")
    print()
    print("| mode | relevance | score: related / unrelated | relevance: related / unrelated | AUC (relevance) "
          "| AUC (score) | weak: related / unrelated |")
    print("|---|---|---|---|---|---|---|")
    with index:
        for mode in args.modes:
            top = {kind: [index.search(q, k=1, mode=mode)[0] for q in texts] for kind, texts in queries.items()}
            score = {kind: [h.score for h in hits] for kind, hits in top.items()}
            relevance = {kind: [h.relevance for h in hits] for kind, hits in top.items()}
            weak = {kind: sum(bool(h.weak) for h in hits) / len(hits) for kind, hits in top.items()}
            print(f"| {mode} | {top['related'][0].relevance_kind} | {statistics.mean(score['related']):.3f} / "
                  f"{statistics.mean(score['unrelated']):.3f} | {statistics.mean(relevance['related']):.3f} / "
                  f"{statistics.mean(relevance['unrelated']):.3f} | {auc(relevance['related'], relevance['unrelated']):.3f} "
                  f"| {auc(score['related'], score['unrelated']):.3f} | {weak['related']:.3f} / {weak['unrelated']:.3f} |")
            if mode == args.modes[0]:
                cut, accuracy = best_threshold(relevance["related"], relevance["unrelated"])
                print(f"|   | best cut of this {args.split} split: {cut:.3f} (balanced accuracy {accuracy:.3f}) | | | | | |")


if __name__ == "__main__":
    main()
