"""Score fusion as pure functions over rankings.

``convex_combination`` is the min–max normalised weighted sum of Bruch et al. (2023,
"An Analysis of Fusion Functions for Hybrid Retrieval"); ``reciprocal_rank_fusion``
is Cormack et al. (2009). Both return candidates ordered by the tie-break rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..stores.base import Candidate, rank_candidates


def min_max(scores: Mapping[str, float]) -> dict[str, float]:
    """Scale scores to [0, 1]; a constant list maps to 1.0 (every item is the best)."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high == low:
        return {key: 1.0 for key in scores}
    return {key: (value - low) / (high - low) for key, value in scores.items()}


def convex_combination(
    dense: Mapping[str, float], lexical: Mapping[str, float], alpha: float
) -> list[Candidate]:
    """``alpha * norm(dense) + (1 - alpha) * norm(lexical)`` over the union of candidates.

    A candidate missing from one ranking scores 0 there after normalisation: it fell
    below that retriever's cut-off, i.e. at most its lowest retained score.
    """
    dense_n, lexical_n = min_max(dense), min_max(lexical)
    fused = [
        Candidate(cid, alpha * dense_n.get(cid, 0.0) + (1.0 - alpha) * lexical_n.get(cid, 0.0))
        for cid in {*dense_n, *lexical_n}
    ]
    return rank_candidates(fused)


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Candidate]], k: int = 60) -> list[Candidate]:
    """Sum over rankings of ``1 / (k + rank)``, rank starting at 1."""
    totals: dict[str, float] = {}
    for ranking in rankings:
        for rank, candidate in enumerate(ranking, start=1):
            totals[candidate.chunk_id] = totals.get(candidate.chunk_id, 0.0) + 1.0 / (k + rank)
    return rank_candidates([Candidate(cid, score) for cid, score in totals.items()])
