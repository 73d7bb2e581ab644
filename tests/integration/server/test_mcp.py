"""`ragloom mcp`, driven by the MCP SDK's own client over stdio (a subprocess) and streamable HTTP."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install 'ragloom[mcp]'")

import httpx2  # noqa: E402  (the MCP SDK's HTTP client)
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from ragloom import Index  # noqa: E402
from server_helpers import API_KEY, free_port, subprocess_env, wait_until  # noqa: E402


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, sample_docs) -> Path:
    root = tmp_path_factory.mktemp("mcp")
    shutil.copytree(sample_docs[0].parent, root / "docs")
    with Index.open(root / "index") as index:
        index.ingest([root / "docs"])
    return root


def test_stdio_tools_structured_results_and_source_resources(indexed):
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "ragloom", "--index", str(indexed / "index"), "mcp"],
        env=subprocess_env(), cwd=str(indexed),
    )

    async def session() -> dict:
        async with Client(params, read_timeout_seconds=120) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            found = await client.call_tool("search", {"query": "how do ROS 2 nodes communicate?", "k": 3})
            bad = await client.call_tool("search", {"query": "x", "where": {"page": {"$near": 2}}})
            listed = await client.call_tool("list_sources", {})
            templates = (await client.list_resource_templates()).resource_templates
            first = found.structured_content["sources"][0]
            resource = await client.read_resource(first["uri"])
            answered = await client.call_tool("ask", {"question": "What does DDS handle?", "strategy": "extractive"})
            unknown = await client.call_tool("ask", {"question": "What does DDS handle?", "strategy": "oracle"})
            context = await client.call_tool("get_context", {"question": "What does DDS handle?", "budget": 200})
            followup = await client.call_tool("ask", {
                "question": "What does it handle?", "strategy": "extractive",
                "history": [{"role": "user", "content": "What is DDS in ROS 2?"},
                            {"role": "assistant", "content": "The Data Distribution Service."}]})
            bad_history = await client.call_tool("ask", {"question": "And then?", "history": [{"role": "robot",
                                                                                              "content": "x"}]})
            return {"tools": tools, "found": found, "bad": bad, "listed": listed, "templates": templates,
                    "resource": resource, "first": first, "answered": answered, "unknown": unknown,
                    "context": context, "followup": followup, "bad_history": bad_history}

    got = anyio.run(session)
    _check_answer_and_context(got)
    assert set(got["tools"]) == {"search", "ask", "get_context", "list_sources"}  # ingest only when enabled
    assert got["tools"]["search"].output_schema["properties"]["hits"]
    found = got["found"]
    assert not found.is_error
    hits = found.structured_content["hits"]
    assert len(hits) == 3 and hits[0]["rank"] == 1 and "ros2" in hits[0]["source"] and hits[0]["section"]
    assert got["first"]["source"] == got["first"]["path"] == hits[0]["source"] and got["first"]["uri"] == f"ragloom://source/{hits[0]['source_id']}"
    assert got["bad"].is_error and "invalid_filter" in got["bad"].content[0].text
    sources = got["listed"].structured_content["sources"]
    assert len(sources) == 4 and {"id", "source", "path", "chunk_count"} <= set(sources[0])
    assert [t.uri_template for t in got["templates"]] == ["ragloom://source/{source_id}",
                                                          "ragloom://index/{index}/source/{source_id}"]
    assert got["tools"]["search"].input_schema["properties"]["index"]["enum"] == ["default"]
    text = got["resource"].contents[0].text
    assert text.startswith(f"source: {hits[0]['source']}") and hits[0]["text"][:60] in text
    assert got["tools"]["ask"].output_schema["properties"]["citations"]
    # A follow-up with the conversation's history is searched standalone (the trace says how).
    followup = got["followup"].structured_content
    assert not got["followup"].is_error and followup["citations"]
    rewrite = followup["trace"][0]
    assert rewrite["name"] == "rewrite" and "DDS" in rewrite["detail"]["query"]
    assert "history" in got["tools"]["ask"].input_schema["properties"]
    assert got["bad_history"].is_error and "robot" in got["bad_history"].content[0].text


def _check_answer_and_context(got: dict) -> None:
    """The ask and get_context tools' structured content: citations point at retrieved passages."""
    answered = got["answered"]
    assert not answered.is_error
    answer = answered.structured_content
    assert answer["strategy"] == "extractive" and "DDS handles discovery, serialization and transport." in answer["text"]
    cited = {c["number"]: c for c in answer["citations"]}
    assert cited and all(f"[{n}]" in answer["text"] for n in cited)
    passages = {p["number"]: p for p in answer["context"]["passages"]}
    for number, citation in cited.items():
        assert {"number", "source", "chunk_id", "text"} <= set(citation)
        assert citation["chunk_id"] == passages[number]["chunk_id"] and citation["source"].endswith(".md")
    assert {s["path"] for s in answer["sources"]} == {c["source"] for c in cited.values()}
    assert got["unknown"].is_error and "unknown_strategy" in got["unknown"].content[0].text
    context = got["context"].structured_content
    assert context["passages"] and context["tokens"] <= context["budget"] == 200
    assert context["rendered"].startswith("[1] ") and context["passages"][0]["text"] in context["rendered"]


def test_streamable_http_with_key_and_the_ingest_tool(indexed, tmp_path):
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "axolotl.md").write_text("# Axolotl care\n\nAxolotls regrow limbs and prefer water at 16 to 18 degrees.\n")
    (indexed / "ragloom.yaml").write_text(
        f"server:\n  allowed_roots: [{extra}]\n  mcp:\n    ingest: true\n", encoding="utf-8")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ragloom", "--index", str(indexed / "index"), "mcp", "--transport", "http",
         "--port", str(port)],
        cwd=indexed, env=subprocess_env(RAGLOOM_API_KEY=API_KEY), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_until(lambda: _answers(url), timeout=120)

        async def session(key: str | None) -> dict:
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            async with httpx2.AsyncClient(headers=headers, timeout=120) as http, \
                    Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120) as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                outside = await client.call_tool("ingest", {"paths": [str(indexed / "docs")]})
                ingested = await client.call_tool("ingest", {"paths": [str(extra)]})
                found = await client.call_tool("search", {"query": "axolotl limbs regrow", "k": 1, "mode": "lexical"})
                answered = await client.call_tool("ask", {"question": "What do axolotls regrow?",
                                                          "strategy": "extractive", "k": 2})
                return {"names": names, "outside": outside, "ingested": ingested, "found": found,
                        "answered": answered}

        got = anyio.run(session, API_KEY)
        assert got["names"] == {"search", "ask", "get_context", "list_sources", "ingest"}
        assert got["outside"].is_error and "path_not_allowed" in got["outside"].content[0].text
        assert not got["ingested"].is_error and got["ingested"].structured_content["added"] == [str(extra / "axolotl.md")]
        hits = got["found"].structured_content["hits"]
        assert hits and hits[0]["source"] == str(extra / "axolotl.md")
        answer = got["answered"].structured_content
        assert "regrow limbs" in answer["text"] and answer["citations"][0]["source"] == str(extra / "axolotl.md")
        # Without the key the endpoint refuses before any MCP exchange.
        refused = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
    finally:
        process.terminate()
        output = process.communicate(timeout=60)[0].decode(errors="replace")
        (indexed / "ragloom.yaml").unlink()
    assert "Traceback" not in output, output


def _answers(url: str) -> bool:
    try:
        httpx2.get(url, timeout=2)
    except httpx2.HTTPError:
        return False
    return True
