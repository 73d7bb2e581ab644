"""Search per language: hybrid's dense weight and the relevance floor, for the index's embedder
and the query's language (query understanding's ``lang`` hint).

Tuned on the developers' half of XQuAD only (BENCHMARKS.md "Languages"). They apply when the
``search`` section keeps its defaults; a tuned ``search.alpha`` or ``weak_cosine`` wins.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from ..config import FusionSettings, SearchConfig
from ..embed.gemma import PROVIDER as GEMMA_PROVIDER
from ..embed.multilingual import ENGLISH_MODEL_ID, MODEL_ID
from ..lang import UNDETERMINED
from .base import QueryPlan

DEFAULT_ALPHA = FusionSettings.model_fields["alpha"].default
DEFAULT_WEAK_COSINE = SearchConfig.model_fields["weak_cosine"].default
#: Dense weight when the English model meets a query in another language: it reads other
#: scripts as noise, so BM25 (which reads each language) carries the ranking.
FOREIGN_QUERY_ALPHA = 0.2
#: Dense weight with the multilingual model, whatever the query's language.
MULTILINGUAL_ALPHA = 0.7
#: Dense weight with the multilingual model when the query's language is (almost) absent from the
#: index: BM25 then matches little more than names and numbers.
CROSS_LINGUAL_ALPHA = 0.9
#: Below this share of the chunks, a language counts as absent from the index.
CROSS_LINGUAL_SHARE = 0.05
#: The multilingual model's cosines run higher than bge-small-en's: its floor for ``weak``.
MULTILINGUAL_WEAK_COSINE = 0.8


#: Models served by the other providers that read many languages (bge-m3, multilingual-e5, LaBSE, ...).
_MULTILINGUAL_NAMES = re.compile(r"multilingual|bge[-_]m3|labse|xlm[-_]r", re.IGNORECASE)


def is_multilingual(model_id: str | None) -> bool:
    return model_id is not None and (model_id == MODEL_ID or bool(_MULTILINGUAL_NAMES.search(model_id))
                                     or is_embeddinggemma(model_id))


def is_embeddinggemma(model_id: str | None) -> bool:
    """EmbeddingGemma reads 100+ languages. On XQuAD dev the multilingual weights carried over (against
    0.8: 0.7 lifted Greek 0.975 -> 0.983 and 7 other languages, 0.9 all 11 cross-lingual sets;
    BENCHMARKS.md), but an English query keeps the configured weight, the one its SciFact and code
    figures were measured with."""
    return model_id is not None and model_id.startswith(f"{GEMMA_PROVIDER}:")


def language_alpha(language: str | None, model_id: str | None, languages: Mapping[str, int] | None = None
                   ) -> float | None:
    """Hybrid's dense weight for a query in ``language`` over an index embedded by ``model_id``
    whose chunks are in ``languages`` (chunks per language); None: the configured one."""
    if is_embeddinggemma(model_id) and not is_cross_lingual(language, languages) and language in (
            None, "en", UNDETERMINED):
        return None
    if is_multilingual(model_id):
        return CROSS_LINGUAL_ALPHA if is_cross_lingual(language, languages) else MULTILINGUAL_ALPHA
    if model_id == ENGLISH_MODEL_ID and language not in (None, "en"):
        return FOREIGN_QUERY_ALPHA
    return None


def is_cross_lingual(language: str | None, languages: Mapping[str, int] | None) -> bool:
    """Whether a query in ``language`` is asked of chunks in (almost) only other languages."""
    if not language or language == UNDETERMINED or not languages:
        return False
    return languages.get(language, 0) < CROSS_LINGUAL_SHARE * sum(languages.values())


def with_language_fusion(plan: QueryPlan, model_id: str | None, settings: SearchConfig,
                         languages: Mapping[str, int] | None = None) -> QueryPlan:
    """The plan with the language's dense weight as its ``alpha`` hint (and a note saying so),
    unless a rule already set one or ``search.alpha`` was tuned."""
    if plan.hint("alpha") is not None or settings.alpha != DEFAULT_ALPHA:
        return plan
    alpha = language_alpha(plan.hint("lang"), model_id, languages)
    if alpha is None:
        return plan
    why = (f"the multilingual embedder {model_id}" + (
        f", a {plan.hint('lang')} query over other languages" if alpha == CROSS_LINGUAL_ALPHA else "")
        if is_multilingual(model_id)
           else f"a {plan.hint('lang')} query over the English embedder {model_id}")
    return replace(plan, hints={**plan.hints, "alpha": alpha},
                   notes=(*plan.notes, f"{why} -> hybrid alpha {alpha}"))


def weak_cosine(model_id: str | None, settings: SearchConfig) -> float:
    """The cosine under which a hit is weak, for the index's embedder."""
    if model_id == MODEL_ID and settings.weak_cosine == DEFAULT_WEAK_COSINE:
        return MULTILINGUAL_WEAK_COSINE
    return settings.weak_cosine
