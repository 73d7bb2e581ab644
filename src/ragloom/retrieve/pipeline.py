"""A pipeline is one retriever and an ordered list of stages, built from config by name.

``search.pipeline`` spells the steps out::

    search:
      pipeline: [{hybrid: {}}, {rerank: {top_n: 50}}, {mmr: {lambda: 0.7}}]

or a preset names a ready list (``search.mode: hybrid``; ``dense`` and ``lexical`` are
presets of one retriever). Each step is ``NAME`` or ``{NAME: {options}}``; options are
checked against the component's ``Options`` model when the pipeline is built, so a
misspelt option or a retriever placed after a stage fails before any query runs.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from .. import registry
from ..errors import ConfigError, EmbeddingError, ModelMismatchError, ProviderError, RagloomWarning, UnknownComponentError
from ..filters import Condition, matches
from ..stores.base import Candidate
from ..tracing import set_attributes, span
from ..types import Hit
from .base import QueryPlan, Retrieved, Retriever, SearchContext, SearchResult, Stage, StageTrace
from .identifiers import IDENTIFIER_FETCH, lift_identifiers, with_identifiers
from .pasted import holds, lift_pasted, words_of
from .symbols import SYMBOL_SIGNAL, lift_symbols, with_symbols

if TYPE_CHECKING:
    from ..config import Config

#: A step as written in config: ``"mmr"`` or ``{"mmr": {"lambda": 0.7}}``.
StepSpec = str | Mapping[str, Any]

class _Presets(Mapping[str, list[StepSpec]]):
    """The presets in the registry (role ``preset``: built-ins and plugins), by name."""

    def __getitem__(self, name: str) -> list[StepSpec]:
        if name not in registry.names("preset"):
            raise KeyError(name)
        return list(registry.resolve("preset", name))

    def __iter__(self) -> Iterator[str]:
        return iter(registry.names("preset"))

    def __len__(self) -> int:
        return len(registry.names("preset"))


#: Every registered preset; read-only (add one with ``register_preset``, or an entry point).
PRESETS: Mapping[str, list[StepSpec]] = _Presets()


def register_preset(name: str, steps: Sequence[StepSpec]) -> None:
    registry.register("preset", name, list(steps))


def preset_names(custom: Mapping[str, Sequence[StepSpec]] | None = None) -> list[str]:
    """The registered presets and ``custom`` ones (``search.presets``), sorted."""
    return sorted({*registry.names("preset"), *(custom or {})})


def preset_needs_llm(name: str, custom: Mapping[str, Sequence[StepSpec]] | None = None) -> bool:
    """Whether a step of the preset ``name`` cannot run without an LLM (HyDE, multi-query, ...)."""
    steps = (custom or {}).get(name) or PRESETS.get(name) or []
    for step_name, _ in (_parse_step(step) for step in steps):
        role = "retriever" if step_name in registry.names("retriever") else "stage"
        if step_name in registry.names(role) and getattr(registry.resolve(role, step_name), "needs_llm", False):
            return True
    return False


@dataclass
class Pipeline:
    """A retriever and its stages; ``run`` turns a plan into a traced result."""

    retriever: Retriever
    stages: list[Stage]
    #: How the steps were written, for the audit log and ``--explain``.
    steps: list[str]
    name: str = "custom"

    def options_ran(self, plan: QueryPlan, config: Config) -> list[dict[str, Any]]:
        """Each step with the options it runs with for ``plan``, as ``{name: {option: value}}``."""
        return [{step.name: _ran_with(step, plan, config)} for step in (self.retriever, *self.stages)]

    def depth(self, k: int) -> int:
        """How many candidates to ask the retriever for so that the last stage can return ``k``."""
        need = k
        for stage in reversed(self.stages):
            need = max(need, stage.wants(need))
        return need

    def run(self, plan: QueryPlan, context: SearchContext, fallback: Retriever | None = None) -> SearchResult:
        """Retrieve, then each stage in turn. With a ``fallback`` retriever (grep), a failing
        embedder or an empty result is answered by it, with a warning, instead of an error."""
        started = time.perf_counter()
        depth = self.depth(plan.k) * (_PHRASE_FETCH if plan.phrases or plan.required_phrases else 1)
        trace: list[StageTrace] = []
        began = time.perf_counter()
        with span(f"ragloom.retrieve.{self.retriever.name}", **{"ragloom.depth": depth}) as current:
            try:
                retrieved = self.retriever.retrieve(plan, context, depth)
            except (EmbeddingError, ProviderError) as exc:
                if fallback is None or isinstance(exc, ModelMismatchError):
                    raise
                return _fall_back(plan, context, fallback, trace, started, f"{self.retriever.name} failed: {exc}")
            hits = self._first_ranking(retrieved, plan, context, depth)
            set_attributes(current, **{"ragloom.n_in": len(retrieved.candidates), "ragloom.n_out": len(hits)})
        trace.append(_step(self.retriever.name, began, len(retrieved.candidates), hits))
        for stage in self.stages:
            began = time.perf_counter()
            n_in = len(hits)
            # A step may say why it did what it did (``note(plan, hits)``, e.g. a model it skipped).
            note = stage.note(plan, hits) if callable(getattr(stage, "note", None)) else ""
            with span(f"ragloom.stage.{stage.name}", **{"ragloom.n_in": n_in}) as current:
                hits = renumber(stage.process(plan, hits, context))
                set_attributes(current, **{"ragloom.n_out": len(hits)})
            trace.append(replace(_step(stage.name, began, n_in, hits), note=note))
        if plan.min_score is not None:
            hits = [hit for hit in hits if hit.score >= plan.min_score]
        if not hits and fallback is not None and fallback.name != self.retriever.name:
            reason = "nothing scored above min_score" if plan.min_score is not None else "nothing matched"
            rescued = _fall_back(plan, context, fallback, list(trace), started, reason, quiet_if_empty=True)
            if rescued.hits:
                return rescued
        hits = renumber(hits[: plan.k])
        return SearchResult(hits, plan, trace, (time.perf_counter() - started) * 1000)


    def _first_ranking(self, retrieved: Retrieved, plan: QueryPlan, context: SearchContext, depth: int) -> list[Hit]:
        """The retriever's best ``depth`` hits after what the query's text asks for: the definitions
        of a symbol it names first, then the passages holding it as written (a pasted message),
        then those holding its quoted phrases, then its identifiers. The symbol, pasted-text and
        phrase checks read every candidate the retriever found (from both sides of hybrid), before
        the cut to ``depth``, so what they find does not depend on k."""
        lifts = getattr(self.retriever, "lifts_identifiers", True)
        symbols = bool(plan.hint("symbols")) and lifts
        identifiers = bool(plan.hint("identifiers")) and lifts
        if symbols:
            retrieved = with_symbols(retrieved, plan, context)
        if identifiers:
            retrieved = with_identifiers(retrieved, plan, context)
        if not lifts and plan.hint("pasted"):  # dense search is the embedding's ranking alone
            plan = replace(plan, hints={k: v for k, v in plan.hints.items() if k != "pasted"})
        if not (symbols or identifiers or plan.hint("pasted") or plan.phrases or plan.required_phrases):
            return materialise(retrieved, depth, context, plan.conditions)
        read = _to_read(retrieved, plan, depth + (IDENTIFIER_FETCH if identifiers else 0))
        hits = materialise(replace(retrieved, candidates=read), len(read), context, plan.conditions)
        if identifiers:
            # Identifiers are lifted within the retriever's best depth + IDENTIFIER_FETCH, as before: over
            # every candidate, prose written like code ("AlphaBeta", "TatAd") lifted passages that merely
            # name it from deep in the list (SciFact test: three queries lost 0.37-0.5 nDCG@10 each).
            window = depth + IDENTIFIER_FETCH
            hits = lift_identifiers(hits[:window], plan, window) + hits[window:]
        hits = lift_pasted(apply_phrases(hits, plan), plan)
        if symbols:
            hits = lift_symbols(hits, plan)
        return hits[:depth]


def _to_read(retrieved: Retrieved, plan: QueryPlan, top: int) -> list[Candidate]:
    """The candidates whose text the query's checks read, in the retriever's order: every one for
    a quoted phrase; else the best ``top``, the definitions the symbol lookup found, and, for a
    pasted text, BM25's best ``PASTED_FETCH`` (a passage holding all its words in order scores
    high there; reading every candidate of both sides cost a prose query ~90 ms on SciFact)."""
    candidates = retrieved.candidates
    if plan.phrases or plan.required_phrases:
        return candidates
    wanted = {c.chunk_id for c in candidates[:top]} | set(retrieved.components.get(SYMBOL_SIGNAL, {}))
    if plan.hint("pasted"):
        lexical = retrieved.components.get("lexical")
        if lexical is None:  # a retriever without a BM25 side: read them all
            return candidates
        wanted |= set(sorted(lexical, key=lambda cid: (-lexical[cid], cid))[:PASTED_FETCH])
    return [c for c in candidates if c.chunk_id in wanted]


#: BM25 candidates read for a pasted text's words (whatever k is).
PASTED_FETCH = 50


#: Candidates fetched per hit returned when the query quotes phrases (most candidates lack them).
_PHRASE_FETCH = 4


def _ran_with(step: Retriever | Stage, plan: QueryPlan, config: Config) -> dict[str, Any]:
    ran_with = getattr(step, "ran_with", None)  # a plugin step need not derive from Configured
    if callable(ran_with):
        return ran_with(plan, config)
    options = getattr(step, "options", None)
    return options.model_dump(mode="json", by_alias=True) if isinstance(options, BaseModel) else {}


def apply_phrases(hits: list[Hit], plan: QueryPlan) -> list[Hit]:
    """Hits after the query's quoted phrases: only those holding every ``+"required"`` phrase;
    of those, the ones holding every quoted phrase, if there are ``k`` of them, else all of them
    with the ones holding the phrases ranked first. A quote narrows a search, never empties it."""
    hits = keep_phrases(hits, plan.required_phrases)
    if not plan.phrases:
        return hits
    holding = keep_phrases(hits, plan.phrases)
    if len(holding) >= plan.k:
        return holding
    chosen = {hit.chunk_id for hit in holding}
    return lift(holding, [hit for hit in hits if hit.chunk_id not in chosen])


def lift(first: list[Hit], rest: list[Hit]) -> list[Hit]:
    """``first`` then ``rest``, scores raised so that each of ``first`` outscores all of ``rest``
    (by the same amount, so the order within ``first`` is kept)."""
    if not first or not rest:
        return first + rest
    gap = max(h.score for h in rest) - min(h.score for h in first)
    raise_by = max(gap, 0.0) + 1e-6
    return [replace(hit, score=hit.score + raise_by) for hit in first] + rest


def keep_phrases(hits: list[Hit], phrases: Sequence[str]) -> list[Hit]:
    """The hits whose text contains every phrase (case and spacing ignored)."""
    if not phrases:
        return hits
    wanted = [(" ".join(p.split()).casefold(), " ".join(words_of(p))) for p in phrases]
    return [h for h in hits if all(_holds_phrase(h.text, *p) for p in wanted)]


def _holds_phrase(text: str, phrase: str, words: str) -> bool:
    """Whether ``text`` holds ``phrase`` as written (case and spacing ignored), or its words in
    order with only punctuation and quotes between them (a message split over two string
    literals, ``'link'`` quoted differently)."""
    return phrase in " ".join(text.split()).casefold() or bool(words) and holds(text, words)


def _fall_back(
    plan: QueryPlan, context: SearchContext, fallback: Retriever, trace: list[StageTrace], started: float, reason: str,
    quiet_if_empty: bool = False,
) -> SearchResult:
    """The fallback retriever's hits, marked ``retrieval: <name>`` and announced with a warning
    (not when ``quiet_if_empty`` and it found nothing either: the caller keeps its empty result)."""
    began = time.perf_counter()
    with span(f"ragloom.fallback.{fallback.name}", **{"ragloom.reason": reason}):
        retrieved = fallback.retrieve(plan, context, plan.k * _PHRASE_FETCH)
        hits = apply_phrases(materialise(retrieved, plan.k * _PHRASE_FETCH, context, plan.conditions), plan)
    if hits or not quiet_if_empty:
        warnings.warn(f"{reason}; returning {fallback.name} matches of the stored texts instead", RagloomWarning,
                      stacklevel=5)
    hits = renumber([replace(h, metadata={**h.metadata, "retrieval": fallback.name}) for h in hits[: plan.k]])
    trace.append(replace(_step(fallback.name, began, len(retrieved.candidates), hits), note=f"fallback: {reason}"))
    return SearchResult(hits, plan, trace, (time.perf_counter() - started) * 1000)


def materialise(retrieved: Retrieved, depth: int, context: SearchContext,
                plan_conditions: Sequence[Condition] = ()) -> list[Hit]:
    """Hits for the best ``depth`` candidates: their text and metadata read in one batch."""
    top = retrieved.candidates[:depth]
    chunks = {c.id: c for c in context.store.get_chunks([c.chunk_id for c in top if c.chunk_id not in retrieved.extra])}
    chunks.update(retrieved.extra)
    hits = []
    for candidate in top:
        chunk = chunks.get(candidate.chunk_id)
        # The last gate: whatever a step fetched (a graph, a tree, a rewrite), only chunks passing
        # the plan's filters become hits.
        if chunk is None or plan_conditions and not matches(chunk.metadata, plan_conditions):
            continue
        scores = {name: values[chunk.id] for name, values in retrieved.components.items() if chunk.id in values}
        hits.append(Hit(chunk_id=chunk.id, text=chunk.text, score=candidate.score, rank=len(hits) + 1,
                        source=chunk.source, metadata=chunk.metadata, scores=scores))
    return hits


def renumber(hits: Sequence[Hit]) -> list[Hit]:
    """Ranks follow list order (a stage's order is its ranking, MMR's included)."""
    return [hit if hit.rank == rank else replace(hit, rank=rank) for rank, hit in enumerate(hits, start=1)]


def _step(name: str, began: float, n_in: int, hits: Sequence[Hit]) -> StageTrace:
    return StageTrace(name, (time.perf_counter() - began) * 1000, n_in, len(hits),
                      {hit.chunk_id: hit.score for hit in hits})


def build_pipeline(
    steps: Sequence[StepSpec] | None = None,
    *,
    preset: str | None = None,
    custom_presets: Mapping[str, Sequence[StepSpec]] | None = None,
) -> Pipeline:
    """A pipeline from explicit ``steps``, or from the preset named ``preset``."""
    name = "custom"
    if steps is None:
        preset = preset or "hybrid"
        custom = custom_presets or {}
        if preset not in custom and preset not in PRESETS:
            raise UnknownComponentError("search preset", preset, preset_names(custom_presets))
        steps, name = custom[preset] if preset in custom else PRESETS[preset], preset
    if not steps:
        raise ConfigError("the search pipeline is empty; start it with a retriever: dense, lexical or hybrid")
    parsed = [_parse_step(step) for step in steps]
    first, *rest = parsed
    retriever = _build("retriever", *first, position=1)
    stages = [_build("stage", step_name, options, position=i) for i, (step_name, options) in enumerate(rest, start=2)]
    return Pipeline(retriever, stages, [step_name for step_name, _ in parsed], name)


def _parse_step(step: StepSpec) -> tuple[str, dict[str, Any]]:
    if isinstance(step, str):
        return step, {}
    if isinstance(step, Mapping) and len(step) == 1:
        (step_name, options), = step.items()
        if options is None:
            options = {}
        if isinstance(step_name, str) and isinstance(options, Mapping):
            return step_name, dict(options)
    raise ConfigError(
        f"a pipeline step must be a name or {{name: {{options}}}}, got {step!r}; "
        "e.g. [{hybrid: {}}, {mmr: {lambda: 0.7}}]"
    )


def _build(role: str, step_name: str, options: Mapping[str, Any], position: int) -> Any:
    other = "stage" if role == "retriever" else "retriever"
    if step_name not in registry.names(role) and step_name in registry.names(other):
        if role == "stage":
            raise ConfigError(
                f"step {position} of the search pipeline is the retriever {step_name!r}, but only the first "
                f"step retrieves; later steps are stages ({', '.join(registry.names('stage')) or 'none'})"
            )
        raise ConfigError(
            f"the search pipeline starts with the stage {step_name!r}; a stage needs hits to work on, so "
            f"put a retriever first ({', '.join(registry.names('retriever'))})"
        )
    cls = registry.resolve(role, step_name)
    checked = registry.validate_options(cls.Options, options, f"{role} {step_name!r}")
    return cls(checked)
