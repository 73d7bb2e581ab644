"""Pure parts of the knowledge structures: name keys, answer validation, clustering, fusion."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ragloom.config import Config, GraphConfig, RaptorConfig
from ragloom.errors import ConfigError
from ragloom.ingest.chunkers.agentic import parse_boundaries
from ragloom.ingest.chunkers.proposition import parse_propositions
from ragloom.ingest.chunkers.semantic import breakpoints
from ragloom.knowledge.extract import parse_llm_extraction
from ragloom.knowledge.names import (
    alias_keys,
    entity_key,
    merge_short_names,
    plausible_name,
    singular,
)
from ragloom.knowledge.raptor import (
    build_levels,
    cluster_sizes,
    extractive_summary,
    gmm_clusters,
)
from ragloom.retrieve.pipeline import PRESETS, build_pipeline
from ragloom.retrieve.retrievers.graph import fuse_graph


@pytest.mark.parametrize(("a", "b"), [
    ("The Bolsheviks", "bolshevik"), ("Obama's", "OBAMA"), ("Parties", "party"), ("  Valencia   CF ", "valencia cf"),
    ("boxes", "box"), ("the Beatles", "Beatles"),
])
def test_spellings_of_one_name_share_a_key(a: str, b: str) -> None:
    assert entity_key(a) == entity_key(b)


@pytest.mark.parametrize("word", ["paris", "texas", "analysis", "class", "status", "bus"])
def test_words_ending_in_s_that_are_not_plurals_keep_it(word: str) -> None:
    assert singular(word) == word


def test_aliases_merge_into_the_canonical_key() -> None:
    aliases = alias_keys({"USA": "United States", "U.S.": "United States"})
    assert entity_key("usa", aliases) == entity_key("U.S.", aliases) == entity_key("United States")


def test_a_surname_alone_merges_with_the_one_full_name_it_ends() -> None:
    merged = merge_short_names([("barack obama", "PERSON"), ("obama", "PERSON"), ("smith", "PERSON"),
                                ("john smith", "PERSON"), ("jane smith", "PERSON")])
    assert merged == {"obama": "barack obama"}  # "smith" is ambiguous, so it stays apart


def test_names_must_be_plausible_and_in_the_text() -> None:
    text = "Alexander Kerensky led the Provisional Government."
    assert plausible_name("Alexander Kerensky", text)
    assert not plausible_name("Lenin", text)  # invented
    assert not plausible_name("!!", text) and not plausible_name("x" * 81)


def test_llm_extraction_drops_malformed_and_invented_items() -> None:
    text = "Alexander Kerensky led the Provisional Government until the Bolsheviks took Petrograd."
    answer = {
        "entities": [{"name": "Alexander Kerensky", "type": "person", "description": "a leader"},
                     {"name": "Napoleon", "type": "PERSON"}, "not an object", {"type": "ORG"},
                     {"name": "Bolsheviks", "type": None}],
        "relations": [{"source": "Bolsheviks", "target": "Petrograd", "description": "took", "weight": "7"},
                      {"source": "Napoleon", "target": "Bolsheviks"}, {"source": "Bolsheviks"},
                      {"source": "Bolsheviks", "target": "Bolsheviks"}],
    }
    found = parse_llm_extraction(json.dumps(answer), text, limit=10)
    assert [e.name for e in found.entities] == ["Alexander Kerensky", "Bolsheviks", "Petrograd"]
    assert found.entities[0].type == "PERSON"
    assert [(r.head, r.tail, r.weight) for r in found.relations] == [("Bolsheviks", "Petrograd", 7.0)]


@pytest.mark.parametrize("answer", [[], {"answer": "Echo"}, "not json", 3])
def test_llm_extraction_rejects_answers_of_the_wrong_shape(answer: object) -> None:
    with pytest.raises(ValueError):
        parse_llm_extraction(answer if answer != "not json" else "{oops", "text", limit=5)


def test_agentic_boundaries_are_validated() -> None:
    answer = {"sections": [{"title": "Intro", "start": 1}, {"title": "Later", "start": "4"},
                           {"title": "out of range", "start": 99}, {"start": "x"}, "junk"]}
    assert parse_boundaries(answer, 6) == [(0, "Intro"), (3, "Later")]
    assert parse_boundaries({"sections": [{"start": 3}]}, 6) == [(0, ""), (2, "")]
    with pytest.raises(ValueError):
        parse_boundaries({"sections": [{"start": 0}]}, 6)
    with pytest.raises(ValueError):
        parse_boundaries(["no"], 6)


def test_propositions_are_validated() -> None:
    assert parse_propositions({"propositions": ["Kerensky led Russia.", "x", 5, "Kerensky led Russia."]}) == [
        "Kerensky led Russia."]
    with pytest.raises(ValueError):
        parse_propositions({"propositions": []})


def test_semantic_breakpoints_fall_where_the_topic_changes() -> None:
    a, b = np.eye(4)[0], np.eye(4)[1]
    vectors = np.stack([a, a + 0.01 * b, a, b, b + 0.01 * a, b])
    assert breakpoints(vectors, 80) == [2]
    assert breakpoints(vectors[:2], 80) == []


def test_cluster_sizes_start_at_n_over_cluster_size() -> None:
    sizes = cluster_sizes(1000, max_clusters=64, cluster_size=10)
    assert sizes[0] == 100 and sizes == [100]
    assert cluster_sizes(40, 64, 12)[0] == 4 and cluster_sizes(40, 64, 12)[-1] == 20


def test_gaussian_mixture_separates_clear_groups_and_assigns_every_row() -> None:
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((3, 16)) * 10
    vectors = np.concatenate([c + rng.standard_normal((20, 16)) * 0.1 for c in centres])
    groups = gmm_clusters(vectors, max_clusters=8, threshold=0.3, seed=0, cluster_size=30)
    assert sorted({i for g in groups for i in g}) == list(range(60))
    assert sorted(sorted(g) for g in groups) == [list(range(20)), list(range(20, 40)), list(range(40, 60))]


def test_extractive_summary_takes_lead_sentences_of_central_members() -> None:
    texts = ["Title\n\nKalman filters fuse noisy measurements into one estimate. More.",
             "Bread needs flour, water, salt and yeast to rise. More.", "Odd one out entirely different here."]
    vectors = np.array([[1.0, 0.1], [1.0, 0.6], [1.0, -0.5]])
    summary = extractive_summary(texts, vectors, sentences=2)
    assert summary == ("Kalman filters fuse noisy measurements into one estimate. "
                       "Bread needs flour, water, salt and yeast to rise.")


def test_tree_levels_cite_their_leaves() -> None:
    rng = np.random.default_rng(1)
    centres = rng.standard_normal((4, 8)) * 10
    vectors = np.concatenate([c + rng.standard_normal((10, 8)) * 0.1 for c in centres]).astype(np.float32)
    ids = [f"c{i}" for i in range(40)]
    config = RaptorConfig(stop_below=3, cluster_size=10)
    nodes = build_levels(ids, [f"text number {i} of the corpus here." for i in range(40)], vectors, config,
                         lambda texts, v: " ".join(texts[:1]), lambda texts: np.ones((len(texts), 8), np.float32))
    level_one = [n for n in nodes if n.level == 1]
    assert sorted(leaf for n in level_one for leaf in n.leaves) == sorted(ids)
    assert all(n.children == n.leaves for n in level_one)
    assert all(n.id.startswith("raptor:") for n in nodes)


def test_graph_fusion_is_a_convex_mix_of_normalised_scores() -> None:
    fused = fuse_graph({"a": 1.0, "b": 0.5, "c": 0.0}, {"c": 3.0, "d": 1.0}, weight=0.5)
    scores = {c.chunk_id: round(c.score, 6) for c in fused}
    assert scores == {"a": 0.5, "b": 0.25, "c": 0.5, "d": 0.0}
    assert [c.chunk_id for c in fused][:2] == ["a", "c"]  # ties by chunk id


def test_structure_sections_are_typed_and_off_by_default() -> None:
    config = Config()
    assert not config.graph.enabled and not config.raptor.enabled
    with pytest.raises(ConfigError, match="extractr"):
        Config.from_dict({"graph": {"extractr": "llm"}})
    with pytest.raises(ConfigError):
        Config.from_dict({"raptor": {"summarizer": "magic"}})
    assert GraphConfig(extractor="llm").extractor == "llm"


def test_presets_and_steps_exist() -> None:
    for name in ("graph", "graph-boost", "raptor"):
        assert name in PRESETS
        build_pipeline(preset=name)
    pipeline = build_pipeline([{"graph": {"hops": 1, "weight": 0.2}}, {"graph-boost": {"factor": 1.5}}, "parent"])
    assert pipeline.steps == ["graph", "graph-boost", "parent"]
    with pytest.raises(ConfigError, match="factr"):
        build_pipeline([{"hybrid": {}}, {"graph-boost": {"factr": 2}}])


def test_an_answer_cut_off_by_the_token_limit_keeps_its_complete_items() -> None:
    from ragloom.knowledge.extract import salvage_json

    cut = '{"entities": [{"name": "Red Army", "type": "ORG"}, {"name": "White \\"Army\\" {x}", "type": "ORG"}, {"name": "Kol'
    assert salvage_json(cut) == {"entities": [{"name": "Red Army", "type": "ORG"},
                                              {"name": 'White "Army" {x}', "type": "ORG"}]}
    assert salvage_json('{"a": 1}') == {"a": 1}
    with pytest.raises(ValueError):
        salvage_json('{"entities": [{"name": "Kol')
    text = "The Red Army fought the White Army."
    found = parse_llm_extraction(salvage_json(cut), text, limit=10)
    assert [e.name for e in found.entities] == ["Red Army"]  # the other name is not in the text
