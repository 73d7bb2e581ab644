"""The built-in search presets: named pipelines, each a retriever and its stages.

They are registered by name in ``registry`` (role ``preset``) like every other component,
so plugins add theirs through the ``ragloom.presets`` entry-point group, and every list of
preset names (help texts, errors) comes from the registry.
"""

from __future__ import annotations

DENSE = [{"dense": {}}]
LEXICAL = [{"lexical": {}}]
HYBRID = [{"hybrid": {}}]
# Chosen by measurement on SciFact train (benchmarks/quality/pipeline.py; BENCHMARKS.md "The query pipeline"):
# a lever is in a preset only if it gained on its own. fast: today's hybrid. balanced: hybrid plus
# the metadata boosts (phase, is_critical), which cost nothing; no cheap lever (roll-up, Rocchio
# feedback, MMR, dedup) beat hybrid, and a cross-encoder over even 5 passages overruns a 150 ms
# budget on 2 cores. precise: the cross-encoder over the top 20, blended 0.3 with hybrid.
FAST = [{"hybrid": {}}]
BALANCED = [{"hybrid": {}}, {"boosts": {}}]
PRECISE = [{"hybrid": {}}, {"rerank": {"top_n": 20, "weight": 0.3}}, {"boosts": {}}]
# The derived structures, each hybrid search plus that structure, so that
# ``ragloom eval DATA --preset hybrid --preset graph --preset raptor`` compares them.
GRAPH = [{"graph": {}}]
GRAPH_BOOST = [{"hybrid": {}}, {"graph-boost": {}}]
RAPTOR = [{"raptor": {}}]
# The LLM-backed techniques; off by default (measured in benchmarks/quality/answers.py).
CORRECTIVE = [{"corrective": {}}, {"compress": {}}]
HYDE = [{"hyde": {}}]
MULTI_QUERY = [{"multi-query": {}}]
# Source code (benchmarks/code/code_search.py, CoSQA dev: BENCHMARKS.md "Source code"): BM25 is weak on
# natural-language queries against code (0.378 nDCG@10 against dense 0.589), so hybrid leans on the
# dense side: alpha 0.9 gave 0.596, the default 0.8 0.585, 0.95 0.592. Over an EmbeddingGemma index the
# query is embedded with its code retrieval prompt (0.787 against the search prompt's 0.747); other
# embedders have no such prompt and embed it as always.
CODE = [{"hybrid": {"alpha": 0.9, "query_task": "code"}}]
# The best this laptop gives (BENCHMARKS.md "EmbeddingGemma-300m"): hybrid search over an index embedded
# with EmbeddingGemma-300m. SciFact test nDCG@10 0.782 against the default's 0.738; the cross-encoder
# on top added nothing (0.780) at ~6x the time a query, so it is left out. The fusion weight stays
# hybrid's: EmbeddingGemma reads SciFact *train* far better than test (dense 0.864 against 0.753, so
# it has likely seen those queries), which rules train out for tuning it. Over another embedder it
# searches as hybrid and says so (``retrieve/searcher.py``).
QUALITY = [{"hybrid": {}}]
#: The embedder the ``quality`` preset was measured with (its model_id's provider part).
QUALITY_EMBEDDER = "embeddinggemma"
