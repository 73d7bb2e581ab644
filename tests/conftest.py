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
def postgres_server():
    """A real PostgreSQL 16 with pgvector (the ``pgserver`` wheel), one per test session. Its folder
    is not under pytest's (private to this user): run as root, pgserver runs the server as its own user."""
    pytest.importorskip("pgserver")
    pytest.importorskip("psycopg")
    import shutil
    import tempfile

    from ragloom.testing.postgres import PostgresServer

    folder = Path(tempfile.mkdtemp(prefix="ragloom-pg-"))
    folder.chmod(0o755)
    try:
        with PostgresServer(folder) as server:
            yield server
    finally:
        shutil.rmtree(folder, ignore_errors=True)
