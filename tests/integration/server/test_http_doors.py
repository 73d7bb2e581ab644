"""The HTTP API's doors: paths checked where files are opened, odd paths, strict request types."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import httpx
import pytest

from server_helpers import running_server, server_config

SECRET = "# Payroll\n\nThe quarterly payroll password is hunter-zebra-42.\n"


def _local_address(response: httpx.Response) -> object:
    return response.extensions["network_stream"].get_extra_info("client_addr")


def _found_secret(client: httpx.Client) -> list[str]:
    hits = client.post("/v1/search", json={"query": "payroll password hunter-zebra", "mode": "lexical"}).json()["hits"]
    return [hit["source"] for hit in hits if "hunter-zebra" in hit["text"]]


def test_a_link_made_after_the_ingest_was_accepted_is_refused_when_the_job_opens_it(served, tmp_path):
    secret = tmp_path / "secret.md"
    secret.write_text(SECRET)
    late = served.docs / "late"
    late.mkdir()
    (late / "ok.md").write_text("# Okapi\n\nOkapis are related to giraffes.\n")
    try:
        with served.client() as client:
            with served.state.service.writing():  # the job waits for the writer: a slow job
                accepted = client.post("/v1/ingest", json={"paths": [str(late)]})
                assert accepted.status_code == 202, accepted.text  # no link yet: the request is fine
                (late / "x.md").symlink_to(secret)
            job = served.wait_job(client, accepted.json()["id"])
            assert job["state"] == "done", job
            failed = {f["path"]: f["error"] for f in job["report"]["failed"]}
            assert list(failed) == [str(late / "x.md")] and failed[str(late / "x.md")].startswith("refused:")
            assert job["report"]["added"] == [str(late / "ok.md")]
            assert _found_secret(client) == []
    finally:
        shutil.rmtree(late)


def test_an_upload_replaced_by_a_link_before_its_job_runs_is_refused(served, tmp_path):
    secret = tmp_path / "secret.md"
    secret.write_text(SECRET)
    with served.client() as client:
        with served.state.service.writing():
            accepted = client.post("/v1/ingest", files={"files": ("swapped.md", b"# Swapped\n\nharmless\n")})
            assert accepted.status_code == 202, accepted.text
            saved = served.state.upload_dir / "swapped.md"
            saved.unlink()
            saved.symlink_to(secret)
        job = served.wait_job(client, accepted.json()["id"])
        assert job["state"] == "done" and job["report"]["added"] == [], job
        assert job["report"]["failed"][0]["error"].startswith("refused:")
        assert _found_secret(client) == []
    saved.unlink()


def test_odd_paths_are_4xx_json_with_stable_codes_on_one_kept_alive_connection(served):
    loops = served.docs / "loops"
    loops.mkdir()
    (loops / "fine.md").write_text("# Fine\n\nQuetzals nest in tree hollows.\n")
    os.symlink("self.md", loops / "self.md")
    holder = served.docs / "ring-holder"  # a folder that is a link to the folder holding it
    holder.mkdir()
    os.symlink(".", holder / "ring")
    cases = {
        f"{served.docs}/a\x00b.md": (422, "path_invalid"),
        f"{served.docs}/{'x' * 300}.md": (422, "path_name_too_long"),
        str(served.docs) + ("/" + "y" * 200) * 30: (422, "path_too_long"),
        str(loops / "self.md"): (422, "path_symlink_loop"),
        str(holder / "ring"): (422, "path_symlink_loop"),
    }
    try:
        with served.client() as client:
            responses = [client.post("/v1/ingest", json={"paths": [path]}) for path in cases]
            folder = client.post("/v1/ingest", json={"paths": [str(loops)]})
            after = client.get("/v1/status")
            for (path, expected), response in zip(cases.items(), responses):
                assert (response.status_code, response.json()["error"]["code"]) == expected, path[:60]
            # Every answer came over the same connection: none of them dropped it.
            assert len({_local_address(r) for r in (*responses, folder, after)}) == 1
            assert folder.status_code == 202, folder.text  # a folder holding a loop: ingested, the loop reported
            job = served.wait_job(client, folder.json()["id"])
        assert job["state"] == "done" and job["report"]["added"] == [str(loops / "fine.md")]
        assert [(Path(f["path"]).name, "symlink loop" in f["error"]) for f in job["report"]["failed"]] == [("self.md", True)]
    finally:
        shutil.rmtree(loops)
        shutil.rmtree(holder)


def test_folder_links_inside_an_ingested_folder_are_reported_never_silently_dropped(served):
    folder = served.docs / "linked"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "kept.md").write_text("# Kept\n\nTapirs browse at dusk.\n")
    os.symlink("..", folder / "notes" / "up")  # a loop: it leads to a folder that holds it
    os.symlink("notes", folder / "alias")  # the same folder again under another name
    try:
        with served.client() as client:
            accepted = client.post("/v1/ingest", json={"paths": [str(folder)]})
            assert accepted.status_code == 202, accepted.text
            job = served.wait_job(client, accepted.json()["id"])
        report = job["report"]
        assert job["state"] == "done" and report["added"] == [str(folder / "notes" / "kept.md")]
        assert [(Path(f["path"]).name, "symlink loop" in f["error"]) for f in report["failed"]] == [("up", True)]
        assert any(str(folder / "alias") in w and "skipped: a symlink to the folder" in w for w in report["warnings"])
    finally:
        shutil.rmtree(folder)


@pytest.mark.parametrize("path, body", [
    ("/v1/search", {"query": "frames", "k": True}),
    ("/v1/search", {"query": "frames", "k": "3"}),
    ("/v1/search", {"query": "frames", "explain": 0}),
    ("/v1/ask", {"question": "What does DDS handle?", "stream": 0}),
    ("/v1/context", {"question": "What does DDS handle?", "budget": 150.5}),
    ("/v1/context", {"question": "What does DDS handle?", "k": False}),
])
def test_booleans_are_booleans_and_integers_integers(served, path, body):
    with served.client() as client:
        response = client.post(path, json=body)
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request", response.text
    field = next(key for key in body if key not in ("query", "question"))
    assert f"body.{field}:" in response.json()["error"]["message"]


def test_a_whole_number_written_as_a_float_is_an_integer(served):
    """JSON Schema counts 200.0 as an integer, and so do generated clients."""
    with served.client() as client:
        response = client.post("/v1/context", json={"question": "What does DDS handle?", "budget": 200.0, "k": 2.0})
    assert response.status_code == 200, response.text
    assert response.json()["budget"] == 200 and len(response.json()["passages"]) <= 2


def test_openapi_declares_the_key_and_every_error_it_answers(served):
    with served.client() as client:
        schema = client.get("/openapi.json").json()
        not_json = client.post("/v1/search", content=b'{"query": "x"}', headers={"Content-Type": "text/plain"})
        not_utf8 = client.post("/v1/search", content=b'{"query": "\xff"}', headers={"Content-Type": "application/json"})
    schemes = schema["components"]["securitySchemes"]
    assert schemes["bearer"] == {**schemes["bearer"], "type": "http", "scheme": "bearer"}
    assert schemes["apiKey"] == {**schemes["apiKey"], "type": "apiKey", "in": "header", "name": "X-API-Key"}
    paths = schema["paths"]
    either_key = [{"bearer": []}, {"apiKey": []}]
    assert paths["/v1/ingest"]["post"]["security"] == either_key
    assert paths["/v1/sources/{source_id}"]["delete"]["security"] == either_key
    assert "security" not in paths["/v1/search"]["post"]  # reads are open on this server
    for path in ("/v1/search", "/v1/context", "/v1/ask", "/v1/ingest"):
        assert {"400", "415"} <= set(paths[path]["post"]["responses"]), path
    assert (not_json.status_code, not_json.json()["error"]["code"]) == (415, "unsupported_media_type")
    assert (not_utf8.status_code, not_utf8.json()["error"]["code"]) == (400, "invalid_body")
    search = schema["components"]["schemas"]["SearchRequest"]["properties"]
    assert search["query"]["maxLength"] == served.state.config.server.max_query_chars
    assert {"hybrid", "dense", "lexical", "precise"} <= set(search["mode"]["anyOf"][0]["enum"])


def test_reads_that_need_the_key_say_so(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    config = server_config(tmp_path, docs, require_key_for_reads=True, search_threads=1)
    with running_server(config, tmp_path, docs) as served, served.client() as client:
        paths = client.get("/openapi.json").json()["paths"]
    assert paths["/v1/search"]["post"]["security"] == paths["/v1/ingest"]["post"]["security"]
    assert paths["/v1/healthz"]["get"]["security"] == []  # liveness never needs the key


def test_options_and_405_list_every_method_of_a_path(served):
    with served.client() as client:
        options = client.options("/v1/ingest")
        put = client.put("/v1/ingest", json={})
        delete_options = client.options("/v1/sources/0123456789abcdef")
    assert options.status_code == 204 and options.headers["allow"] == "GET, POST, OPTIONS"
    assert put.status_code == 405 and put.headers["allow"] == "GET, POST, OPTIONS"
    assert put.json()["error"]["code"] == "method_not_allowed" and "GET or POST" in put.json()["error"]["message"]
    assert delete_options.headers["allow"] == "DELETE, OPTIONS"
