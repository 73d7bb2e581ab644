"""A real llama.cpp model: loaded in-process, and served by llama-cpp-python's OpenAI server."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from ragloom.models import packaged_gguf


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``python -m llama_cpp.server`` on a loopback port with the packaged SmolLM2; yields its /v1 URL."""
    pytest.importorskip("llama_cpp.server.app", reason="install the llamacpp-server extra (DESIGN.md: build flags)")
    port = _free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(packaged_gguf()),
        "--host", "127.0.0.1", "--port", str(port), "--n_threads", "1", "--n_ctx", "2048",
        "--embedding", "true",
    ]
    # A file, not a pipe: llama.cpp logs enough to fill a pipe and block the server.
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log.open("w"))
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {process.returncode}: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/models", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not start within 60 s")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
