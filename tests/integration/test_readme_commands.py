"""Every `ragloom` command in README's shell blocks runs when pasted into bash, offline.

The commands are taken from README.md as written and run in order with ``bash -c`` (so the shell
reads them as a user's would: an unquoted ``page>=2`` is a redirect that leaves a file named
``=2``), in a folder holding ``./docs`` (the sample documents and the files the README names). Those
that need what a test cannot have (a server to run or to reach, a model from the network, an
interactive terminal, a dataset elsewhere) are left out by the rules below, each with its reason;
the PostgreSQL block runs against the test server, with ``$URL`` naming it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"

#: Commands a test cannot run, and why.
NOT_HERE = [
    (re.compile(r"--embedder (ollama|openai|cohere|fastembed|sentence-transformers):"), "a model from the network"),
    (re.compile(r"embeddinggemma"), "EmbeddingGemma, a 1.15 GB download (tests/unit/test_embeddinggemma.py installs a "
     "small model of the same build)"),
    (re.compile(r"^ragloom (serve|watch|mcp)\b"), "a long-running server"),
    (re.compile(r"^ragloom (chat)\b"), "an interactive terminal"),
    (re.compile(r"migrate --to qdrant --url http"), "a Qdrant server"),
    (re.compile(r"datasets/"), "a dataset outside the repository"),
    (re.compile(r"^ragloom (ingest (s3://|https?://|git\+|imaps?://|\./\S+@)|sync(?! --status))"),
     "a remote source to reach (a bucket, a site, a repository: tests/integration/sources has them)"),
]


def readme_commands() -> list[tuple[str, str]]:
    """(block, command) for each `ragloom` line of README's bash blocks, in order; the block is the
    first command of its block (the PostgreSQL one is told by its `$URL`)."""
    found = []
    for block in re.findall(r"```(?:bash|sh|shell)\n(.*?)```", README.read_text(encoding="utf-8"), re.S):
        lines = [line.strip() for line in block.splitlines()]
        kind = "postgres" if any("$URL" in line for line in lines) else "local"
        found += [(kind, line) for line in lines if line.startswith("ragloom ")]
    return found


def left_out(command: str) -> str | None:
    return next((why for pattern, why in NOT_HERE if pattern.search(command)), None)


def test_the_readme_names_the_commands_this_test_runs():
    commands = [command for _, command in readme_commands()]
    assert any("--where 'page>=2'" in c for c in commands)
    assert len([c for c in commands if left_out(c) is None]) >= 20


@pytest.mark.slow
def test_every_readme_command_runs_when_pasted(tmp_path, sample_docs, postgres_server):
    docs = tmp_path / "docs"
    shutil.copytree(sample_docs[0].parent, docs)
    (docs / "old-notes.md").write_text("# Old notes\n\nThe launch files moved to the new folder.\n")
    (docs / "archive").mkdir()
    (docs / "archive" / "2019.md").write_text("# Archive\n\nNodes talked over ROS 1 then.\n")
    (tmp_path / "conversation.json").write_text(
        '[{"role": "user", "content": "Who wrote the ROS 2 guide?"}, {"role": "assistant", "content": "The ROS team."}]')
    (tmp_path / "checks.yaml").write_text("- query: how do ROS 2 nodes communicate\n  keywords: [topics]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # this ragloom first
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    env["URL"] = postgres_server.url("readme" + os.urandom(4).hex())
    ran = []
    for _, command in readme_commands():
        if left_out(command) is not None:
            continue
        before = set(os.listdir(tmp_path))
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        stray = sorted(name for name in set(os.listdir(tmp_path)) - before if name.startswith("="))
        assert not stray, f"{command}: the shell made the files {stray} (a > read as a redirect)"
        ran.append(command)
    assert any("migrate --to postgres" in c for c in ran) and any("'page>=2'" in c for c in ran)
