"""The pipeline's pure functions against hand-computed values, and the query rules on edge cases."""

from __future__ import annotations

from datetime import date

import numpy as np
import pytest

from ragloom.config import EnrichConfig, MatchRule, UnderstandConfig
from ragloom.ingest.enrich import enrich_chunks, enrichment_policy, front_matter
from ragloom.retrieve.cache import LRUCache, normalise_query, result_key
from ragloom.retrieve.retrievers.basic import rocchio
from ragloom.retrieve.retrievers.grep import grep_scorer
from ragloom.retrieve.stages.boosts import BoostOptions, FieldBoost, RecencyOptions, age_days, boost_of
from ragloom.retrieve.stages.rollup import rolled_up
from ragloom.retrieve.understand import understand
from ragloom.types import Chunk, Document


def test_rollup_adds_a_share_of_the_same_documents_other_hits() -> None:
    # Normalised: a1=1, b=0.5, a2=0 -> a1 = 1 + 0.5*0, b = 0.5, a2 = 0 + 0.5*1.
    assert rolled_up(["a", "b", "a"], [3.0, 2.0, 1.0], 0.5) == pytest.approx([1.0, 0.5, 0.5])
    assert rolled_up(["a", "b", "a"], [3.0, 2.0, 1.0], 0.0) == pytest.approx([1.0, 0.5, 0.0])
    # limit: only the best other chunk counts. a: 1, 0.75, 0.5 (normalised over 5 scores).
    assert rolled_up(["a", "a", "a", "b", "b"], [5, 4, 3, 2, 1], 1.0, limit=1) == pytest.approx(
        [1.75, 1.75, 1.5, 0.25, 0.25])


def test_rocchio_moves_the_query_towards_the_feedback_centroid() -> None:
    q = np.array([1.0, 0.0], dtype=np.float32)
    moved = rocchio(q, np.array([[0.0, 1.0], [0.0, 1.0]], dtype=np.float32), 0.5)
    assert moved == pytest.approx(np.array([1.0, 1.0]) / np.sqrt(2))
    assert rocchio(q, np.zeros((0, 2), dtype=np.float32), 0.5) is q


def test_boosts_sum_every_rule_that_applies() -> None:
    options = BoostOptions(critical=0.2, paths={"*/standards/*": 0.05},
                           recency=RecencyOptions(field="date", weight=0.1, half_life_days=10))
    today = date(2025, 1, 21)
    metadata = {"is_critical": True, "phase": 2, "tags": ["x", "y"], "date": "2025-01-11"}
    rules = [FieldBoost(field="phase", value=2, weight=0.1), FieldBoost(field="tags", value="y", weight=0.3)]
    assert boost_of(metadata, "/a/standards/s.md", options, rules, today) == pytest.approx(0.2 + 0.1 + 0.3 + 0.05 + 0.05)
    assert boost_of({"phase": "2"}, "/x", BoostOptions(), rules, today) == 0.0  # "2" is not 2
    assert age_days("2025-01-20T10:00:00", today) == 1 and age_days("soon", today) is None
    assert age_days(True, today) is None


def test_front_matter_and_enrichment_rules() -> None:
    text = "---\ntags: a, b\ndate: 2024-02-03\nsource: nope\nnested: {x: 1}\n---\n# Phase 4 — deploy\n\nCRITICAL: back up first."
    assert front_matter(text) == {"tags": ["a", "b"], "date": "2024-02-03", "source": "nope"}
    assert front_matter("---\n: [unclosed\n---\nbody") == {} and front_matter("no front matter") == {}
    document = Document(text=text, source="/d.md", doc_id="d")
    chunk = Chunk("c", text, "/d.md", "d", 0, 0, len(text), "p", "h", 10, {"source": "/d.md", "section_path": []})
    enriched = enrich_chunks([chunk], document, EnrichConfig())[0].metadata
    assert enriched["is_critical"] is True and enriched["phase"] == 4 and enriched["source"] == "/d.md"
    plain = Chunk("c", "a critical step", "/d.md", "d", 0, 0, 15, "p", "h", 3, {"section_path": ["Phase one"]})
    assert "is_critical" not in enrich_chunks([plain], Document("", "/d.md", "d"), EnrichConfig())[0].metadata
    assert enrichment_policy(EnrichConfig()) == ""
    assert enrichment_policy(EnrichConfig(critical_markers=["MUST"])).startswith("+enrich:")


def test_query_rules_are_data() -> None:
    rules = UnderstandConfig(rules=[MatchRule(pattern=r"\bv(\d+)\b", field="version", action="filter",
                                              value_type="int", strip=True)])
    result = understand("install guide v3", rules)
    assert result.text == "install guide" and [(c.key, c.op, c.value) for c in result.conditions] == [("version", "$eq", 3)]
    assert understand("install guide v3", UnderstandConfig(enabled=False)).text == "install guide v3"
    broken = UnderstandConfig(rules=[MatchRule(pattern="(unclosed", field="x")])
    assert understand("text (unclosed", broken).text == "text (unclosed"
    empty = understand('"   "', UnderstandConfig())
    assert empty.text == '"   "' and not empty.phrases  # nothing left to search for: the query as typed


def test_grep_scorer_words_phrase_and_regex() -> None:
    score = grep_scorer("knead the dough")
    assert score("Knead the  dough well") == pytest.approx(2.0)
    assert score("the dough rises") == pytest.approx(0.5)
    assert score("nothing here") == 0.0
    assert grep_scorer("/E\\d{3}/")("error E404 seen") == 1.0
    assert grep_scorer("/[unclosed/")("[unclosed/ literal") > 0


def test_lru_cache_evicts_the_least_recent() -> None:
    cache: LRUCache[int] = LRUCache(2)
    cache.put("a", 1), cache.put("b", 2)
    assert cache.get("a") == 1
    cache.put("c", 3)
    assert cache.get("b") is None and cache.get("a") == 1 and cache.get("c") == 3
    assert cache.stats().to_dict() == {"size": 2, "capacity": 2, "hits": 3, "misses": 1}
    off: LRUCache[int] = LRUCache(0)
    off.put("a", 1)
    assert off.get("a") is None
    assert normalise_query("  Kalman\tFILTER ") == "kalman filter"
    assert result_key("a", 1, where={"x": 1, "y": 2}) == result_key("A ", 1, where={"y": 2, "x": 1})
    assert result_key("a", 1) != result_key("a", 2)


def test_apostrophes_are_not_quotes_and_quotes_are_preferences() -> None:
    found = understand("I'd like the users' guide, the 'scoped' notes and it's \u201cfull text\u201d", UnderstandConfig())
    assert found.phrases == ["full text"] and found.required_phrases == []
    # Single quotes inside a longer query are text (error messages quote values so: issue 39).
    assert "I'd" in found.text and "users'" in found.text and "'scoped'" in found.text
    assert understand("'scoped notes'", UnderstandConfig()).phrases == ["scoped notes"]  # wholly quoted
    strict = understand('logs +"exit code 3" and "retry"', UnderstandConfig())
    assert strict.required_phrases == ["exit code 3"] and strict.phrases == ["retry"]
    assert understand("don't 'cut here", UnderstandConfig()).phrases == []  # one quote: just a character


def test_quoted_phrases_lift_the_hits_that_hold_them_and_filter_only_with_k_left() -> None:
    from ragloom.retrieve.base import QueryPlan
    from ragloom.retrieve.pipeline import apply_phrases
    from ragloom.types import Hit

    hits = [Hit(f"c{i}", text, 1.0 - i / 10, i + 1, "/s") for i, text in
            enumerate(["no match", "the red fox", "nothing", "a Red  Fox runs"])]
    lifted = apply_phrases(hits, QueryPlan("fox", k=3, phrases=("red fox",)))
    assert [h.chunk_id for h in lifted] == ["c1", "c3", "c0", "c2"]
    assert [h.score for h in lifted] == sorted((h.score for h in lifted), reverse=True)
    assert [h.chunk_id for h in apply_phrases(hits, QueryPlan("fox", k=2, phrases=("red fox",)))] == ["c1", "c3"]
    assert apply_phrases(hits, QueryPlan("x", k=3, phrases=("absent",))) == hits
    assert apply_phrases(hits, QueryPlan("x", k=3, required_phrases=("absent",))) == []
