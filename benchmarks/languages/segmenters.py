"""Word segmenters against character bigrams for BM25 over Chinese and Thai (issue 31).

    python -m benchmarks segmenters                    # zh and th of xquad-dev, every mode
    python -m benchmarks segmenters --languages zh --modes bigrams jieba

Each paragraph of ``xquad-dev/<lang>`` is one chunk of the project's own BM25 index
(``LexicalIndex``, the analyser of the language's family), and each question is searched as
the store searches it; only how a run of Chinese or Thai characters becomes tokens changes:

- ``bigrams``: overlapping character bigrams (Chinese's default, and Thai's before ``nlpo3``);
- ``jieba`` / ``jieba-search``: jieba 0.42.1 words (precise mode / its search mode, which also
  gives the shorter words inside a long one), Chinese only;
- ``newmm``: pythainlp 5.4's dictionary-based maximal matching, Thai only;
- ``nlpo3``: the same algorithm in nlpo3 1.4.0 (Rust) with PyThaiNLP's ``words_th.txt``, as
  ragloom reads Thai by default (``lang/thai.py``), Thai only;
- ``<segmenter>+bigrams``: the segmenter's words and the bigrams, both.

jieba and pythainlp are measured here, not ragloom dependencies (``pip install jieba==0.42.1
pythainlp==5.4.0``); a mode whose package is missing is skipped.
Prints nDCG@10 and recall@10 as a Markdown table, and how many characters a second each mode
prepares (one thread; a wall-clock figure, so "under load" on a shared machine).
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ragloom.eval.metrics import mean, paired_p_value, per_query_metrics
from ragloom.lang import analysis
from ragloom.stores.embedded import lexical
from ragloom.types import Chunk

from .. import harness

SHARED = harness.DATASETS
XQUAD = SHARED / "xquad-dev"
FAMILY = {"zh": "cjk", "th": "th"}
SCRIPT = {"zh": analysis.BIGRAM_SCRIPTS["cjk"], "th": analysis.SEGMENTED_SCRIPTS["th"]}
MODES = {"zh": ["bigrams", "jieba", "jieba-search", "jieba+bigrams", "jieba-search+bigrams"],
         "th": ["bigrams", "newmm", "newmm+bigrams", "nlpo3", "nlpo3+bigrams"]}


def segmenter(mode: str) -> Callable[[str], list[str]]:
    """Words of a run of Chinese or Thai characters."""
    name = mode.removesuffix("+bigrams")
    if name == "jieba":
        import jieba

        jieba.setLogLevel(60)
        return lambda run: list(jieba.cut(run, HMM=True))
    if name == "jieba-search":
        import jieba

        jieba.setLogLevel(60)
        return lambda run: list(jieba.cut_for_search(run, HMM=True))
    if name == "newmm":
        from pythainlp.tokenize import word_tokenize

        return lambda run: word_tokenize(run, engine="newmm", keep_whitespace=False)
    if name == "nlpo3":
        from ragloom.lang import thai

        return thai.words
    raise ValueError(mode)


def preparer(mode: str, language: str) -> Callable[[str, str], str]:
    """A replacement for ``analysis.prepare`` that reads the language's script runs the ``mode`` way."""
    original, family = analysis_prepare, FAMILY[language]
    run = re.compile(f"[{SCRIPT[language]}]+")
    if mode == "bigrams":
        return lambda name, text: run.sub(analysis._bigrams, text) if name == family else original(name, text)
    cut = segmenter(mode)
    cut("预热" if language == "zh" else "ทดสอบ")  # loads the dictionary before anything is timed
    with_bigrams = mode.endswith("+bigrams")

    def words(match: re.Match[str]) -> str:
        text = match.group(0)
        found = " " + " ".join(w for w in cut(text) if w.strip()) + " "
        return found + analysis._bigrams(match) if with_bigrams else found

    def prepare(name: str, text: str) -> str:
        return run.sub(words, text) if name == family else original(name, text)

    return prepare


def load(language: str) -> tuple[dict[str, str], dict[str, str], dict[str, dict[str, int]]]:
    folder = XQUAD / language
    corpus = {}
    for line in (folder / "corpus.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        corpus[row["_id"]] = f"{row.get('title', '')}\n{row['text']}".strip()
    queries = {row["_id"]: row["text"] for row in map(json.loads, (folder / "queries.jsonl").open(encoding="utf-8"))}
    qrels: dict[str, dict[str, int]] = {}
    for line in list((folder / "qrels" / "dev.tsv").open(encoding="utf-8"))[1:]:
        qid, doc, score = line.split("\t")[:3]
        qrels.setdefault(qid, {})[doc] = int(score)
    return corpus, {q: queries[q] for q in qrels}, qrels


def measure(language: str, mode: str) -> dict:
    corpus, queries, qrels = load(language)
    prepare = preparer(mode, language)
    analysis.prepare = lexical.prepare = prepare  # the store's own BM25, fed another tokenisation
    try:
        started = time.perf_counter()
        for text in [*corpus.values(), *queries.values()]:
            prepare(FAMILY[language], text)
        seconds = time.perf_counter() - started
        chunks = [Chunk(doc, text, doc, doc, 0, 0, len(text), "paragraph", doc, 0, {"lang": language})
                  for doc, text in corpus.items()]
        with tempfile.TemporaryDirectory() as folder:
            index = lexical.LexicalIndex(Path(folder), threads=1)
            index.rebuild(enumerate(chunks), 1)
            run = {qid: {c.chunk_id: c.score for c in index.search(text, 100)} for qid, text in queries.items()}
            index.close()
    finally:
        analysis.prepare = lexical.prepare = analysis_prepare
    scores = per_query_metrics(qrels, run)
    chars = sum(map(len, corpus.values())) + sum(map(len, queries.values()))
    return {"per_query": scores["nDCG@10"], "nDCG@10": mean(scores["nDCG@10"]), "recall@10": mean(scores["recall@10"]),
            "chars_per_second": chars / seconds, "queries": len(queries)}


analysis_prepare = analysis.prepare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--languages", nargs="+", default=list(FAMILY), choices=list(FAMILY))
    parser.add_argument("--modes", nargs="+", help="only these modes (default: every mode of each language)")
    args = parser.parse_args()
    print("| language | mode | nDCG@10 | p vs bigrams | recall@10 | chars/s prepared |\n|---|---|---|---|---|---|",
          flush=True)
    for language in args.languages:
        baseline = None
        for mode in args.modes or MODES[language]:
            if mode not in MODES[language]:
                continue
            try:
                row = measure(language, mode)
            except ImportError as exc:
                print(f"| {language} | {mode} | skipped: {exc} | | | |", flush=True)
                continue
            baseline = row["per_query"] if mode == "bigrams" else baseline
            p = f"{paired_p_value(baseline, row['per_query']):.3f}" if baseline and mode != "bigrams" else "-"
            print(f"| {language} | {mode} | {row['nDCG@10']:.4f} | {p} | {row['recall@10']:.4f} | "
                  f"{row['chars_per_second']:,.0f} |", flush=True)
    print(f"\n{len(load(args.languages[0])[1])} questions per language; load average {harness.load_average():.2f}")


if __name__ == "__main__":
    main()
