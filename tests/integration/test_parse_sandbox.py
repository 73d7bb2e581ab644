"""Documents parsed in a worker process: a file over the memory or time limit is one line in
the report, and the ingest goes on (a real worker process, real limits)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ragloom import Config, Index, registry
from ragloom.ingest.loaders.base import LoadResult, Loader
from ragloom.ingest.sandbox import sandbox_supported
from ragloom.types import Document

pytestmark = pytest.mark.skipif(not sandbox_supported(), reason="parsing in a worker needs fork and rlimits (Linux)")


class HogLoader(Loader):
    """Wants far more memory than the limit, as a decompression bomb does."""

    name = "hog"
    extensions = (".hog",)

    def load(self, path: Path, source: str) -> LoadResult:
        blocks = [bytearray(64 * 2**20) for _ in range(64)]  # 4 GiB
        return LoadResult([Document(text=str(len(blocks)), source=source, doc_id=path.name)])


class SlowLoader(Loader):
    name = "slow"
    extensions = (".slow",)

    def load(self, path: Path, source: str) -> LoadResult:
        time.sleep(3600)  # stopped by the time limit, never waited for
        return LoadResult([])


@pytest.fixture
def plugins():
    registry.register("loader", "hog", HogLoader)
    registry.register("loader", "slow", SlowLoader)
    yield
    registry._registered["loader"].pop("hog", None)
    registry._registered["loader"].pop("slow", None)


def test_a_file_over_the_limits_is_reported_and_the_ingest_goes_on(tmp_path, embedder, plugins):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bomb.hog").write_bytes(b"x")
    (docs / "stuck.slow").write_bytes(b"x")
    (docs / "notes.md").write_text("# Notes\n\nThe survey starts at dawn.\n")
    from ragloom.testing.pdf import write_pdf

    write_pdf(docs / "plan.pdf", ["The route follows the river to the bridge."])
    config = Config.from_dict({"ingest": {"max_file_memory_mb": 256, "max_file_seconds": 3}})
    with Index.open(tmp_path / "idx", config, embedder=embedder) as index:
        report = index.ingest([docs])
        assert index.search("route to the bridge", k=1)[0].source.endswith("plan.pdf")
    failed = {Path(f.path).name: f.error for f in report.failed}
    assert "more than 256 MB" in failed["bomb.hog"] and "ingest.max_file_memory_mb" in failed["bomb.hog"]
    assert "longer than 3 s" in failed["stuck.slow"] and "ingest.max_file_seconds" in failed["stuck.slow"]
    assert {Path(p).name for p in report.added} == {"notes.md", "plan.pdf"}


def test_the_worker_lets_go_of_a_file_lock_held_when_it_was_forked(tmp_path):
    """tantivy takes its meta lock on a background thread and releases it by closing the file; a
    worker forked meanwhile kept the lock, and the ingest's next commit waited for it forever."""
    import fcntl
    import os

    from ragloom.ingest.loaders import LoaderOptions
    from ragloom.ingest.sandbox import ParserSandbox

    lock_file = tmp_path / ".tantivy-meta.lock"
    held = os.open(lock_file, os.O_RDWR | os.O_CREAT)
    fcntl.flock(held, fcntl.LOCK_EX)
    text = tmp_path / "a.txt"
    text.write_text("a document parsed in the worker")
    sandbox = ParserSandbox(memory_mb=512, timeout_s=60)
    try:
        result = sandbox.load(text, "a.txt", text.read_bytes(), LoaderOptions())  # forks while the lock is held
        assert result.documents
        os.close(held)  # released as tantivy releases it: by closing, without unlocking
        again = os.open(lock_file, os.O_RDWR)
        try:
            fcntl.flock(again, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError while the worker holds it
        finally:
            os.close(again)
    finally:
        sandbox.close()
