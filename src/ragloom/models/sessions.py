"""ONNX sessions side by side: the way the packaged encoders use the CPU.

One onnxruntime session given two intra-op threads splits every operator of one small input
between two cores, and for the short texts ragloom embeds most of that time goes to
synchronising the threads. Two single-threaded sessions, each running a whole text on its
own core, keep both cores busy: SciFact chunks embed 1.3–1.4× faster, and every vector is bit
for bit what the single two-thread session gives (``benchmarks/models/model_sessions.py``,
BENCHMARKS.md). onnxruntime releases the GIL while a session runs, so threads suffice.

``SessionPool`` holds up to ``count`` sessions of one model, made when first needed (a process
that only embeds one query loads one). Every caller borrows a free session for one run, so at
most ``count`` runs use the CPU at once however many threads ask: four concurrent searches on
two cores queue for two sessions instead of oversubscribing them. ``map`` runs independent
jobs on the pool's own workers, one per session, in input order.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

J = TypeVar("J")
R = TypeVar("R")


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity, which containers and taskset narrow)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def session_plan(threads: int, sessions: int) -> tuple[int, int]:
    """(sessions, intra-op threads of each) for ``threads`` CPU threads in all (0 = every usable
    core) split over ``sessions`` sessions (0 = one single-threaded session per thread)."""
    total = threads or usable_cores()
    count = sessions or total
    return count, max(1, total // count)


class SessionPool:
    """Up to ``count`` onnxruntime sessions of one model file, each with ``threads_each`` threads."""

    def __init__(self, model_file: Path, *, count: int = 1, threads_each: int = 1) -> None:
        self.model_file = model_file
        self.count = max(1, count)
        self.threads_each = max(1, threads_each)
        self._free: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._made = 0
        self._lock = threading.Lock()
        self._workers: ThreadPoolExecutor | None = None
        self._in_worker = threading.local()
        first = self._new()
        self._free.put(first)
        #: Names of the model's inputs, and its outputs' metadata (from the first session).
        self.input_names = {i.name for i in first.get_inputs()}
        self.outputs = first.get_outputs()

    def _new(self) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads_each
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = ort.InferenceSession(str(self.model_file), sess_options=options, providers=["CPUExecutionProvider"])
        self._made += 1
        return session

    @property
    def sessions_made(self) -> int:
        return self._made

    @contextmanager
    def session(self) -> Iterator[Any]:
        """A session no other thread is running, for one run; waits when all ``count`` are busy."""
        try:
            session = self._free.get_nowait()
        except queue.Empty:
            with self._lock:
                session = self._new() if self._made < self.count else None
            if session is None:
                session = self._free.get()
        try:
            yield session
        finally:
            self._free.put(session)

    def run(self, feeds: dict[str, Any]) -> Any:
        """The first output of one run on a free session."""
        with self.session() as session:
            return session.run(None, feeds)[0]

    def map(self, fn: Callable[[J], R], jobs: Iterable[J]) -> Iterator[R]:
        """``fn`` of each job, in order, up to ``count`` at once on the pool's workers. Runs in the
        calling thread when there is one session, one job, or the caller is a worker itself."""
        jobs = list(jobs)
        if self.count == 1 or len(jobs) <= 1 or getattr(self._in_worker, "active", False):
            return (fn(job) for job in jobs)
        return self._parallel(fn, jobs)

    def _parallel(self, fn: Callable[[J], R], jobs: list[J]) -> Iterator[R]:
        with self._lock:
            if self._workers is None:
                self._workers = ThreadPoolExecutor(self.count, thread_name_prefix="ragloom-onnx")
            workers = self._workers

        def work(job: J) -> R:
            self._in_worker.active = True
            return fn(job)

        futures: list[Future[R]] = [workers.submit(work, job) for job in jobs]
        try:
            for future in futures:
                yield future.result()
        finally:  # a failed job or an abandoned iterator: the rest need not run
            for future in futures:
                future.cancel()

    def close(self) -> None:
        """Stop the workers; the sessions go with the object."""
        with self._lock:
            workers, self._workers = self._workers, None
        if workers is not None:
            workers.shutdown(wait=True, cancel_futures=True)
