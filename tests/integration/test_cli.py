"""The command line, run as a user would: separate processes sharing one index."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from ragloom import Config, Index

RAGLOOM = [sys.executable, "-m", "ragloom"]


def run(*args: str, cwd: Path, check: bool = True, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    full_env.update(env or {})
    result = subprocess.run([*RAGLOOM, *args], cwd=cwd, capture_output=True, text=True, env=full_env, timeout=300)
    if check and result.returncode != 0:
        raise AssertionError(f"ragloom {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


@pytest.fixture
def workdir(tmp_path: Path, sample_docs: list[Path]) -> Path:
    shutil.copytree(sample_docs[0].parent, tmp_path / "docs")
    return tmp_path


def test_ingest_then_search_in_another_process(workdir):
    out = run("ingest", "docs", "--json", cwd=workdir)
    summary = json.loads(out.stdout)
    assert summary["added"] >= 4 and summary["failed"] == 0 and summary["tokens_embedded"] > 0

    hits = json.loads(run("search", "how do ROS 2 nodes communicate?", "-k", "3", "--json", cwd=workdir).stdout)
    assert len(hits) == 3
    assert hits[0]["rank"] == 1 and hits[0]["score"] >= hits[1]["score"]
    assert "ros" in hits[0]["source"].lower()
    assert {"section", "chunk_index", "source"} <= set(hits[0]["metadata"])

    blocks = run("search", "how do ROS 2 nodes communicate?", cwd=workdir).stdout
    heads = [line for line in blocks.splitlines() if line[:2].strip().isdigit()]
    # rank, relevance (cos 0.90) or score, weak, then the path: relative to docs/
    shown = re.match(r"\s*\d+\s+(?:(?:cos|p) )?[\d.]+\s+(?:weak\s+)?(\S+?):(\d+)\s", heads[0])  # path:line
    assert len(heads) == 5 and shown and shown.group(1) == Path(hits[0]["source"]).name
    assert int(shown.group(2)) == hits[0]["start_line"]
    assert hits[0]["display_path"] == Path(hits[0]["source"]).name
    table = run("search", "how do ROS 2 nodes communicate?", "--table", cwd=workdir).stdout
    assert "score" in table and "source" in table

    again = json.loads(run("ingest", "docs", "--json", cwd=workdir).stdout)
    assert again["unchanged"] == summary["added"] and again["tokens_embedded"] == 0

    status = json.loads(run("status", "--json", cwd=workdir).stdout)
    assert status["sources"] == summary["added"] and status["dimension"] == 384
    assert status["embedder"] == "onnx:bge-small-en-v1.5" and status["disk_bytes"] > 0

    audit = json.loads(run("audit", "--last", "1", "--kind", "search", "--json", cwd=workdir).stdout)
    assert audit[0]["query"] == "how do ROS 2 nodes communicate?" and len(audit[0]["hits"]) == 5


def test_filters_modes_and_remove_from_the_command_line(workdir):
    run("ingest", "docs", cwd=workdir)
    hits = json.loads(run("search", "planning", "--where", "page>=2", "--mode", "lexical", "--json", cwd=workdir).stdout)
    assert hits and all(h["metadata"]["page"] >= 2 for h in hits)
    pdf = next(p for p in (workdir / "docs").iterdir() if p.suffix == ".pdf")
    run("remove", str(pdf), cwd=workdir)
    hits = json.loads(run("search", "planning", "-k", "20", "--json", cwd=workdir).stdout)
    assert all(not h["source"].endswith(".pdf") for h in hits)
    missing = run("remove", str(pdf), cwd=workdir, check=False)
    assert missing.returncode == 1 and "not in the index" in missing.stderr


def test_init_writes_a_config_that_loads_and_is_used(tmp_path):
    run("init", cwd=tmp_path)
    data = yaml.safe_load((tmp_path / "ragloom.yaml").read_text())
    assert Config.from_dict(data) == Config()
    assert "# target chunk size" in (tmp_path / "ragloom.yaml").read_text()
    again = run("init", cwd=tmp_path, check=False)
    assert again.returncode == 1 and "already exists" in again.stderr


def test_errors_are_messages_not_tracebacks(workdir):
    (workdir / "ragloom.yaml").write_text("search:\n  mdoe: dense\n")
    bad = run("search", "x", cwd=workdir, check=False)
    assert bad.returncode == 1 and "mdoe" in bad.stderr and "valid keys" in bad.stderr
    assert "Traceback" not in bad.stderr
    (workdir / "ragloom.yaml").unlink()

    no_index = run("search", "x", cwd=workdir, check=False)
    assert no_index.returncode == 1 and "no index" in no_index.stderr

    (workdir / "tool.exe").write_bytes(b"MZ\x90\x00")
    unsupported = run("ingest", "tool.exe", cwd=workdir, check=False)
    assert unsupported.returncode == 1 and ".pdf" in unsupported.stderr and "Traceback" not in unsupported.stderr

    env_bad = run("status", cwd=workdir, check=False, env={"RAGLOOM_SEARCH__NOPE": "1"})
    assert env_bad.returncode == 1 and "nope" in env_bad.stderr.lower()

    run("ingest", "docs", cwd=workdir)
    empty_query = run("search", "  ", cwd=workdir, check=False)
    assert empty_query.returncode == 1 and "empty" in empty_query.stderr
    clamp = run("search", "nodes", "-k", "5000", "--json", cwd=workdir)
    assert "outside the allowed range" in clamp.stderr and len(json.loads(clamp.stdout)) <= 100


def test_environment_overrides_the_config_file(workdir):
    (workdir / "ragloom.yaml").write_text("search:\n  k: 2\n")
    run("ingest", "docs", cwd=workdir)
    assert len(json.loads(run("search", "robot", "--json", cwd=workdir).stdout)) == 2
    hits = json.loads(run("search", "robot", "--json", cwd=workdir, env={"RAGLOOM_SEARCH__K": "4"}).stdout)
    assert len(hits) == 4
    assert len(json.loads(run("search", "robot", "-k", "1", "--json", cwd=workdir, env={"RAGLOOM_SEARCH__K": "4"}).stdout)) == 1


def _write_many(folder: Path, n: int) -> None:
    folder.mkdir()
    topics = ["lidar", "odometry", "kinematics", "planning", "control", "vision", "mapping", "grasping"]
    for i in range(n):
        paragraphs = [
            f"Note {i} paragraph {p}: {topics[(i + p) % 8]} in field robots depends on calibration, timing and "
            f"careful testing; variant {i * 31 + p} adds detail on {topics[(i * p) % 8]} under load."
            for p in range(12)
        ]
        (folder / f"note-{i:03d}.txt").write_text("\n\n".join(paragraphs))


def test_killed_ingest_leaves_a_consistent_index(tmp_path):
    _write_many(tmp_path / "docs", 120)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    env["RAGLOOM_CHUNKING__CHUNK_SIZE"] = "48"
    env["RAGLOOM_CHUNKING__CHUNK_OVERLAP"] = "8"
    process = subprocess.Popen([*RAGLOOM, "ingest", "docs", "--quiet"], cwd=tmp_path, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    database = tmp_path / ".ragloom" / "ragloom.sqlite"
    deadline = time.monotonic() + 240
    committed = 0
    while time.monotonic() < deadline and process.poll() is None:
        if database.exists():
            try:
                with sqlite3.connect(database, timeout=1) as db:
                    committed = db.execute("SELECT COUNT(*) FROM sources").fetchone()[0]
            except sqlite3.Error:
                committed = 0
            if committed > 0:
                break
        time.sleep(0.05)
    assert process.poll() is None, "the ingest finished before it could be interrupted"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()

    config = Config.load(env={"RAGLOOM_CHUNKING__CHUNK_SIZE": "48", "RAGLOOM_CHUNKING__CHUNK_OVERLAP": "8"})
    with Index.open(tmp_path / ".ragloom", config) as index:
        sources = index.sources()
        assert 0 < len(sources) < 120
        assert index.store.count() == sum(s.chunk_count for s in sources)
        hits = index.search("lidar calibration", k=100)
        assert {Path(h.source).name for h in hits} <= {Path(s.path).name for s in sources}
        assert len(index.store.matrix) == index.store.count()

    run_env = {"RAGLOOM_CHUNKING__CHUNK_SIZE": "48", "RAGLOOM_CHUNKING__CHUNK_OVERLAP": "8"}
    report = json.loads(run("ingest", "docs", "--json", cwd=tmp_path, env=run_env).stdout)
    assert report["unchanged"] == len(sources) and report["added"] == 120 - len(sources)
    with Index.open(tmp_path / ".ragloom", config) as index:
        sources = index.sources()
        assert len(sources) == 120
        total = index.store.count()
        assert total == sum(s.chunk_count for s in sources)
        db = index.store.catalog.db
        assert db.execute("SELECT COUNT(DISTINCT source || '#' || chunk_index) FROM chunks").fetchone()[0] == total
        hits = index.search("lidar calibration", k=100, mode="lexical")
        assert len({h.chunk_id for h in hits}) == len(hits) == 100
