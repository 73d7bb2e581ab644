"""Watching folders: edits, additions, renames and deletions reach search within seconds."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

pytest.importorskip("watchfiles", reason="watchfiles is not installed: pip install 'ragloom[server]'")

from ragloom import Config, Index  # noqa: E402
from ragloom.server.watch import FolderWatcher, apply_to_index  # noqa: E402
from server_helpers import free_port, subprocess_env, wait_until  # noqa: E402


@contextmanager
def watching(folder: Path, config: Config, index: Index) -> Iterator[list]:
    """A watcher of ``folder`` applying its batches to ``index``, caught up; yields the
    (batch, report, error) of every batch, and stops it on exit."""
    batches: list = []
    watcher = FolderWatcher([folder], config, apply_to_index(index), ignore=[index.path],
                            on_batch=lambda batch, report, error: batches.append((batch, report, error)))
    thread = watcher.start()
    try:
        assert watcher.ready.wait(120)
        yield batches
    finally:
        watcher.stop()
        thread.join(30)
    assert not thread.is_alive()


def test_watcher_follows_edits_adds_renames_and_deletes(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Alpha\n\nApples grow in orchards.\n")
    (docs / "b.txt").write_text("Bananas ripen after picking.\n")
    (docs / "skip.bin").write_bytes(b"\x00\x01")
    config = Config.from_dict({"index": str(tmp_path / "index"), "watch": {"debounce_ms": 300}})
    with Index.open(config.index, config) as writer, watching(docs, config, writer) as batches:
        with Index.open(config.index, config) as reader:
            def sources() -> set[str]:
                return {Path(s.path).relative_to(docs).as_posix() for s in reader.sources()}

            def top_source(query: str) -> str | None:
                hits = reader.search(query, 1, mode="lexical")
                return Path(hits[0].source).relative_to(docs).as_posix() if hits else None

            wait_until(lambda: sources() == {"a.md", "b.txt"})

            (docs / "a.md").write_text("# Alpha\n\nZucchini grow in orchards now.\n")  # edit
            wait_until(lambda: top_source("zucchini") == "a.md")

            (docs / "c.md").write_text("# Quokka\n\nQuokkas live on Rottnest Island.\n")  # add
            wait_until(lambda: top_source("quokka rottnest") == "c.md")

            (docs / "c.md").rename(docs / "d.md")  # rename
            wait_until(lambda: sources() == {"a.md", "b.txt", "d.md"})
            wait_until(lambda: top_source("quokka rottnest") == "d.md")

            (docs / "b.txt").unlink()  # delete
            wait_until(lambda: sources() == {"a.md", "d.md"})
            wait_until(lambda: top_source("bananas") is None)

            sub = docs / "notes"
            sub.mkdir()
            (sub / "e.md").write_text("# Echidna\n\nEchidnas lay eggs.\n")  # a new folder
            wait_until(lambda: "notes/e.md" in sources())
            sub.rename(docs / "archive")  # a renamed folder
            wait_until(lambda: sources() == {"a.md", "d.md", "archive/e.md"})
    assert all(error is None for _, _, error in batches)
    assert not any("skip.bin" in path for batch, _, _ in batches for path in batch.ingest)


def test_serve_watch_ingests_changes_as_jobs(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "first.md").write_text("# First\n\nThe first note.\n")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ragloom", "--index", str(tmp_path / "index"), "serve", "--port", str(port),
         "--watch", str(docs)],
        cwd=tmp_path, env=subprocess_env(RAGLOOM_WATCH__DEBOUNCE_MS="300"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            def sources() -> set[str]:
                try:
                    return {Path(s["path"]).name for s in client.get("/v1/sources").json()}
                except httpx.HTTPError:
                    return set()

            wait_until(lambda: sources() == {"first.md"})
            (docs / "second.md").write_text("# Second\n\nPlatypus facts for the second note.\n")
            def watch_job_done() -> bool:
                jobs = client.get("/v1/ingest").json()
                return any(j["origin"] == "watch" and j["state"] == "done" and j["paths"] == [str(docs / "second.md")]
                           for j in jobs)

            wait_until(watch_job_done)
            assert sources() == {"first.md", "second.md"}
            hits = client.post("/v1/search", json={"query": "platypus", "mode": "lexical"}).json()["hits"]
            assert Path(hits[0]["source"]).name == "second.md"
            assert client.post("/v1/ingest", json={"paths": [str(docs)]}).json()["error"]["code"] == "writes_disabled"
    finally:
        process.send_signal(signal.SIGINT)
        output = process.communicate(timeout=60)[0].decode(errors="replace")
    assert process.returncode == 0, output
    assert "Traceback" not in output, output


def test_watch_command_reports_each_batch_and_stops_on_ctrl_c(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "one.md").write_text("# One\n\nWombats dig burrows.\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "ragloom", "--index", str(tmp_path / "index"), "watch", str(docs)],
        cwd=tmp_path, env=subprocess_env(RAGLOOM_WATCH__DEBOUNCE_MS="300"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(process.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        wait_until(lambda: any(line.startswith("added 1,") for line in lines))
        (docs / "two.md").write_text("# Two\n\nNumbats eat termites.\n")
        wait_until(lambda: sum(line.startswith("added 1,") for line in lines) == 2)
        (docs / "one.md").unlink()
        wait_until(lambda: any("removed 1," in line for line in lines))
    finally:
        process.send_signal(signal.SIGINT)
        _, errors = process.communicate(timeout=60)
    assert process.returncode == 0 and "Traceback" not in errors, errors
    with Index.open(tmp_path / "index", create=False) as index:
        assert [Path(s.path).name for s in index.sources()] == ["two.md"]


def test_a_watched_folder_reads_nothing_outside_itself(tmp_path):
    docs, outside = tmp_path / "docs", tmp_path / "outside"
    docs.mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text("# Payroll\n\nThe payroll password is hunter-zebra-42.\n")
    (docs / "leak.md").symlink_to(outside / "secret.md")  # there from the start: the catch-up ingest meets it
    (docs / "note.md").write_text("# Note\n\nOtters hold hands while sleeping.\n")
    config = Config.from_dict({"index": str(tmp_path / "index"), "watch": {"debounce_ms": 300}})
    with Index.open(config.index, config) as writer:
        with watching(docs, config, writer) as batches:
            (docs / "late.md").symlink_to(outside / "secret.md")  # and one made while it watches
            wait_until(lambda: any(str(docs / "late.md") in batch.ingest for batch, _, _ in batches))
        sources = {Path(s.path).name for s in writer.sources()}
    assert sources == {"note.md"}
    refused = {Path(f.path).name: f.error for _, report, _ in batches for f in report.failed}
    assert set(refused) == {"leak.md", "late.md"} and all(e.startswith("refused:") for e in refused.values())
