"""Indexes of one process that use the same model share one embedder (``embed/shared.py``):
loaded once, its ONNX sessions shared, and closed by its last user only."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ragloom import Config, Index
from ragloom.embed import shared
from ragloom.server.service import IndexService

TEXT = "ROS 2 nodes communicate by publishing messages on topics; services answer requests.\n"


def _index(folder: Path, config: Config) -> Index:
    docs = folder.with_name(folder.name + "-docs")
    docs.mkdir()
    (docs / "ros.md").write_text(f"# ROS\n\n{TEXT}")
    index = Index.open(folder, config, create=True)
    index.ingest([docs])
    return index


def test_two_indexes_share_one_embedder_and_closing_one_leaves_the_other_working(tmp_path: Path):
    first = _index(tmp_path / "a", Config())
    second = _index(tmp_path / "b", Config.model_validate({"embedder": {"threads": 1}}))  # a runtime knob
    try:
        assert first.embedder is second.embedder
        assert shared.users(first.embedder) == 2
        embedder = first.embedder
        before = second.embedder.embed_query("how do nodes talk?")
        first.close()
        assert shared.users(embedder) == 1
        hits = second.search("how do nodes talk?", k=3)
        assert hits and "topics" in hits[0].text
        assert np.array_equal(second.embedder.embed_query("how do nodes talk?"), before)
    finally:
        second.close()
    assert shared.users(embedder) == 0
    reopened = Index.open(tmp_path / "b", Config())
    try:  # the last user closed it: the next index loads the model afresh
        assert reopened.embedder is not embedder and reopened.search("topics", k=1)
    finally:
        reopened.close()


def test_settings_that_change_the_vectors_get_their_own_embedder(tmp_path: Path):
    default = _index(tmp_path / "a", Config())
    shorter = _index(tmp_path / "b", Config.model_validate({"embedder": {"max_tokens": 128}}))
    try:
        assert default.embedder is not shorter.embedder
        assert shared.users(default.embedder) == 1 and shared.users(shorter.embedder) == 1
    finally:
        default.close()
        shorter.close()


def test_a_server_with_several_indexes_loads_the_model_once(tmp_path: Path):
    folders = [tmp_path / name for name in ("a", "b", "c")]
    for folder in folders:
        _index(folder, Config()).close()
    services = [IndexService(Config.model_validate({"index": str(folder), "server": {"search_threads": 2}}))
                for folder in folders]
    try:
        embedders = {id(service.writer.embedder) for service in services}
        assert len(embedders) == 1
        assert shared.users(services[0].writer.embedder) == 3
        services[0].close()
        assert services[1].search("how do nodes talk?", 3).hits
    finally:
        for service in services[1:]:
            service.close()
