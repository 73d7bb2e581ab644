"""POST /v1/context and POST /v1/ask through a real server: JSON, Server-Sent Events read as they
arrive, errors before and during a stream, and the real tiny llama.cpp model behind its lock."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator

import httpx
import pytest

from ragloom import Config, Index
from ragloom.server.service import llm_lock

from server_helpers import API_KEY, running_server, wait_until

QUESTION = "What does DDS handle?"
SMOLLM = {"provider": "llamacpp", "model": "smollm2", "threads": 1, "context_size": 2048, "max_tokens": 24}


def sse_events(response: httpx.Response) -> Iterator[tuple[str, dict]]:
    """(event, data) pairs of a text/event-stream, parsed line by line as they arrive."""
    event, data = "message", []
    for line in response.iter_lines():
        if line == "":
            if data:
                yield event, json.loads("\n".join(data))
            event, data = "message", []
        elif line.startswith(":"):
            continue  # a keep-alive comment
        elif line.startswith("event:"):
            event = line[len("event:"):].strip()
        elif line.startswith("data:"):
            data.append(line[len("data:"):].removeprefix(" "))


def test_context_is_numbered_budgeted_and_the_same_as_in_process(served):
    with served.client() as client:
        response = client.post("/v1/context", json={"question": QUESTION, "budget": 300})
    assert response.status_code == 200, response.text
    context = response.json()
    passages = context["passages"]
    assert passages and [p["number"] for p in passages] == list(range(1, len(passages) + 1))
    assert context["tokens"] <= context["budget"] == 300 and context["question"] == QUESTION
    assert passages[0]["header"].startswith("[1] ros2_communication_guide.md")
    assert re.fullmatch(r"[0-9a-f]{16}", passages[0]["source_id"]) and passages[0]["section"]
    first = passages[0]["text"]
    assert "DDS" in {first[s:e] for s, e in passages[0]["highlights"]}
    with Index.open(served.state.service.path, create=False) as index:
        expected = index.context(QUESTION, budget=300)
    assert [p["chunk_id"] for p in passages] == [p.hit.chunk_id for p in expected.passages]
    assert context["tokens"] == expected.tokens


def test_ask_returns_one_json_answer_with_citations_of_retrieved_passages(served):
    with served.client() as client:
        response = client.post("/v1/ask", json={"question": QUESTION, "strategy": "extractive"})
        metrics = client.get("/v1/metrics").text
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    answer = response.json()
    assert answer["strategy"] == "extractive" and answer["model"] == ""
    assert "DDS handles discovery, serialization and transport. [1]" in answer["text"]
    passages = {p["number"]: p for p in answer["context"]["passages"]}
    assert answer["citations"]
    for citation in answer["citations"]:
        assert f"[{citation['number']}]" in answer["text"]
        assert citation["chunk_id"] == passages[citation["number"]]["chunk_id"]
        assert citation["source_id"] == passages[citation["number"]]["source_id"]
    assert [step["name"] for step in answer["trace"]] == ["retrieve", "context", "score sentences"]
    assert re.search(r'ragloom_answers_total\{strategy="extractive"\} [1-9]', metrics)


def test_ask_streams_sources_then_tokens_then_the_answer_as_server_sent_events(served):
    body = {"question": "How do ROS 2 nodes communicate?", "strategy": "extractive", "stream": True}
    with served.client() as client, client.stream("POST", "/v1/ask", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = list(sse_events(response))
    names = [name for name, _ in events]
    # The sources first (as Perplexity does), so a page shows them while the answer is written.
    assert names[0] == "sources" and names[-1] == "answer" and set(names[1:-1]) == {"token"} and len(names) >= 3
    answer = events[-1][1]
    assert "".join(data["text"] for _, data in events[1:-1]) == answer["text"]
    assert answer["citations"] and answer["context"]["passages"]
    assert events[0][1]["passages"] == answer["context"]["passages"]
    assert all(p["display_path"] and not p["display_path"].startswith("/") for p in events[0][1]["passages"])


def test_errors_before_a_stream_are_json_and_the_query_limits_hold(served):
    limit = served.state.config.server.max_query_chars
    with served.client() as client:
        unknown = client.post("/v1/ask", json={"question": QUESTION, "strategy": "oracle", "stream": True})
        too_long = client.post("/v1/ask", json={"question": "x" * (limit + 1)})
        context_too_long = client.post("/v1/context", json={"question": "x" * (limit + 1)})
        bad_filter = client.post("/v1/context", json={"question": QUESTION, "where": {"page": {"$near": 1}}})
        small = client.post("/v1/context", json={"question": QUESTION, "budget": 8})
        extra = client.post("/v1/ask", json={"question": QUESTION, "llm": "openai:gpt-4o"})
    assert unknown.status_code == 422 and unknown.headers["content-type"] == "application/json"
    assert unknown.json()["error"]["code"] == "unknown_strategy" and "extractive" in unknown.json()["error"]["message"]
    assert too_long.status_code == context_too_long.status_code == 422
    assert too_long.json()["error"]["code"] == context_too_long.json()["error"]["code"] == "query_too_long"
    assert bad_filter.status_code == 422 and bad_filter.json()["error"]["code"] == "invalid_filter"
    assert small.status_code == 422  # budget >= 16
    assert extra.status_code == 422 and "llm" in extra.json()["error"]["message"]  # the LLM is the server's


@pytest.mark.filterwarnings("ignore:the index at .* is empty")
def test_reads_need_the_key_when_configured(tmp_path):
    (tmp_path / "docs").mkdir()
    config = Config.from_dict({"index": str(tmp_path / "index"), "server": {
        "api_key": API_KEY, "require_key_for_reads": True, "allowed_roots": [str(tmp_path / "docs")]}})
    with running_server(config, tmp_path, tmp_path / "docs") as served:
        with served.client(key=None) as anonymous:
            refused = anonymous.post("/v1/ask", json={"question": QUESTION, "stream": True})
            refused_context = anonymous.post("/v1/context", json={"question": QUESTION})
        with served.client() as client:
            empty = client.post("/v1/ask", json={"question": QUESTION, "strategy": "extractive"})
    assert refused.status_code == refused_context.status_code == 401
    assert empty.status_code == 200 and empty.json()["citations"] == []  # an empty index has nothing to cite
    assert any("the index is empty" in note for note in empty.json()["warnings"])


def test_a_strategy_needing_an_llm_the_server_lacks_is_503(tmp_path):
    (tmp_path / "docs").mkdir()
    config = Config.from_dict({"index": str(tmp_path / "index"), "llm": {"provider": "llamacpp",
                               "model": str(tmp_path / "missing.gguf")}})
    with running_server(config, tmp_path, tmp_path / "docs") as served, served.client() as client:
        response = client.post("/v1/ask", json={"question": QUESTION, "strategy": "standard", "stream": True})
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "llm_unavailable" and "extractive" in error["message"]


@pytest.fixture(scope="module")
def served_llm(tmp_path_factory, sample_docs):
    """A server whose LLM is the tiny SmolLM2 (llama.cpp), over the sample documents."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: scripts/setup.sh --llm builds it")
    root = tmp_path_factory.mktemp("served-llm")
    shutil.copytree(sample_docs[0].parent, root / "docs")
    config = Config.from_dict({"index": str(root / "index"), "llm": SMOLLM, "answer": {"budget": 250},
                               "server": {"search_threads": 2}})
    with Index.open(root / "index", config) as index:
        index.ingest([root / "docs"])
    with running_server(config, root, root / "docs") as served:
        yield served


def test_a_real_llm_answer_streams_token_by_token(served_llm):
    body = {"question": "How do ROS 2 nodes communicate?", "strategy": "standard", "stream": True}
    with served_llm.client() as client, client.stream("POST", "/v1/ask", json=body) as response:
        assert response.status_code == 200
        events = list(sse_events(response))
    tokens = [data["text"] for name, data in events if name == "token"]
    assert [name for name, _ in events] == ["sources"] + ["token"] * len(tokens) + ["answer"] and len(tokens) > 2
    answer = events[-1][1]
    assert answer["strategy"] == "standard" and answer["model"] == "llamacpp:SmolLM2-135M-Instruct.Q4_1"
    assert "".join(tokens) == answer["text"]
    assert 0 < answer["tokens"]["completion"] <= SMOLLM["max_tokens"]
    numbers = {p["number"] for p in answer["context"]["passages"]}
    assert {c["number"] for c in answer["citations"]} <= numbers  # never a passage that was not retrieved


def test_the_llm_serves_one_answer_at_a_time_and_a_dropped_stream_frees_it(served_llm):
    from ragloom.models.llm import shared_llm

    service = served_llm.state.service
    lock = llm_lock(shared_llm(service.config.llm))
    body = {"question": "How do ROS 2 nodes communicate?", "strategy": "standard", "stream": True}
    with served_llm.client() as client:
        # While the test holds the model's lock, an LLM answer waits; an extractive one does not.
        with lock:
            with pytest.raises(httpx.ReadTimeout):
                client.post("/v1/ask", json=body, timeout=1.0)
            quick = client.post("/v1/ask", json={**body, "strategy": "extractive", "stream": False})
            assert quick.status_code == 200 and quick.json()["citations"]
        # A client that leaves after the sources and the first token gives the model back.
        with client.stream("POST", "/v1/ask", json=body) as dropped:
            events = sse_events(dropped)
            assert next(events)[0] == "sources" and next(events)[0] == "token"
        wait_until(lambda: not lock.locked(), timeout=60)
        again = client.post("/v1/ask", json={**body, "stream": False})
    assert again.status_code == 200 and again.json()["model"].startswith("llamacpp:SmolLM2")


def test_openapi_describes_the_answer_endpoints(served):
    with served.client() as client:
        schema = client.get("/openapi.json").json()
    ask = schema["paths"]["/v1/ask"]["post"]
    assert {"application/json", "text/event-stream"} <= set(ask["responses"]["200"]["content"])
    assert "503" in ask["responses"] and "/v1/context" in schema["paths"]
    components = schema["components"]["schemas"]
    assert {"number", "chunk_id", "source", "text", "section", "page"} <= set(components["Citation"]["properties"])
    assert {"text", "citations", "context", "strategy", "trace"} <= set(components["Answer"]["properties"])
    assert {"stream", "strategy", "question"} <= set(components["AskRequest"]["properties"])
