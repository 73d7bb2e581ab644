"""The shared HTTP layer: retries, backoff, Retry-After, and the errors users see."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

from ragloom.errors import (
    AuthenticationError,
    ProviderError,
    RateLimitError,
    ServiceUnavailableError,
)
from ragloom.providers.http import HttpClient, _retry_after, iter_sse
from ragloom.providers.ollama import OllamaClient, ollama_url
from ragloom.testing.fakes import FakeOllama, Fault

EMBED = {"model": "nomic-embed-text", "input": ["hello"]}


def client(server: FakeOllama, **settings: object) -> OllamaClient:
    return OllamaClient(server.url, **{"max_retries": 2, "retry_base_delay": 0.01, **settings})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_429_waits_for_retry_after_then_succeeds(ollama: FakeOllama) -> None:
    ollama.fail(Fault.rate_limited(retry_after=1))
    started = time.monotonic()
    response = client(ollama).post("/api/embed", EMBED)
    first, second = ollama.requests
    assert len(response["embeddings"]) == 1
    assert second.at - first.at >= 1.0  # Retry-After honoured (a lower bound only)
    assert time.monotonic() - started >= 1.0


def test_5xx_is_retried_with_growing_backoff(ollama: FakeOllama) -> None:
    delays: list[float] = []
    ollama.fail(Fault(500), Fault(502), Fault(503))
    api = client(ollama, max_retries=3, retry_base_delay=0.2, sleep=delays.append)
    assert api.post("/api/embed", EMBED)["embeddings"]
    assert len(ollama.requests) == 4
    # Exponential backoff with jitter: base * 2**n scaled into [0.5, 1.0].
    for n, delay in enumerate(delays):
        assert 0.2 * 2**n * 0.5 <= delay <= 0.2 * 2**n


def test_5xx_exhausted_names_the_status_and_attempts(ollama: FakeOllama) -> None:
    ollama.fail(*[Fault(500, "CUDA out of memory")] * 3)
    with pytest.raises(ProviderError, match=r"HTTP 500 after 3 attempts: CUDA out of memory"):
        client(ollama).post("/api/embed", EMBED)
    assert len(ollama.requests) == 3


def test_rate_limit_exhausted(ollama: FakeOllama) -> None:
    ollama.fail(*[Fault.rate_limited(retry_after=0)] * 3)
    with pytest.raises(RateLimitError, match=r"429 Too Many Requests after 3 attempts .*lower `concurrency`"):
        client(ollama).post("/api/embed", EMBED)
    assert len(ollama.requests) == 3


def test_slow_answer_times_out_and_is_retried(ollama: FakeOllama) -> None:
    ollama.fail(Fault.slow(2.0))
    response = client(ollama, timeout=0.3).post("/api/embed", EMBED)
    assert response["embeddings"] and len(ollama.requests) == 2


def test_timeouts_exhausted(ollama: FakeOllama) -> None:
    ollama.fail(*[Fault.slow(2.0)] * 2)
    with pytest.raises(ServiceUnavailableError, match=r"did not answer /api/embed within 0.3s \(2 attempts\)"):
        client(ollama, timeout=0.3, max_retries=1).post("/api/embed", EMBED)
    assert len(ollama.requests) == 2


def test_refused_connection_names_the_url_and_the_fix() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    api = OllamaClient(url, max_retries=1, retry_base_delay=0.01)
    with pytest.raises(ServiceUnavailableError) as caught:
        api.post("/api/embed", EMBED)
    message = str(caught.value)
    assert f"Ollama is not reachable at {url} — start it with `ollama serve`" in message
    assert isinstance(caught.value, ConnectionError)


def test_malformed_json_is_an_error_and_not_retried(ollama: FakeOllama) -> None:
    ollama.fail(Fault.malformed())
    with pytest.raises(ProviderError, match=r"not JSON .*check that the URL points at a Ollama server"):
        client(ollama).post("/api/embed", EMBED)
    assert len(ollama.requests) == 1


def test_401_is_not_retried() -> None:
    with FakeOllama(api_key="secret") as server:
        with pytest.raises(AuthenticationError, match="HTTP 401"):
            client(server).post("/api/embed", EMBED)
        assert len(server.requests) == 1


def test_retry_after_forms() -> None:
    assert _retry_after(httpx.Headers({"Retry-After": "3"})) == 3.0
    assert _retry_after(httpx.Headers({"retry-after-ms": "250", "Retry-After": "9"})) == 0.25
    date = httpx.Headers({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})
    assert _retry_after(date) == 0.0  # a date in the past: retry now
    assert _retry_after(httpx.Headers({})) is None


def test_server_sent_events_are_parsed() -> None:
    lines = ["event: content-delta", 'data: {"a": 1}', "", ": comment", "data: x", "data: y", "", "data: [DONE]"]
    assert list(iter_sse(iter(lines))) == [("content-delta", '{"a": 1}'), ("", "x\ny"), ("", "[DONE]")]


@pytest.mark.parametrize(
    ("variable", "value", "url"),
    [
        ("OLLAMA_HOST", "0.0.0.0", "http://0.0.0.0:11434"),
        ("OLLAMA_HOST", "gpu-box:9999", "http://gpu-box:9999"),
        ("OLLAMA_HOST", ":5000", "http://127.0.0.1:5000"),
        ("OLLAMA_BASE_URL", "https://ollama.example.com/", "https://ollama.example.com:443"),
    ],
)
def test_ollama_url_from_environment(monkeypatch: pytest.MonkeyPatch, variable: str, value: str, url: str) -> None:
    monkeypatch.setenv(variable, value)
    assert ollama_url() == url
    assert ollama_url("http://configured:1") == "http://configured:1"


def test_base_client_streams_lines(ollama: FakeOllama) -> None:
    api = HttpClient("Ollama", ollama.url)
    payload = {"model": "llama3.2", "messages": [{"role": "user", "content": "hi there"}], "stream": True}
    lines = [json.loads(line) for line in api.stream_lines("/api/chat", payload) if line]
    assert [line["message"]["content"] for line in lines] == ["Echo: ", "hi ", "there", ""]
    assert lines[-1]["done"] is True
