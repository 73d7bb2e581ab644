"""Fixtures of the server tests."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed: pip install 'ragloom[server]'")

from server_helpers import Served, running_server, server_config  # noqa: E402


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, sample_docs: list[Path]) -> Iterator[Served]:
    """A server over an index of the sample documents (ingested through the API)."""
    root = tmp_path_factory.mktemp("served")
    docs = root / "docs"
    shutil.copytree(sample_docs[0].parent, docs)
    with running_server(server_config(root, docs), root, docs) as served, served.client() as client:
        response = client.post("/v1/ingest", json={"paths": [str(docs)]})
        assert response.status_code == 202, response.text
        job = served.wait_job(client, response.json()["id"])
        assert job["state"] == "done", job
        yield served
