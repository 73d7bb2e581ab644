"""Keyword test sets: for users who have queries and know what a right answer says, but no qrels.

A YAML or JSONL list of cases::

    - query: Phase 1 method verification requirements
      keywords: [function, method, AST, grep]    # all must appear in the passage (any case)
      metadata: {phase: 1}                       # and the passage's metadata must agree
      where: {source: {$in: [...]}}              # optional filter applied to the search itself

The format of ``spec/05-agent-os-rag-architecture.md`` is read as well: ``expected_keywords``
is ``keywords``, any other ``expected_NAME`` is ``metadata.NAME``, ``min_relevance`` is ``min_score``.
A query passes at top-1 when the first hit satisfies it, at top-k when any of the first k does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..index import Index
from ..types import Hit
from .beir import DatasetError
from .metrics import percentile


class KeywordCase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1)
    keywords: list[str] = Field(default_factory=list, validation_alias=AliasChoices("keywords", "expected_keywords"))
    metadata: dict[str, Any] = Field(default_factory=dict)
    where: dict[str, Any] = Field(default_factory=dict)
    min_score: float | None = Field(None, validation_alias=AliasChoices("min_score", "min_relevance"))

    @model_validator(mode="before")
    @classmethod
    def _expected_fields(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        metadata = dict(data.get("metadata") or {})
        for key in [k for k in data if k.startswith("expected_") and k != "expected_keywords"]:
            metadata[key.removeprefix("expected_")] = data.pop(key)
        if metadata:
            data["metadata"] = metadata
        return data


def load_keyword_cases(path: str | Path) -> list[KeywordCase]:
    file = Path(path).expanduser()
    if not file.is_file():
        raise DatasetError(f"{path}: no such keyword test file")
    text = file.read_text(encoding="utf-8")
    try:
        if file.suffix.lower() in (".jsonl", ".ndjson"):
            raw: Any = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:  # YAML, which also reads a JSON array
            raw = yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise DatasetError(f"{path} cannot be parsed: {exc}") from None
    if isinstance(raw, dict) and isinstance(raw.get("queries"), list):
        raw = raw["queries"]
    if not isinstance(raw, list) or not raw:
        raise DatasetError(f"{path} must hold a non-empty list of {{query, keywords}} cases")
    cases = []
    for number, item in enumerate(raw, start=1):
        try:
            cases.append(KeywordCase.model_validate(item))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'case'}: {e['msg']}" for e in exc.errors())
            raise DatasetError(f"{path}, case {number}: {problems}") from None
    return cases


def unmet(case: KeywordCase, hit: Hit) -> list[str]:
    """What ``hit`` lacks to satisfy ``case``: missing keywords and disagreeing metadata."""
    text = hit.text.casefold()
    problems = [f"keyword {kw!r}" for kw in case.keywords if kw.casefold() not in text]
    problems += [
        f"{key}={expected!r} (got {hit.metadata.get(key)!r})"
        for key, expected in case.metadata.items()
        if not _metadata_matches(hit.metadata, key, expected)
    ]
    if case.min_score is not None and hit.score < case.min_score:
        problems.append(f"score >= {case.min_score} (got {hit.score:.3f})")
    return problems


def _metadata_matches(metadata: dict[str, Any], key: str, expected: Any) -> bool:
    """Case-insensitive equality; a list value matches any of its items; a section also
    matches any heading on its path. A list of expected values must all match."""
    if isinstance(expected, list):
        return all(_metadata_matches(metadata, key, item) for item in expected)
    actual = metadata.get(key)
    candidates = list(actual) if isinstance(actual, (list, tuple)) else [actual]
    if key == "section":
        candidates += list(metadata.get("section_path") or [])
    wanted = str(expected).casefold()
    return any(c is not None and str(c).casefold() == wanted for c in candidates)


@dataclass
class KeywordFailure:
    query: str
    #: What the first hit lacked (empty when there was no hit at all).
    top1_unmet: list[str]
    top1_source: str | None
    top1_snippet: str | None
    #: Rank of the first hit that satisfied the case within top-k, if any.
    first_passing_rank: int | None


@dataclass
class KeywordResult:
    name: str
    mode: str
    k: int
    cases: int
    top1_passed: int = 0
    topk_passed: int = 0
    failures: list[KeywordFailure] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)

    @property
    def top1_accuracy(self) -> float:
        return self.top1_passed / self.cases if self.cases else 0.0

    @property
    def topk_accuracy(self) -> float:
        return self.topk_passed / self.cases if self.cases else 0.0

    @property
    def latency_p50(self) -> float:
        return percentile(self.latencies_ms, 50)

    @property
    def latency_p95(self) -> float:
        return percentile(self.latencies_ms, 95)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "mode": self.mode, "k": self.k, "cases": self.cases,
            "top1_accuracy": self.top1_accuracy, "topk_accuracy": self.topk_accuracy,
            "latency_ms_p50": self.latency_p50, "latency_ms_p95": self.latency_p95,
            "failures": [asdict(f) for f in self.failures],
        }


def evaluate_keywords(index: Index, cases: Sequence[KeywordCase], *, k: int, mode: str | None, name: str) -> KeywordResult:
    result = KeywordResult(name=name, mode=mode or "custom", k=k, cases=len(cases))
    for case in cases:
        started = time.perf_counter()
        hits = index.search(case.query, k=k, where=case.where or None, mode=mode)
        result.latencies_ms.append((time.perf_counter() - started) * 1000)
        problems = [unmet(case, hit) for hit in hits]
        passing = [hit.rank for hit, missing in zip(hits, problems) if not missing]
        result.top1_passed += bool(hits) and not problems[0]
        result.topk_passed += bool(passing)
        if not hits or problems[0]:
            top = hits[0] if hits else None
            result.failures.append(KeywordFailure(
                query=case.query,
                top1_unmet=problems[0] if hits else [],
                top1_source=top.source if top else None,
                top1_snippet=" ".join(top.text.split())[:200] if top else None,
                first_passing_rank=passing[0] if passing else None,
            ))
    return result
