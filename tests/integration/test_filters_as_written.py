"""Filters as a user writes them, through the Python API and the command line (issue 25, finding 4)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragloom import Config, FilterWarning, Index

FILES = {
    "tutorial/cors.md": "# CORS\n\nTo add CORS to an app, add CORSMiddleware with the allowed origins.\n",
    "tutorial/middleware.md": "# Middleware\n\nA middleware runs for every request before the path operation.\n",
    "advanced/middleware.md": "# Advanced middleware\n\nHTTPSRedirectMiddleware sends every request to https.\n",
}


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fastapi") / "docs"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, embedder, docs: Path):
    with Index.open(tmp_path_factory.mktemp("index") / "index", Config(), embedder=embedder) as built:
        built.ingest([docs])
        yield built


@pytest.mark.parametrize(("source", "found"), [
    ("cors.md", {"tutorial/cors.md"}),
    ("tutorial/middleware.md", {"tutorial/middleware.md"}),
    ("middleware.md", {"tutorial/middleware.md", "advanced/middleware.md"}),
    ("**/cors.md", {"tutorial/cors.md"}),
    ("advanced/*", {"advanced/middleware.md"}),
])
def test_a_source_filter_takes_a_relative_path_a_basename_or_a_glob(index: Index, docs: Path, source, found) -> None:
    hits = index.search("middleware request", k=10, where={"source": source})
    assert {Path(h.source).relative_to(docs).as_posix() for h in hits} == found


def test_contains_matches_part_of_a_text_field(index: Index) -> None:
    hits = index.search("request", k=10, where={"section": {"$contains": "MIDDLE"}})
    assert {h.section for h in hits} == {"Middleware", "Advanced middleware"}


@pytest.mark.parametrize(("where", "said"), [
    ({"sectoin": "CORS"}, "did you mean 'section'"),
    ({"chunk_index": {"$gte": "0"}}, "'chunk_index' holds numbers, not text"),
    ({"source": "cors.markdown"}, "names no indexed file"),
])
def test_a_filter_that_cannot_match_warns_in_one_line(index: Index, where, said) -> None:
    with pytest.warns(FilterWarning, match=said) as caught:
        result = index.retrieve("CORS", where=where)
    assert result.hits == [] and len(caught) == 1 and said in result.warnings[0]
    answer = index.ask("How do I add CORS?", strategy="extractive", where=where)
    assert any(said in w for w in answer.warnings)


def test_a_filter_that_matches_does_not_warn(index: Index, recwarn: pytest.WarningsRecorder) -> None:
    assert index.search("CORS", where={"source": "cors.md", "chunk_index": {"$gte": 0}})
    assert not [w for w in recwarn if issubclass(w.category, FilterWarning)]


def test_the_command_line_reads_contains_and_says_why_a_filter_matches_nothing(index: Index, docs: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    command = [sys.executable, "-m", "ragloom", "--index", str(index.path), "search", "request", "--json"]
    found = subprocess.run([*command, "--where", "section*=middle"], capture_output=True, text=True, env=env, timeout=300)
    assert found.returncode == 0, found.stderr
    assert {h["metadata"]["section"] for h in json.loads(found.stdout)} == {"Middleware", "Advanced middleware"}
    empty = subprocess.run([*command, "--where", "sectoin=CORS"], capture_output=True, text=True, env=env, timeout=300)
    assert json.loads(empty.stdout) == []
    assert "'sectoin' is in no passage of this index" in " ".join(empty.stderr.split())
