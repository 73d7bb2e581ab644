"""A bounded ingest pipeline: files are read and chunked ahead in one thread, the caller
embeds, and store writes happen behind in another, so the model does not wait for the loader
or the writer while either has work. Both queues are bounded, so memory is too.

The embedder (onnxruntime), tokenizers and SQLite release the GIL while they work, which is
what lets the stages overlap on a small machine. Order is kept: sources are written in the
order the files were planned, each in its own transaction, so an interrupted ingest leaves the
same consistent index it did without the pipeline.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

A = TypeVar("A")
B = TypeVar("B")
_DONE = object()


def _put(target: queue.Queue, item: Any, stop: threading.Event) -> bool:
    """Put unless ``stop`` is set first; return whether it was put."""
    while not stop.is_set():
        try:
            target.put(item, timeout=0.1)
            return True
        except queue.Full:
            continue
    return False


def read_ahead(items: Iterable[A], prepare: Callable[[A], B], depth: int = 8) -> Iterator[B]:
    """``prepare(item)`` for each item, in order, computed in a thread up to ``depth`` items ahead.
    An error in ``prepare`` is raised here, where its result would have been (``stream_ahead``
    with one event an item)."""
    return stream_ahead(items, lambda item: (prepare(item),), depth)


#: Yielded by ``stream_ahead`` when no event came within its ``idle`` seconds.
IDLE = object()


def stream_ahead(
    items: Iterable[A], events_of: Callable[[A], Iterable[B]], depth: int = 16, idle: float | None = None,
    on_stop: Callable[[], None] | None = None,
) -> Iterator[Any]:
    """Every event ``events_of(item)`` yields, item after item, produced in a thread up to ``depth``
    events ahead. With ``idle``, ``IDLE`` is yielded whenever none came for that many seconds (so
    the consumer can finish what it holds instead of waiting on a slow item). An error in the
    producer is raised here, in its place. When the consumer leaves early, ``on_stop`` is called
    (to end what the producer waits on) and the thread is given a few seconds to end."""
    results: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def run() -> None:
        try:
            for item in items:
                for event in events_of(item):
                    if stop.is_set() or not _put(results, (True, event), stop):
                        return
                if stop.is_set():
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            _put(results, (False, exc), stop)
        _put(results, _DONE, stop)

    thread = threading.Thread(target=run, name="ragloom-read-ahead", daemon=True)
    thread.start()
    finished = False
    try:
        while True:
            try:
                got = results.get(timeout=idle)
            except queue.Empty:
                yield IDLE
                continue
            if got is _DONE:
                finished = True
                return
            ok, value = got
            if not ok:
                finished = True
                raise value
            yield value
    finally:
        stop.set()
        if not finished and on_stop is not None:
            on_stop()
        thread.join(timeout=None if finished else 10.0)


class WriteBehind(Generic[A]):
    """Runs ``write`` over submitted items in a thread, in order, with at most ``depth`` waiting
    (``submit`` blocks beyond that). Leaving the block waits for every write; leaving it on an
    error drops the writes not yet started. A failed write is raised by the next ``submit`` or
    on leaving the block."""

    def __init__(self, write: Callable[[A], None], depth: int = 2) -> None:
        self._write = write
        self._items: queue.Queue = queue.Queue(maxsize=depth)
        self._abort = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="ragloom-write-behind", daemon=True)

    def __enter__(self) -> WriteBehind[A]:
        self._thread.start()
        return self

    def _run(self) -> None:
        while (item := self._items.get()) is not _DONE:
            if self._abort.is_set() or self._error is not None:
                continue  # drain without writing
            try:
                self._write(item)
            except BaseException as exc:  # noqa: BLE001 - raised in the submitting thread
                self._error = exc

    def submit(self, item: A) -> None:
        self._raise_if_failed()
        self._items.put(item)

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            self._abort.set()
            raise error

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc is not None:
            self._abort.set()
        self._items.put(_DONE)
        self._thread.join()
        if exc is None:
            self._raise_if_failed()
