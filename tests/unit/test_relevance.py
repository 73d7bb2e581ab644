"""A score that means the same across queries, and weak hits (issue 25, finding 3)."""

from __future__ import annotations

from ragloom.retrieve.base import mark_weak
from ragloom.types import Hit


def _hit(**scores: float) -> Hit:
    return Hit("c", "text", 1.0, 1, "a.md", scores=dict(scores))


def test_relevance_is_the_rerank_probability_else_the_cosine_else_none() -> None:
    reranked = _hit(dense=0.71, lexical=9.0, rerank=3.2, rerank_probability=0.96)
    assert (reranked.relevance, reranked.relevance_kind) == (0.96, "rerank_probability")
    assert (_hit(dense=0.47, lexical=2.0).relevance, _hit(dense=0.47).relevance_kind) == (0.47, "dense")
    assert (_hit(lexical=5.0).relevance, _hit(lexical=5.0).relevance_kind) == (None, None)


def test_weak_is_judged_on_the_relevance_with_the_threshold_of_its_kind() -> None:
    hits = [_hit(dense=0.80), _hit(dense=0.45), _hit(dense=0.80, rerank_probability=0.01),
            _hit(dense=0.30, rerank_probability=0.5), _hit(lexical=3.0)]
    assert [h.weak for h in mark_weak(hits, cosine_below=0.6, probability_below=0.02)] == [
        False, True, True, False, None]


def test_a_hit_says_its_relevance_and_weakness_in_its_dict() -> None:
    (hit,) = mark_weak([_hit(dense=0.45)], 0.6, 0.02)
    assert {"score": 1.0, "relevance": 0.45, "relevance_kind": "dense", "weak": True}.items() <= hit.to_dict().items()
