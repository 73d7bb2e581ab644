"""Run every query of a BEIR split through one or more search configurations.

Chunks are aggregated to documents (a document scores as its best chunk), because BEIR
judges documents. Queries are interleaved across configurations, so every configuration
sees the same machine state and the latency columns compare fairly.
"""

from __future__ import annotations

import math
import os
import platform
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..config import Config
from ..errors import QueryError
from ..index import Index, IngestProgress
from .beir import BeirDataset
from .metrics import MEASURES, mean, paired_p_value, per_query_metrics, percentile
from .scratch import BuildInfo, eval_config, index_key, open_scratch_index


@dataclass(frozen=True)
class RunSpec:
    """One column of the comparison: a configuration and the preset to search with
    (None: the configuration's own ``search.pipeline``)."""

    name: str
    config: Config
    mode: str | None
    config_file: str | None = None


@dataclass
class RunResult:
    name: str
    mode: str
    config_file: str | None
    build: BuildInfo
    #: query id -> document id -> score, best first.
    run: dict[str, dict[str, float]] = field(default_factory=dict)
    latencies_ms: dict[str, float] = field(default_factory=dict)
    #: metric -> query id -> value.
    per_query: dict[str, dict[str, float]] = field(default_factory=dict)
    #: query id -> why that query could not be searched (it counts as finding nothing).
    errors: dict[str, str] = field(default_factory=dict)

    def means(self) -> dict[str, float]:
        return {metric: mean(values) for metric, values in self.per_query.items()}

    @property
    def latency_p50(self) -> float:
        return percentile(list(self.latencies_ms.values()), 50)

    @property
    def latency_p95(self) -> float:
        return percentile(list(self.latencies_ms.values()), 95)


@dataclass
class EvalResult:
    dataset: str
    split: str
    k: int
    queries: int
    runs: list[RunResult]
    #: run name -> metric -> p-value of the paired t-test against the first run.
    p_values: dict[str, dict[str, float]]
    created_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    machine: dict[str, str] = field(default_factory=lambda: machine_info())

    @property
    def baseline(self) -> RunResult:
        return self.runs[0]


class QueryProgress:
    """Callbacks the query loop reports to."""

    def start(self, total: int) -> None: ...
    def done(self, run: str) -> None: ...


def evaluate_beir(
    dataset: BeirDataset,
    specs: Sequence[RunSpec],
    cache_dir: Path,
    *,
    k: int = 100,
    ingest_progress: IngestProgress | None = None,
    query_progress: QueryProgress | None = None,
) -> EvalResult:
    """Build (or reuse) the scratch indexes, run the queries, and score every run."""
    query_progress = query_progress or QueryProgress()
    with ExitStack() as stack:
        owners: dict[str, tuple[Index, BuildInfo]] = {}
        results: list[RunResult] = []
        views: list[Index] = []
        for spec in specs:
            key = index_key(dataset.corpus_path, spec.config)
            if key not in owners:
                index, build = open_scratch_index(
                    dataset.corpus_path, spec.config, cache_dir, ingest_progress, shard_corpus=True
                )
                stack.callback(index.close)
                owners[key] = (index, build)
            owner, build = owners[key]
            views.append(search_view(owner, eval_config(spec.config, owner.path)))
            results.append(RunResult(spec.name, spec.mode or "custom", spec.config_file, build))
        _run_interleaved(dataset, specs, views, results, k, query_progress)
    for result in results:
        result.per_query = per_query_metrics(dataset.qrels, result.run)
    baseline = results[0]
    p_values = {
        r.name: {m: paired_p_value(baseline.per_query[m], r.per_query[m]) for m in MEASURES} for r in results[1:]
    }
    return EvalResult(dataset.name, dataset.split, k, len(dataset.queries), results, p_values)


def search_view(owner: Index, config: Config) -> Index:
    """The owner's store and embedder under another run's search settings."""
    if config.search == owner.config.search:
        return owner
    # One model in memory, not one per run.
    return Index(owner.path, owner.config.model_copy(update={"search": config.search}), owner.store, owner.embedder)


def _run_interleaved(
    dataset: BeirDataset, specs: Sequence[RunSpec], views: Sequence[Index], results: Sequence[RunResult],
    k: int, progress: QueryProgress,
) -> None:
    queries = list(dataset.queries.items())
    depths = [initial_depth(k, r.build.chunks, r.build.documents) for r in results]
    for spec, view, depth in zip(specs, views, depths):  # load models and caches before the clock starts
        if queries:
            search_documents(view, queries[0][1], k, spec.mode, depth)
    progress.start(len(queries) * len(specs))
    for qid, text in queries:
        for spec, view, result, depth in zip(specs, views, results, depths):
            started = time.perf_counter()
            try:
                docs = search_documents(view, text, k, spec.mode, depth, exclude=qid)
            except QueryError as exc:  # one query the run refuses: recorded, scored as finding nothing
                docs = {}
                result.errors[qid] = str(exc)
            else:
                result.latencies_ms[qid] = (time.perf_counter() - started) * 1000
            result.run[qid] = docs
            progress.done(spec.name)


def search_documents(
    index: Index, query: str, k: int, mode: str | None, depth: int, exclude: str | None = None
) -> dict[str, float]:
    """The ``k`` best documents of a ragloom index, each scored by its best chunk, best first."""
    return top_documents(
        lambda n: [(hit.doc_id, hit.score) for hit in index.search(query, k=n, mode=mode)], k, depth, exclude
    )


def top_documents(
    fetch: Callable[[int], Sequence[tuple[str, float]]], k: int, depth: int, exclude: str | None = None
) -> dict[str, float]:
    """Aggregate ranked chunks ``(doc_id, score)`` to the ``k`` best documents (max score).

    ``fetch(n)`` returns the best ``n`` chunks, best first. It is asked for ``depth``
    chunks, then twice as many until ``k`` distinct documents are found or the index
    runs out. A document whose id is ``exclude`` (the query's own) is left out, as BEIR
    does: in ArguAna and Quora a query is also a corpus document.
    """
    while True:
        chunks = fetch(depth)
        docs: dict[str, float] = {}
        for doc_id, score in chunks:  # best first, so the first chunk seen is the document's best
            if doc_id != exclude:
                docs.setdefault(doc_id, score)
        if len(docs) >= k or len(chunks) < depth:
            return dict(list(docs.items())[:k])
        depth *= 2


def initial_depth(k: int, chunks: int, documents: int) -> int:
    """Chunks to ask for so that ``k`` documents usually come back in one search."""
    per_document = chunks / documents if documents else 1.0
    return max(k, math.ceil(k * per_document * 1.5))


def machine_info() -> dict[str, str]:
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": str(os.cpu_count()),
        "processor": platform.processor() or platform.machine(),
    }
