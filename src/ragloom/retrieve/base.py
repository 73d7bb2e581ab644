"""The query pipeline's interfaces: a plan, a retriever, a stage, and what a search returns.

A search is a :class:`QueryPlan` run through a :class:`~ragloom.retrieve.pipeline.Pipeline`:
one :class:`Retriever` (plan -> ranked candidates), then :class:`Stage` after stage
(plan, hits -> hits). A technique is one module that implements one of the two protocols
and registers its name (role ``retriever`` or ``stage``). Stages see the store, the
embedder and the shared models only through the :class:`SearchContext` they are given;
the pipeline, not the stage, records the trace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Generic,
    Protocol,
    TypeVar,
    runtime_checkable,
)

import numpy as np
from pydantic import BaseModel, ConfigDict

from ..filters import Condition
from ..stores.base import Candidate
from ..types import COSINE, PROBABILITY, Chunk, Hit

if TYPE_CHECKING:
    from ..config import Config
    from ..embed.base import Embedder
    from ..stores.base import Store


@dataclass(frozen=True)
class QueryPlan:
    """What a search asks for, after the query was understood.

    ``text`` is what retrievers see (query operators stripped); ``original`` is what the
    user typed. ``hints`` carries what query understanding or the caller decided for
    later parts (e.g. ``{"alpha": 0.5}`` for more lexical weight, ``{"boost": {...}}``);
    ``notes`` says in words what was understood, for ``--explain``.
    """

    text: str
    k: int
    original: str = ""
    conditions: tuple[Condition, ...] = ()
    where: Mapping[str, Any] = field(default_factory=dict)
    #: Quoted phrases (``"a phrase"``): the hits that contain them rank first.
    phrases: tuple[str, ...] = ()
    #: Phrases that must appear in a hit's text (``+"a phrase"``).
    required_phrases: tuple[str, ...] = ()
    hints: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    min_score: float | None = None
    #: The preset or ``"custom"`` when ``search.pipeline`` spelled the stages out.
    preset: str = ""

    def hint(self, name: str, default: Any = None) -> Any:
        return self.hints.get(name, default)


@dataclass
class Retrieved:
    """A retriever's answer: candidates best first, and each signal's raw scores by chunk id
    (``{"dense": {...}, "lexical": {...}}``) so that hits can show where their score came from."""

    candidates: list[Candidate]
    components: dict[str, dict[str, float]] = field(default_factory=dict)
    #: Candidates that are not chunks of the store (RAPTOR summaries), by id.
    extra: dict[str, Chunk] = field(default_factory=dict)


@dataclass(frozen=True)
class StageTrace:
    """One step of a search as ``--explain`` shows it."""

    name: str
    ms: float
    n_in: int
    n_out: int
    #: Each output hit's score after this step, by chunk id, in output order.
    scores: dict[str, float] = field(default_factory=dict)
    #: Anything the step wants to say (a fallback taken, a cache hit, a model used).
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ms": round(self.ms, 3), "n_in": self.n_in, "n_out": self.n_out,
                "scores": self.scores, "note": self.note}


@dataclass
class SearchResult:
    """Hits plus how they were found: the plan and one trace entry per step."""

    hits: list[Hit]
    plan: QueryPlan
    trace: list[StageTrace] = field(default_factory=list)
    elapsed_ms: float = 0.0
    #: The query cache's answer for this search: hit, and the cache's hits, misses, size, capacity.
    cache: dict[str, Any] | None = None
    #: Filters that match nothing because of how they are written (``filters.filter_warnings``).
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "hits": [hit.to_dict() for hit in self.hits],
            "plan": {"text": self.plan.text, "original": self.plan.original, "k": self.plan.k,
                     "where": dict(self.plan.where), "phrases": list(self.plan.phrases),
                     "required_phrases": list(self.plan.required_phrases),
                     "hints": dict(self.plan.hints), "notes": list(self.plan.notes), "preset": self.plan.preset},
            "trace": [step.to_dict() for step in self.trace],
            "elapsed_ms": round(self.elapsed_ms, 3),
            "cache": self.cache,
        }


class NoOptions(BaseModel):
    """Options of a component that takes none: any key is an error."""

    model_config = ConfigDict(extra="forbid")


OptionsT = TypeVar("OptionsT", bound=BaseModel)


class Configured(Generic[OptionsT]):
    """A retriever or stage built from its validated ``Options`` (their defaults when none are given)."""

    Options: ClassVar[type[BaseModel]] = NoOptions
    #: Whether the step cannot run without an LLM (a server leaves presets with such a step out of
    #: what it offers when it has none).
    needs_llm: ClassVar[bool] = False

    def __init__(self, options: OptionsT | None = None) -> None:
        self.options: OptionsT = options or self.Options()  # type: ignore[assignment]

    def ran_with(self, plan: QueryPlan, config: Config) -> dict[str, Any]:
        """The options this step runs with for ``plan`` (what the audit log records); a step whose
        options defer to config sections or to the query says what they resolved to."""
        return self.options.model_dump(mode="json", by_alias=True)


class SearchContext:
    """What retrievers and stages may use: the store, the query embedding, shared models.

    Models that cost time to load (cross-encoders, token encoders, LLMs) come from
    ``component(key, factory)``, which loads each once per process and index.
    """

    def __init__(
        self,
        store: Store,
        embedder: Callable[[], Embedder],
        config: Config,
        components: dict[str, Any] | None = None,
        query_vectors: Callable[[str, str | None], np.ndarray] | None = None,
    ) -> None:
        self.store = store
        self.config = config
        self._embedder = embedder
        self._components = components if components is not None else {}
        self._query_vectors = query_vectors
        self._vectors: dict[tuple[str, str | None], np.ndarray] = {}

    @property
    def embedder(self) -> Embedder:
        return self._embedder()

    def query_vector(self, text: str, task: str | None = None) -> np.ndarray:
        """The query-side embedding of ``text`` (for a search ``task``: ``Embedder.embed_query_for``),
        computed once per search (and cached across searches when the index gives a cache)."""
        if (text, task) not in self._vectors:
            embed = self._query_vectors or self.embedder.embed_query_for
            self._vectors[(text, task)] = embed(text, task)
        return self._vectors[(text, task)]

    def component(self, key: str, factory: Callable[[], Any]) -> Any:
        """A shared model or client, built by ``factory`` the first time ``key`` is asked for."""
        if key not in self._components:
            self._components[key] = factory()
        return self._components[key]

    def chunk_vectors(self, hits: Sequence[Hit]) -> np.ndarray:
        """The stored dense vectors of these hits, one row each, in order."""
        chunks = {c.id: c for c in self.store.get_chunks([h.chunk_id for h in hits])}
        hashes = [chunks[h.chunk_id].content_hash for h in hits if h.chunk_id in chunks]
        found = self.store.cached_vectors(hashes)
        # The stored vectors say their size; only a hit list without any asks the embedder.
        dimension = len(next(iter(found.values()))) if found else self.embedder.dimension
        rows = np.zeros((len(hits), dimension), dtype=np.float32)
        for i, hit in enumerate(hits):
            chunk = chunks.get(hit.chunk_id)
            if chunk is not None and chunk.content_hash in found:
                rows[i] = found[chunk.content_hash]
        return rows


@runtime_checkable
class Retriever(Protocol):
    """Plan -> candidates, best first. ``depth`` is how many the pipeline needs."""

    #: Registry name, shown in traces.
    name: ClassVar[str]

    def retrieve(self, plan: QueryPlan, context: SearchContext, depth: int) -> Retrieved: ...


@runtime_checkable
class Stage(Protocol):
    """Plan + hits -> hits (reordered, rescored, filtered, merged)."""

    name: ClassVar[str]

    def wants(self, k: int) -> int:
        """How many input hits this stage needs to return ``k`` good ones (over-fetch)."""
        ...

    def process(self, plan: QueryPlan, hits: list[Hit], context: SearchContext) -> list[Hit]: ...


def with_score(hit: Hit, score: float, signal: str | None = None) -> Hit:
    """A copy of ``hit`` with a new score; ``signal`` also records it under that name in ``hit.scores``."""
    from dataclasses import replace

    scores = dict(hit.scores)
    if signal:
        scores[signal] = float(score)
    return replace(hit, score=float(score), scores=scores)


def ranked(hits: Sequence[Hit]) -> list[Hit]:
    """Hits sorted by score, ties by chunk id, renumbered from 1 (the tie-break rule)."""
    from dataclasses import replace

    ordered = sorted(hits, key=lambda h: (-h.score, h.chunk_id))
    return [replace(hit, rank=rank) for rank, hit in enumerate(ordered, start=1)]


#: ``Hit.scores`` key of a hit that holds exactly what the query asked for: the definition of the
#: symbol it names, or the pasted text word for word. Such a hit is never ``weak``.
EXACT_MATCH = "exact"


def mark_weak(hits: Sequence[Hit], cosine_below: float, probability_below: float) -> list[Hit]:
    """Each hit with ``weak`` set: its relevance is under the threshold for its kind (a
    cross-encoder probability or a cosine), unless it matched exactly; None when it has no
    relevance to judge."""
    floors = {PROBABILITY: probability_below, COSINE: cosine_below}
    out = []
    for hit in hits:
        kind = hit.relevance_kind
        weak = None if kind is None else bool(hit.scores[kind] < floors[kind]) and EXACT_MATCH not in hit.scores
        out.append(hit if hit.weak is weak else replace(hit, weak=weak))
    return out
