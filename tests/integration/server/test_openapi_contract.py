"""The API honours its OpenAPI document where schemathesis (test_openapi_fuzz.py) found it did not:
a query the document calls blank is refused and one it calls valid is read, a search preset the
document leaves out is refused whatever the index holds, and a streamed chat answer's type is
documented."""

from __future__ import annotations

import re
import shutil

import pytest
from server_helpers import running_server, server_config

from ragloom import Config


@pytest.fixture(scope="module")
def no_llm(tmp_path_factory, sample_docs):
    """A server with no usable LLM and an empty index (nothing ingested)."""
    root = tmp_path_factory.mktemp("contract")
    docs = root / "docs"
    shutil.copytree(sample_docs[0].parent, docs)
    settings = server_config(root, docs, search_threads=1).model_dump(mode="json")
    settings["llm"] = {"model": str(root / "no-model.gguf")}
    with running_server(Config.from_dict(settings), root, docs) as served:
        yield served


ENDPOINTS = [("/v1/search", "query"), ("/v1/context", "question"), ("/v1/ask", "question")]


@pytest.mark.parametrize("blank", ["\x1c", "\x1f \x85", "\ufeff", "\u3000\t"])
def test_a_query_blank_to_either_json_schema_or_python_is_refused_by_both(no_llm, blank):
    document = no_llm.client().get("/openapi.json").json()
    for path, field in ENDPOINTS:
        model = {"/v1/search": "SearchRequest", "/v1/context": "ContextRequest", "/v1/ask": "AskRequest"}[path]
        pattern = document["components"]["schemas"][model]["properties"][field]["pattern"]
        assert re.search(pattern, blank) is None, (model, repr(blank))  # the document calls it invalid
        with no_llm.client() as client:
            response = client.post(path, json={field: blank})
        assert response.status_code == 422, (path, repr(blank), response.text)
    with no_llm.client() as client:  # and what the document calls valid is read (U+200B is no white space)
        assert client.post("/v1/search", json={"query": "\u200bnodes"}).status_code == 200


def test_a_preset_the_document_leaves_out_is_refused_even_on_an_empty_index(no_llm):
    document = no_llm.client().get("/openapi.json").json()
    offered = document["components"]["schemas"]["SearchRequest"]["properties"]["mode"]["anyOf"][0]["enum"]
    assert "hyde" not in offered and "corrective" not in offered and "hybrid" in offered
    with no_llm.client() as client:
        assert client.get("/v1/status").json()["chunks"] == 0
        for path, field in ENDPOINTS:
            for mode in ("hyde", "corrective", "multi-query"):
                response = client.post(path, json={field: "how do nodes talk", "mode": mode})
                assert response.status_code == 503, (path, mode, response.text)
                assert response.json()["error"]["code"] == "mode_unavailable" and "needs an LLM" in response.text
            unknown = client.post(path, json={field: "how do nodes talk", "mode": "AAA"})
            assert unknown.status_code == 422 and "no search preset named 'AAA'" in unknown.text, (path, unknown.text)
            assert client.post(path, json={field: "how do nodes talk", "mode": "hybrid"}).status_code == 200


def test_a_streamed_chat_answer_has_a_documented_content_type(no_llm):
    document = no_llm.client().get("/openapi.json").json()
    for path in ("/v1/chat/completions", "/v1/ask"):
        assert "text/event-stream" in document["paths"][path]["post"]["responses"]["200"]["content"], path
