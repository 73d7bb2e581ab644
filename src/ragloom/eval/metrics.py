"""Retrieval metrics (through ir-measures / pytrec_eval) and a paired significance test.

The metric definitions are the ones trec_eval and BEIR use; nothing is computed by hand
here except averaging, so numbers compare with published BEIR results.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from ..optional import require

Run = Mapping[str, Mapping[str, float]]

#: Reported name -> ir-measures name. MRR is trec_eval's RR (reciprocal rank of the first relevant hit).
MEASURES: dict[str, str] = {
    "nDCG@10": "nDCG@10",
    "recall@10": "R@10",
    "recall@100": "R@100",
    "MRR@10": "RR@10",
    "MAP@100": "AP@100",
}

#: The metric tables and plots lead with.
PRIMARY = "nDCG@10"


def per_query_metrics(qrels: Mapping[str, Mapping[str, int]], run: Run) -> dict[str, dict[str, float]]:
    """metric -> query id -> value, for every judged query.

    A judged query the run has no results for scores 0 (trec_eval would leave it out
    and so flatter the mean).
    """
    ir_measures = require("ir_measures", extra="eval", feature="ragloom eval", package="ir-measures")
    by_name = {ir_measures.parse_measure(spec): name for name, spec in MEASURES.items()}
    values: dict[str, dict[str, float]] = {name: dict.fromkeys(qrels, 0.0) for name in MEASURES}
    judged = {qid: dict(docs) for qid, docs in qrels.items()}
    scored = {qid: dict(docs) for qid, docs in run.items() if qid in judged and docs}
    for metric in ir_measures.iter_calc(list(by_name), judged, scored):
        values[by_name[metric.measure]][metric.query_id] = float(metric.value)
    return values


def mean(values: Mapping[str, float]) -> float:
    return sum(values.values()) / len(values) if values else 0.0


def paired_p_value(baseline: Mapping[str, float], other: Mapping[str, float]) -> float:
    """Two-sided paired t-test over the queries both runs scored; 1.0 when they never differ."""
    queries = sorted(set(baseline) & set(other))
    a = [baseline[q] for q in queries]
    b = [other[q] for q in queries]
    if len(queries) < 2 or all(x == y for x, y in zip(a, b)):
        return 1.0
    stats = require("scipy.stats", extra="eval", feature="significance tests", package="scipy")
    p = float(stats.ttest_rel(a, b).pvalue)
    return 1.0 if math.isnan(p) else p


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) of the samples; 0 when there are none."""
    return float(np.percentile(samples, q)) if len(samples) else 0.0
