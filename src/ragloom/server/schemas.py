"""Request and response models of the HTTP API and the MCP tools.

Response models are derived from ragloom's dataclasses (``Hit``, ``SourceRecord``,
``IngestReport``, ``IndexStats``, ``AuditEntry``), so a field added to one of them shows up
in the API and its OpenAPI schema without a second definition to keep in step.
"""

from __future__ import annotations

import dataclasses
import hashlib
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    create_model,
    with_config,
)
from pydantic_core import PydanticCustomError
from typing_extensions import TypedDict

from .. import registry
from ..context import Context, Passage
from ..errors import FilterError
from ..filters import parse_where
from ..retrieve.base import QueryPlan, StageTrace
from ..stores.base import AuditEntry
from ..types import Answer, AnswerSentence, AnswerStep, Citation, FileFailure, Hit, IndexStats, IngestReport, SourceRecord


def model_from_dataclass(
    cls: type, *, name: str | None = None, extra: dict[str, tuple[Any, Any]] | None = None,
    exclude: tuple[str, ...] = (),
) -> type[BaseModel]:
    """A pydantic model with the dataclass's fields (and ``extra`` ones, e.g. its properties).

    Build instances with ``Model.model_validate(obj, from_attributes=True)``: properties are
    read like fields.
    """
    hints = typing.get_type_hints(cls)
    fields: dict[str, Any] = {}
    for item in dataclasses.fields(cls):
        if item.name in exclude:
            continue
        if item.default is not dataclasses.MISSING:
            default: Any = item.default
        elif item.default_factory is not dataclasses.MISSING:
            default = Field(default_factory=item.default_factory)
        else:
            default = ...
        fields[item.name] = (hints[item.name], default)
    fields.update(extra or {})
    return create_model(  # type: ignore[call-overload]
        name or cls.__name__, __doc__=cls.__doc__, __config__=ConfigDict(from_attributes=True), **fields
    )


def source_id(path: str) -> str:
    """A short, URL-safe, stable id for a source (its path is the store's key)."""
    return hashlib.sha256(path.encode("utf-8")).hexdigest()[:16]


# -- responses derived from the library's types ---------------------------------------------------
#: A path as shown (``ragloom.display``): relative to the ingested folder; ``source``/``path`` stay full.
_DISPLAY_PATH = (str, Field("", description="the source's path relative to the folder that was ingested, as shown "
                            "to a reader (the full path is `source`, or `path` for a source)"))
#: ``source -> display path``; the identity where none is given.
Shown = Callable[[str], str]

HitModel = model_from_dataclass(Hit, extra={
    "relevance": (float | None, Field(None, description="the same scale for every query: the cross-encoder's "
                  "probability when a rerank step scored the hit, else the dense cosine (relevance_kind says which); "
                  "score is the fused rank score, for ordering")),
    "relevance_kind": (str | None, Field(None, description="rerank_probability or dense (cosine)")),
    "doc_id": (str, ""), "section": (str, ""), "page": (int | None, None), "chunk_index": (int, 0),
    "start_line": (int | None, Field(None, description="first line of the passage in its file (text, Markdown, code)")),
    "end_line": (int | None, Field(None, description="last line of the passage in its file (inclusive)")),
    "source_id": (str, ""), "display_path": _DISPLAY_PATH,
    "highlights": (list[tuple[int, int]], Field(default_factory=list,
                   description="character spans of the text that match the query's terms")),
})
# ``source`` is what hits and citations call a source's path; ``path`` (the same) stays for older clients.
SourceModel = model_from_dataclass(SourceRecord, name="Source", extra={
    "id": (str, ""), "source": (str, Field("", description="the source's path, as hits and citations name it")),
    "display_path": _DISPLAY_PATH,
})
FailureModel = model_from_dataclass(FileFailure, name="FileFailure")
IngestReportModel = model_from_dataclass(
    IngestReport, exclude=("failed",), extra={"failed": (list[FailureModel], Field(default_factory=list))},  # type: ignore[valid-type]
)
StatusModel = model_from_dataclass(IndexStats, name="Status", extra={
    "jobs_pending": (int, 0), "version": (str, ""), "readers": (int, 0), "writes_enabled": (bool, False),
})
AuditEntryModel = model_from_dataclass(AuditEntry, name="AuditEntry")
# The plan without its parsed conditions and free-form hints (internal); ``notes`` says them in words.
PlanModel = model_from_dataclass(QueryPlan, name="QueryPlan", exclude=("conditions", "hints"))
TraceModel = model_from_dataclass(StageTrace, name="StageTrace")


# Answers: the hit behind a citation or passage is flattened into it (source, section, page, score).
CitationModel = model_from_dataclass(Citation, exclude=("hit",), extra={"source_id": (str, ""),
                                                                      "display_path": _DISPLAY_PATH})
PassageModel = model_from_dataclass(Passage, exclude=("hit",), extra={
    "chunk_id": (str, ...), "source": (str, ...), "source_id": (str, ""), "display_path": _DISPLAY_PATH,
    "section": (str, ""),
    "language": (str, Field("", description="the programming language of a passage of source code (shown "
                 "verbatim, never as Markdown); empty for prose")),
    "page": (int | None, None), "score": (float, 0.0),
    "start_line": (int | None, None), "end_line": (int | None, None),
    "highlights": (list[tuple[int, int]], Field(default_factory=list,
                   description="character spans of the text that match the question's terms")),
})
ContextModel = model_from_dataclass(Context, exclude=("passages",), extra={
    "passages": (list[PassageModel], Field(default_factory=list)),  # type: ignore[valid-type]
})
AnswerSentenceModel = model_from_dataclass(AnswerSentence, name="AnswerSentence")
AnswerStepModel = model_from_dataclass(AnswerStep, name="AnswerStep")
AnswerModel = model_from_dataclass(
    Answer, exclude=("citations", "sentences", "context", "trace"), extra={
        "citations": (list[CitationModel], Field(  # type: ignore[valid-type]
            default_factory=list, description="the passages the text cites as [number], by number")),
        "sentences": (list[AnswerSentenceModel], Field(default_factory=list)),  # type: ignore[valid-type]
        "unsupported": (list[str], Field(default_factory=list,
                        description="sentences no cited passage supports (attributed strategy)")),
        "context": (ContextModel | None, Field(None, description="the numbered passages the answer was given")),  # type: ignore[valid-type]
        "trace": (list[AnswerStepModel], Field(default_factory=list)),  # type: ignore[valid-type]
    },
)


def _same(path: str) -> str:
    return path


def hit_model(hit: Hit, highlights: list[tuple[int, int]] | None = None, shown: Shown = _same) -> BaseModel:
    return HitModel.model_validate({
        **{f.name: getattr(hit, f.name) for f in dataclasses.fields(hit)},
        "relevance": hit.relevance, "relevance_kind": hit.relevance_kind,
        "doc_id": hit.doc_id, "section": hit.section, "page": hit.page, "chunk_index": hit.chunk_index,
        "start_line": hit.start_line, "end_line": hit.end_line, "source_id": source_id(hit.source), "display_path": shown(hit.source), "highlights": highlights or [],
    })


def source_model(record: SourceRecord, shown: Shown = _same) -> BaseModel:
    return SourceModel.model_validate({**dataclasses.asdict(record), "id": source_id(record.path), "source": record.path,
                                       "display_path": shown(record.path)})


def citation_model(citation: Citation, shown: Shown = _same) -> BaseModel:
    fields = {f.name: getattr(citation, f.name) for f in dataclasses.fields(citation) if f.name != "hit"}
    return CitationModel.model_validate({**fields, "source_id": source_id(citation.source),
                                         "display_path": shown(citation.source)})


def passage_model(passage: Passage, highlights: list[tuple[int, int]] | None = None, shown: Shown = _same,
                  ) -> BaseModel:
    hit = passage.hit
    fields = {f.name: getattr(passage, f.name) for f in dataclasses.fields(passage) if f.name != "hit"}
    return PassageModel.model_validate({
        **fields, "chunk_id": hit.chunk_id, "source": hit.source, "source_id": source_id(hit.source),
        "display_path": shown(hit.source), "section": hit.section, "page": hit.page, "score": hit.score,
        "language": str(hit.metadata.get("language") or "") if hit.is_code else "",
        "start_line": hit.start_line, "end_line": hit.end_line, "highlights": highlights or [],
    })


def context_model(context: Context, highlight: Callable[[str], list[tuple[int, int]]] | None = None,
                  shown: Shown = _same) -> BaseModel:
    passages = [passage_model(p, highlight(p.text) if highlight else None, shown) for p in context.passages]
    fields = {f.name: getattr(context, f.name) for f in dataclasses.fields(context) if f.name != "passages"}
    return ContextModel.model_validate({**fields, "passages": passages})


def answer_model(answer: Answer, highlight: Callable[[str], list[tuple[int, int]]] | None = None,
                 shown: Shown = _same) -> BaseModel:
    return AnswerModel.model_validate({
        "question": answer.question, "text": answer.text, "strategy": answer.strategy, "model": answer.model,
        "citations": [citation_model(c, shown) for c in answer.citations],
        "sentences": [dataclasses.asdict(s) for s in answer.sentences],
        "unsupported": [s.text for s in answer.unsupported],
        "context": context_model(answer.context, highlight, shown) if isinstance(answer.context, Context) else None,
        "trace": [dataclasses.asdict(step) for step in answer.trace],
        "tokens": dict(answer.tokens), "warnings": list(answer.warnings), "seconds": answer.seconds,
    })


def report_model(report: IngestReport) -> BaseModel:
    return IngestReportModel.model_validate(dataclasses.asdict(report))


# -- requests -------------------------------------------------------------------------------------
# The HTTP API and the MCP tools take these same models (``mcp.takes``). Strict: a boolean is
# only true or false and a count only an integer (``"k": true`` is not k=1); unknown keys are refused.
STRICT_REQUEST = ConfigDict(extra="forbid", strict=True)


def _whole_number(value: Any) -> Any:
    """JSON Schema counts 200.0 as an integer (and generated clients may send it so); strict pydantic would not."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


#: An integer or null: also 200.0, never true, "3" or 1.5.
OptionalInt = Annotated[int | None, BeforeValidator(_whole_number)]

# The metadata filter language (ragloom.filters) as a type, so the OpenAPI document and the MCP
# tools' input schemas state it exactly and a request is checked against it before it runs.
FilterValue = StrictStr | StrictBool | StrictInt | StrictFloat
_Ordered = StrictStr | StrictInt | StrictFloat
FilterOperators = with_config(ConfigDict(extra="forbid"))(TypedDict("FilterOperators", {
    "$eq": FilterValue, "$ne": FilterValue, "$in": Annotated[list[FilterValue], Field(min_length=1)],
    "$lt": _Ordered, "$lte": _Ordered, "$gt": _Ordered, "$gte": _Ordered,
    "$contains": Annotated[StrictStr, Field(min_length=1)],
}, total=False))


def _some_operator(operators: Any) -> Any:
    if not operators:
        raise ValueError("give at least one operator")
    return operators


def _one_filter_error(value: Any, check: ValidatorFunctionWrapHandler) -> Any:
    """One error that says what is wrong with the filter, under the code the filter's own checks use."""
    try:
        return check(value)
    except ValidationError:
        problem = "values are strings, numbers, true or false; $in takes a non-empty list of them"
        try:
            parse_where(value)
        except FilterError as exc:
            problem = str(exc)
        except (AttributeError, TypeError):
            problem = 'the filter is an object, e.g. {"page": {"$gte": 2}}'
        raise PydanticCustomError("invalid_filter", "{problem}", {"problem": problem}) from None


Filter = Annotated[
    dict[Annotated[str, Field(min_length=1)],
         FilterValue | Annotated[FilterOperators, AfterValidator(_some_operator), Field(json_schema_extra={"minProperties": 1})]],
    WrapValidator(_one_filter_error),
]


#: White space to JSON Schema (ECMAScript's ``\\s``, which has U+FEFF) or to Python (``str.isspace``,
#: which has U+001C-U+001F and U+0085): a query made only of these is blank, for the document's
#: pattern (``NOT_BLANK``) and for the server alike, so neither accepts what the other refuses.
BLANK = frozenset("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
                  "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff")
NOT_BLANK = "[^" + "".join(f"\\u{ord(c):04x}" for c in sorted(BLANK)) + "]"


class SearchRequest(BaseModel):
    model_config = STRICT_REQUEST

    query: str = Field(..., min_length=1, description="what to look for, in plain words")
    k: OptionalInt = Field(None, ge=1, description="how many passages; None = search.k (clamped to k_min..k_max)")
    where: Filter | None = Field(
        None, description='metadata filter, e.g. {"page": {"$gte": 2}, "section": {"$in": ["Usage"]}, '
                    '"source": "tutorial/cors.md"} ($contains: text contains, ignoring case); a key or a '
                    'type no passage has gives a line in warnings'
    )
    mode: str | None = Field(
        None, description=f"a search preset: {', '.join(registry.names('preset'))}, or one defined under "
        "search.presets; None = search.pipeline, else search.mode",
    )
    explain: bool = Field(False, description="also return the query plan and each pipeline step's trace")


class SearchResponse(BaseModel):
    query: str
    mode: str
    k: int
    took_ms: float
    hits: list[HitModel]  # type: ignore[valid-type]
    warnings: list[str] = Field(default_factory=list)
    plan: PlanModel | None = Field(None, description="with explain: what the search asked for")  # type: ignore[valid-type]
    trace: list[TraceModel] | None = Field(  # type: ignore[valid-type]
        None, description="with explain: per pipeline step, its time, hits in and out, and scores after it")


class ContextRequest(BaseModel):
    model_config = STRICT_REQUEST

    question: str = Field(..., min_length=1, description="the question the context is for")
    budget: OptionalInt = Field(None, ge=16, description="token budget of the whole context; None = answer.budget")
    k: OptionalInt = Field(None, ge=1, le=100, description="passages retrieved; None = answer.k")
    where: Filter | None = Field(None, description="metadata filter, as for /v1/search")
    mode: str | None = Field(None, description="search preset used to retrieve; None = answer.mode or search's")


class HistoryMessage(BaseModel):
    model_config = STRICT_REQUEST

    role: Literal["user", "assistant", "system"] = Field(..., description="who said it; a system message gives the "
                                                          "conversation's topic, never instructions")
    content: str = Field(..., max_length=20_000, description="what was said")


class AskRequest(ContextRequest):
    history: list[HistoryMessage] | None = Field(
        None, max_length=10_000, description="the conversation's earlier messages, oldest first: the question is "
        "then a follow-up, searched with a standalone rewrite (answer.followup); the newest that fit "
        "answer.history_tokens are used",
    )
    strategy: str | None = Field(
        None, description="auto, extractive (no LLM: quotes the best sentences), standard, attributed or cove; "
        "None = answer.strategy. The LLM is the server's (llm section of its config)",
    )
    stream: bool = Field(
        False, description="true: a text/event-stream of `token` events ({\"text\": ...}), then one `answer` "
        "event (the Answer), or an `error` event; false: the Answer as one JSON",
    )


class IngestPathsRequest(BaseModel):
    model_config = STRICT_REQUEST

    paths: list[str] = Field(..., min_length=1, description="files and folders inside server.allowed_roots")
    glob: list[str] | None = Field(None, description="only files of a folder matching these patterns")


JobState = Literal["queued", "running", "done", "failed"]


class ErrorBody(BaseModel):
    code: str = Field(..., description="stable, machine-readable error code")
    message: str = Field(..., description="what happened and what to do about it")


class ErrorResponse(BaseModel):
    error: ErrorBody


class IngestJobModel(BaseModel):
    """An ingest running in the background; poll GET /v1/ingest/{id}."""

    id: str
    state: JobState
    origin: str = Field(..., description="api, upload or watch")
    paths: list[str] = Field(..., description="files and folders ingested")
    remove: list[str] = Field(default_factory=list, description="sources removed first (watch: deleted files)")
    created_at: float
    started_at: float | None = None
    finished_at: float | None = None
    files_total: int | None = None
    files_done: int = 0
    chunks_to_embed: int = 0
    chunks_embedded: int = 0
    current: str | None = Field(None, description="the file being read")
    report: IngestReportModel | None = None  # type: ignore[valid-type]
    error: ErrorBody | None = None


class HealthResponse(BaseModel):
    status: Literal["ok"] = "ok"
    version: str
