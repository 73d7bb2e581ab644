"""The sections a query reads: ``search`` (with ``understand``, ``cache`` and the fusion settings a
hybrid step may override), ``audit`` and ``answer``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from ..options import Section


class MatchRule(Section):
    """A query understanding rule: where ``pattern`` matches the query, ``field`` = group 1."""

    pattern: str = Field(description="regex, case-insensitive; group 1 is the value")
    field: str = Field(description="metadata field the value is compared with")
    action: Literal["filter", "boost", "off"] = Field("boost", description="filter: only matching chunks; "
                                                      "boost: matching chunks score higher (boosts stage)")
    value_type: Literal["int", "float", "str"] = Field("str", description="how the captured text is read")
    weight: float = Field(0.1, description="boost added to a matching chunk's normalised score")
    strip: bool = Field(False, description="remove the matched words from the text retrievers see")


class OperatorRule(Section):
    """``name:value`` in a query becomes a filter on ``field``."""

    field: str = Field(description="metadata field filtered on")
    op: Literal["$eq", "$gt", "$gte", "$lt", "$lte", "source"] = Field(
        "$eq", description="comparison; source: the value names a file (path suffix or glob)"
    )
    value_type: Literal["str", "int", "date"] = Field("str", description="date: YYYY, YYYY-MM or YYYY-MM-DD")


class UnderstandConfig(Section):
    enabled: bool = Field(True, description="turn operators, quoted phrases and rules in the query into the plan")
    rules: list[MatchRule] = Field(
        default_factory=lambda: [MatchRule(pattern=r"\bphase\s+(\d+)\b", field="phase", value_type="int")],
        description="pattern rules; the default boosts chunks whose phase matches 'phase N'",
    )
    operators: dict[str, OperatorRule] = Field(
        default_factory=lambda: {
            "source": OperatorRule(field="source", op="source"),
            "tag": OperatorRule(field="tags"),
            "after": OperatorRule(field="date", op="$gte", value_type="date"),
            "before": OperatorRule(field="date", op="$lt", value_type="date"),
        },
        description="name:value operators and the filter each becomes",
    )
    phrases: bool = Field(True, description='"quoted phrase": hits holding it rank first; +"phrase": must appear in every hit')
    pasted_words: int = Field(
        40, ge=1, description="a query of more words than this is a pasted text (a paragraph, a request): "
        "its quotes and operators are read as words, not as phrases and filters"
    )
    identifier_alpha: float | None = Field(
        0.5, ge=0.0, le=1.0,
        description="dense weight of hybrid search for identifier-like queries (snake_case, CamelCase, "
        "error codes); None = leave it",
    )
    identifiers: bool = Field(
        True, description="tokens of a query written like identifiers (a UUID, hash, version, error code, file "
        "name, snake_case, camelCase or dotted.name) are looked up exactly: the chunks holding them rank first",
    )
    symbols: bool = Field(
        True, description="a query that names a symbol (Class.method, snake_case, 'class Style', 'fn main') puts "
        "its definition first: exact name, then ignoring case and separators, then by prefix (code chunks only)",
    )
    pasted: bool = Field(
        True, description="a query of 4+ words not wholly quoted is also looked for as written (quotes and "
        "punctuation in it are text): the passages holding it rank first; a pasted traceback is searched by its "
        "exception's message",
    )
    identifier_patterns: list[str] = Field(
        default_factory=lambda: [
            r"^\S*[a-z0-9]_[a-z0-9]\S*$", r"^\S*[a-z][A-Z]\S*$", r"^[A-Z][A-Z0-9]*[-_]?\d{2,}$",
            r"^\S+\.\S+\(\)?$", r"^[A-Z][A-Z0-9_]{3,}$",
        ],
        description="regexes; a query whose every word matches one of them is an identifier",
    )


class CacheConfig(Section):
    size: int = Field(256, ge=0, description="recent search results kept (0 disables the result cache)")
    embeddings: int = Field(1024, ge=0, description="recent query embeddings kept (0 disables)")


class FusionSettings(Section):
    """How hybrid search fuses dense and BM25 candidates: these settings are declared here only.

    The ``search`` section holds their defaults; a hybrid step's options (``{hybrid: {alpha: 0.5}}``)
    override any of them for that step (see ``overrides_of``).
    """

    fusion: Literal["convex", "rrf"] = Field("convex", description="how hybrid merges dense and BM25 rankings")
    alpha: float = Field(0.8, ge=0.0, le=1.0, description="convex fusion: weight of the dense score (tuned on SciFact train)")
    rrf_k: int = Field(60, ge=1, description="reciprocal rank fusion constant")
    candidates: int = Field(100, ge=1, description="candidates taken from each retriever before fusion")


def overrides_of(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s fields, each made optional with the default None (unset = keep the default),
    as ``pydantic.create_model`` takes them: a step's options that override a config section."""
    from pydantic.fields import FieldInfo

    return {name: (info.annotation | None, FieldInfo.merge_field_infos(info, default=None))
            for name, info in model.model_fields.items()}


class SearchConfig(FusionSettings):
    mode: str = Field(
        "hybrid", description="default search preset: dense, lexical, hybrid, or another preset "
        "(built-in or under presets); ignored when pipeline is set"
    )
    pipeline: list[str | dict[str, Any]] | None = Field(
        None, description="explicit steps, a retriever then stages, e.g. [{hybrid: {}}, {mmr: {lambda: 0.7}}]; "
        "None = the steps of the mode's preset"
    )
    presets: dict[str, list[str | dict[str, Any]]] = Field(
        default_factory=dict, description="your own named pipelines, usable wherever a preset name is"
    )
    k: int = Field(5, ge=1, description="results returned when k is not given")
    k_min: int = Field(1, ge=1, description="smallest k allowed; smaller values are clamped")
    k_max: int = Field(100, ge=1, description="largest k allowed; larger values are clamped")
    min_score: float | None = Field(None, description="drop hits scoring below this")
    weak_cosine: float = Field(
        0.65, ge=-1.0, le=1.0, description="a hit whose dense cosine similarity (its relevance when no rerank "
        "step scored it) is below this is marked weak; a reranked hit is weak below answer.unanswerable_below, "
        "the cross-encoder probability under which ask says the sources do not say. Calibrated on SciFact "
        "(BENCHMARKS.md \"Relevance across queries\")"
    )
    max_query_chars: int = Field(
        16_000, ge=1, description="longest query searched, from the CLI, the Python API and the servers "
        "(which also apply server.max_query_chars); a pasted page is a query: the embedder reads its first "
        "512 tokens, BM25 its first 1,024 distinct terms, the cross-encoder its first half window"
    )
    fallback: Literal["grep", "none"] = Field(
        "grep", description="when the embedder fails or nothing scores above min_score: literal search of the "
        "stored chunk texts (hits marked retrieval=grep), or none (raise / return nothing)"
    )
    understand: UnderstandConfig = Field(default_factory=UnderstandConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)

    @model_validator(mode="after")
    def _k_range(self) -> SearchConfig:
        if self.k_min > self.k_max:
            raise ValueError(f"k_min ({self.k_min}) is larger than k_max ({self.k_max})")
        return self


class AuditConfig(Section):
    enabled: bool = Field(True, description="write every search and its hits to the audit log")


class AnswerConfig(Section):
    strategy: str = Field(
        "auto", description="auto | extractive | standard | attributed | cove; auto = attributed when an LLM "
        "is available, else extractive (no LLM); the packaged qwen2.5-coder models measured below extractive, so "
        "auto answers extractively with them"
    )
    k: int = Field(5, ge=1, description="passages retrieved for an answer")
    budget: int = Field(1500, ge=16, description="context budget in tokens (also the latency budget of a local LLM)")
    mode: str | None = Field(None, description="search preset used to retrieve for answers; None = search's own")
    max_tokens: int = Field(200, ge=8, description="longest generated answer, in tokens (a small model may "
                            "otherwise repeat itself up to llm.max_tokens)")
    extractive_sentences: int = Field(3, ge=1, description="extractive: most sentences in an answer")
    extractive_min_relevance: float = Field(
        0.03, ge=0.0, le=1.0, description="extractive: cross-encoder probability (0..1) the best sentence needs; "
        "below it the answer is 'The sources do not say.' Tuned on SQuAD-train train questions, each also asked "
        "of its own article without its paragraph and of another article (benchmarks/quality/extractive_floor.py)"
    )
    extractive_followup_min_relevance: float = Field(
        0.3, ge=0.0, le=1.0, description="extractive: a follow-up the question alone does not clear the floor for is "
        "answered when the question read after the previous one has a sentence this probable; tuned on the tune half "
        "of convqa-dev's follow-ups, answerable and unanswerable (BENCHMARKS.md)"
    )
    unanswerable_below: float = Field(
        0.02, ge=0.0, le=1.0, description="cross-encoder relevance of the best passage (0..1) below which the "
        "answer is 'The sources do not say.' without asking the LLM"
    )
    support_threshold: float = Field(
        0.5, ge=0.0, le=1.0, description="attributed: support score below which a sentence is flagged unsupported"
    )
    support_checker: Literal["cross-encoder", "embedding", "overlap"] = Field(
        "cross-encoder", description="how a sentence-passage pair is checked for support"
    )
    verification_questions: int = Field(3, ge=1, le=10, description="cove: verification questions asked")
    followup: Literal["offline", "llm", "none"] = Field(
        "offline", description="how a follow-up question is made standalone before it is searched: offline (carry "
        "the conversation's salient terms, no LLM; measured best on convqa-dev), llm (answer.prompts.followup), none"
    )
    history_tokens: int = Field(
        1000, ge=0, description="most tokens of earlier turns a conversation keeps; the oldest turns are dropped first"
    )
    prompts: dict[str, str] = Field(
        default_factory=dict, description="override packaged prompt templates by name (system, standard, "
        "attributed, cove_questions, cove_answer, cove_revise, hyde, multi_query, rewrite, followup)"
    )
