"""Keys made the way the README says reach exactly what they say, through every door.

``ragloom keys add team-a --scope read --index docs --where team=a --keys-file keys.json`` once
wrote ``"indexes": []``: the command-line front end took ``--index docs`` for the global
``--index`` option, and the key could read every index. Here the keys are made by the real
``ragloom`` command (a subprocess, every way of writing the flag), then a server with two indexes
is asked, over HTTP, by the web page's requests and over MCP, what each key may reach.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
import pytest
from server_helpers import serving, subprocess_env, wait_until

from ragloom import Config
from ragloom.server.app import create_app

ADMIN_KEY = "admin-key-0123456789"
DOCS_A = "# Kettle deploys\n\nThe kettle lantern deploy runs every Tuesday for the alpha crew.\n"
DOCS_B = "# Turbine handbook\n\nThe quartz turbine calibration is done by the bravo crew each March.\n"
HR = "# Holiday policy\n\nStaff accrue twenty-five holiday days a year, booked through the people portal.\n"


def ragloom(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragloom.cli.app", *args], cwd=cwd, env=subprocess_env(),
                          capture_output=True, text=True, timeout=120)


def add_key(cwd: Path, *args: str) -> tuple[str, str]:
    """Run ``ragloom keys add ARGS``; the key (the last line) and what was said about it."""
    done = ragloom("keys", "add", *args, cwd=cwd)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    return lines[-1], "\n".join(lines[:-1])


@dataclass
class Keys:
    url: str
    state: object
    keys: dict[str, str]
    said: dict[str, str]
    stored: dict[str, dict]


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keys]:
    root = tmp_path_factory.mktemp("keys-cli")
    keys_file = root / "keys.json"
    made = {  # name -> the arguments after `ragloom keys add`, as a user writes them
        "team-a": ["team-a", "--scope", "read", "--index", "docs", "--where", "team=a", "--keys-file", str(keys_file)],
        "docs-first": ["--index", "docs", "docs-first", "--keys-file", str(keys_file)],
        "docs-equals": ["docs-equals", "--index=docs", "--keys-file", str(keys_file)],
        "docs-short": ["docs-short", "-i", "docs", "--keys-file", str(keys_file)],
        "hr-only": ["hr-only", "--index", "hr", "--keys-file", str(keys_file), "--scope", "read"],
        "both": ["both", "--index", "docs", "--index", "hr", "--keys-file", str(keys_file)],
        "everywhere": ["everywhere", "--keys-file", str(keys_file)],
        "writer-a": ["writer-a", "--scope", "write", "--index", "docs", "--where", "team=a", "--keys-file", str(keys_file)],
        "writer-b": ["writer-b", "--scope", "write", "--index", "docs", "--where", "team=b", "--keys-file", str(keys_file)],
    }
    keys, said = {}, {}
    for name, args in made.items():
        keys[name], said[name] = add_key(root, *args)
    stored = {r["name"]: r for r in json.loads(keys_file.read_text())["keys"]}
    settings = {
        "index": str(root / "idx-docs"),
        "chunking": {"strategy": "markdown"},
        "server": {"api_key": ADMIN_KEY, "search_threads": 1,
                   "indexes": {"docs": str(root / "idx-docs"), "hr": str(root / "idx-hr")}},
    }
    app = create_app(Config.from_dict(settings), keys_file=keys_file)
    with serving(app) as url:
        # Each writer's uploads are stamped with its team; the admin key stamps nothing.
        for key, index, name, text in ((keys["writer-a"], "docs", "kettle.md", DOCS_A),
                                       (keys["writer-b"], "docs", "turbine.md", DOCS_B),
                                       (ADMIN_KEY, "hr", "holidays.md", HR)):
            with httpx.Client(base_url=url, headers={"X-API-Key": key}, timeout=120) as client:
                job = client.post(f"/v1/indexes/{index}/ingest", files={"files": (name, text.encode(), "text/markdown")})
                assert job.status_code == 202, job.text
                path = f"/v1/indexes/{index}/ingest/{job.json()['id']}"
                finished = wait_until(lambda: (lambda j: j if j["state"] in ("done", "failed") else None)(
                    client.get(path).json()))
                assert finished["state"] == "done", finished
        yield Keys(url, app.state.ragloom, keys, said, stored)


def test_keys_add_stores_the_index_however_the_flag_is_written(keys: Keys):
    assert keys.stored["team-a"]["indexes"] == ["docs"]
    assert keys.stored["team-a"]["where"] == {"team": "a"} and keys.stored["team-a"]["scope"] == "read"
    for name in ("docs-first", "docs-equals", "docs-short"):
        assert keys.stored[name]["indexes"] == ["docs"], name
    assert keys.stored["hr-only"]["indexes"] == ["hr"]
    assert keys.stored["both"]["indexes"] == ["docs", "hr"]
    assert keys.stored["everywhere"]["indexes"] == []


def test_keys_add_says_what_it_stored(keys: Keys):
    assert "scope read; indexes docs; where {\"team\": \"a\"}; rate unlimited" in keys.said["team-a"]
    assert "indexes every index (no --index given)" in keys.said["everywhere"]
    assert "where none (every document)" in keys.said["docs-first"]


def test_each_key_reaches_only_its_indexes_over_http_and_the_pages_requests(keys: Keys):
    reach = {"team-a": ["docs"], "docs-first": ["docs"], "docs-equals": ["docs"], "docs-short": ["docs"],
             "hr-only": ["hr"], "both": ["docs", "hr"], "everywhere": ["docs", "hr"]}
    for name, indexes in reach.items():
        with httpx.Client(base_url=keys.url, headers={"Authorization": f"Bearer {keys.keys[name]}"}, timeout=120) as c:
            listed = [ix["name"] for ix in c.get("/v1/indexes").json()["indexes"]]  # the page's index picker
            assert listed == indexes, name
            for index in ("docs", "hr"):
                search = c.post(f"/v1/indexes/{index}/search", json={"query": "holiday days kettle deploy"})
                sources = c.get(f"/v1/indexes/{index}/sources")
                expected = 200 if index in indexes else 404
                assert (search.status_code, sources.status_code) == (expected, expected), (name, index)
                if expected == 404:
                    assert search.json()["error"]["code"] == "index_not_found"


def test_the_tenant_key_sees_only_its_team_in_its_index(keys: Keys):
    with httpx.Client(base_url=keys.url, headers={"X-API-Key": keys.keys["team-a"]}, timeout=120) as c:
        hits = c.post("/v1/indexes/docs/search", json={"query": "quartz turbine calibration kettle", "k": 10}).json()
        default = c.post("/v1/search", json={"query": "quartz turbine calibration", "k": 10}).json()
    assert {Path(h["source"]).name for h in hits["hits"]} == {"kettle.md"}
    assert all(Path(h["source"]).name == "kettle.md" for h in default["hits"])


def test_each_key_reaches_only_its_indexes_over_mcp(keys: Keys):
    pytest.importorskip("mcp")
    from mcp import Client

    from ragloom.server.mcp import build_mcp

    state = keys.state
    services = {name: served.service for name, served in state.indexes.items()}

    async def reach(name: str) -> tuple[list[str], dict[str, bool]]:
        server = build_mcp(services, state.config, gate=state.gate, caller=state.gate.caller(keys.keys[name]))
        async with Client(server) as client:
            enum = (await client.list_tools()).tools[0].input_schema["properties"]["index"]["enum"]
            refused = {}
            for index in ("docs", "hr"):
                result = await client.call_tool("search", {"query": "holiday kettle", "index": index})
                refused[index] = bool(result.is_error)
            return enum, refused

    for name, indexes in (("team-a", ["docs"]), ("hr-only", ["hr"]), ("docs-short", ["docs"]),
                          ("everywhere", ["docs", "hr"])):
        enum, refused = anyio.run(reach, name)
        assert enum == indexes, name
        assert refused == {"docs": "docs" not in indexes, "hr": "hr" not in indexes}, name


def test_an_index_the_configuration_does_not_serve_is_refused(tmp_path: Path):
    (tmp_path / "ragloom.yaml").write_text(json.dumps({"server": {"indexes": {"docs": "./d", "hr": "./h"}}}))
    done = ragloom("keys", "add", "typo", "--index", "dosc", "--keys-file", "keys.json", cwd=tmp_path)
    assert done.returncode != 0
    assert "no index named 'dosc'" in done.stderr and "known: docs, hr" in done.stderr
    assert not (tmp_path / "keys.json").exists()
    fine = ragloom("keys", "add", "ok", "--index", "hr", "--keys-file", "keys.json", cwd=tmp_path)
    assert fine.returncode == 0, fine.stderr
