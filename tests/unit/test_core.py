"""Pure parts: the filter language, fusion functions, config loading, the registry."""

from __future__ import annotations

import numpy as np
import pytest

from ragloom import registry
from ragloom.config import Config, annotated_yaml, env_overrides
from ragloom.errors import ConfigError, FilterError, UnknownComponentError, UnknownConfigKeyError
from ragloom.filters import matches, parse_cli_filters, parse_where
from ragloom.retrieve.fusion import convex_combination, min_max, reciprocal_rank_fusion
from ragloom.stores.base import Candidate, rank_candidates
from ragloom.stores.embedded.matrix import top_k_indices


def test_cli_filters_parse_every_operator():
    where = parse_cli_filters(["page>=2", "page<5", "kind=notes", "lang!=de", "section~Intro,Usage", "n<=3", "m>1.5"])
    assert where == {
        "page": {"$gte": 2, "$lt": 5}, "kind": {"$eq": "notes"}, "lang": {"$ne": "de"},
        "section": {"$in": ["Intro", "Usage"]}, "n": {"$lte": 3}, "m": {"$gt": 1.5},
    }
    assert parse_cli_filters(["flag=true", "code='007'"]) == {"flag": {"$eq": True}, "code": {"$eq": "007"}}
    with pytest.raises(FilterError, match="key=value"):
        parse_cli_filters(["no operator here"])


def test_filter_mapping_errors_name_the_problem():
    with pytest.raises(FilterError, match=r"\$between"):
        parse_where({"page": {"$between": [1, 2]}})
    with pytest.raises(FilterError, match="list"):
        parse_where({"page": {"$in": 3}})


@pytest.mark.parametrize(
    ("metadata", "where", "expected"),
    [
        ({"page": 2}, {"page": 2}, True),
        ({"page": 2}, {"page": {"$gte": 3}}, False),
        ({"page": 2}, {"page": {"$lt": "3"}}, False),  # numbers never compare with text
        ({}, {"page": {"$ne": 2}}, True),  # a missing key satisfies only $ne
        ({}, {"page": {"$lt": 2}}, False),
        ({"tags": ["a", "b"]}, {"tags": "b"}, True),  # list-valued fields: any element
        ({"tags": ["a", "b"]}, {"tags": {"$ne": "b"}}, False),
        ({"flag": True}, {"flag": 1}, False),  # booleans are not numbers
        ({"section": "Usage"}, {"section": {"$in": ["Intro", "Usage"]}}, True),
    ],
)
def test_reference_filter_semantics(metadata, where, expected):
    assert matches(metadata, parse_where(where)) is expected


def test_min_max_and_convex_fusion():
    assert min_max({"a": 2.0, "b": 4.0, "c": 3.0}) == {"a": 0.0, "b": 1.0, "c": 0.5}
    assert min_max({"a": 7.0}) == {"a": 1.0}
    fused = convex_combination({"a": 0.9, "b": 0.5}, {"b": 10.0, "c": 2.0}, alpha=0.5)
    # a: 0.5*1 + 0 = 0.5; b: 0.5*0 + 0.5*1 = 0.5; c: 0 + 0 = 0.0 -> a and b tie, id decides.
    assert [(c.chunk_id, c.score) for c in fused] == [("a", 0.5), ("b", 0.5), ("c", 0.0)]


def test_reciprocal_rank_fusion_matches_the_formula():
    dense = [Candidate("a", 0.9), Candidate("b", 0.8)]
    lexical = [Candidate("b", 12.0), Candidate("c", 3.0)]
    fused = {c.chunk_id: c.score for c in reciprocal_rank_fusion([dense, lexical], k=60)}
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["c"] == pytest.approx(1 / 62)


def test_ties_rank_by_chunk_id_and_top_k_keeps_boundary_ties():
    ranked = rank_candidates([Candidate("z", 1.0), Candidate("b", 1.0), Candidate("a", 0.5)])
    assert [c.chunk_id for c in ranked] == ["b", "z", "a"]
    scores = np.array([0.1, 0.9, 0.5, 0.5, 0.5])
    assert sorted(top_k_indices(scores, 2)) == [1, 2, 3, 4]


def test_config_env_overrides_and_errors():
    assert env_overrides({"RAGLOOM_SEARCH__K": "7", "RAGLOOM_INGEST__GLOB": "['*.md']", "OTHER": "x"}) == {
        "search": {"k": 7}, "ingest": {"glob": ["*.md"]}}
    with pytest.raises(UnknownConfigKeyError, match="valid keys here are"):
        Config.load(env={"RAGLOOM_SERCH__K": "3"})
    with pytest.raises(ConfigError, match="chunk_overlap"):
        Config.from_dict({"chunking": {"chunk_size": 32, "chunk_overlap": 32}})
    with pytest.raises(ConfigError, match="k_min"):
        Config.from_dict({"search": {"k_min": 10, "k_max": 5}})


def test_config_file_then_env_then_overrides(tmp_path):
    path = tmp_path / "ragloom.yaml"
    path.write_text("search:\n  k: 3\n  mode: dense\n")
    config = Config.load(path, env={"RAGLOOM_SEARCH__K": "4"}, overrides={"search": {"mode": "lexical"}})
    assert (config.search.k, config.search.mode) == (4, "lexical")
    with pytest.raises(ConfigError, match="does not exist"):
        Config.load(tmp_path / "missing.yaml", env={})


def test_annotated_config_round_trips_and_documents_every_setting():
    import yaml

    text = annotated_yaml()
    assert Config.from_dict(yaml.safe_load(text)) == Config()
    for line in text.splitlines():
        if ":" in line and not line.strip().startswith("#") and not line.rstrip().endswith(":"):
            assert "  # " in line, f"setting without a description: {line}"


def test_registry_lists_valid_names_in_errors():
    with pytest.raises(UnknownComponentError) as info:
        registry.resolve("chunker", "semantic-ish")
    assert "recursive" in str(info.value) and "markdown" in str(info.value)
    assert isinstance(info.value, KeyError)
    assert registry.resolve("store", "embedded").name == "embedded"
