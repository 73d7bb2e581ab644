"""BEIR-format datasets: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

Relevance grades are kept as given (0, 1, 2, ...), so graded measures such as nDCG
use them; a grade of 0 marks a judged, non-relevant document.
"""

from __future__ import annotations

import csv
import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..errors import RagloomError

Qrels = dict[str, dict[str, int]]


class DatasetError(RagloomError, ValueError):
    """A dataset folder is missing a file or holds one that cannot be read."""


@dataclass(frozen=True)
class BeirDataset:
    """The queries of one split, their relevance judgements, and where the corpus is."""

    root: Path
    split: str
    corpus_path: Path
    queries: dict[str, str]
    qrels: Qrels

    @property
    def name(self) -> str:
        return self.root.name


def load_beir(root: str | Path, split: str = "test") -> BeirDataset:
    """Read a BEIR folder; only queries judged in ``split`` are kept."""
    folder = Path(root).expanduser().resolve()
    if not folder.is_dir():
        raise DatasetError(f"{root} is not a folder; give a BEIR dataset folder (corpus.jsonl, queries.jsonl, qrels/)")
    corpus = _first_existing(folder, ("corpus.jsonl", "corpus.jsonl.gz"))
    queries_file = _first_existing(folder, ("queries.jsonl", "queries.jsonl.gz"))
    qrels_file = folder / "qrels" / f"{split}.tsv"
    if not qrels_file.is_file():
        found = sorted(p.stem for p in (folder / "qrels").glob("*.tsv")) if (folder / "qrels").is_dir() else []
        raise DatasetError(
            f"{folder} has no qrels/{split}.tsv; "
            + (f"splits found: {', '.join(found)} (use --split)" if found else "a BEIR folder needs qrels/<split>.tsv")
        )
    qrels = read_qrels(qrels_file)
    all_queries = read_queries(queries_file)
    missing = [qid for qid in qrels if qid not in all_queries]
    if missing:
        raise DatasetError(
            f"{qrels_file} judges {len(missing)} queries that {queries_file.name} does not have "
            f"(first: {missing[0]!r}); the files belong to different datasets"
        )
    queries = {qid: all_queries[qid] for qid in qrels}
    return BeirDataset(root=folder, split=split, corpus_path=corpus, queries=queries, qrels=qrels)


def read_qrels(path: Path) -> Qrels:
    """``query-id <tab> corpus-id <tab> score`` with an optional header line."""
    qrels: Qrels = {}
    with open(path, encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.reader(handle, delimiter="\t"), start=1):
            if not row or (number == 1 and row[0] == "query-id"):
                continue
            if len(row) < 3:
                raise DatasetError(f"{path}, line {number}: expected query-id, corpus-id and score separated by tabs")
            try:
                grade = int(float(row[2]))
            except ValueError:
                raise DatasetError(f"{path}, line {number}: score {row[2]!r} is not a number") from None
            qrels.setdefault(row[0], {})[row[1]] = grade
    if not qrels:
        raise DatasetError(f"{path} holds no judgements")
    return qrels


def read_queries(path: Path) -> dict[str, str]:
    queries: dict[str, str] = {}
    for number, record in iter_jsonl(path):
        qid = record.get("_id", record.get("id"))
        text = record.get("text")
        if qid is None or not isinstance(text, str):
            raise DatasetError(f"{path}, line {number}: a query needs \"_id\" and \"text\"")
        queries[str(qid)] = text
    return queries


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every non-blank line of a (possibly gzipped) JSONL file."""
    with open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path}, line {number}: not valid JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise DatasetError(f"{path}, line {number}: expected a JSON object")
            yield number, record


def open_text(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _first_existing(folder: Path, names: tuple[str, ...]) -> Path:
    for name in names:
        if (folder / name).is_file():
            return folder / name
    raise DatasetError(
        f"{folder} has no {names[0]}; a BEIR dataset folder holds corpus.jsonl, queries.jsonl and qrels/"
    )
