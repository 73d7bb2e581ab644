"""Helpers of the server tests: a real ragloom server on a free port, in a thread, talked to with httpx."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed: pip install 'ragloom[server]'")
pytest.importorskip("uvicorn", reason="the server extra is not installed: pip install 'ragloom[server]'")

import uvicorn  # noqa: E402

from ragloom.config import Config  # noqa: E402
from ragloom.server.app import ServerState, create_app  # noqa: E402

API_KEY = "test-key-0123456789"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(check, timeout: float = 120.0, interval: float = 0.2) -> Any:  # noqa: ANN001
    """Poll ``check`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)


@dataclass
class Served:
    url: str
    state: ServerState
    root: Path
    docs: Path

    def client(self, key: str | None = API_KEY) -> httpx.Client:
        headers = {"X-API-Key": key} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=120.0)

    def wait_job(self, client: httpx.Client, job_id: str) -> dict:
        def finished() -> dict | None:
            job = client.get(f"/v1/ingest/{job_id}").json()
            return job if job["state"] in ("done", "failed") else None

        return wait_until(finished)


@contextmanager
def running_server(config: Config, root: Path, docs: Path) -> Iterator[Served]:
    """create_app(config) under uvicorn in a thread; stopped (and the index closed) on exit."""
    app = create_app(config)
    with serving(app) as url:
        yield Served(url, app.state.ragloom, root, docs)


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """An ASGI app under uvicorn in a thread, at the URL yielded; stopped on exit."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started, timeout=60)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(60)


def server_config(root: Path, docs: Path, **server: Any) -> Config:
    settings = {"allowed_roots": [str(docs)], "api_key": API_KEY, "search_threads": 4, **server}
    return Config.from_dict({"index": str(root / "index"), "server": settings})


def subprocess_env(**extra: str) -> dict[str, str]:
    """This environment without RAGLOOM_* settings, with PYTHONPATH made absolute (children run elsewhere)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    return {**env, **extra}
