"""Collections, scoped keys and document-level access: tenant A never receives a byte of tenant B.

Two tenants upload through the HTTP API with their own write keys (each upload is stamped with the
key's ``team``); then, through every door (HTTP JSON, SSE, the chat endpoint, the web page's
requests, MCP in-process as over stdio, MCP over streamable HTTP, and ``ragloom mcp`` over stdio),
tenant A's key attacks B's documents: B's exact words, a question only B answers, B's source by id,
a large-k context, the audit log, filters that try to widen the key's (``$ne``, ``$in``, ``$or``,
``$not``), presets and stages that fetch more candidates (rerank, MMR, graph, RAPTOR), the query
cache, a ``source:`` operator, and the grep fallback with the embedder down. Every response's raw
bytes are searched for B's text, title, source path and id, and chunk ids. The same suite runs on
the embedded store, Chroma (its real server, started here), Qdrant's local mode and PostgreSQL (a
real server, pgserver: both indexes, the jobs and the uploads' bytes in the database). The embedder
is the fake Ollama (real wire format), so it can be stopped for the fallback.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
import pytest
from server_helpers import serving, subprocess_env, wait_until

from ragloom import Config
from ragloom.server.app import create_app
from ragloom.server.keys import KeysFile
from ragloom.testing.fakes import FakeOllama, FakeOpenAI

ADMIN_KEY = "admin-key-0123456789"
BACKENDS = ["embedded", "chroma", "qdrant", "postgres"]

ALPHA = """# Alpha kettle notes

The kettle lantern deploy runs every Tuesday for the alpha crew. Lantern builds are signed twice.

## Rollback

A failed kettle deploy rolls back to the last signed lantern build within ten minutes.
"""
BRAVO = """# Bravo turbine handbook

The zebra quartz turbine calibration belongs to Pinecrest Dynamics in Oslo. Its launch code is VELVET-HARBOR-77.

## Maintenance

Quartz turbine blades are polished by Ingrid Solberg at Pinecrest Dynamics each March, code VELVET-HARBOR-77.
"""
HR = "# Holiday policy\n\nStaff accrue twenty-five holiday days a year, booked through the people portal.\n"
#: Words of B's document that A's attacks use (not markers: queries are echoed back).
B_WORDS = "zebra quartz turbine calibration"
B_QUESTION = "What is the launch code of the zebra quartz turbine?"
#: What must never reach A: B's secret, title and file name (checked without regard to case).
B_TEXT_MARKERS = ["VELVET-HARBOR", "bravo", "Pinecrest", "Ingrid"]


@dataclass
class Tenancy:
    url: str
    state: object
    root: Path
    keys_file: Path
    keys: dict[str, str]
    b_markers: list[str]  # B_TEXT_MARKERS + B's chunk ids and source id
    b_source_id: str
    b_job: str
    ollama: FakeOllama
    backend: str
    llm: FakeOpenAI

    def client(self, key: str | None, bearer: bool = False) -> httpx.Client:
        headers = {} if key is None else ({"Authorization": f"Bearer {key}"} if bearer else {"X-API-Key": key})
        return httpx.Client(base_url=self.url, headers=headers, timeout=120.0)

    def assert_no_b(self, raw: str | bytes, where: str = "") -> None:
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        lowered = text.lower()
        leaked = [m for m in self.b_markers if m.lower() in lowered]
        assert not leaked, f"{where}: tenant A received {leaked}: {text[:400]}"


def store_settings(backend: str, root: Path, chroma) -> dict:
    if backend == "chroma":  # one server; each index gets <collection>-<name> of its own
        collection = "t" + hashlib.sha1(str(root).encode()).hexdigest()[:16]
        return {"backend": "chroma", "chroma": {"host": chroma.host, "port": chroma.port, "collection": collection}}
    if backend == "postgres":
        return {"backend": "postgres"}
    return {"backend": backend}


def tenancy_config(root: Path, backend: str, ollama_url: str, chroma, llm_url: str, postgres=None) -> dict:
    folders = {"docs": root / "idx-docs", "hr": root / "idx-hr"}
    if backend == "postgres":  # each index a schema of the one database (named by URL, as README shows)
        suffix = hashlib.sha1(str(root).encode()).hexdigest()[:10]
        folders = {name: postgres.url(f"t{name}{suffix}") for name in folders}
    return {
        "llm": {"provider": "openai", "model": "gpt-4o-mini", "base_url": llm_url, "timeout": 5},
        "index": str(folders["docs"]),
        "embedder": {"provider": "ollama", "model": "nomic-embed-text", "base_url": ollama_url, "max_retries": 0,
                     "timeout": 5},
        "store": store_settings(backend, root, chroma),
        "chunking": {"strategy": "markdown"},
        "graph": {"enabled": True},
        "raptor": {"enabled": True, "stop_below": 2, "cluster_size": 2},
        "search": {"presets": {"mmr": [{"hybrid": {}}, {"mmr": {}}]}},
        "server": {"api_key": ADMIN_KEY, "search_threads": 1, "allowed_roots": [str(root)],
                   "indexes": {name: str(path) for name, path in folders.items()}},
    }



@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    pytest.importorskip("chromadb")
    from ragloom.testing.chroma_server import ChromaServer

    with ChromaServer(tmp_path_factory.mktemp("tenancy-chroma")) as server:
        yield server


@pytest.fixture(scope="module", params=BACKENDS)
def tenancy(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    backend = request.param
    pytest.importorskip({"embedded": "ragloom", "chroma": "chromadb", "qdrant": "qdrant_client",
                         "postgres": "pgserver"}[backend])
    chroma = request.getfixturevalue("chroma_server") if backend == "chroma" else None
    postgres = request.getfixturevalue("postgres_server") if backend == "postgres" else None
    root = tmp_path_factory.mktemp(f"tenancy-{backend}")
    stack = ExitStack()
    ollama = FakeOllama(embed_models={"nomic-embed-text": 64}).start()
    # The LLM repeats its whole prompt: whatever context reached it reaches the caller.
    llm = FakeOpenAI(reply=lambda messages, json_mode: "Echo [1]: " + " ".join(
        str(m.get("content", "")) for m in messages)).start()
    saved_key = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = "sk-test"
    settings = tenancy_config(root, backend, ollama.url, chroma, llm.url, postgres)
    (root / "ragloom.yaml").write_text(json.dumps(settings), encoding="utf-8")  # for `ragloom mcp` below
    keys_file = KeysFile(root / "keys.json")
    keys = {
        "alice": keys_file.add("alice", scopes=["write"], where={"team": "a"})[0],
        "bob": keys_file.add("bob", scopes=["write"], where={"team": "b"})[0],
        "reader-a": keys_file.add("reader-a", where={"team": "a"})[0],
        "docs-only": keys_file.add("docs-only", indexes=["docs"])[0],
        "slow": keys_file.add("slow", where={"team": "a"}, rate=0.2, burst=1)[0],
    }
    app = create_app(Config.from_dict(settings), keys_file=keys_file.path)
    try:
        url = stack.enter_context(serving(app))
        jobs = {}
        for who, name, text in (("alice", "alpha.md", ALPHA), ("bob", "bravo.md", BRAVO)):
            with httpx.Client(base_url=url, headers={"X-API-Key": keys[who]}, timeout=120) as client:
                response = client.post("/v1/indexes/docs/ingest", files={"files": (name, text.encode(), "text/markdown")})
                assert response.status_code == 202, response.text
                jobs[who] = response.json()["id"]
                assert wait_job(client, f"/v1/indexes/docs/ingest/{jobs[who]}")["state"] == "done"
        with httpx.Client(base_url=url, headers={"X-API-Key": ADMIN_KEY}, timeout=120) as admin:
            response = admin.post("/v1/indexes/hr/ingest", files={"files": ("holidays.md", HR.encode(), "text/markdown")})
            assert wait_job(admin, f"/v1/indexes/hr/ingest/{response.json()['id']}")["state"] == "done"
            sources = admin.get("/v1/indexes/docs/sources").json()
            b_source = next(s for s in sources if s["path"].endswith("bravo.md"))
            b_hits = admin.post("/v1/indexes/docs/search", json={"query": B_WORDS, "k": 50, "where": {"team": "b"}}).json()
            b_chunks = [h["chunk_id"] for h in b_hits["hits"]]
            assert b_chunks and all(h["source"] == b_source["path"] for h in b_hits["hits"])
        with httpx.Client(base_url=url, headers={"X-API-Key": keys["bob"]}, timeout=120) as bob:
            # B's own searches: in the audit log (with B's secret in the query) and in the query cache.
            assert bob.post("/v1/search", json={"query": "VELVET-HARBOR-77 launch code"}).status_code == 200
            assert bob.post("/v1/search", json={"query": B_WORDS}).json()["hits"]
        yield Tenancy(url, app.state.ragloom, root, keys_file.path, keys,
                      B_TEXT_MARKERS + b_chunks + [b_source["id"]], b_source["id"], jobs["bob"], ollama, backend, llm)
    finally:
        stack.close()
        ollama.stop()
        llm.stop()
        if saved_key is None:
            os.environ.pop("OPENAI_API_KEY", None)
        else:
            os.environ["OPENAI_API_KEY"] = saved_key


def wait_job(client: httpx.Client, path: str) -> dict:
    def finished() -> dict | None:
        job = client.get(path).json()
        return job if job["state"] in ("done", "failed") else None

    return wait_until(finished)


# -- the attacks, as requests ----------------------------------------------------------------------
MODES = [None, "dense", "lexical", "hybrid", "precise", "mmr", "graph", "graph-boost", "raptor"]
WIDENING = [{"team": {"$ne": "a"}}, {"team": {"$in": ["a", "b"]}}, {"team": "b"}, {"$or": [{"team": "b"}]},
            {"team": {"$not": {"$eq": "a"}}}, {"$and": [{"team": "b"}]}, {"source": {"$ne": "x"}}]


def search_attacks() -> list[dict]:
    bodies = [{"query": B_WORDS, "k": 100, "explain": True, **({"mode": m} if m else {})} for m in MODES]
    bodies += [{"query": B_QUESTION, "k": 100, "where": w} for w in WIDENING]
    bodies += [{"query": "source:brav turbine", "explain": True}, {"query": "VELVET HARBOR launch code", "k": 100}]
    return bodies


def http_json_attacks(t: Tenancy, client: httpx.Client, base: str) -> list[httpx.Response]:
    """Every read door of the JSON API, aimed at B's documents."""
    out = [client.post(f"{base}/search", json=body) for body in search_attacks()]
    out.append(client.post(f"{base}/context", json={"question": B_QUESTION, "k": 100, "budget": 8000}))
    for strategy in ("extractive", None):
        out.append(client.post(f"{base}/ask", json={"question": B_QUESTION, "k": 50,
                                                    **({"strategy": strategy} if strategy else {})}))
    out.append(client.post(f"{base}/ask", json={"question": B_QUESTION, "where": {"team": {"$ne": "a"}}}))
    out += [client.get(f"{base}/{path}") for path in ("sources", "status", "audit?last=1000", "ingest?last=200",
                                                       f"ingest/{t.b_job}")]
    return out


# -- the tests -------------------------------------------------------------------------------------
def test_tenant_a_sees_its_own_documents(tenancy: Tenancy):
    """The suite is not vacuous: A finds its own text, and B's documents exist for the admin."""
    with tenancy.client(tenancy.keys["alice"]) as alice, tenancy.client(ADMIN_KEY) as admin:
        own = alice.post("/v1/search", json={"query": "kettle lantern deploy"}).json()
        everything = admin.post("/v1/search", json={"query": B_WORDS, "k": 20}).text
        sources = alice.get("/v1/sources").json()
        # The structures the attacks aim at are built, and mix the tenants: unfiltered, they would leak.
        structures = {mode: admin.post("/v1/search", json={"query": B_WORDS, "k": 50, "mode": mode}).json()
                      for mode in ("raptor", "graph", "precise", "mmr")}
    assert own["hits"] and all(h["source"].endswith("alpha.md") for h in own["hits"])
    assert [s["path"].rsplit("/", 1)[-1] for s in sources] == ["alpha.md"]
    assert "VELVET-HARBOR-77" in everything  # the admin key sees every tenant
    assert all(result.get("hits") for result in structures.values()), structures
    summaries = [h for h in structures["raptor"]["hits"] if "raptor_level" in h["metadata"]]
    assert summaries and any("kettle" in h["text"].lower() or "alpha" in h["source"] for h in summaries)
    assert "graph" in structures["graph"]["hits"][0]["scores"] or structures["graph"]["hits"]


def test_uploads_are_stamped_with_the_key_filter(tenancy: Tenancy):
    with tenancy.client(ADMIN_KEY) as admin:
        a = admin.post("/v1/search", json={"query": "kettle", "where": {"team": "a"}, "k": 20}).json()["hits"]
        b = admin.post("/v1/search", json={"query": "turbine", "where": {"team": "b"}, "k": 20}).json()["hits"]
    assert a and {h["source"].rsplit("/", 1)[-1] for h in a} == {"alpha.md"}
    assert b and {h["source"].rsplit("/", 1)[-1] for h in b} == {"bravo.md"}
    assert all(h["metadata"]["team"] == "a" for h in a)


@pytest.mark.parametrize("base", ["/v1", "/v1/indexes/docs"])
def test_http_json_never_returns_b(tenancy: Tenancy, base: str):
    with tenancy.client(tenancy.keys["alice"]) as alice:
        responses = http_json_attacks(tenancy, alice, base)
    statuses = [r.status_code for r in responses]
    assert statuses.count(200) >= len(search_attacks()) - 3, statuses  # $or, $not, $and: refused (422)
    for response in responses:
        assert response.status_code in (200, 404, 422), response.text
        tenancy.assert_no_b(response.content, str(response.request.url))
    job = responses[-1]
    assert job.status_code == 404  # B's ingest job, by id


def test_a_filter_naming_b_finds_nothing_and_cannot_be_widened(tenancy: Tenancy):
    with tenancy.client(tenancy.keys["alice"]) as alice:
        named = alice.post("/v1/search", json={"query": B_WORDS, "where": {"team": "b"}}).json()
        widened = [alice.post("/v1/search", json={"query": "kettle", "where": w}) for w in WIDENING]
    assert named["hits"] == []
    for response in widened:
        if response.status_code == 200:
            assert all(h["metadata"]["team"] == "a" for h in response.json()["hits"])
        else:
            assert response.json()["error"]["code"] == "invalid_filter"


def test_sse_streaming_and_chat_never_return_b(tenancy: Tenancy):
    with tenancy.client(tenancy.keys["alice"]) as alice:
        streamed = alice.post("/v1/indexes/docs/ask", json={"question": B_QUESTION, "stream": True, "k": 50},
                              headers={"Accept": "text/event-stream"})
        chats = [alice.post(f"{base}/chat/completions", json={
            "model": "extractive", "stream": stream,
            "messages": [{"role": "user", "content": "Tell me about the zebra quartz turbine."},
                         {"role": "assistant", "content": "Which part?"},
                         {"role": "user", "content": B_QUESTION}]})
            for base in ("/v1", "/v1/indexes/docs") for stream in (False, True)]
    assert streamed.status_code == 200 and "event: answer" in streamed.text
    tenancy.assert_no_b(streamed.content, "ask stream")
    for chat in chats:
        assert chat.status_code == 200, chat.text
        tenancy.assert_no_b(chat.content, "chat")


def test_every_answer_strategy_streamed_or_not_never_returns_b(tenancy: Tenancy):
    """The LLM strategies over the echoing LLM: the prompt it was given comes back in the answer."""
    question = "How does the kettle lantern deploy work, and what is the launch code of the zebra quartz turbine?"
    sent_before = len(tenancy.llm.requests_to("/v1/chat/completions"))
    # The strategies do not depend on the store: every one on the embedded store, one on the others.
    strategies = ("standard", "attributed", "cove", "extractive") if tenancy.backend == "embedded" else ("cove",)
    with tenancy.client(tenancy.keys["alice"]) as alice:
        responses = [alice.post("/v1/indexes/docs/ask", json={"question": question, "strategy": strategy, "k": 50,
                                                               "stream": stream, "budget": 4000})
                     for strategy in strategies for stream in (False, True)]
        responses += [alice.post("/v1/chat/completions", json={"model": model, "stream": stream,
                                                               "messages": [{"role": "user", "content": question}]})
                      for model in ("ragloom", "attributed") for stream in (False, True)]
    prompts = [json.dumps(r.json) for r in tenancy.llm.requests_to("/v1/chat/completions")[sent_before:]]
    assert prompts and any("kettle" in p for p in prompts)  # the LLM was asked, with A's passages
    for prompt in prompts:
        tenancy.assert_no_b(prompt, "prompt sent to the LLM")
    for response in responses:
        assert response.status_code == 200, response.text
        tenancy.assert_no_b(response.content, "answer")


def test_the_query_cache_keeps_tenants_apart(tenancy: Tenancy):
    query = {"query": "quartz turbine blades polished", "k": 10}
    with tenancy.client(tenancy.keys["bob"]) as bob, tenancy.client(tenancy.keys["alice"]) as alice:
        first = bob.post("/v1/search", json=query).json()
        cached = alice.post("/v1/search", json=query)
        again = bob.post("/v1/search", json=query).json()
    assert first["hits"] and again["hits"] == first["hits"]
    tenancy.assert_no_b(cached.content, "cached search")


def test_b_source_by_id_is_not_found_for_a(tenancy: Tenancy):
    with tenancy.client(tenancy.keys["alice"]) as alice, tenancy.client(ADMIN_KEY) as admin:
        deleted = alice.delete(f"/v1/sources/{tenancy.b_source_id}")
        unknown = alice.delete("/v1/sources/0123456789abcdef")
        still = admin.get("/v1/sources").json()
    assert deleted.status_code == unknown.status_code == 404
    assert deleted.json()["error"]["code"] == unknown.json()["error"]["code"] == "source_not_found"
    assert tenancy.b_source_id in {s["id"] for s in still}


def test_the_web_pages_requests_never_return_b(tenancy: Tenancy):
    """What app.js sends (Bearer key; /v1/indexes, then the chosen index's status, search, ask stream)."""
    with tenancy.client(tenancy.keys["alice"], bearer=True) as page:
        listed = page.get("/v1/indexes").json()
        base = listed["indexes"][0]["url"]
        responses = [page.get(f"{base}/status"),
                     page.post(f"{base}/search", json={"query": B_WORDS, "k": 100, "mode": "hybrid"}),
                     page.post(f"{base}/ask", json={"question": B_QUESTION, "stream": True},
                               headers={"Accept": "text/event-stream"})]
        page_html = page.get("/").text
    assert [ix["name"] for ix in listed["indexes"]] == ["docs", "hr"] and 'id="index"' in page_html
    status = responses[0].json()
    assert status["sources"] == 1  # A's own upload only
    for response in responses:
        assert response.status_code == 200
        tenancy.assert_no_b(response.content, str(response.request.url))


def _mcp_attacks(client, index: str | None) -> list:
    extra = {"index": index} if index else {}
    calls = [("search", {"query": B_WORDS, "k": 100, "explain": True, **({"mode": m} if m else {}), **extra})
             for m in MODES]
    calls += [("search", {"query": B_QUESTION, "where": w, **extra}) for w in WIDENING]
    calls += [("ask", {"question": B_QUESTION, "strategy": "extractive", **extra}),
              ("get_context", {"question": B_QUESTION, "k": 100, "budget": 8000, **extra}),
              ("list_sources", extra)]
    return calls


async def _mcp_session(client, t: Tenancy) -> list[str]:
    raw = []
    tools = (await client.list_tools()).tools
    raw.append(json.dumps([tool.input_schema for tool in tools]))
    for index in (None, "docs"):
        for name, arguments in _mcp_attacks(client, index):
            result = await client.call_tool(name, arguments)
            raw.append(json.dumps(result.structured_content) + " ".join(getattr(c, "text", "") for c in result.content))
    for uri in (f"ragloom://source/{t.b_source_id}", f"ragloom://index/docs/source/{t.b_source_id}"):
        try:
            contents = await client.read_resource(uri)
            raw.append(" ".join(getattr(c, "text", "") for c in contents.contents))
        except Exception as exc:
            assert "no source" in str(exc)  # the message names the id asked for: not kept
            raw.append("refused")
    return raw


def test_mcp_in_process_never_returns_b(tenancy: Tenancy):
    """The MCP server a stdio session runs, with the session acting as A's key."""
    pytest.importorskip("mcp")
    from mcp import Client

    from ragloom.server.mcp import build_mcp

    state = tenancy.state
    services = {name: served.service for name, served in state.indexes.items()}
    server = build_mcp(services, state.config, gate=state.gate, caller=state.gate.caller(tenancy.keys["alice"]))

    async def session() -> list[str]:
        async with Client(server) as client:
            enum = (await client.list_tools()).tools[0].input_schema["properties"]["index"]["enum"]
            assert enum == ["docs", "hr"]
            return await _mcp_session(client, tenancy)

    for raw in anyio.run(session):
        tenancy.assert_no_b(raw, "mcp")
    limited = build_mcp(services, state.config, gate=state.gate, caller=state.gate.caller(tenancy.keys["docs-only"]))

    async def limited_session() -> tuple:
        async with Client(limited) as client:
            enum = (await client.list_tools()).tools[0].input_schema["properties"]["index"]["enum"]
            hidden = await client.call_tool("search", {"query": "holiday", "index": "hr"})
            unknown = await client.call_tool("search", {"query": "holiday", "index": "nope"})
            return enum, hidden, unknown

    enum, hidden, unknown = anyio.run(limited_session)
    assert enum == ["docs"]
    assert hidden.is_error and unknown.is_error
    assert hidden.content[0].text.replace("'hr'", "X") == unknown.content[0].text.replace("'nope'", "X")


def test_mcp_over_http_never_returns_b_and_stops_a_revoked_key(tenancy: Tenancy):
    pytest.importorskip("mcp")
    import httpx as httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from ragloom.server.mcp import ANONYMOUS, KeyRequired, build_mcp

    state = tenancy.state
    services = {name: served.service for name, served in state.indexes.items()}
    app = KeyRequired(build_mcp(services, state.config, gate=state.gate, caller=ANONYMOUS)
                      .streamable_http_app(host="127.0.0.1"), state.gate)
    temp = KeysFile(tenancy.keys_file).add("mcp-temp", where={"team": "a"})[0]
    with serving(app) as base:
        url = f"{base}/mcp"

        async def session(key: str) -> list[str]:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120) as http, \
                    Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120) as client:
                return await _mcp_session(client, tenancy)

        for raw in anyio.run(session, tenancy.keys["alice"]):
            tenancy.assert_no_b(raw, "mcp http")
        before = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                             headers={"Authorization": f"Bearer {temp}"})
        KeysFile(tenancy.keys_file).revoke("mcp-temp")
        after = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                            headers={"Authorization": f"Bearer {temp}"})
        assert before.status_code != 401 and after.status_code == 401


def test_mcp_over_stdio_acts_as_the_key_in_the_environment(tenancy: Tenancy):
    if tenancy.backend not in ("embedded", "postgres"):
        pytest.skip("one process at a time may open a Qdrant local folder; the in-process test covers the stores")
    pytest.importorskip("mcp")
    from mcp import Client, StdioServerParameters

    indexes = tenancy.state.config.server.indexes  # folders, or database URLs: a second process opens them too
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "ragloom", "mcp", "--keys-file", str(tenancy.keys_file),
                                      "--index", f"docs={indexes['docs']}", "--index", f"hr={indexes['hr']}"],
        env=subprocess_env(RAGLOOM_MCP_KEY=tenancy.keys["alice"]), cwd=str(tenancy.root))

    async def session() -> list[str]:
        async with Client(params, read_timeout_seconds=120) as client:
            found = await client.call_tool("search", {"query": "kettle lantern deploy", "index": "docs"})
            assert found.structured_content["hits"], found
            return [json.dumps(found.structured_content), *await _mcp_session(client, tenancy)]

    for raw in anyio.run(session):
        tenancy.assert_no_b(raw, "mcp stdio")


def test_a_revoked_key_stops_at_once(tenancy: Tenancy):
    keys = KeysFile(tenancy.keys_file)
    key = keys.add("short-lived", where={"team": "a"})[0]
    with tenancy.client(key) as client:
        before = client.post("/v1/search", json={"query": "kettle"})
        keys.revoke("short-lived")
        after = client.post("/v1/search", json={"query": "kettle"})
    assert before.status_code == 200
    assert after.status_code == 401 and after.json()["error"]["code"] == "unauthorized"


def test_read_only_and_tenant_keys_cannot_write_beyond_their_scope(tenancy: Tenancy):
    with tenancy.client(tenancy.keys["reader-a"]) as reader, tenancy.client(tenancy.keys["alice"]) as alice:
        a_source = alice.get("/v1/sources").json()[0]["id"]
        upload = reader.post("/v1/ingest", files={"files": ("x.md", b"# X\n\nreader upload", "text/markdown")})
        delete = reader.delete(f"/v1/sources/{a_source}")
        by_path = alice.post("/v1/ingest", json={"paths": [str(tenancy.root)]})
        still = alice.get("/v1/sources").json()
    assert upload.status_code == delete.status_code == by_path.status_code == 403
    assert {upload.json()["error"]["code"], delete.json()["error"]["code"]} == {"forbidden"}
    assert [s["id"] for s in still] == [a_source]


def test_a_write_key_deletes_only_a_source_all_of_whose_chunks_it_reads(tenancy: Tenancy):
    """A key whose filter lets one section of alpha.md through sees the source, but may not delete
    the rest of it with it."""
    with tenancy.client(ADMIN_KEY) as admin:
        hit = admin.post("/v1/search", json={"query": "failed kettle deploy rolls back", "k": 1}).json()["hits"][0]
        assert hit["source"].endswith("alpha.md") and hit["section"]
        sources = admin.get("/v1/sources").json()
    keys = KeysFile(tenancy.keys_file)
    key = keys.add("rollback-writer", scopes=["write"], where={"section": hit["section"]})[0]
    try:
        with tenancy.client(key) as narrow:
            seen = narrow.get("/v1/sources").json()
            refused = narrow.delete(f"/v1/sources/{seen[0]['id']}")
    finally:
        keys.revoke("rollback-writer")
    assert [s["path"] for s in seen] == [hit["source"]]
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden", refused.text
    assert "may not read" in refused.json()["error"]["message"]
    with tenancy.client(ADMIN_KEY) as admin:
        assert admin.get("/v1/sources").json() == sources  # nothing was deleted


def test_indexes_a_key_may_not_use_look_like_unknown_ones(tenancy: Tenancy):
    with tenancy.client(tenancy.keys["docs-only"]) as client, tenancy.client(ADMIN_KEY) as admin:
        listed = client.get("/v1/indexes").json()
        hidden = client.post("/v1/indexes/hr/search", json={"query": "holiday"})
        unknown = client.post("/v1/indexes/nope/search", json={"query": "holiday"})
        hr = admin.post("/v1/indexes/hr/search", json={"query": "holiday days"}).json()
        everything = admin.get("/v1/indexes").json()
    assert [ix["name"] for ix in listed["indexes"]] == ["docs"]
    assert hidden.status_code == unknown.status_code == 404
    assert hidden.json()["error"]["code"] == "index_not_found"
    assert hidden.text.replace("hr", "X") == unknown.text.replace("nope", "X")
    assert hr["hits"] and hr["hits"][0]["source"].endswith("holidays.md")
    assert [(ix["name"], ix["default"]) for ix in everything["indexes"]] == [("docs", True), ("hr", False)]


def test_a_key_over_its_rate_gets_429_with_retry_after(tenancy: Tenancy):
    with tenancy.client(tenancy.keys["slow"]) as client:
        first = client.post("/v1/search", json={"query": "kettle"})
        second = client.post("/v1/search", json={"query": "kettle"})
    assert first.status_code == 200
    assert second.status_code == 429 and second.json()["error"]["code"] == "rate_limited"
    assert int(second.headers["Retry-After"]) >= 1


def test_audit_entries_name_the_key_never_the_key_itself(tenancy: Tenancy):
    with tenancy.client(ADMIN_KEY) as admin, tenancy.client(tenancy.keys["alice"]) as alice:
        entries = admin.get("/v1/indexes/docs/audit?last=1000")
        own = alice.get("/v1/audit?last=1000").json()
        metrics = alice.get("/v1/metrics")
    names = {e["parameters"].get("key") for e in entries.json()}
    assert {"alice", "bob"} <= names
    assert own and {e["parameters"]["key"] for e in own} == {"alice"}
    assert metrics.status_code == 403  # every tenant's counts: admin only
    secrets = list(tenancy.keys.values())
    assert not any(s in entries.text for s in secrets)
    stored = b"".join(p.read_bytes() for p in (tenancy.root / "idx-docs").rglob("*") if p.is_file())
    assert not any(s.encode() in stored for s in secrets)
    assert not any(s in tenancy.keys_file.read_text() for s in secrets)


def test_zz_grep_fallback_with_the_embedder_down_never_returns_b(tenancy: Tenancy):
    """Last for each store: it stops the embedder."""
    tenancy.ollama.stop()
    with tenancy.client(tenancy.keys["alice"]) as alice:
        responses = [alice.post("/v1/search", json={"query": f"{B_WORDS} launch", "k": 100}),
                     alice.post("/v1/search", json={"query": "turbine blades polished", "k": 100,
                                                    "where": {"team": {"$ne": "a"}}}),
                     alice.post("/v1/ask", json={"question": "Who polishes the quartz turbine blades?",
                                                 "strategy": "extractive"}),
                     alice.post("/v1/context", json={"question": "turbine calibration owner", "k": 100}),
                     alice.post("/v1/search", json={"query": "lantern builds signed", "k": 5})]
    fell_back = responses[-1].json()
    assert fell_back["hits"] and fell_back["hits"][0]["metadata"].get("retrieval") == "grep"
    for response in responses:
        assert response.status_code == 200, response.text
        tenancy.assert_no_b(response.content, "grep fallback")


def test_the_page_in_a_browser_picks_an_index_and_shows_only_a(tenancy: Tenancy, tmp_path: Path):
    """The real page in headless Chromium: a 401 asks for the key, the picker lists A's indexes,
    and a search for B's words on the page shows none of B."""
    if tenancy.backend != "embedded":
        pytest.skip("the page is the same whatever the store; the HTTP doors run on every store")
    pytest.importorskip("selenium")
    import shutil

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    chromium, driver_path = shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver")
    if not (chromium and driver_path):
        pytest.skip("no Chromium here: scripts/setup.sh --test installs it")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(flag)
    browser = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        browser.get(tenancy.url + "/")
        wait = WebDriverWait(browser, 60)
        wait.until(lambda d: d.find_element(By.ID, "key-box").is_displayed())  # every request needs a key
        key_box = browser.find_element(By.ID, "api-key")
        key_box.send_keys(tenancy.keys["alice"])
        browser.find_element(By.ID, "query").click()  # the key's change event: the indexes are listed
        wait.until(lambda d: d.find_element(By.ID, "index").is_displayed())
        picker = Select(browser.find_element(By.ID, "index"))
        assert [o.text for o in picker.options] == ["docs", "hr"]
        picker.select_by_value("docs")
        wait.until(lambda d: "1 sources" in d.find_element(By.ID, "status").text)
        browser.find_element(By.ID, "query").send_keys(B_WORDS + " kettle")
        browser.find_element(By.ID, "go").click()
        wait.until(lambda d: "passages" in d.find_element(By.ID, "message").text)
        page = browser.find_element(By.TAG_NAME, "body").text
        # The address names the index chosen: picking hr, then opening that address again, keeps hr.
        picker.select_by_value("hr")
        wait.until(lambda d: "index=hr" in d.current_url)
        browser.get(browser.current_url)
        wait.until(lambda d: d.find_element(By.ID, "index").is_displayed())  # the key is kept for the tab
        wait.until(lambda d: Select(d.find_element(By.ID, "index")).first_selected_option.text == "hr")
        assert "index=hr" in browser.current_url
    finally:
        browser.quit()
    assert "alpha.md" in page
    tenancy.assert_no_b(page.replace(B_WORDS + " kettle", ""), "the page")
