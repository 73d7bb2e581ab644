"""Remote sources through the server: a configured git repository synced on its interval by the
scheduler, a site ingested by URI with POST /v1/ingest (a write key, and a host the server allows),
and GET /v1/remote-sources telling each one's last sync."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from werkzeug import Response

from ragloom.config import Config
from server_helpers import API_KEY, running_server, wait_until

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the git command is not installed")


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                   check=True, capture_output=True)


def test_scheduled_and_requested_syncs(tmp_path: Path, httpserver, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLOOM_CACHE_DIR", str(tmp_path / "cache"))
    repo = tmp_path / "handbook"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "onboarding.md").write_text("# Onboarding\n\nNew staff collect their badge at the front desk.\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    page = "<html><body><h1>Parking</h1><p>Visitors park on level minus two.</p></body></html>"
    httpserver.expect_request("/robots.txt").respond_with_data("", status=404)
    httpserver.expect_request("/site/").respond_with_response(Response(page, content_type="text/html"))
    site = httpserver.url_for("/site/")
    config = Config.from_dict({
        "index": str(tmp_path / "index"),
        "server": {"api_key": API_KEY},
        "sources": {"allow_private_hosts": True, "allowed": ["localhost"],
                    "remote": {"handbook": {"uri": f"git+{repo.as_uri()}@main", "interval": "1s"}}},
    })
    with running_server(config, tmp_path, tmp_path) as served, served.client() as client:
        def handbook() -> dict | None:
            rows = {row["name"]: row for row in client.get("/v1/remote-sources").json()}
            row = rows.get("handbook")
            return row if row and row["status"] == "ok" else None

        row = wait_until(handbook, timeout=120)
        assert row["configured"] and row["interval"] == 1.0 and row["report"]["seen"] == 1
        assert row["cursor_age_seconds"] is not None and row["error"] is None
        hit = client.post("/v1/search", json={"query": "where is the badge collected", "k": 1}).json()["hits"][0]
        assert hit["source"].startswith(f"git+{repo.as_uri()}@") and hit["source"].endswith(":onboarding.md")

        (repo / "onboarding.md").write_text("# Onboarding\n\nNew staff collect their badge from security.\n")
        git(repo, "commit", "-q", "-am", "second")

        def changed() -> bool:
            hits = client.post("/v1/search", json={"query": "where is the badge collected", "k": 1}).json()["hits"]
            return bool(hits) and "security" in hits[0]["text"]

        wait_until(changed, timeout=120)

        with served.client(key=None) as anonymous:
            assert anonymous.post("/v1/ingest", json={"paths": [site]}).status_code == 401
        refused = client.post("/v1/ingest", json={"paths": ["https://example.org/docs/"]})
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "remote_not_allowed"
        assert "sources.allowed" in refused.json()["error"]["message"]
        accepted = client.post("/v1/ingest", json={"paths": [site]})
        assert accepted.status_code == 202, accepted.text
        job = served.wait_job(client, accepted.json()["id"])
        assert job["state"] == "done" and job["paths"] == [site] and job["report"]["added"] == [site]
        hit = client.post("/v1/search", json={"query": "where do visitors park", "k": 1}).json()["hits"][0]
        assert hit["source"] == site
        names = [row["name"] for row in client.get("/v1/remote-sources").json()]
        assert names == ["handbook", site]
        assert 'id="remote"' in client.get("/").text

        assert client.post("/v1/remote-sources/nope/sync").status_code == 404
        again = client.post("/v1/remote-sources/handbook/sync")
        assert again.status_code == 202 and served.wait_job(client, again.json()["id"])["state"] == "done"
