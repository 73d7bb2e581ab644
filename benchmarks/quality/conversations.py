"""Follow-up questions on convqa-dev (issue 23): retrieval with each way of making a turn standalone.

    python -m benchmarks conversations --data ../shared/datasets/convqa-dev            # offline rows
    python -m benchmarks conversations --data ../shared/datasets/convqa-dev --llm qwen2.5-coder-0.5b

Part 1, the 123 follow-up turns with gold passages (MTRAG-UN), searched (hybrid, k=10) on the
553-passage corpus with: (a) the question alone, (b) the offline rewrite, (c) the LLM rewrite,
(d) every user question so far concatenated. nDCG@10 and Recall@5 of the gold passages, and the
milliseconds a rewrite adds. Part 2, the 1,699 CANARD questions with human rewrites: the share of
the terms the human added to the question that the rewrite also adds, and token F1 against the
human rewrite. Conversations are split in two by a hash of their id: "tune" (the half the rules
were written on) and "report" (the other half); both are printed, report is the figure to quote.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ragloom.generate.followup import Rewrite, Turn, content_words, llm_rewrite, offline_rewrite, words


def half(conversation_id: str) -> str:
    return "tune" if int(hashlib.sha256(conversation_id.encode()).hexdigest(), 16) % 2 == 0 else "report"


def history_of(turns: list[dict]) -> list[Turn]:
    history: list[Turn] = []
    for turn in turns:
        history.append(Turn("user", turn["question"]))
        if turn.get("response"):
            history.append(Turn("assistant", turn["response"]))
    return history


def followups(data: Path, unanswerable: bool = False) -> list[dict]:
    """The follow-up turns with gold passages, or (``unanswerable``) those MTRAG marks unanswerable."""
    rows = []
    for line in (data / "conversations.jsonl").read_text().splitlines():
        conversation = json.loads(line)
        last = conversation["turns"][-1]
        if last.get("multi_turn") != "Follow-up":
            continue
        if (last.get("answerability") == "UNANSWERABLE" and not last.get("doc_ids")) if unanswerable else last.get("doc_ids"):
            rows.append({"id": conversation["_id"], "question": last["question"], "gold": last["doc_ids"],
                         "history": history_of(conversation["turns"][:-1]), "answers": last.get("answers") or []})
    return rows


def concatenated(question: str, history: list[Turn]) -> Rewrite:
    query = " ".join([t.content for t in history if t.role == "user"] + [question])
    return Rewrite(query, question, "concat", "every user question so far")


def alone(question: str, history: list[Turn]) -> Rewrite:
    return Rewrite(question, question, "none", "the question alone")


def retrieval(index, rows: list[dict], rewrite: Callable[[str, list[Turn]], Rewrite]) -> dict:
    from ragloom.eval.metrics import per_query_metrics

    qrels, run, recall5, spent = {}, {}, [], []
    for row in rows:
        started = time.perf_counter()
        rewritten = rewrite(row["question"], row["history"])
        spent.append(time.perf_counter() - started)
        hits = index.search(rewritten.query[:4000], k=10)
        ranked = {}
        for hit in hits:
            ranked.setdefault(hit.doc_id, float(10 - len(ranked)))
        qrels[row["id"]] = dict.fromkeys(row["gold"], 1)
        run[row["id"]] = ranked
        top5 = list(ranked)[:5]
        recall5.append(len(set(top5) & set(row["gold"])) / len(row["gold"]))
    ndcg = per_query_metrics(qrels, run)["nDCG@10"]
    return {"nDCG@10": sum(ndcg.values()) / len(ndcg), "R@5": sum(recall5) / len(recall5),
            "ms": 1000 * sorted(spent)[len(spent) // 2], "ms_max": 1000 * max(spent), "n": len(rows)}


def canard(data: Path, rewrite: Callable[[str, list[Turn]], Rewrite], split: str, with_title: bool,
           limit: int | None = None) -> dict:
    added_found = added_total = 0
    f1s = []
    for line in (data / "rewrites.jsonl").read_text().splitlines():
        if limit is not None and len(f1s) >= limit:
            break
        dialog = json.loads(line)
        if half(dialog["_id"]) != split:
            continue
        context = [Turn("system", f"{dialog['title']}. {dialog['section']}")] if with_title else []
        history: list[Turn] = list(context)
        for turn in dialog["turns"]:
            ours = rewrite(turn["question"], history).query
            human = turn["rewrite"] or turn["question"]
            added = set(content_words(human)) - set(words(turn["question"]))
            mine = set(words(ours))
            added_found += len(added & mine)
            added_total += len(added)
            f1s.append(_f1(words(ours), words(human)))
            history += [Turn("user", turn["question"]), Turn("assistant", turn.get("response") or "")]
    return {"added_terms_recovered": added_found / max(added_total, 1), "token_F1": sum(f1s) / len(f1s), "n": len(f1s)}


def _f1(a: list[str], b: list[str]) -> float:
    from collections import Counter

    common = sum((Counter(a) & Counter(b)).values())
    if not common:
        return 0.0
    precision, recall = common / len(a), common / len(b)
    return 2 * precision * recall / (precision + recall)


def llm_method(model: str) -> Callable[[str, list[Turn]], Rewrite]:
    from ragloom.config import LLMConfig
    from ragloom.generate import create_llm
    from ragloom.generate.prompts import TEMPLATES

    llm = create_llm(LLMConfig(model=model, max_tokens=64))
    return lambda question, history: llm_rewrite(question, history, llm.complete, TEMPLATES["followup"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/datasets/convqa-dev"))
    parser.add_argument("--index", type=Path, default=None)
    parser.add_argument("--llm", default=None, help="a packaged LLM (e.g. qwen2.5-coder-0.5b) for row (c)")
    parser.add_argument("--llm-canard", type=int, default=150, help="CANARD questions (report half) rewritten by the LLM")
    parser.add_argument("--splits", default="tune,report")
    args = parser.parse_args()
    from ragloom import Index
    from ragloom.config import Config

    index_path = args.index or Path(tempfile.mkdtemp(prefix="ragloom-convqa-")) / "index"
    with Index.open(index_path, Config.from_dict({})) as index:
        if not index.stats().chunks:
            index.ingest([args.data / "corpus.jsonl"])
        rows = followups(args.data)
        methods: dict[str, Callable] = {"(a) question alone": alone, "(b) offline rewrite": offline_rewrite,
                                        "(d) all user questions": concatenated}
        if args.llm:
            methods["(c) LLM rewrite " + args.llm] = llm_method(args.llm)
        print("| split | query | n | nDCG@10 | R@5 | ms p50 (max) |")
        print("|---|---|---|---|---|---|")
        for split in args.splits.split(","):
            subset = [r for r in rows if half(r["id"]) == split]
            for name, method in methods.items():
                result = retrieval(index, subset, method)
                print(f"| {split} | {name} | {result['n']} | {result['nDCG@10']:.4f} | {result['R@5']:.4f} | "
                      f"{result['ms']:.2f} ({result['ms_max']:.2f}) |")
        print()
        print("| split | rewrite | title given | n | human-added terms recovered | token F1 |")
        print("|---|---|---|---|---|---|")
        for split in args.splits.split(","):
            for with_title in (False, True):
                rewrites = [("question alone", alone, None), ("offline", offline_rewrite, None)]
                if args.llm and split == "report" and with_title:
                    rewrites.append(("LLM " + args.llm, methods["(c) LLM rewrite " + args.llm], args.llm_canard))
                for name, method, limit in rewrites:
                    r = canard(args.data, method, split, with_title, limit)
                    print(f"| {split} | {name} | {with_title} | {r['n']} | {r['added_terms_recovered']:.3f} | "
                          f"{r['token_F1']:.3f} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
