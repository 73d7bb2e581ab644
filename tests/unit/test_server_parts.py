"""The server's pure parts: models derived from dataclasses, highlights, keys, allowed roots, error codes, config."""

from __future__ import annotations

import dataclasses

import pytest

from ragloom.config import Config
from ragloom.errors import FilterError, IndexLockedError, UnknownConfigKeyError
from ragloom.server.errors import ApiError, classify
from ragloom.server.highlight import matched_spans, query_terms
from ragloom.server.schemas import HitModel, IngestReportModel, hit_model, model_from_dataclass, report_model, source_id
from ragloom.paths import PathError, PathPolicy
from ragloom.server.security import check_key, presented_key
from ragloom.types import FileFailure, Hit, IngestReport


def test_models_follow_the_dataclasses():
    assert {f.name for f in dataclasses.fields(Hit)} <= set(HitModel.model_fields)
    assert {f.name for f in dataclasses.fields(IngestReport)} <= set(IngestReportModel.model_fields)

    @dataclasses.dataclass
    class Thing:
        name: str
        size: int = 3
        tags: list[str] = dataclasses.field(default_factory=list)

    model = model_from_dataclass(Thing, extra={"shout": (str, "")})
    made = model.model_validate(Thing("a"), from_attributes=True)
    assert (made.name, made.size, made.tags, made.shout) == ("a", 3, [], "")
    with pytest.raises(ValueError):
        model.model_validate({"size": 1})  # name is required, as in the dataclass


def test_hit_and_report_models_carry_properties_and_failures():
    hit = Hit(chunk_id="c1", text="Nodes talk", score=0.5, rank=1, source="/d/a.md",
              metadata={"section": "Intro", "page": 2, "chunk_index": 4, "doc_id": "a"})
    model = hit_model(hit, [(0, 5)])
    assert (model.section, model.page, model.chunk_index, model.doc_id) == ("Intro", 2, 4, "a")
    assert model.source_id == source_id("/d/a.md") and len(model.source_id) == 16
    report = report_model(IngestReport(added=["/d/a.md"], failed=[FileFailure("/d/b.pdf", "broken")]))
    assert report.failed[0].error == "broken" and report.added == ["/d/a.md"]


def test_highlights_follow_bm25_terms():
    text = "ROS 2 nodes communicate; ROS_DOMAIN_ID groups them. Communication is key."
    spans = matched_spans(text, query_terms("how do nodes communicate in ROS?"))
    words = [text[a:b] for a, b in spans]
    assert words == ["ROS", "nodes", "communicate", "ROS", "Communication"]  # stemmed, whole tokens
    assert matched_spans(text, query_terms("the of and")) == []  # stop words only


def test_keys_are_read_from_either_header_and_compared():
    assert presented_key("Bearer abc", None) == "abc" and presented_key(None, "xyz") == "xyz"
    assert presented_key("Basic abc", None) is None
    check_key("k", "k", write=True)
    for given, code in ((None, "unauthorized"), ("nope", "unauthorized")):
        with pytest.raises(ApiError) as caught:
            check_key("k", given, write=True)
        assert caught.value.code == code and caught.value.status == 401
    with pytest.raises(ApiError) as caught:
        check_key(None, "anything", write=True)
    assert caught.value.code == "writes_disabled"
    check_key(None, None, write=False)  # reads are open when no key is set


def test_paths_resolve_inside_the_roots(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "a.md").write_text("a")
    (outside / "s.md").write_text("s")
    (root / "link.md").symlink_to(outside / "s.md")
    (root / "dirlink").symlink_to(outside)
    policy = PathPolicy([root])
    assert policy.resolve(str(root / "a.md")) == root / "a.md"
    assert policy.resolve(str(root / "sub" / ".." / "a.md")) == root / "a.md"
    for bad in (root / "link.md", root / "dirlink" / "s.md", root / ".." / "outside" / "s.md", outside):
        with pytest.raises(PathError) as caught:
            policy.resolve(str(bad))
        assert (caught.value.code, caught.value.status) == ("path_not_allowed", 403), bad
    with pytest.raises(PathError) as caught:
        PathPolicy([]).resolve(str(root / "a.md"))
    assert caught.value.code == "path_not_allowed" and "allowed_roots" in str(caught.value)
    assert classify(caught.value)[:2] == (403, "path_not_allowed")


def test_error_codes():
    assert classify(FilterError("bad filter"))[:2] == (422, "invalid_filter")
    assert classify(IndexLockedError("busy"))[:2] == (409, "index_locked")
    status, code, message = classify(RuntimeError("secret internals at /etc/x"))
    assert (status, code) == (500, "internal_error") and "secret" not in message


def test_server_config_is_typed_and_the_api_key_env_is_not_a_setting(tmp_path):
    config = Config.load(env={"RAGLOOM_API_KEY": "k", "RAGLOOM_SERVER__PORT": "9000",
                              "RAGLOOM_SERVER__ALLOWED_ROOTS": "[/srv/docs]"})
    assert config.server.port == 9000 and config.server.allowed_roots == ["/srv/docs"]
    assert config.server.api_key is None and config.server.cors_origins == [] and config.server.mcp.ingest is False
    with pytest.raises(UnknownConfigKeyError) as caught:
        Config.from_dict({"server": {"prot": 1}})
    assert "server.prot" in str(caught.value) and "port" in str(caught.value)
