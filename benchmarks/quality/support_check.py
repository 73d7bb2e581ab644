"""Which support checker tells a supported answer sentence from an unsupported one?

A labelled set built from SQuAD-train's *train* split (so the test split stays unseen),
per question:

- supported: the paragraph's sentence holding the answer, against its paragraph;
- supported: "question + answer" (a paraphrase-like claim), against the paragraph;
- unsupported: the answer sentence with the answer swapped for another question's answer
  from the same article (a hallucinated fact), against the paragraph;
- unsupported: the answer sentence, and the question + answer claim, against another
  paragraph of the same article that does not hold the answer (a wrong citation).

Prints ROC AUC, the best accuracy over thresholds (and the threshold), accuracy at the
configured default threshold, and time per pair, for the cross-encoder, bge embedding
cosine and content-word overlap.

    python -m benchmarks support_check [--questions 100]
"""

from __future__ import annotations

import argparse
import random
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from ragloom.config import AnswerConfig, EmbedderConfig
from ragloom.context import sentences
from ragloom.embed import create_embedder
from ragloom.eval.answers import spread
from ragloom.eval.beir import iter_jsonl, load_beir
from ragloom.generate.citations import cross_encoder_support, embedding_support, overlap_support
from ragloom.models.cross_encoder import CrossEncoder

from .. import harness

#: ../shared/datasets from the repository root; RAGLOOM_DATASETS elsewhere (e.g. from a worktree).
SHARED = harness.DATASETS


def labelled_pairs(folder: Path, n: int, seed: int = 0) -> list[tuple[str, str, int, str]]:
    data = load_beir(folder, "train")
    golds = {}
    for _, row in iter_jsonl(folder / "answers.jsonl"):
        golds[row["_id"]] = row
    corpus = {row["_id"]: row["text"] for _, row in iter_jsonl(folder / "corpus.jsonl")}
    by_article: dict[str, list[str]] = defaultdict(list)
    for doc_id in corpus:
        by_article[doc_id.rsplit("_", 1)[0]].append(doc_id)
    answers_by_article: dict[str, list[str]] = defaultdict(list)
    for row in golds.values():
        answers_by_article[row["doc_id"].rsplit("_", 1)[0]].append(row["answers"][0])
    rng = random.Random(seed)
    pairs = []
    for qid in spread([q for q in data.queries if q in golds], n):
        row = golds[qid]
        doc, answer, start = row["doc_id"], row["answers"][0], row["answer_starts"][0]
        passage = corpus[doc]
        holding = next((s for s in sentences(passage) if answer in s), None)
        if holding is None:
            continue
        article = doc.rsplit("_", 1)[0]
        claim = f"{data.queries[qid].rstrip('?')}? {answer}."
        others = [d for d in by_article[article] if d != doc and answer.lower() not in corpus[d].lower()]
        swaps = [a for a in answers_by_article[article] if a.lower() not in passage.lower()]
        pairs += [(holding, passage, 1, "answer sentence / its paragraph"),
                  (claim, passage, 1, "question+answer / its paragraph")]
        if swaps:
            pairs.append((holding.replace(answer, rng.choice(swaps)), passage, 0, "answer swapped / its paragraph"))
        if others:
            other = corpus[rng.choice(others)]
            pairs += [(holding, other, 0, "answer sentence / other paragraph"),
                      (claim, other, 0, "question+answer / other paragraph")]
    return pairs


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Probability that a random supported pair outscores a random unsupported one (ties count half)."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def best_accuracy(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    best = (0.0, 0.0)
    for threshold in np.unique(scores):
        accuracy = float(((scores >= threshold) == (labels == 1)).mean())
        best = max(best, (accuracy, float(threshold)))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=SHARED / "squad-train")
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args()
    pairs = labelled_pairs(args.dataset, args.questions)
    labels = np.array([label for _, _, label, _ in pairs])
    kinds = sorted({kind for *_, kind in pairs})
    checkers = {
        "cross-encoder": cross_encoder_support(CrossEncoder(threads=args.threads)),
        "embedding": embedding_support(create_embedder(EmbedderConfig(threads=args.threads))),
        "overlap": overlap_support,
    }
    default = AnswerConfig().support_threshold
    print(f"{len(pairs)} pairs from {args.questions} SQuAD-train train questions "
          f"({int(labels.sum())} supported, {int((labels == 0).sum())} unsupported)")
    print()
    print(f"| checker | ROC AUC | best accuracy (threshold) | accuracy at {default} | ms/pair | "
          + " | ".join(f"mean: {k}" for k in kinds) + " |")
    print("|---|---|---|---|---|" + "---|" * len(kinds))
    computed: dict[str, tuple[np.ndarray, float]] = {}
    for name, check in checkers.items():
        started = time.perf_counter()
        scores = np.asarray(check([(c, p) for c, p, _, _ in pairs]), dtype=np.float64)
        computed[name] = (scores, (time.perf_counter() - started) * 1000 / len(pairs))
    ce, overlap = computed["cross-encoder"], computed["overlap"]
    computed["cross-encoder × overlap"] = (ce[0] * overlap[0], ce[1] + overlap[1])
    for name, (scores, ms) in computed.items():
        accuracy, threshold = best_accuracy(scores, labels)
        at_default = float(((scores >= default) == (labels == 1)).mean())
        means = [float(scores[[i for i, p in enumerate(pairs) if p[3] == k]].mean()) for k in kinds]
        print(f"| {name} | {auc(scores, labels):.3f} | {accuracy:.3f} ({threshold:.3f}) | {at_default:.3f} | "
              f"{ms:.1f} | " + " | ".join(f"{m:.3f}" for m in means) + " |")


if __name__ == "__main__":
    main()
