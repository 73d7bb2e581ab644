"""Shared fixtures: real packaged model, real embedded store, corpora written by the tests."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# Tests must never reach a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


@pytest.fixture(scope="session")
def embedder():
    """The packaged ONNX embedder, loaded once per test session."""
    from ragloom.config import EmbedderConfig
    from ragloom.embed import create_embedder

    return create_embedder(EmbedderConfig())


@pytest.fixture(scope="session")
def sample_docs() -> list[Path]:
    """The sample corpus the demo ingests: one file per format (md, txt, pdf, html), sorted."""
    return sorted((Path(__file__).resolve().parents[1] / "examples" / "sample_docs").iterdir())


@pytest.fixture(scope="session")
def python_bin() -> str:
    return sys.executable


@pytest.fixture
def chdir_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("RAGLOOM_"):
            monkeypatch.delenv(name)
    return tmp_path


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory):
    """A real PostgreSQL 16 with pgvector (the ``pgserver`` wheel), one per test session."""
    pytest.importorskip("pgserver")
    pytest.importorskip("psycopg")
    from ragloom.testing.postgres import PostgresServer

    with PostgresServer(tmp_path_factory.mktemp("postgres")) as server:
        yield server
