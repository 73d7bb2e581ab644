"""Answering a question over an index: retrieve, build the context, run a strategy.

``Index.ask`` and ``Index.ask_stream`` call ``ask_stream`` here with the :class:`AnswerServices`
it needs (a retrieve callable, the embedder, the cross-encoder, the config), not the index. The strategy ``auto``
is attributed when an LLM can be used and extractive (no LLM) otherwise, which is said
once per process. The packaged Qwen2.5-Coder models (0.5B, the default, and 1.5B) count as
"otherwise": their answers measured below the extractive ones (BENCHMARKS.md "Answers"), so
they answer only when a strategy names them.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..config import Config, LLMConfig, parse_model_spec
from ..context import Context, build_context
from ..errors import ConfigError, ProviderError, RagloomWarning, ServiceUnavailableError
from ..types import Answer, AnswerStep
from ..models.llm import LLM, llm_unavailable, shared_llm
from .followup import Rewrite, Turn, llm_rewrite, offline_rewrite
from .conversation import HistoryItem, normalise_history
from .prompts import NO_ANSWER, Prompts
from .strategies import AnswerRequest, create_strategy, strategy_names

if TYPE_CHECKING:
    from ..embed.base import Embedder
    from ..models.cross_encoder import CrossEncoder
    from ..types import Hit

_told_no_llm = False


class Retrieve(Protocol):
    """A search that returns its hits and plan (``Index.retrieve``)."""

    def __call__(self, query: str, k: int | None = None, *, where: Mapping[str, Any] | None = None,
                 mode: str | None = None) -> Any: ...


@dataclass
class AnswerServices:
    """What answering uses of an index: its config, a search, and two models (loaded when first asked)."""

    config: Config
    retrieve: Retrieve
    embedder: Callable[[], Embedder]
    cross_encoder: Callable[[], CrossEncoder]
    #: ``source -> path as shown`` in passage headers (relative to the ingested folder); None: the file name.
    shown: Callable[[str], str] | None = None

    def search(self, query: str, **options: Any) -> list[Hit]:
        return self.retrieve(query, **options).hits


def ask_stream(
    services: AnswerServices,
    question: str,
    *,
    strategy: str | None = None,
    k: int | None = None,
    budget: int | None = None,
    where: Mapping[str, Any] | None = None,
    mode: str | None = None,
    llm: LLM | str | None = None,
    history: Sequence[HistoryItem] | None = None,
    context_first: bool = False,
) -> Iterator[str | Context | Answer]:
    """The answer's text in pieces as it is generated, then the finished Answer.

    ``history``: the conversation's earlier messages; the question is made standalone with them
    before it is searched (``answer.followup``), and the rewrite is the trace's first step.
    ``context_first``: first yield the numbered Context, as soon as it is built, so that a reader
    sees the sources while the answer is written (the HTTP API's ``sources`` event)."""
    started = time.perf_counter()
    name, model = choose(services.config, strategy or services.config.answer.strategy, llm)
    chosen = create_strategy(name)
    count = getattr(model, "count_tokens", None) or services.embedder().count_tokens
    rewrite, rewrite_step, turns = standalone(services, question, history, model, count)
    # Retrieval takes the standalone query; the strategy answers the question as asked (an LLM's
    # standalone question when it wrote one), over passages that are now about the right thing.
    asked = rewrite.query if rewrite.method == "llm" else question
    request = prepare(services, asked, model if chosen.needs_llm else None, search_query=rewrite.query, k=k,
                      budget=budget, where=where,
                      mode=mode, count=count)
    if rewrite_step is not None:
        request.trace.insert(0, rewrite_step)
        request.in_context = in_context(question, turns, rewrite)
    if context_first:
        yield request.context
    if chosen.needs_llm and not _relevant_enough(request):
        yield NO_ANSWER
        answer = _no_answer(request, name)
    else:
        answer = None
        try:
            for piece in chosen.stream(request):
                if isinstance(piece, Answer):
                    answer = piece
                else:
                    yield piece
        except ServiceUnavailableError as exc:
            raise ProviderError(
                f"no LLM is reachable ({exc}); check llm.provider and llm.base_url in ragloom.yaml "
                "(or RAGLOOM_LLM__BASE_URL), or answer without one: --strategy extractive"
            ) from exc
        assert answer is not None, f"the {name} strategy finished without an answer"
    answer.seconds = time.perf_counter() - started
    answer.question = question
    yield answer


def standalone(services: AnswerServices, question: str, history: Sequence[HistoryItem] | None, model: LLM | None,
               count: Callable[[str], int]) -> tuple[Rewrite, AnswerStep | None, list[Turn]]:
    """The query this turn is searched with (the question itself without history), its trace step,
    and the earlier turns kept."""
    settings = services.config.answer
    turns, dropped = normalise_history(history, count, settings.history_tokens)
    if history is None:
        return Rewrite(question, question, "none", "no history"), None, turns
    began = time.perf_counter()
    how = settings.followup
    if how == "none" or not turns:
        reason = "answer.followup is none" if how == "none" else "first turn: nothing to carry over"
        rewrite = Rewrite(question, question, "none", reason)
    elif how == "llm" and model is not None:
        template = Prompts(settings.prompts).templates["followup"]
        rewrite = llm_rewrite(question, turns, lambda prompt: model.complete(prompt, max_tokens=64), template)
    else:
        rewrite = offline_rewrite(question, turns)
        if how == "llm":
            rewrite = Rewrite(rewrite.query, question, rewrite.method,
                              f"no LLM is available for answer.followup: llm; offline: {rewrite.reason}", rewrite.added)
    details: dict[str, Any] = {**rewrite.to_dict(), "history_turns": len(turns), "history_dropped": dropped}
    return rewrite, AnswerStep("rewrite", (time.perf_counter() - began) * 1000, details), turns


def in_context(question: str, turns: Sequence[Turn], rewrite: Rewrite) -> str | None:
    """A follow-up that the offline rewrite had to complete, read after the previous user question
    (the rewrite itself is a search query, not a question a sentence can answer); None otherwise."""
    if rewrite.method != "offline":
        return None
    asked = [t.content.strip() for t in turns if t.role == "user" and t.content.strip()]
    return f"{asked[-1]} {question.strip()}" if asked else None


def prepare(services: AnswerServices, question: str, llm: LLM | None, *, k: int | None, budget: int | None,
            where: Mapping[str, Any] | None, mode: str | None, count: Callable[[str], int],
            search_query: str | None = None) -> AnswerRequest:
    """Retrieve (``search_query``, default the question) and build the numbered context: what a
    strategy is given, with the first two steps traced."""
    settings = services.config.answer
    mode = mode or settings.mode
    budget = budget or settings.budget
    began = time.perf_counter()
    result = services.retrieve(search_query or question, k=k or settings.k, where=where, mode=mode)
    trace = [AnswerStep("retrieve", (time.perf_counter() - began) * 1000, {
        "preset": result.plan.preset, "hits": [h.chunk_id for h in result.hits]})]
    began = time.perf_counter()
    context = build_context(result.hits, budget, count, question, services.shown)
    trace.append(AnswerStep("context", (time.perf_counter() - began) * 1000, {
        "passages": len(context.passages), "tokens": context.tokens, "budget": context.budget,
        "notes": list(context.notes)}))
    return AnswerRequest(
        question=question, context=context, settings=settings, prompts=Prompts(settings.prompts),
        count_tokens=count, llm=llm, scorer=lambda: scorer(services), support=lambda: support_checker(services),
        trace=trace, warnings=list(result.warnings), shown=services.shown,
        # Chain-of-verification retrieves again for each of its questions, on half the budget.
        search=lambda q: build_context(services.search(q, k=3, where=where, mode=mode), max(64, budget // 2), count, q,
                                       services.shown),
    )


def ask(services: AnswerServices, question: str, **options: Any) -> Answer:
    """``ask_stream``'s finished Answer (its keywords are checked there)."""
    answer = None
    for piece in ask_stream(services, question, **options):
        if isinstance(piece, Answer):
            answer = piece
    assert answer is not None
    return answer


def choose(settings: Config, strategy: str, llm: LLM | str | None) -> tuple[str, LLM | None]:
    """The strategy to run and the LLM it gets (None for extractive)."""
    global _told_no_llm
    names = strategy_names()
    if strategy != "auto" and strategy not in names:
        raise ConfigError(f"no answer strategy named {strategy!r}; choose one of: auto, {', '.join(names)}")
    if isinstance(llm, LLM):
        return ("attributed" if strategy == "auto" else strategy), llm
    config = llm_config(settings.llm, llm)
    if strategy == "extractive":
        return strategy, None
    reason = llm_unavailable(config)
    if strategy == "auto":
        if reason is None and not _packaged_default(config):
            return "attributed", shared_llm(config)
        if not _told_no_llm:
            _told_no_llm = True
            # One short line: it is said on every `ragloom ask` (`ask --help` says more).
            if reason is None:
                told = (f"answered by quoting the sources (extractive); auto skips the packaged "
                        f"{_packaged_default(config)}, whose answers measured lower: --strategy attributed uses it")
            else:
                told = f"no LLM ({reason}); answered by quoting the sources (extractive)"
            warnings.warn(told, RagloomWarning, stacklevel=3)
        return "extractive", None
    if reason is not None:
        raise ConfigError(
            f"the {strategy} strategy needs an LLM, but {reason}. Set llm.provider/llm.model in ragloom.yaml "
            "(or RAGLOOM_LLM__PROVIDER, --llm PROVIDER[:MODEL]), or use --strategy extractive, which needs none"
        )
    return strategy, shared_llm(config)


def _packaged_default(config: LLMConfig) -> str | None:
    """The name of the configured LLM when it is one of the packaged local answer models (Qwen
    0.5B, the default, and 1.5B): auto prefers extractive answers to theirs, which measured
    below them on SQuAD (BENCHMARKS.md "Answers")."""
    from ..models import DEFAULT_LOCAL_LLM, LOCAL_LLMS

    name = config.model or DEFAULT_LOCAL_LLM
    return name if config.provider == "llamacpp" and name in LOCAL_LLMS else None


def llm_config(config: LLMConfig, spec: str | None) -> LLMConfig:
    """``--llm ollama:llama3.2`` or ``--llm qwen2.5-coder-1.5b`` (a local model name) over the config."""
    if not spec:
        return config
    from ..models import LOCAL_LLMS, SMOLLM2

    if spec in LOCAL_LLMS or spec == SMOLLM2 or spec.endswith(".gguf"):
        return config.model_copy(update={"provider": "llamacpp", "model": spec})
    provider, model = parse_model_spec(spec)
    return config.model_copy(update={"provider": provider, "model": model})


def scorer(services: AnswerServices) -> CrossEncoder:
    return services.cross_encoder()


def support_checker(services: AnswerServices):  # noqa: ANN201 - a SupportChecker
    from .citations import cross_encoder_support, embedding_support, overlap_support

    kind = services.config.answer.support_checker
    if kind == "cross-encoder":
        return cross_encoder_support(scorer(services))
    if kind == "embedding":
        return embedding_support(services.embedder())
    return overlap_support


def _relevant_enough(request: AnswerRequest) -> bool:
    """Whether any passage is relevant enough to ask the LLM (else: the sources do not say)."""
    began = time.perf_counter()
    passages = request.context.passages
    best = float(request.scorer().score(request.question, [p.text for p in passages]).max()) if passages else 0.0
    ok = best >= request.settings.unanswerable_below
    request.trace.append(AnswerStep("relevance gate", (time.perf_counter() - began) * 1000, {
        "best": round(best, 4), "threshold": request.settings.unanswerable_below, "passed": ok}))
    return ok


def _no_answer(request: AnswerRequest, strategy: str) -> Answer:
    from .strategies.base import finish

    return finish(request, NO_ANSWER, strategy)


def context_for(services: AnswerServices, question: str, *, budget: int | None = None, k: int | None = None,
                where: Mapping[str, Any] | None = None, mode: str | None = None) -> Context:
    """The numbered, budgeted context for ``question`` (``ragloom context``), in the embedder's tokens."""
    settings = services.config.answer
    hits = services.search(question, k=k or settings.k, where=where, mode=mode or settings.mode)
    return build_context(hits, budget or settings.budget, services.embedder().count_tokens, question, services.shown)
