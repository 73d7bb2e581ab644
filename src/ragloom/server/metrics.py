"""Prometheus metrics: requests, latencies, searches, ingest, index size.

Each app has its own registry, so several servers (or tests) in one process do not mix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..types import IndexStats, IngestReport

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class _IndexCollector(Collector):
    """Index size, read when scraped."""

    def __init__(self, stats: Callable[[], IndexStats], jobs: Callable[[], int]) -> None:
        self._stats, self._jobs = stats, jobs

    def collect(self) -> Iterator[GaugeMetricFamily]:
        stats = self._stats()
        yield GaugeMetricFamily("ragloom_index_chunks", "Chunks in the index", value=stats.chunks)
        yield GaugeMetricFamily("ragloom_index_sources", "Source files in the index", value=stats.sources)
        yield GaugeMetricFamily("ragloom_index_disk_bytes", "Size of the index on disk", value=stats.disk_bytes)
        yield GaugeMetricFamily("ragloom_ingest_jobs_pending", "Ingest jobs queued or running", value=self._jobs())


class Metrics:
    def __init__(self, stats: Callable[[], IndexStats], jobs: Callable[[], int]) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("ragloom_http_requests", "HTTP requests", ["method", "route", "status"],
                                registry=self.registry)
        self.latency = Histogram("ragloom_http_request_duration_seconds", "HTTP request latency",
                                 ["method", "route"], buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.searches = Counter("ragloom_searches", "Searches served", ["mode"], registry=self.registry)
        self.search_hits = Counter("ragloom_search_hits", "Hits returned by searches", registry=self.registry)
        self.answers = Counter("ragloom_answers", "Answers served", ["strategy"], registry=self.registry)
        self.jobs = Counter("ragloom_ingest_jobs", "Ingest jobs finished", ["state"], registry=self.registry)
        self.chunks_embedded = Counter("ragloom_ingest_chunks_embedded", "Chunks embedded by ingest jobs",
                                       registry=self.registry)
        self.cache_hits = Counter(
            "ragloom_ingest_embedding_cache_hits",
            "Chunks written without embedding: their vector was cached from the same text", registry=self.registry)
        self.registry.register(_IndexCollector(stats, jobs))

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)

    def observe_job(self, state: str, report: IngestReport | None) -> None:
        self.jobs.labels(state).inc()
        if report is not None:
            self.chunks_embedded.inc(report.chunks_embedded)
            self.cache_hits.inc(max(0, report.chunks_written - report.chunks_embedded))

    def render(self) -> bytes:
        return generate_latest(self.registry)
