"""What an answer strategy gets, what it returns, and the steps they share.

A strategy implements one method, ``stream(request)``: it yields the answer's text in
pieces as they are produced and, last, the finished :class:`~ragloom.types.Answer`.
``run`` (the whole answer at once) comes from here, as do generation with one retry,
citation validation and the support check.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ...errors import ConfigError
from ...types import Answer, AnswerStep, Citation, Citations
from ..citations import SupportChecker, check_support, cited_numbers, remove_invalid, split_sentences
from ..prompts import NO_ANSWER, Prompts

if TYPE_CHECKING:
    from ...config import AnswerConfig
    from ...context import Context
    from ...models.cross_encoder import CrossEncoder
    from ...models.llm import LLM, Message

#: What ``stream`` yields: text pieces, then the Answer.
Piece = str | Answer


@dataclass
class AnswerRequest:
    """Everything a strategy may use; models are built lazily, on first use."""

    question: str
    context: Context
    settings: AnswerConfig
    prompts: Prompts
    count_tokens: Callable[[str], int]
    llm: LLM | None = None
    #: The packaged cross-encoder (shared with the search pipeline).
    scorer: Callable[[], CrossEncoder] | None = None
    #: The configured support checker over (claim, passage) pairs.
    support: Callable[[], SupportChecker] | None = None
    #: Retrieve a fresh, numbered context for another question (chain-of-verification).
    search: Callable[[str], Context] | None = None
    trace: list[AnswerStep] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    tokens: dict[str, int] = field(default_factory=lambda: {"prompt": 0, "completion": 0})
    #: A follow-up read after the conversation's previous question ("What is a CDN? Does it cost
    #: more?"): what "it" and "them" point at, for judging which sentences answer the turn.
    in_context: str | None = None
    #: ``source -> path as shown`` (relative to the ingested folder), for ``path:lines`` in answers.
    shown: Callable[[str], str] | None = None

    def require_llm(self, strategy: str) -> LLM:
        if self.llm is None:
            raise ConfigError(
                f"the {strategy} strategy needs an LLM; set llm.provider (and llm.model) in ragloom.yaml or "
                "RAGLOOM_LLM__PROVIDER, install the local one with `scripts/setup.sh --llm`, "
                "or use --strategy extractive, which needs none"
            )
        return self.llm


class Strategy(ABC):
    """(question, context, llm) -> Answer with validated citations."""

    name: ClassVar[str]
    needs_llm: ClassVar[bool] = True

    @abstractmethod
    def stream(self, request: AnswerRequest) -> Iterator[Piece]:
        """Yield the answer's text in pieces, then the finished Answer."""

    def run(self, request: AnswerRequest) -> Answer:
        answer = None
        for piece in self.stream(request):
            if isinstance(piece, Answer):
                answer = piece
        assert answer is not None, f"the {self.name} strategy finished without an answer"
        return answer


class step:
    """Time a step and append it to the request's trace: ``with step(request, "draft") as detail: ...``."""

    def __init__(self, request: AnswerRequest, name: str) -> None:
        self.request, self.name, self.detail = request, name, {}

    def __enter__(self) -> dict[str, Any]:
        self.began = time.perf_counter()
        return self.detail

    def __exit__(self, *exc: object) -> None:
        self.request.trace.append(AnswerStep(self.name, (time.perf_counter() - self.began) * 1000, self.detail))


def generate(request: AnswerRequest, messages: list[Message], *, stream: bool = True,
             max_tokens: int | None = None) -> Iterator[str]:
    """Ask the LLM, yielding its pieces when ``stream``; the whole text is the generator's return value."""
    llm = request.llm
    assert llm is not None, "a strategy calls require_llm before it generates"
    request.tokens["prompt"] += sum(request.count_tokens(m["content"]) for m in messages)
    max_tokens = max_tokens or request.settings.max_tokens
    pieces: list[str] = []
    if stream:
        for piece in llm.stream(messages, max_tokens=max_tokens):
            pieces.append(piece)
            yield piece
    else:
        pieces.append(llm.complete(messages, max_tokens=max_tokens))
    text = "".join(pieces).strip()
    request.tokens["completion"] += request.count_tokens(text) if text else 0
    return text


def is_no_answer(text: str) -> bool:
    flat = " ".join(text.lower().split())
    return "sources do not say" in flat or "sources don't say" in flat


def cited_answer(
    request: AnswerRequest, messages: list[Message], strategy: str, *, stream: bool = True
) -> Iterator[str]:
    """Generate an answer that cites; with no valid citation, ask once more, then accept with a warning.

    Returns (as the generator's value) the answer text with invalid citation numbers removed.
    """
    valid = set(request.context.numbers)
    with step(request, "generate") as detail:
        text = yield from generate(request, messages, stream=stream)
        detail["text"] = text
    text, removed = remove_invalid(text, valid)
    if removed:
        request.warnings.append(f"removed citations of passages that do not exist: {sorted(set(removed))}")
    if is_no_answer(text) or cited_numbers(text):
        return NO_ANSWER if is_no_answer(text) and not cited_numbers(text) else text
    with step(request, "retry: no citations") as detail:
        again = [*messages, {"role": "assistant", "content": text},
                 {"role": "user", "content": request.prompts.render("attributed_retry")}]
        retried = yield from generate(request, again, stream=False)
        detail["text"] = retried
    retried, removed = remove_invalid(retried, valid)
    if cited_numbers(retried) or is_no_answer(retried):
        request.warnings.append("the first answer cited no source; it was asked again")
        return NO_ANSWER if is_no_answer(retried) and not cited_numbers(retried) else retried
    request.warnings.append(f"the {strategy} answer cites no source, even when asked again")
    return text


def finish(request: AnswerRequest, text: str, strategy: str, *, check: bool = False) -> Answer:
    """The Answer: its sentences, the passages it cites, and (``check``) each sentence's support."""
    sentences = split_sentences(text)
    passages = {p.number: p for p in request.context.passages}
    if check and request.support is not None:
        with step(request, "validate citations") as detail:
            check_support(sentences, {n: p.text for n, p in passages.items()}, request.support(),
                          request.settings.support_threshold, exempt=is_no_answer)
            detail["unsupported"] = [s.text for s in sentences if s.supported is False]
    citations = Citations(Citation.from_hit(n, passages[n].hit, passages[n].text)
                          for n in sorted(set(cited_numbers(text))) if n in passages)
    request.tokens["context"] = request.context.tokens
    model = request.llm.model_id if request.llm is not None else ""
    return Answer(
        question=request.question, text=text, strategy=strategy, citations=citations, sentences=sentences,
        context=request.context, model=model, tokens=dict(request.tokens), trace=list(request.trace),
        warnings=list(request.warnings),
    )
