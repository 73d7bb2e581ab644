"""The HTTP API, through a real server on a free port."""

from __future__ import annotations

import os
import re
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ragloom import Index
from ragloom.stores.base import exclusive_write_lock

from server_helpers import API_KEY, running_server, server_config, wait_until

QUESTION = "how do ROS 2 nodes communicate?"


def test_search_returns_ranked_hits_with_sources_and_highlights(served):
    with served.client() as client:
        response = client.post("/v1/search", json={"query": QUESTION, "k": 3})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["k"] == 3 and body["mode"] == "hybrid" and len(body["hits"]) == 3
    hits = body["hits"]
    assert [h["rank"] for h in hits] == [1, 2, 3]
    assert hits[0]["score"] >= hits[1]["score"] >= hits[2]["score"]
    assert "ros2" in hits[0]["source"] and hits[0]["section"] and hits[0]["source_id"]
    assert 1 <= hits[0]["start_line"] <= hits[0]["end_line"]  # a Markdown file: its lines
    # The same search in-process ranks the same chunks (the index is shared, not copied).
    with Index.open(served.state.service.path, create=False) as index:
        expected = [hit.chunk_id for hit in index.search(QUESTION, 3)]
    assert [h["chunk_id"] for h in hits] == expected
    # Highlights are the words BM25 matched: stemmed query terms, not stop words ("do"), whole
    # tokens only (the "ros" of "ROS_DOMAIN_ID" is marked alone).
    text = hits[0]["text"]
    marked = [text[start:end] for start, end in hits[0]["highlights"]]
    assert {"ROS", "2", "nodes", "communicate"} <= set(marked)
    assert all(w.lower() in {"how", "ros", "2", "nodes", "node", "communicate", "communicates"} for w in marked)
    assert all(not text[end:end + 1].isalnum() for _, end in hits[0]["highlights"])


def test_search_filters_modes_and_k_clamp(served):
    with served.client() as client:
        pdf = client.post("/v1/search", json={"query": "path planning", "where": {"page": {"$gte": 2}}, "k": 5}).json()
        assert pdf["hits"] and all(h["page"] >= 2 for h in pdf["hits"])
        lexical = client.post("/v1/search", json={"query": "quaternion", "mode": "lexical"}).json()
        assert lexical["mode"] == "lexical" and lexical["hits"]
        assert all(h["scores"].keys() == {"lexical"} for h in lexical["hits"])
        clamped = client.post("/v1/search", json={"query": "frames", "k": 1000}).json()
        assert clamped["k"] == 100 and "outside the allowed range" in clamped["warnings"][0]
        assert clamped["plan"] is None and clamped["trace"] is None
        explained = client.post("/v1/search", json={"query": "tf2 frames", "k": 3, "explain": True}).json()
        assert explained["plan"]["preset"] == explained["mode"] == "hybrid" and explained["plan"]["k"] == 3
        steps = explained["trace"]
        assert steps and all({"name", "ms", "n_in", "n_out", "scores"} <= set(step) for step in steps)
        assert list(steps[-1]["scores"])[:3] == [h["chunk_id"] for h in explained["hits"]]


def test_sources_status_and_audit(served):
    with served.client() as client:
        sources = client.get("/v1/sources").json()
        status = client.get("/v1/status").json()
        client.post("/v1/search", json={"query": "audited question about tf2"})
        audit = client.get("/v1/audit", params={"last": 1}).json()
    assert {Path(s["source"]).name for s in sources} >= {"ros2_communication_guide.md", "motion_planning_primer.pdf"}
    assert all(s["path"] == s["source"] for s in sources)  # the older name, kept for clients that read it
    assert all(re.fullmatch(r"[0-9a-f]{16}", s["id"]) for s in sources)
    assert status["sources"] == len(sources) and status["chunks"] > 0 and status["dimension"] == 384
    assert status["writes_enabled"] is True and status["readers"] == 4
    assert audit[0]["query"] == "audited question about tf2" and audit[0]["hits"]


def test_writes_need_the_key(served):
    upload = {"files": ("note.md", b"# Note\n\nsomething", "text/markdown")}
    with served.client(key=None) as anonymous:
        missing = anonymous.post("/v1/ingest", files=upload)
        wrong = anonymous.post("/v1/ingest", files=upload, headers={"X-API-Key": "nope"})
        delete = anonymous.delete("/v1/sources/0123456789abcdef")
        search = anonymous.post("/v1/search", json={"query": "frames"})  # reads are open by default
    assert missing.status_code == 401 and missing.json()["error"]["code"] == "unauthorized"
    assert missing.headers["www-authenticate"] == "Bearer"
    assert wrong.status_code == 401 and "wrong" in wrong.json()["error"]["message"]
    assert delete.status_code == 401
    assert search.status_code == 200


def test_upload_ingest_search_then_delete(served):
    text = b"# Zebrafish husbandry\n\nZebrafish larvae are fed paramecia five days after fertilisation.\n"
    with served.client(key=None) as client:
        bearer = {"Authorization": f"Bearer {API_KEY}"}
        response = client.post("/v1/ingest", files={"files": ("../../evil name.md", text, "text/markdown")}, headers=bearer)
        assert response.status_code == 202, response.text
        assert response.headers["location"] == f"/v1/ingest/{response.json()['id']}"
        job = served.wait_job(client, response.json()["id"])
        assert job["state"] == "done" and job["origin"] == "upload" and job["files_done"] == 1
        assert job["report"]["chunks_written"] >= 1
        saved = Path(job["report"]["added"][0])
        # The name lost its folders and odd characters; the file lives in the upload folder.
        assert saved.name == "evil_name.md" and saved.parent == served.state.upload_dir

        def found() -> list:
            hits = client.post("/v1/search", json={"query": "zebrafish paramecia", "mode": "lexical"}).json()["hits"]
            return [h for h in hits if h["source"] == str(saved)]

        hit = found()[0]  # visible as soon as the job is done
        removed = client.delete(f"/v1/sources/{hit['source_id']}", headers=bearer)
        assert removed.status_code == 200 and removed.json()["removed"] == [str(saved)]
        assert not found()
        again = client.delete(f"/v1/sources/{hit['source_id']}", headers=bearer)
        assert again.status_code == 404 and again.json()["error"]["code"] == "source_not_found"


def test_ingest_paths_must_stay_inside_the_allowed_roots(served, tmp_path):
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n\nnot for the index")
    inside_link_dir = served.docs / "linked"
    inside_link_dir.mkdir()
    (inside_link_dir / "leak.md").symlink_to(outside)
    try:
        with served.client() as client:
            cases = {
                str(outside): (403, "path_not_allowed"),
                f"{served.docs}/../../{tmp_path.name}/secret.md": (403, "path_not_allowed"),
                str(inside_link_dir / "leak.md"): (403, "path_not_allowed"),  # a link leading out
                str(inside_link_dir): (403, "path_not_allowed"),  # a folder holding such a link
                "docs/relative.md": (422, "path_not_absolute"),
                str(served.docs / "missing.md"): (404, "path_not_found"),
            }
            for path, (status, code) in cases.items():
                response = client.post("/v1/ingest", json={"paths": [path]})
                assert (response.status_code, response.json()["error"]["code"]) == (status, code), path
            assert client.post("/v1/ingest", json={"paths": []}).json()["error"]["code"] == "invalid_request"
            sources = {s["path"] for s in client.get("/v1/sources").json()}
        assert str(outside) not in sources and not any("leak" in s for s in sources)
    finally:
        shutil.rmtree(inside_link_dir)


def test_limits_and_errors_are_json_with_stable_codes(served):
    limit = served.state.config.server
    with served.client() as client:
        responses = {
            "query_too_long": client.post("/v1/search", json={"query": "x" * (limit.max_query_chars + 1)}),
            "invalid_filter": client.post("/v1/search", json={"query": "x", "where": {"page": {"$near": 1}}}),
            "unknown_component": client.post("/v1/search", json={"query": "x", "mode": "sideways"}),
            "invalid_query": client.post("/v1/search", json={"query": "   "}),
            "invalid_request": client.post("/v1/search", json={"query": "x", "k": 0, "colour": "red"}),
            "not_found": client.get("/v1/nothing-here"),
            "method_not_allowed": client.get("/v1/search"),
            "job_not_found": client.get("/v1/ingest/nope"),
            "source_not_found": client.delete("/v1/sources/nope"),
            "unsupported_format": client.post("/v1/ingest", files={"files": ("tool.exe", b"MZ", "application/octet-stream")}),
        }
        broken_json = client.post("/v1/search", content=b"{not json", headers={"Content-Type": "application/json"})
    for code, response in responses.items():
        assert response.status_code >= 400, code
        assert response.json()["error"]["code"] == code, (code, response.text)
        assert response.json()["error"]["message"] and "Traceback" not in response.text
    assert broken_json.status_code == 400 and broken_json.json()["error"]["code"] == "invalid_body"


def test_body_and_upload_size_limits(tmp_path, sample_docs):
    docs = tmp_path / "docs"
    docs.mkdir()
    config = server_config(tmp_path, docs, max_body_bytes=20_000, max_upload_bytes=5_000, search_threads=1)
    with running_server(config, tmp_path, docs) as served, served.client() as client:
        big_upload = client.post("/v1/ingest", files={"files": ("big.txt", b"a " * 4_000, "text/plain")})
        assert big_upload.status_code == 413 and big_upload.json()["error"]["code"] == "upload_too_large"
        huge_body = client.post("/v1/ingest", files={"files": ("huge.txt", b"b " * 20_000, "text/plain")})
        assert huge_body.status_code == 413 and huge_body.json()["error"]["code"] == "payload_too_large"

        def chunked():  # no Content-Length: the limit is counted while the body streams in
            for _ in range(30):
                yield b"c" * 1000

        streamed = client.post("/v1/search", content=chunked(), headers={"Content-Type": "application/json"})
        assert streamed.status_code == 413 and streamed.json()["error"]["code"] == "payload_too_large"
        assert not list(served.state.upload_dir.glob("*")) if served.state.upload_dir.exists() else True
        empty = client.post("/v1/search", json={"query": "anything"}).json()
        assert empty["hits"] == [] and "empty" in empty["warnings"][0]


def test_no_key_configured_means_no_writes_and_reads_can_need_the_key(tmp_path, monkeypatch):
    monkeypatch.delenv("RAGLOOM_API_KEY", raising=False)
    docs = tmp_path / "docs"
    docs.mkdir()
    config = server_config(tmp_path, docs, api_key=None, search_threads=1)
    with running_server(config, tmp_path, docs) as served, served.client() as client:
        refused = client.post("/v1/ingest", json={"paths": [str(docs)]})
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "writes_disabled"
        assert client.get("/v1/status").json()["writes_enabled"] is False
    config = server_config(tmp_path, docs, require_key_for_reads=True, search_threads=1)
    with running_server(config, tmp_path, docs) as served:
        with served.client(key=None) as anonymous:
            assert anonymous.post("/v1/search", json={"query": "x"}).status_code == 401
            assert anonymous.get("/v1/healthz").status_code == 200  # liveness never needs the key
        with served.client() as client:
            assert client.post("/v1/search", json={"query": "x"}).status_code == 200


def test_cors_is_off_unless_origins_are_configured(served, tmp_path):
    preflight = {"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"}
    with served.client() as client:
        response = client.options("/v1/search", headers=preflight)
        assert "access-control-allow-origin" not in response.headers
    docs = tmp_path / "docs"
    docs.mkdir()
    config = server_config(tmp_path, docs, cors_origins=["http://app.example"], search_threads=1)
    with running_server(config, tmp_path, docs) as other, other.client() as client:
        allowed = client.options("/v1/search", headers={**preflight, "Origin": "http://app.example"})
        assert allowed.headers["access-control-allow-origin"] == "http://app.example"
        refused = client.options("/v1/search", headers=preflight)
        assert "access-control-allow-origin" not in refused.headers
        # Refused in the same JSON shape as every other error.
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "cors_refused"
        assert "origin" in refused.json()["error"]["message"]


def test_metrics_are_prometheus_text(served):
    with served.client() as client:
        client.post("/v1/search", json={"query": "sensor fusion"})
        status = client.get("/v1/status").json()
        response = client.get("/v1/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert re.search(r'ragloom_http_requests_total\{method="POST",route="/v1/search",status="200"\} [1-9]', text)
    assert 'ragloom_http_request_duration_seconds_bucket{le="0.005",method="POST",route="/v1/search"}' in text
    assert f"ragloom_index_chunks {float(status['chunks'])}" in text
    assert re.search(r'ragloom_searches_total\{mode="hybrid"\} [1-9]', text)
    assert re.search(r'ragloom_ingest_jobs_total\{state="done"\} [1-9]', text)
    assert "ragloom_ingest_embedding_cache_hits_total" in text


def test_openapi_describes_models_derived_from_the_library_types(served):
    with served.client() as client:
        schema = client.get("/openapi.json").json()
        docs = client.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    paths = schema["paths"]
    assert {"/v1/search", "/v1/ingest", "/v1/ingest/{job_id}", "/v1/sources", "/v1/sources/{source_id}",
            "/v1/status", "/v1/audit", "/v1/healthz", "/v1/metrics"} <= set(paths)
    hit = schema["components"]["schemas"]["Hit"]["properties"]
    assert {"chunk_id", "text", "score", "rank", "source", "metadata", "scores", "section", "page", "highlights"} <= set(hit)
    assert "multipart/form-data" in paths["/v1/ingest"]["post"]["requestBody"]["content"]


def test_a_busy_index_fails_the_job_with_index_locked(served):
    with served.client() as client, exclusive_write_lock(served.state.service.path):
        # Another writer (here: this thread's own handle on write.lock) holds the index.
        job = client.post("/v1/ingest", json={"paths": [str(served.docs)]}).json()
        done = served.wait_job(client, job["id"])
    assert done["state"] == "failed" and done["error"]["code"] == "index_locked"


@pytest.mark.slow
def test_searches_run_in_parallel_with_an_ingest(served, tmp_path):
    corpus = served.docs / "bulk"
    corpus.mkdir()
    for i in range(24):
        (corpus / f"note_{i:02d}.md").write_text(
            f"# Note {i}\n\n" + " ".join(f"Observation {i}.{j} about robot arm calibration drift." for j in range(40))
        )
    errors: list[str] = []
    statuses: list[str] = []
    stop = threading.Event()

    def searcher(n: int) -> int:
        done = 0
        with served.client() as client:
            while not stop.is_set():
                response = client.post("/v1/search", json={"query": f"calibration drift {n}", "k": 5})
                if response.status_code != 200 or not response.json()["hits"]:
                    errors.append(response.text)
                done += 1
        return done

    try:
        with served.client() as client, ThreadPoolExecutor(8) as pool:
            job = client.post("/v1/ingest", json={"paths": [str(corpus)]}).json()
            futures = [pool.submit(searcher, n) for n in range(8)]

            def finished() -> dict | None:
                current = client.get(f"/v1/ingest/{job['id']}").json()
                statuses.append(current["state"])
                return current if current["state"] in ("done", "failed") else None

            final = wait_until(finished, timeout=600)
            stop.set()
            counts = [f.result() for f in futures]
        assert final["state"] == "done" and len(final["report"]["added"]) == 24, final
        # The searchers were started before the first poll, which found the job not yet finished.
        assert statuses[0] in ("queued", "running") and all(count > 0 for count in counts)
        assert errors == []
        with served.client() as client:
            # As soon as the job is done, every reader sees it, BM25 included.
            hits = client.post("/v1/search", json={"query": "Observation 17.3 calibration", "mode": "lexical"}).json()
        assert any(h["source"].endswith("note_17.md") for h in hits["hits"])
    finally:
        stop.set()
        with served.client() as client:
            client.post("/v1/ingest", json={"paths": [str(served.docs)]})  # (re)ingest without the bulk folder
        shutil.rmtree(corpus, ignore_errors=True)
        os.sync()


def test_hits_and_sources_carry_display_paths_and_a_source_opens_at_its_chunks(served):
    with served.client() as client:
        hits = client.post("/v1/search", json={"query": QUESTION, "k": 3}).json()["hits"]
        sources = client.get("/v1/sources").json()
        opened = client.get(f"/v1/sources/{hits[0]['source_id']}/text")
        missing = client.get("/v1/sources/0000000000000000/text")
    # Relative to the folder that was ingested (the docs folder), the full path kept in `source`/`path`.
    assert {p.name for p in served.docs.iterdir() if p.is_file()} <= {s["display_path"] for s in sources}
    assert all(str(served.docs / s["display_path"]) == s["path"] for s in sources)
    assert all(str(served.docs / h["display_path"]) == h["source"] for h in hits)
    assert opened.status_code == 200, opened.text
    view = opened.json()
    assert view["source"]["path"] == hits[0]["source"] and view["source"]["display_path"] == hits[0]["display_path"]
    placed = {c["chunk_id"]: c for c in view["chunks"]}
    cited = placed[hits[0]["chunk_id"]]
    assert view["text"][cited["start"]:cited["end"]] == hits[0]["text"]
    assert [c["start"] for c in view["chunks"]] == sorted(c["start"] for c in view["chunks"])
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "source_not_found"


def test_filters_name_sources_as_users_do_and_warn_when_they_cannot_match(served):
    with served.client() as client:
        named = client.post("/v1/search", json={"query": "nodes", "where": {"source": "**/ros2_*.md"}}).json()
        misspelt = client.post("/v1/search", json={"query": "nodes", "where": {"sectoin": "Topics"}}).json()
        asked = client.post("/v1/ask", json={"question": "How do nodes talk?", "strategy": "extractive",
                                             "where": {"page": {"$gte": "2"}}}).json()
    assert named["hits"] and all(h["source"].endswith("/ros2_communication_guide.md") for h in named["hits"])
    assert named["warnings"] == []
    assert misspelt["hits"] == [] and len(misspelt["warnings"]) == 1
    assert "'sectoin' is in no passage" in misspelt["warnings"][0] and "did you mean 'section'" in misspelt["warnings"][0]
    assert any("'page' holds numbers, not text" in w for w in asked["warnings"])
