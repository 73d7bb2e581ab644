"""The MCP tools hold the same line as the HTTP API: the same path policy, the same request models.

Driven in-process by the MCP SDK's own client (``Client(server)``), over a real index.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install 'ragloom[mcp]'")

from mcp import Client  # noqa: E402

from ragloom import Config  # noqa: E402
from ragloom.server.mcp import build_mcp  # noqa: E402
from ragloom.server.service import IndexService  # noqa: E402


@pytest.fixture(scope="module")
def door(tmp_path_factory, sample_docs):
    """An MCP server with the ingest tool on, its allowed root holding the sample documents."""
    root = tmp_path_factory.mktemp("mcp-doors")
    docs = root / "docs"
    shutil.copytree(sample_docs[0].parent, docs)
    outside = root / "outside"
    outside.mkdir()
    config = Config.from_dict({"index": str(root / "index"),
                               "server": {"allowed_roots": [str(docs)], "mcp": {"ingest": True}}})
    service = IndexService(config, readers=1)
    try:
        with service.writing() as index:
            index.ingest([docs])
        yield build_mcp(service, config), docs, outside, service
    finally:
        service.close()


def call(server, *calls: tuple[str, dict]) -> list:
    async def session() -> list:
        async with Client(server) as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    return anyio.run(session)


def test_mcp_ingest_refuses_a_folder_whose_link_leads_out_of_the_roots(door):
    server, docs, outside, service = door
    secret = outside / "secret.md"
    secret.write_text("# Payroll\n\nThe quarterly payroll password is hunter-zebra-42.\n")
    leaky = docs / "leaky"
    leaky.mkdir()
    (leaky / "x.md").symlink_to(secret)
    try:
        folder, file, found = call(server, ("ingest", {"paths": [str(leaky)]}),
                                   ("ingest", {"paths": [str(leaky / "x.md")]}),
                                   ("search", {"query": "payroll password hunter-zebra", "mode": "lexical"}))
    finally:
        shutil.rmtree(leaky)
    for refused in (folder, file):
        assert refused.is_error and refused.content[0].text.startswith(
            "Error executing tool ingest: path_not_allowed:"), refused.content[0].text
    assert not any(hit["source"].startswith(str(leaky)) for hit in found.structured_content["hits"])
    assert not any(source.path.startswith(str(leaky)) for source in service.sources())


def test_mcp_gives_the_reason_for_odd_paths(door):
    server, docs, _, _ = door
    loop = docs / "loop.md"
    os.symlink(loop.name, loop)
    cases = {
        f"{docs}/a\x00b.md": "path_invalid",
        f"{docs}/{'x' * 300}.md": "path_name_too_long",
        str(docs) + ("/" + "y" * 200) * 30: "path_too_long",
        str(loop): "path_symlink_loop",
        "relative/a.md": "path_not_absolute",
        f"{docs}/missing.md": "path_not_found",
    }
    try:
        results = call(server, *(("ingest", {"paths": [path]}) for path in cases))
    finally:
        loop.unlink()
    for (path, code), result in zip(cases.items(), results):
        text = result.content[0].text
        assert result.is_error and text.startswith(f"Error executing tool ingest: {code}: "), (path[:80], text)


def test_mcp_tools_take_the_http_request_models(door):
    server, _, _, _ = door
    question = "What does DDS handle?"
    bad = [  # (tool, arguments, the argument the error names)
        ("ask", {"question": question, "k": -3}, "k"),
        ("ask", {"question": question, "budget": -100}, "budget"),
        ("get_context", {"question": question, "budget": 0}, "budget"),
        ("get_context", {"question": question, "k": 101}, "k"),
        ("search", {"query": "frames", "k": True}, "k"),
        ("search", {"query": "frames", "explain": 0}, "explain"),
        ("search", {"query": ""}, "query"),
    ]
    good = [("get_context", {"question": question, "budget": 200, "k": 2}),
            ("search", {"query": "frames", "k": 2, "explain": True})]
    results = call(server, *((name, arguments) for name, arguments, _ in bad), *good)
    for (name, arguments, field), result in zip(bad, results):
        assert result.is_error and field in result.content[0].text, (name, arguments, result.content[0].text)
    context, found = results[len(bad):]
    assert not context.is_error and context.structured_content["budget"] == 200
    assert len(context.structured_content["passages"]) <= 2
    assert not found.is_error and len(found.structured_content["hits"]) == 2 and found.structured_content["plan"]


def test_mcp_input_schemas_carry_the_request_models_bounds(door):
    server, _, _, _ = door

    async def tools() -> dict:
        async with Client(server) as client:
            return {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}

    schemas = anyio.run(tools)
    k = schemas["get_context"]["properties"]["k"]["anyOf"][0]
    assert (k["minimum"], k["maximum"]) == (1, 100)
    assert schemas["ask"]["properties"]["budget"]["anyOf"][0]["minimum"] == 16
    assert "stream" not in schemas["ask"]["properties"] and schemas["search"]["required"] == ["query"]
    assert set(schemas["ingest"]["properties"]) == {"paths", "glob", "index"}
    assert schemas["ingest"]["properties"]["index"]["enum"] == ["default"]
