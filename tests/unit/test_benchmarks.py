"""The benchmarks package: every benchmark answers --help through ``python -m benchmarks``, the
harness records one JSON result a run, BENCHMARKS.md's generated tables are current, and no
benchmark finds its siblings through ``sys.path.insert``. No benchmark work is done here."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _package():
    """``benchmarks`` imported from this checkout (the repository's root need not be on sys.path)."""
    if "benchmarks" not in sys.modules:
        spec = importlib.util.spec_from_file_location("benchmarks", REPO / "benchmarks" / "__init__.py",
                                                      submodule_search_locations=[str(REPO / "benchmarks")])
        sys.modules["benchmarks"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules["benchmarks"])
    return sys.modules["benchmarks"]


@pytest.fixture(autouse=True)
def _dispatcher_sets_argv(monkeypatch):
    monkeypatch.setattr(sys, "argv", list(sys.argv))


def _env() -> dict[str, str]:
    paths = [str(REPO / "src"), str(REPO), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def test_no_sys_path_insert_in_benchmarks():
    offenders = [str(path.relative_to(REPO)) for path in (REPO / "benchmarks").rglob("*.py")
                 if "sys.path.insert" in path.read_text(encoding="utf-8")]
    assert offenders == []


def _names() -> list[str]:
    return sorted(_package().benchmarks())


@pytest.mark.parametrize("name", _names())
def test_every_benchmark_answers_help_through_the_dispatcher(name):
    from benchmarks.__main__ import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_:
        main([name, "--help"])
    assert exit_.value.code in (0, None)
    assert out.getvalue().startswith(f"usage: python -m benchmarks {name}")


def test_names_are_unique_and_every_area_has_benchmarks():
    from benchmarks import AREAS, benchmarks

    found = benchmarks()
    assert {b.area for b in found.values()} == set(AREAS)
    assert "peer_tools" not in found and "_langchain_pgvector" not in found  # shared code, a worker
    assert all(b.summary for b in found.values())


def test_list_and_help_from_the_command_line():
    listed = subprocess.run([sys.executable, "-m", "benchmarks", "--list"], cwd=REPO, env=_env(),
                            capture_output=True, text=True, check=True).stdout
    assert "quality/" in listed and "  scifact " in listed
    helped = subprocess.run([sys.executable, "-m", "benchmarks", "segmenters", "--help"], cwd=REPO, env=_env(),
                            capture_output=True, text=True, check=True)
    assert "--languages" in helped.stdout
    unknown = subprocess.run([sys.executable, "-m", "benchmarks", "scifactt"], cwd=REPO, env=_env(),
                             capture_output=True, text=True)
    assert unknown.returncode == 2 and "valid names:" in unknown.stderr and "scifact" in unknown.stderr


def test_a_run_writes_one_json_result(tmp_path):
    from benchmarks import harness

    with harness.Run("example", ["--n", "3"], folder=tmp_path) as run:
        print("| n |\n|---|\n| 3 |")
        harness.record(n=3)
    harness.record(ignored=True)  # outside a run: nothing
    result = json.loads(run.path.read_text())
    assert result["name"] == "example" and result["args"] == ["--n", "3"]
    assert result["metrics"] == {"n": 3} and "| 3 |" in result["output"]
    assert result["status"] == "ok" and result["machine"]["cpus"] == os.cpu_count()
    assert {"date", "commit", "load_before", "load_after", "seconds", "peak_tree_rss_mb"} <= set(result)


def test_tree_memory_sees_a_child_process():
    from benchmarks import harness

    child = subprocess.Popen([sys.executable, "-c", "import time; x = bytearray(80 * 2**20); x[::4096] = b'1' * len(x[::4096]); time.sleep(1.5)"])
    with harness.TreeMemory(os.getpid(), every=0.05) as tree:
        time.sleep(1.0)
    child.wait()
    assert tree.most_processes >= 2
    assert tree.peak_rss >= 80


def test_report_renders_results_and_keeps_benchmarks_md_current(tmp_path):
    from benchmarks.report import main as report

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert report(["--check", "--update", str(REPO / "BENCHMARKS.md")]) == 0
    synthetic = sorted((REPO / "benchmarks" / "results").glob("synthetic-*.json"))
    with contextlib.redirect_stdout(out):
        report([str(p) for p in synthetic])
    assert "| 1,000,000 | 139.2 |" in out.getvalue()

    stale = tmp_path / "B.md"
    text = (REPO / "BENCHMARKS.md").read_text(encoding="utf-8")
    stale.write_text(text.replace("| en | 0.969 | 0.969 | 0.963 | 0.963 | 0.984 | 0.984 |",
                                  "| en | 0.969 | 0.969 | 0.963 | 0.963 | 0.984 | 0.999 |"), encoding="utf-8")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert report(["--check", "--update", str(stale)]) == 1
        assert report(["--update", str(stale)]) == 0
    assert stale.read_text(encoding="utf-8") == text


def test_second_stage_reorders_only_the_candidates():
    _package()
    from benchmarks.models.second_stage import rerank

    hits = [("a", 3.0), ("b", 2.0), ("c", 1.0), ("d", 0.5)]
    late = {"a": 0.1, "b": 0.2, "c": 0.9, "d": 1.0}
    assert rerank(hits, late, top=3, weight=0.0) == ["a", "b", "c", "d"]  # hybrid's order
    assert rerank(hits, late, top=3, weight=1.0) == ["c", "b", "a", "d"]  # d is no candidate: it stays last
    # scaled over the candidates: hybrid 1, 0.5, 0 and EmbeddingGemma 0, 0.125, 1; mixed 0.4, 0.275, 0.6
    assert rerank(hits, late, top=3, weight=0.6) == ["c", "a", "b", "d"]
