"""The ingest pipeline's stages: read-ahead and write-behind keep order, stay bounded, and
hand errors back to the caller."""

from __future__ import annotations

import threading
import time

import pytest

from ragloom.ingest.pipeline import WriteBehind, read_ahead


def test_read_ahead_keeps_order_and_stays_bounded():
    started: list[int] = []

    def prepare(i: int) -> int:
        started.append(i)
        return i * i

    results = []
    for value in read_ahead(range(50), prepare, depth=3):
        time.sleep(0.002)
        # the producer is at most the queue's depth (+1 in hand, +1 blocked putting) ahead
        assert len(started) <= len(results) + 1 + 3 + 1
        results.append(value)
    assert results == [i * i for i in range(50)]


def test_read_ahead_raises_the_producers_error_in_place():
    def prepare(i: int) -> int:
        if i == 3:
            raise ValueError("bad file")
        return i

    got = []
    with pytest.raises(ValueError, match="bad file"):
        for value in read_ahead(range(10), prepare):
            got.append(value)
    assert got == [0, 1, 2]


def test_read_ahead_stops_its_thread_when_the_consumer_leaves():
    before = threading.active_count()
    for value in read_ahead(range(10_000), lambda i: i, depth=2):
        if value == 5:
            break
    assert threading.active_count() == before


def test_write_behind_writes_in_order_and_waits_on_exit():
    written = []
    with WriteBehind(lambda item: (time.sleep(0.001), written.append(item)), depth=2) as writer:
        for i in range(30):
            writer.submit(i)
    assert written == list(range(30))


def test_a_failed_write_is_raised_and_later_writes_are_dropped():
    written = []

    def write(item: int) -> None:
        if item == 2:
            raise OSError("disk full")
        written.append(item)

    with pytest.raises(OSError, match="disk full"):
        with WriteBehind(write, depth=1) as writer:
            for i in range(20):
                writer.submit(i)
                time.sleep(0.005)
    assert written == [0, 1]


def test_an_error_in_the_caller_drops_writes_not_yet_started():
    gate = threading.Event()
    written = []

    def write(item: int) -> None:
        gate.wait(5)
        written.append(item)

    with pytest.raises(KeyboardInterrupt):
        with WriteBehind(write, depth=4) as writer:
            for i in range(4):
                writer.submit(i)
            gate.set()
            raise KeyboardInterrupt
    assert len(written) <= 1  # at most the write already under way finished
