"""Answer quality on a QA dataset in BEIR layout plus ``answers.jsonl`` (``_id``, ``answers``).

Per question and run: exact match and token F1 with SQuAD's normalisation (lower case,
no punctuation, no articles, single spaces) against the best gold answer, containment
(a gold answer appears in the answer), seconds and completion tokens; per question
once: retrieval Recall@k of the gold passage. For answers that cite: citation precision
(cited passages that contain a gold answer) and recall (questions whose context holds a
gold answer and whose answer cites such a passage), and the share of sentences the
support check accepted (ALCE-style, with ragloom's own checker).

A run is an answer strategy, or ``first-sentence``: the first sentence of the top
passage, the baseline an extractive answer must beat.

Unanswerable questions are made from the same ones: each question is asked again with the
search limited (a ``title`` filter) to another article of the split, whose passages do not
answer it. The share answered "The sources do not say." is what an answer strategy should
push up there, without pushing up the same share on the answerable questions.
"""

from __future__ import annotations

import json
import re
import statistics
import string
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..context import sentences
from ..generate.prompts import NO_ANSWER
from ..types import Answer
from .beir import BeirDataset, DatasetError, iter_jsonl

BASELINE = "first-sentence"


# -- SQuAD metrics ---------------------------------------------------------------------------------

def normalize_answer(text: str) -> str:
    """SQuAD v1.1's normalisation: lower case, drop punctuation and articles, squeeze spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def exact_match(prediction: str, golds: Iterable[str]) -> float:
    return float(any(normalize_answer(prediction) == normalize_answer(g) for g in golds))


def token_f1(prediction: str, golds: Iterable[str]) -> float:
    return max((_f1(prediction, g) for g in golds), default=0.0)


def _f1(prediction: str, gold: str) -> float:
    predicted, expected = normalize_answer(prediction).split(), normalize_answer(gold).split()
    common = Counter(predicted) & Counter(expected)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(expected)
    return 2 * precision * recall / (precision + recall)


def contains(prediction: str, golds: Iterable[str]) -> float:
    flat = normalize_answer(prediction)
    return float(any(normalize_answer(g) and normalize_answer(g) in flat for g in golds))


_CITATION = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")


def answer_text(text: str) -> str:
    """The answer without its citation markers, as scored."""
    return _CITATION.sub("", text).strip()


def load_answers(path: str | Path) -> dict[str, list[str]]:
    """``answers.jsonl``: one ``{"_id": ..., "answers": [...]}`` per line."""
    file = Path(path)
    if not file.is_file():
        raise DatasetError(f"{file} does not exist; an answer dataset needs answers.jsonl (_id, answers)")
    out: dict[str, list[str]] = {}
    for line, row in iter_jsonl(file):
        answers = row.get("answers")
        if "_id" not in row or not isinstance(answers, list):
            raise DatasetError(f"{file}:{line}: each line needs _id and a list of answers")
        out[str(row["_id"])] = [str(a) for a in answers]
    return out


# -- runs --------------------------------------------------------------------------------------------

@dataclass
class AnswerRun:
    name: str
    em: dict[str, float] = field(default_factory=dict)
    f1: dict[str, float] = field(default_factory=dict)
    contains: dict[str, float] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    completion_tokens: dict[str, int] = field(default_factory=dict)
    cited: int = 0
    cited_with_answer: int = 0
    recall_hits: int = 0
    recall_total: int = 0
    sentences: int = 0
    supported: int = 0
    warnings: int = 0
    #: 1.0 where the answer was "The sources do not say." (answerable questions).
    refused: dict[str, float] = field(default_factory=dict)
    #: The same, with the question asked of another article (it should be 1.0 there).
    refused_elsewhere: dict[str, float] = field(default_factory=dict)
    examples: list[dict[str, Any]] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        tokens = sum(self.completion_tokens.values())
        seconds = sum(self.seconds.values())
        return {
            "run": self.name, "questions": len(self.em),
            "EM": _mean(self.em), "F1": _mean(self.f1), "contains": _mean(self.contains),
            "s/answer": _mean(self.seconds), "s p50": statistics.median(self.seconds.values()) if self.seconds else 0.0,
            "tokens/s": tokens / seconds if tokens and seconds else None,
            "cite P": self.cited_with_answer / self.cited if self.cited else None,
            "cite R": self.recall_hits / self.recall_total if self.recall_total else None,
            "supported": self.supported / self.sentences if self.sentences else None,
            "warnings": self.warnings,
            "no answer": _mean(self.refused) if self.refused else None,
            "no answer, other article": _mean(self.refused_elsewhere) if self.refused_elsewhere else None,
        }


def _mean(values: Mapping[str, float]) -> float:
    return sum(values.values()) / len(values) if values else 0.0


def first_sentence_answer(index: Any, question: str, k: int) -> str:
    hits = index.search(question, k=k)
    if not hits:
        return ""
    found = [s for s in sentences(hits[0].text) if s.strip()]
    return found[0].strip() if found else hits[0].text


def evaluate_answers(
    index: Any,
    dataset: BeirDataset,
    golds: Mapping[str, list[str]],
    runs: Sequence[str],
    *,
    questions: Sequence[str] | None = None,
    k: int = 5,
    options: Mapping[str, Any] | None = None,
    progress: Callable[[str, str], None] | None = None,
    unanswerable: bool = False,
) -> tuple[list[AnswerRun], float]:
    """Score each run on each question (interleaved, so machine load hits all runs alike);
    also return retrieval Recall@k of the gold passage. With ``unanswerable``, each strategy
    is also asked each question over another article only (``other_articles``)."""
    qids = list(questions or [q for q in dataset.queries if q in golds])
    results = [AnswerRun(name) for name in runs]
    elsewhere = other_articles(dataset, qids) if unanswerable else {}
    found = 0
    for qid in qids:
        question, gold = dataset.queries[qid], golds.get(qid, [])
        relevant = {doc for doc, grade in dataset.qrels.get(qid, {}).items() if grade > 0}
        hits = index.search(question, k=k)
        found += bool(relevant & {hit.doc_id for hit in hits})
        for result in results:
            started = time.perf_counter()
            if result.name == BASELINE:
                text, answer = first_sentence_answer(index, question, k), None
            else:
                answer = index.ask(question, strategy=result.name, k=k, **(options or {}))
                text = answer.text
            score(result, qid, question, text, gold, answer, time.perf_counter() - started)
            if answer is not None and qid in elsewhere:
                other = index.ask(question, strategy=result.name, k=k, where={"title": elsewhere[qid]},
                                  **(options or {}))
                result.refused_elsewhere[qid] = float(other.text.strip() == NO_ANSWER)
            if progress:
                progress(result.name, qid)
    return results, found / len(qids) if qids else 0.0


def other_articles(dataset: BeirDataset, qids: Sequence[str]) -> dict[str, str]:
    """For each question, the title of another article of the split (the next one in sorted
    order), whose passages do not answer it. Corpus ids are ``<Article_Title>_<paragraph>``."""
    article = {qid: next(iter(dataset.qrels[qid])).rsplit("_", 1)[0] for qid in qids if dataset.qrels.get(qid)}
    titles = sorted(set(article.values()))
    if len(titles) < 2:
        raise DatasetError("unanswerable questions need questions from at least two articles")
    following = {title: titles[(i + 1) % len(titles)] for i, title in enumerate(titles)}
    return {qid: following[title].replace("_", " ") for qid, title in article.items()}


def score(result: AnswerRun, qid: str, question: str, text: str, gold: list[str], answer: Answer | None,
          seconds: float) -> None:
    plain = answer_text(text)
    result.em[qid], result.f1[qid] = exact_match(plain, gold), token_f1(plain, gold)
    result.contains[qid], result.seconds[qid] = contains(plain, gold), seconds
    if answer is not None:
        result.refused[qid] = float(text.strip() == NO_ANSWER)
    if len(result.examples) < 5:
        result.examples.append({"_id": qid, "question": question, "answer": text, "gold": gold})
    if answer is None:
        return
    result.completion_tokens[qid] = answer.tokens.get("completion", 0)
    result.warnings += bool(answer.warnings and answer.strategy != "extractive")
    passages = answer.context.passages if answer.context is not None else []
    with_answer = {p.number for p in passages if contains(p.text, gold)}
    cited = set(answer.citations.numbers)
    result.cited += len(cited)
    result.cited_with_answer += len(cited & with_answer)
    if with_answer:
        result.recall_total += 1
        result.recall_hits += bool(cited & with_answer)
    checked = [s for s in answer.sentences if s.supported is not None]
    result.sentences += len(checked)
    result.supported += sum(bool(s.supported) for s in checked)


def table(results: Sequence[AnswerRun], recall: float, k: int) -> str:
    """A Markdown table of the runs, with retrieval Recall@k in the caption."""
    rows = [r.row() for r in results]
    heads = ["run", "questions", "EM", "F1", "contains", "s/answer", "s p50", "tokens/s", "cite P", "cite R",
             "supported", "warnings", "no answer", "no answer, other article"]
    lines = [f"retrieval Recall@{k} of the gold passage: {recall:.3f}", "",
             "| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for row in rows:
        lines.append("| " + " | ".join(_cell(row[h]) for h in heads) + " |")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}" if value < 100 else f"{value:.0f}"
    return str(value)


def spread(qids: Sequence[str], limit: int | None) -> list[str]:
    """A fixed subset of ``limit`` questions spread evenly over the (sorted) list."""
    ordered = sorted(qids)
    if not limit or limit >= len(ordered):
        return ordered
    step = len(ordered) / limit
    return [ordered[int(i * step)] for i in range(limit)]


def dump(results: Sequence[AnswerRun], recall: float, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"recall": recall, "runs": [{**r.row(), "examples": r.examples} for r in results]},
                               indent=2), encoding="utf-8")
