"""Where extractive answers should say "The sources do not say": the floor, tuned on hard cases.

Each SQuAD-train question is asked three ways, with the extractive strategy and no floor, and the
best sentence's cross-encoder probability is kept (the answer's trace records it):

- answerable: over the whole corpus, as a user asks it;
- same topic: over its own article with its own paragraph left out (``title`` = its article,
  ``doc_id`` != its paragraph): passages on the very subject that do not hold the answer;
- other article: over the next article of the split only (what ``answers.py --unanswerable`` asks).

Also kept: the best passage's probability (the question against each whole passage, by the same
cross-encoder) and the top passage's dense cosine. A gate refuses a question when the best sentence
is below one floor or the best passage below another, so one pass gives every gate:
the share of answerable questions refused (target <= 2%), the shares of unanswerable ones refused
(as high as the floor allows), and F1 / containment on the answerable ones (a refusal scores 0).

    python -m benchmarks extractive_floor --split train --limit 150 --out results/floor-train.json
    python -m benchmarks extractive_floor --rows results/floor-train.json --passage-floors 0 0.01 0.05 0.1
    python -m benchmarks extractive_floor --split test --limit 150 --floors 0.3 0.05 --passage-floors 0 0.05
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ragloom.config import Config
from ragloom.eval.answers import answer_text, contains, load_answers, other_articles, spread, token_f1
from ragloom.eval.beir import load_beir
from ragloom.eval.scratch import default_cache_dir, open_scratch_index
from ragloom.models.cross_encoder import shared_cross_encoder

from .. import harness

SHARED = harness.DATASETS
FLOORS = [0.0, 0.005, 0.01, 0.02, 0.03, 0.05, 0.08, 0.1, 0.15, 0.2, 0.3]


def best_probability(answer) -> float:  # noqa: ANN001 - an Answer
    for step in answer.trace:
        if step.name == "score sentences":
            return float(step.detail.get("best", 0.0))
    return 0.0


def features(answer, scorer) -> dict[str, float]:  # noqa: ANN001 - an Answer and the cross-encoder
    """What a gate could read: the best sentence's probability, the best passage's (the question
    against each whole passage), and the top passage's dense cosine."""
    passages = answer.context.passages if answer.context else []
    return {"sentence": best_probability(answer),
            "passage": float(max(scorer.score(answer.question, [p.text for p in passages]), default=0.0)),
            "cosine": max((p.hit.relevance or 0.0 for p in passages), default=0.0), "text": answer.text}


def measure(args: argparse.Namespace) -> list[dict]:
    dataset = load_beir(args.dataset, args.split)
    golds = load_answers(Path(args.dataset) / "answers.jsonl")
    qids = spread([q for q in dataset.queries if q in golds and dataset.qrels.get(q)], args.limit)
    elsewhere = other_articles(dataset, qids)
    config = Config.from_dict({"answer": {"extractive_min_relevance": 0.0}})
    rows = []
    index, _ = open_scratch_index(dataset.corpus_path, config, args.cache, shard_corpus=True)
    with index:
        for n, qid in enumerate(qids, 1):
            question, paragraph = dataset.queries[qid], next(iter(dataset.qrels[qid]))
            article = paragraph.rsplit("_", 1)[0].replace("_", " ")
            own = index.ask(question, strategy="extractive")
            same = index.ask(question, strategy="extractive",
                             where={"title": article, "doc_id": {"$ne": paragraph}})
            other = index.ask(question, strategy="extractive", where={"title": elsewhere[qid]})
            plain = answer_text(own.text)
            scorer = shared_cross_encoder(index.parts)
            rows.append({"qid": qid, "answerable": features(own, scorer), "same_topic": features(same, scorer),
                         "other_article": features(other, scorer),
                         "f1": token_f1(plain, golds[qid]), "contains": contains(plain, golds[qid])})
            if n % 25 == 0:
                print(f"{n}/{len(qids)}", file=sys.stderr, flush=True)
    return rows


def refused(row: dict, sentence: float, passage: float) -> bool:
    return row["sentence"] < sentence or row["passage"] < passage


def sweep(rows: list[dict], floors: list[float], passage_floors: list[float]) -> str:
    """Every gate (best sentence below ``floor``, or best passage below ``passage floor``)."""
    n = len(rows)
    lines = [f"{n} questions", "",
             "| sentence floor | passage floor | answerable refused | same topic refused | other article refused "
             "| F1 | contains |", "|---|---|---|---|---|---|---|"]
    for floor in floors:
        for passage in passage_floors:
            kept = [r for r in rows if not refused(r["answerable"], floor, passage)]
            lines.append(
                f"| {floor:g} | {passage:g} | {1 - len(kept) / n:.3f} | "
                f"{sum(refused(r['same_topic'], floor, passage) for r in rows) / n:.3f} | "
                f"{sum(refused(r['other_article'], floor, passage) for r in rows) / n:.3f} | "
                f"{sum(r['f1'] for r in kept) / n:.3f} | {sum(r['contains'] for r in kept) / n:.3f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default=str(SHARED / "squad-train"))
    parser.add_argument("--split", default="train")
    parser.add_argument("--limit", type=int, default=150)
    parser.add_argument("--floors", type=float, nargs="*", default=FLOORS)
    parser.add_argument("--passage-floors", type=float, nargs="*", default=[0.0])
    parser.add_argument("--rows", type=Path, help="sweep the probabilities written by an earlier --out, asking nothing")
    parser.add_argument("--cache", type=Path, default=default_cache_dir())
    parser.add_argument("--out", type=Path, help="also write the per-question probabilities here (JSON)")
    args = parser.parse_args()
    rows = json.loads(args.rows.read_text()) if args.rows else measure(args)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print(sweep(rows, args.floors, args.passage_floors))


if __name__ == "__main__":
    main()
