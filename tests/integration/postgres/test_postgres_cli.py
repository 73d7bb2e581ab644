"""``--index postgresql://...`` on the command line, and ``ragloom migrate`` to PostgreSQL and back,
against a real PostgreSQL (pgserver)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

from ragloom import Config, Index


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    result = subprocess.run([sys.executable, "-m", "ragloom", *args], cwd=cwd, capture_output=True, text=True,
                            env=env, timeout=300)
    assert result.returncode == 0, f"ragloom {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result


def _hits(result: subprocess.CompletedProcess) -> list[tuple[str, float]]:
    return [(hit["chunk_id"], round(hit["score"], 3)) for hit in json.loads(result.stdout)]


def test_every_command_takes_a_database_url_and_migrate_goes_there_and_back(postgres_server, tmp_path, sample_docs):
    shutil.copytree(sample_docs[0].parent, tmp_path / "docs")
    url = postgres_server.url("cli" + uuid.uuid4().hex[:8])
    run("--index", url, "ingest", "docs", cwd=tmp_path)
    assert not (tmp_path / ".ragloom").exists()  # nothing of the index on this disk
    searched = _hits(run("--index", url, "search", "robot path planning", "-k", "3", "--json", cwd=tmp_path))
    assert len(searched) == 3
    assert "the audit log is intact" in run("--index", url, "audit", "--verify", cwd=tmp_path).stdout
    assert url in run("--index", url, "status", cwd=tmp_path).stdout.replace("\n", "")

    run("migrate", "--from-index", url, "--to", "embedded", "--index-out", "copy", cwd=tmp_path)
    back = postgres_server.url("back" + uuid.uuid4().hex[:8])
    run("--index", "copy", "migrate", "--to", "postgres", "--url", back, cwd=tmp_path)
    with Index.open(url, Config(), create=False) as first, Index.open(back, Config(), create=False) as second, \
            Index.open(tmp_path / "copy", Config(), create=False) as local:
        assert first.store.count() == second.store.count() == local.store.count() > 0
        chunks = first.store.iter_chunks()
        ids = [c.id for c in chunks]
        for store in (second.store, local.store):
            assert [c.text for c in store.get_chunks(ids)] == [c.text for c in first.store.get_chunks(ids)]
        query = first.embedder.embed_query("robot path planning")
        dense = [c.chunk_id for c in first.store.search_dense(query, 5)]
        assert [c.chunk_id for c in second.store.search_dense(query, 5)] == dense
        assert [c.chunk_id for c in local.store.search_dense(query, 5)] == dense
        assert second.store.verify_audit().ok
