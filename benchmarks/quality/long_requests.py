"""Long natural-language requests, lexically: ragloom's BM25 against plain BM25 on the same texts.

A classic test collection of long requests (CACM: titles plus abstracts) is not here, so the
requests are made from data that is: each paragraph of SQuAD-train's test-split articles is a
request (title and text, 100-200 words, quotes and parentheses as written), and the other
paragraphs of its article are what it should find (the paragraph itself is left out, as BEIR does
when a query is also a document). The corpus is SQuAD-train's whole corpus (2,430 paragraphs).

Runs, nDCG@10 / MRR@10 / Recall@10 on the same requests:
- plain BM25: bm25s (k1 1.2, b 0.75, Lucene's idf), English stop words, Snowball stemmer;
- ragloom lexical as it is, and with each distinct query term counted once (what it did before:
  the measured lever).

    pip install bm25s PyStemmer          # the reference only (benchmarks/peers/requirements-peers.txt)
    python -m benchmarks long_requests --limit 300
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from unittest import mock

from ragloom.config import Config
from ragloom.eval.beir import iter_jsonl, load_beir
from ragloom.eval.metrics import mean, per_query_metrics
from ragloom.eval.runner import RunSpec, evaluate_beir
from ragloom.eval.scratch import default_cache_dir
from ragloom.stores.embedded.lexical import LexicalIndex

from .. import harness

SHARED = harness.DATASETS


def make_dataset(squad: Path, folder: Path, limit: int) -> Path:
    """A BEIR folder: SQuAD-train's corpus; requests = test-split paragraphs; relevant = their article's others."""
    test_articles = {doc.rsplit("_", 1)[0] for docs in load_beir(squad, "test").qrels.values() for doc in docs}
    corpus = [record for _, record in iter_jsonl(squad / "corpus.jsonl")]
    by_article = defaultdict(list)
    for record in corpus:
        by_article[record["_id"].rsplit("_", 1)[0]].append(record)
    requests = sorted((r for a in sorted(test_articles) for r in by_article[a]), key=lambda r: r["_id"])
    if limit and limit < len(requests):
        step = len(requests) / limit
        requests = [requests[int(i * step)] for i in range(limit)]
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").symlink_to((squad / "corpus.jsonl").resolve())  # one scratch index for both tables
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"_id": r["_id"], "text": f"{r['title']}\n\n{r['text']}"}) + "\n" for r in requests), encoding="utf-8")
    lines = ["query-id\tcorpus-id\tscore"]
    for r in requests:
        article = r["_id"].rsplit("_", 1)[0]
        lines += [f"{r['_id']}\t{other['_id']}\t1" for other in by_article[article] if other["_id"] != r["_id"]]
    (folder / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def plain_bm25(folder: Path, k: int) -> dict[str, float]:
    import bm25s
    import Stemmer

    dataset = load_beir(folder, "test")
    corpus = [record for _, record in iter_jsonl(dataset.corpus_path)]
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    retriever.index(bm25s.tokenize([f"{r['title']}\n\n{r['text']}" for r in corpus], stopwords="en",
                                   stemmer=stemmer, show_progress=False), show_progress=False)
    ids = [r["_id"] for r in corpus]
    qids = list(dataset.queries)
    tokens = bm25s.tokenize([dataset.queries[q] for q in qids], stopwords="en", stemmer=stemmer, show_progress=False)
    docs, scores = retriever.retrieve(tokens, k=k + 1, show_progress=False)
    run = {qid: {ids[d]: float(s) for d, s in zip(row, row_scores) if ids[d] != qid}
           for qid, row, row_scores in zip(qids, docs, scores)}
    return {name: mean(values) for name, values in per_query_metrics(dataset.qrels, run).items()}


def ragloom_lexical(folder: Path, cache: Path, k: int, split: str = "test") -> dict[str, float]:
    dataset = load_beir(folder, split)
    result = evaluate_beir(dataset, [RunSpec("lexical", Config(), "lexical")], cache, k=k)
    return result.runs[0].means()


def each_term_once():  # noqa: ANN201 - a patch of LexicalIndex.term_weights
    """ragloom's lexical search as it was: every distinct term of the query counted once."""
    original = LexicalIndex.term_weights
    return mock.patch.object(LexicalIndex, "term_weights", lambda self, query: {
        family: dict.fromkeys(counts, 1) for family, counts in original(self, query).items()})


def table(title: str, rows: dict[str, dict[str, float]]) -> None:
    metrics = list(next(iter(rows.values())))
    print(f"{title}\n")
    print("| run | " + " | ".join(metrics) + " |")
    print("|---|" + "---|" * len(metrics))
    for name, values in rows.items():
        print(f"| {name} | " + " | ".join(f"{values[m]:.3f}" for m in metrics) + " |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--squad", type=Path, default=SHARED / "squad-train")
    parser.add_argument("--limit", type=int, default=300, help="requests (0: every test-split paragraph)")
    parser.add_argument("--cache", type=Path, default=default_cache_dir())
    args = parser.parse_args()
    folder = make_dataset(args.squad, Path(tempfile.mkdtemp(prefix="long-requests-")), args.limit)
    rows = {"plain BM25 (bm25s)": plain_bm25(folder, 100)}
    rows["ragloom lexical"] = ragloom_lexical(folder, args.cache, 100)
    with each_term_once():
        rows["ragloom lexical, each term once (before)"] = ragloom_lexical(folder, args.cache, 100)
    table(f"{len(load_beir(folder, 'test').queries)} long requests (SQuAD-train test-split paragraphs)", rows)
    # The same index with the dataset's own short questions: what the change does elsewhere.
    short = {"ragloom lexical": ragloom_lexical(args.squad, args.cache, 100)}
    with each_term_once():
        short["ragloom lexical, each term once (before)"] = ragloom_lexical(args.squad, args.cache, 100)
    table(f"{len(load_beir(args.squad, 'test').queries)} SQuAD-train test-split questions", short)


if __name__ == "__main__":
    sys.exit(main())
