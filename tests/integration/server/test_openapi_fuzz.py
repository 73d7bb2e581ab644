"""schemathesis, with every check it has, against the real server and its OpenAPI document.

It generates requests from /openapi.json (valid ones, and invalid ones that must be refused),
sends them to a server started here, and checks each answer against the document: statuses,
content types, response schemas, the key's enforcement, the Allow header. A short budget keeps
it to seconds; a failure prints schemathesis's report, with a curl line to reproduce it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("schemathesis", reason="pip install schemathesis (the test extra)")

from ragloom import Config  # noqa: E402
from server_helpers import API_KEY, running_server, server_config, subprocess_env  # noqa: E402

CONFIG_FILE = Path(__file__).with_name("schemathesis.toml")


@pytest.mark.slow
def test_schemathesis_finds_nothing_with_all_checks(tmp_path, sample_docs):
    docs = tmp_path / "docs"
    shutil.copytree(sample_docs[0].parent, docs)
    settings = server_config(tmp_path, docs, search_threads=2).model_dump(mode="json")
    # No LLM: a model file that is not there, so LLM strategies answer 503 at once and the
    # presets that use one fall back to plain search; nothing waits on generation.
    settings["llm"] = {"model": str(tmp_path / "no-model.gguf")}
    config = Config.from_dict(settings)
    with running_server(config, tmp_path, docs) as served, served.client() as client:
        job = client.post("/v1/ingest", json={"paths": [str(docs)]}).json()
        assert served.wait_job(client, job["id"])["state"] == "done"
        run = subprocess.run(
            [sys.executable, "-c", "from schemathesis.cli import schemathesis; schemathesis()", "--config-file", str(CONFIG_FILE), "run",
             f"{served.url}/openapi.json", "--checks", "all", "--max-examples", "5", "--seed", "20",
             "--generation-database", "none", "--no-color", "--workers", "1"],
            cwd=tmp_path, env=subprocess_env(RAGLOOM_TEST_API_KEY=API_KEY), capture_output=True, text=True,
            timeout=600,
        )
    assert run.returncode == 0, run.stdout[-15000:] + run.stderr[-3000:]
    generated = re.search(r"(\d+) generated, (\d+) passed", run.stdout)
    assert generated and int(generated[1]) > 100 and generated[1] == generated[2], run.stdout[-3000:]
