"""Real servers for remote sources, on 127.0.0.1: moto's S3 server (boto3 speaks to it as to AWS),
a fixture website (``pytest-httpserver``) and git repositories made in the test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom import Index
from ragloom.config import Config


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """moto's S3 server in server mode (the real S3 wire protocol) on a free port; its endpoint."""
    pytest.importorskip("boto3")
    moto = pytest.importorskip("moto.server")
    server = moto.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3(moto_server: str, monkeypatch: pytest.MonkeyPatch):
    """A boto3 client of the moto server, with the standard AWS variables set for ragloom to find."""
    import boto3

    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing-secret-key")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    client = boto3.client("s3")
    yield client
    client.close()


def open_index(path: Path, embedder, **sources) -> Index:
    config = Config.from_dict({"index": str(path), "sources": {"allow_private_hosts": True, **sources}})
    return Index.open(path, config, embedder=embedder)


@pytest.fixture
def index_at(tmp_path: Path, embedder):
    opened: list[Index] = []

    def make(name: str = "index", **sources) -> Index:
        index = open_index(tmp_path / name, embedder, **sources)
        opened.append(index)
        return index

    yield make
    for index in opened:
        index.close()


def environ_without_secrets() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}


@pytest.fixture
def site():
    """The fixture website (``fixture_site.py``) on 127.0.0.1, threaded (a slow page holds no other request)."""
    pytest.importorskip("pytest_httpserver")
    import re

    from pytest_httpserver import HTTPServer

    from fixture_site import Site

    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    fixture = Site()
    server.expect_request(re.compile(".*")).respond_with_handler(lambda request: fixture.handler(request))
    fixture.base = f"http://127.0.0.1:{server.port}"
    try:
        yield fixture
    finally:
        server.clear()
        if server.is_running():
            server.stop()
