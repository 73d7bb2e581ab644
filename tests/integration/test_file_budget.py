"""Every file within a budget, nothing finished lost (issue 42): a real worker process, real
limits, the real embedded store and the packaged model; Ctrl-C and kill -9 sent to real processes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ragloom import Config, Index, registry
from ragloom.errors import CorruptDocumentError
from ragloom.ingest.loaders.base import LoadResult, Loader
from ragloom.ingest.progress import IngestProgress
from ragloom.ingest.sandbox import sandbox_supported
from ragloom.types import Document

needs_worker = pytest.mark.skipif(not sandbox_supported(), reason="the worker needs fork and rlimits (Linux)")


def _ingest(tmp_path: Path, docs: Path, embedder, **ingest) -> tuple:
    config = Config.from_dict({"ingest": ingest}) if ingest else Config()
    with Index.open(tmp_path / "idx", config, embedder=embedder) as index:
        report = index.ingest([docs])
    return report, {Path(f.path).name: f.error for f in report.failed}


# -- item 2: expansion refused, depth bounded --------------------------------------------------------


def test_nested_yaml_aliases_are_counted_and_cut_not_expanded(tmp_path, embedder):
    docs = tmp_path / "docs"
    docs.mkdir()
    lines = ["a0: [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]" for n in range(1, 8)]
    lines[0] = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"
    (docs / "laughs.yaml").write_text("\n".join(lines) + "\n")  # 10^8 values once expanded
    (docs / "notes.md").write_text("# Survey\n\nThe survey starts at dawn.\n")
    report, failed = _ingest(tmp_path, docs, embedder)
    assert {Path(p).name for p in report.added} == {"laughs.yaml", "notes.md"} and not failed
    assert any("laughs.yaml" in w and "YAML aliases" in w and "cut" in w for w in report.warnings)


def test_json_nested_100000_deep_is_read_as_text_with_a_line(tmp_path, embedder):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (docs / "deep.xml").write_text("<a>" * 100_000 + "deepest words" + "</a>" * 100_000)
    report, failed = _ingest(tmp_path, docs, embedder)
    assert "deep.json" in {Path(p).name for p in report.added}
    assert any("deep.json" in w and "nested too deeply" in w for w in report.warnings)
    assert "deep.xml" in {Path(p).name for p in report.added} or "deep.xml" in failed


def test_xml_entities_are_refused_not_expanded(tmp_path, embedder):
    docs = tmp_path / "docs"
    docs.mkdir()
    # Three levels: small enough that expat's own amplification limit lets it through (expanded,
    # 1,000 "lol"s); refused here all the same, as a deeper one would be.
    entities = ['<!ENTITY l0 "lol">'] + [f'<!ENTITY l{n} "{f"&l{n - 1};" * 10}">' for n in range(1, 4)]
    (docs / "laughs.xml").write_text(f'<?xml version="1.0"?><!DOCTYPE r [{"".join(entities)}]><r>&l3;</r>')
    _, failed = _ingest(tmp_path, docs, embedder)
    assert "declares XML entities" in failed["laughs.xml"] and "not expanded" in failed["laughs.xml"]


# -- item 1: one budget, in one place ------------------------------------------------------------------


class WrappedMemoryLoader(Loader):
    """Runs out of memory inside a library that wraps every error as a damaged file."""

    name = "wrapped"
    extensions = (".wrapped",)

    def load(self, path: Path, source: str) -> LoadResult:
        try:
            blocks = [bytearray(64 * 2**20) for _ in range(64)]  # 4 GiB
            return LoadResult([Document(text=str(len(blocks)), source=source, doc_id=path.name)])
        except Exception as exc:  # noqa: BLE001 - what careless libraries do
            raise CorruptDocumentError(f"{source} is damaged ({exc!r})") from exc


class LeakyLoader(Loader):
    """Keeps 100 MB of every file it reads (a library's cache that never lets go)."""

    name = "leaky"
    extensions = (".leaky",)
    kept: list[bytearray] = []

    def load(self, path: Path, source: str) -> LoadResult:
        block = bytearray(100 * 2**20)
        block[::4096] = b"x" * len(block[::4096])  # touched: resident, not just mapped
        LeakyLoader.kept.append(block)
        return LoadResult([Document(text=f"leaky file {path.stem} about river crossings", source=source,
                                    doc_id=path.name)])


class SpawningLoader(Loader):
    """Starts a helper process (as OCR does) and never returns."""

    name = "spawning"
    extensions = (".spawning",)

    def load(self, path: Path, source: str) -> LoadResult:
        child = subprocess.Popen(["sleep", "600"])
        Path(os.environ["RAGLOOM_TEST_PID_FILE"]).write_text(str(child.pid))
        time.sleep(3600)
        return LoadResult([])


@pytest.fixture
def plugins():
    added = {"wrapped": WrappedMemoryLoader, "leaky": LeakyLoader, "spawning": SpawningLoader}
    for name, cls in added.items():
        registry.register("loader", name, cls)
    yield
    for name in added:
        registry._registered["loader"].pop(name, None)


@needs_worker
def test_a_memory_error_a_library_wrapped_is_over_budget_not_damaged(tmp_path, embedder, plugins):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "big.wrapped").write_bytes(b"x")
    (docs / "notes.md").write_text("# Notes\n\nThe survey starts at dawn.\n")
    report, failed = _ingest(tmp_path, docs, embedder, max_file_memory_mb=256)
    assert "damaged" not in failed["big.wrapped"]
    assert "more than 256 MB" in failed["big.wrapped"] and "ingest.max_file_memory_mb" in failed["big.wrapped"]
    assert [Path(p).name for p in report.added] == ["notes.md"]


@needs_worker
def test_the_memory_budget_is_taken_afresh_for_each_file(tmp_path, embedder, plugins):
    """Each file keeps 100 MB in the worker: measured from the fork, the third file would be over
    a 256 MB budget; measured from each file's start (and a worker that grew replaced), none is."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(5):
        (docs / f"f{n}.leaky").write_bytes(b"x")
    report, failed = _ingest(tmp_path, docs, embedder, max_file_memory_mb=256)
    assert failed == {}
    assert len(report.added) == 5


@needs_worker
def test_a_worker_over_its_time_is_killed_with_the_processes_it_started(tmp_path, embedder, plugins, monkeypatch):
    pid_file = tmp_path / "child.pid"
    monkeypatch.setenv("RAGLOOM_TEST_PID_FILE", str(pid_file))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "stuck.spawning").write_bytes(b"x")
    (docs / "notes.md").write_text("# Notes\n\nThe survey starts at dawn.\n")
    report, failed = _ingest(tmp_path, docs, embedder, max_file_seconds=3)
    assert "longer than 3 s" in failed["stuck.spawning"] and "ingest.max_file_seconds" in failed["stuck.spawning"]
    child = int(pid_file.read_text())
    for _ in range(50):  # reaped by init once its group is killed
        if not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the worker's child {child} outlived it")


def test_the_old_parse_settings_still_work_with_a_warning():
    with pytest.warns(Warning, match="ingest.parse_memory_mb is now ingest.max_file_memory_mb"):
        config = Config.from_dict({"ingest": {"parse_memory_mb": 300, "parse_timeout_s": 7}})
    assert (config.ingest.max_file_memory_mb, config.ingest.max_file_seconds) == (300, 7)


# -- item 3: a large file in bounded batches ---------------------------------------------------------------


class _Counting(IngestProgress):
    def __init__(self) -> None:
        self.batches: list[int] = []
        self.done: list[tuple[str, str]] = []

    def files(self, total: int) -> None: ...
    def file_done(self, path: str, status: str) -> None:
        self.done.append((Path(path).name, status))
    def embedding(self, chunks: int) -> None:
        self.batches.append(chunks)
    def embedded(self, chunks: int) -> None: ...


def test_a_large_file_is_embedded_and_written_in_bounded_batches(tmp_path, embedder):
    from ragloom.ingest.batches import EMBED_BATCH_CHUNKS

    docs = tmp_path / "docs"
    docs.mkdir()
    words = ["river", "bridge", "survey", "drone", "lidar", "dawn", "route", "camp", "ridge", "valley"]
    text = "\n\n".join(" ".join(f"{words[(i * 7 + j) % 10]}{i}" for j in range(12)) + "." for i in range(3000))
    (docs / "long.txt").write_text(text)
    config = Config.from_dict({"chunking": {"chunk_size": 32}})
    progress = _Counting()
    with Index.open(tmp_path / "idx", config, embedder=embedder) as index:
        report = index.ingest([docs], progress=progress)
        assert index.search("valley2999 ridge2999", k=1, mode="lexical")[0].source.endswith("long.txt")
    assert report.chunks_written > 4 * EMBED_BATCH_CHUNKS
    assert max(progress.batches) <= 2 * EMBED_BATCH_CHUNKS  # never the whole file at once
    assert progress.done == [("long.txt", "added")]  # done once: when committed
    with sqlite3.connect(tmp_path / "idx" / "ragloom.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0] == report.chunks_written
        assert db.execute("SELECT COUNT(*) FROM staged_chunks").fetchone()[0] == 0


def test_a_source_written_in_parts_is_invisible_to_other_readers_until_its_commit(tmp_path, embedder):
    import numpy as np

    from ragloom.types import Chunk, SourceRecord, content_hash

    with Index.open(tmp_path / "idx", Config(), embedder=embedder) as index:
        store = index.parts.store
        chunks = [Chunk(id=f"c{i}", text=f"part {i}", source="/x.txt", doc_id="x", chunk_index=i, start=i, end=i + 1,
                        policy="p", content_hash=content_hash(f"part {i}"), token_count=2, metadata={}) for i in range(4)]
        record = SourceRecord("/x.txt", "h", 0.0, 1, 4, 0.0, ".txt", "p")
        write = store.begin_source(record)
        write.add(chunks[:2], np.ones((2, 384), dtype=np.float32))
        write.add(chunks[2:], np.ones((2, 384), dtype=np.float32))
        with sqlite3.connect(tmp_path / "idx" / "ragloom.sqlite") as other:  # another process's view
            assert other.execute("SELECT COUNT(*) FROM chunks").fetchone()[0] == 0
            assert other.execute("SELECT COUNT(*) FROM sources").fetchone()[0] == 0
        write.commit(record)
        with sqlite3.connect(tmp_path / "idx" / "ragloom.sqlite") as other:
            assert other.execute("SELECT COUNT(*) FROM chunks WHERE source = '/x.txt'").fetchone()[0] == 4


# -- item 4: nothing finished lost -----------------------------------------------------------------------

#: ``ragloom ingest`` run by its own entry point, with a loader for ``.slow`` files that never
#: finishes (a slow file in flight) registered first.
CLI = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from ragloom import registry
    from ragloom.ingest.loaders.base import LoadResult, Loader

    class Slow(Loader):
        name = "slow"
        extensions = (".slow",)
        def load(self, path, source):
            time.sleep(3600)
            return LoadResult([])

    registry.register("loader", "slow", Slow)
    from ragloom.cli.app import main
    main(sys.argv[1:])
""")


def _notes(docs: Path, count: int) -> list[str]:
    docs.mkdir(exist_ok=True)
    names = []
    for n in range(count):
        (docs / f"note{n:02d}.md").write_text(f"# Note {n}\n\nThe marker word zq{n}x names this note.\n")
        names.append(f"note{n:02d}.md")
    return names


def _sources(index: Path) -> set[str]:
    database = index / "ragloom.sqlite"
    if not database.exists():
        return set()
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
            return {Path(p).name for (p,) in db.execute("SELECT path FROM sources")}
    except sqlite3.Error:
        return set()


def _wait_for(condition, timeout: float = 240.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.25)
    return False


@needs_worker
def test_ctrl_c_with_a_slow_file_in_flight_keeps_the_finished_files(tmp_path):
    docs = tmp_path / "docs"
    notes = _notes(docs, 3)
    (docs / "zz.slow").write_bytes(b"x")
    index = tmp_path / "idx"
    env = {**os.environ, "RAGLOOM_INGEST__MAX_FILE_SECONDS": "3600"}
    process = subprocess.Popen([sys.executable, "-c", CLI, "--index", str(index), "ingest", str(docs), "-q"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        # The notes are committed while the slow file is still being read, not held behind it.
        committed = _wait_for(lambda: _sources(index) >= set(notes))
        process.send_signal(signal.SIGINT)
        _, errors = process.communicate(timeout=120)
    finally:
        process.kill()
    assert committed, "the finished notes waited behind the slow file"
    assert process.returncode == 130
    assert "kept 3 files; run again to finish" in " ".join(errors.split())
    again = subprocess.run([sys.executable, "-m", "ragloom", "--index", str(index), "ingest", str(docs),
                            "--glob", "*.md", "--json"], capture_output=True, text=True, timeout=300)
    summary = json.loads(again.stdout)
    assert (summary["unchanged"], summary["added"]) == (3, 0), again.stdout + again.stderr


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for init to reap it counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@needs_worker
def test_after_kill_9_every_file_reported_done_is_there(tmp_path):
    """A file is reported done when it is committed: kill -9 the ingest right after some are
    reported, and each of them is in the index, whole."""
    docs = tmp_path / "docs"
    _notes(docs, 12)
    (docs / "zz.slow").write_bytes(b"x")
    script = CLI.replace("from ragloom.cli.app import main\nmain(sys.argv[1:])", textwrap.dedent("""
        from ragloom import Config, Index
        from ragloom.ingest.progress import IngestProgress

        class Said(IngestProgress):
            def file_done(self, path, status):
                print(status, path, flush=True)

        config = Config(index=sys.argv[1])
        with Index.open(config.index, config) as index:
            index.ingest([sys.argv[2]], progress=Said())
    """))
    index = tmp_path / "idx"
    process = subprocess.Popen([sys.executable, "-c", script, str(index), str(docs)], stdout=subprocess.PIPE,
                               text=True, env={**os.environ, "RAGLOOM_INGEST__MAX_FILE_SECONDS": "3600"})
    done: list[str] = []
    try:
        for line in process.stdout:
            status, path = line.split(" ", 1)
            if status == "added":
                done.append(Path(path.strip()).name)
            if len(done) >= 3:
                break
        workers = _children(process.pid)  # the file worker, reading zz.slow for an hour
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        process.kill()
    assert len(done) >= 3
    assert workers and not any(_alive(pid) for pid in workers)  # the worker did not outlive the ingest
    assert set(done) <= _sources(index)
    with Index.open(index, Config(index=str(index)), create=False) as opened:
        for name in done:
            number = int(name.removeprefix("note").removesuffix(".md"))
            assert opened.search(f"zq{number}x", k=1, mode="lexical")[0].source.endswith(name)
