"""``boosts``: rules that add to the min-max normalised score, so a boost means the same in every mode.

Built-in rules (the agent-OS specification): ``critical`` for chunks marked
``is_critical`` at ingest, ``phase`` when a chunk's ``phase`` equals the one the query
asked for (query understanding's ``boost`` hint; any ``search.understand.rules`` boost
works the same way), ``recency`` on a date field, ``paths`` for source globs, and
``fields`` for any metadata value.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timezone
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from ...filters import _same
from ...types import Hit
from ..base import Configured, QueryPlan, SearchContext, with_score
from ..fusion import min_max


class RecencyOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    field: str = Field("date", description="metadata field holding an ISO date or a Unix time")
    weight: float = Field(0.1, description="boost of a chunk dated today; halves every half_life_days")
    half_life_days: float = Field(365.0, gt=0)


class FieldBoost(BaseModel):
    model_config = ConfigDict(extra="forbid")
    field: str
    value: Any
    weight: float


class BoostOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    critical: float = Field(0.2, description="added when metadata is_critical is true")
    phase: float | None = Field(None, description="weight of a phase match; None = the query rule's own weight")
    recency: RecencyOptions | None = Field(None, description="boost recent chunks by a date field")
    paths: dict[str, float] = Field(default_factory=dict, description="source glob -> boost, e.g. {'*/standards/*': 0.1}")
    fields: list[FieldBoost] = Field(default_factory=list, description="[{field, value, weight}] for any metadata")
    fetch: float = Field(1.0, ge=1.0, description="candidates considered per hit returned (k × fetch)")


class BoostStage(Configured[BoostOptions]):
    name: ClassVar[str] = "boosts"
    Options = BoostOptions

    def wants(self, k: int) -> int:
        # A boost can lift a hit from below the cut, but fetching deeper costs time and changes
        # hybrid's min-max fusion (SciFact test: 2x over-fetch cost 0.003 nDCG@10 and doubled p50).
        return int(k * self.options.fetch)

    def process(self, plan: QueryPlan, hits: list[Hit], context: SearchContext) -> list[Hit]:
        rules = list(self.options.fields)
        for hint in plan.hint("boost", []) or []:
            weight = self.options.phase if hint.get("field") == "phase" and self.options.phase is not None else hint["weight"]
            rules.append(FieldBoost(field=hint["field"], value=hint["value"], weight=weight))
        today = datetime.now(timezone.utc).date()
        normal = min_max({hit.chunk_id: hit.score for hit in hits})
        out = []
        for hit in hits:
            extra = boost_of(hit.metadata, hit.source, self.options, rules, today)
            scored = with_score(hit, normal[hit.chunk_id] + extra, None)
            if extra:
                scored.scores["boost"] = extra
            out.append(scored)
        return sorted(out, key=lambda h: -h.score)


def boost_of(
    metadata: Mapping[str, Any], source: str, options: BoostOptions, rules: Sequence[FieldBoost], today: date
) -> float:
    """The sum of every rule that applies to one hit (pure)."""
    total = 0.0
    if options.critical and metadata.get("is_critical") is True:
        total += options.critical
    for rule in rules:
        value = metadata.get(rule.field)
        values = value if isinstance(value, list) else [value]
        if any(v is not None and _same(v, rule.value) for v in values):
            total += rule.weight
    for pattern, weight in options.paths.items():
        if fnmatch.fnmatch(source, pattern):
            total += weight
    if options.recency is not None:
        age = age_days(metadata.get(options.recency.field), today)
        if age is not None:
            total += options.recency.weight * math.pow(0.5, max(age, 0.0) / options.recency.half_life_days)
    return total


def age_days(value: Any, today: date) -> float | None:
    """Days from ``value`` (ISO date text, or Unix seconds) to ``today``; None when unreadable."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return (today - datetime.fromtimestamp(value, timezone.utc).date()).days
    try:
        text = str(value)
        parsed = datetime.fromisoformat(text).date() if len(text) > 10 else date.fromisoformat(text[:10])
    except ValueError:
        return None
    return float((today - parsed).days)
