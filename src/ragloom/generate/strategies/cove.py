"""Chain-of-verification (Dhuliawala et al. 2023): draft, plan checks, answer them independently, revise.

1. draft: a standard answer over the context;
2. the LLM writes verification questions about the draft (JSON; retried once);
3. each question is answered on its own, against a fresh retrieval for that question,
   without seeing the draft (so the draft's errors are not copied);
4. the final answer is written from the context, the draft and the checks, and its
   citations validated as in the attributed strategy.
Every step is in ``Answer.trace``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import ClassVar

from ...errors import ProviderError
from .base import AnswerRequest, Piece, Strategy, cited_answer, finish, generate, step


class ChainOfVerification(Strategy):
    name: ClassVar[str] = "cove"

    def stream(self, request: AnswerRequest) -> Iterator[Piece]:
        request.require_llm(self.name)
        context = request.context.render()
        with step(request, "draft") as detail:
            draft = yield from generate(request, request.prompts.chat("standard", context=context,
                                                                      question=request.question), stream=False)
            detail["text"] = draft
        questions = self._questions(request, draft)
        checks = []
        for question in questions:
            with step(request, "verify") as detail:
                found = request.search(question) if request.search else request.context
                reply = yield from generate(request, request.prompts.chat(
                    "cove_answer", context=found.render(), question=question), stream=False, max_tokens=96)
                detail.update(question=question, answer=reply, passages=[p.hit.chunk_id for p in found.passages])
            checks.append(f"- {question} {reply}")
        messages = request.prompts.chat("cove_revise", context=context, question=request.question, draft=draft,
                                        checks="\n".join(checks) or "(none)")
        text = yield from cited_answer(request, messages, self.name)
        request.trace[-1].name = "revise"
        yield finish(request, text, self.name, check=True)

    def _questions(self, request: AnswerRequest, draft: str) -> list[str]:
        limit = request.settings.verification_questions
        messages = request.prompts.chat("cove_questions", question=request.question, draft=draft, n=limit)
        llm = request.require_llm(self.name)
        with step(request, "plan verification questions") as detail:
            for attempt in (1, 2):
                try:
                    value = llm.complete_json(messages, max_tokens=160)
                    request.tokens["prompt"] += sum(request.count_tokens(m["content"]) for m in messages)
                    questions = _as_questions(value)
                    if questions:
                        detail.update(questions=questions[:limit], attempts=attempt)
                        return questions[:limit]
                except ProviderError as exc:
                    detail[f"attempt {attempt}"] = str(exc)[:200]
            # Both replies unusable: questions from the draft's own sentences, said in the answer.
            request.warnings.append("the LLM gave no usable verification questions (invalid JSON twice); "
                                    "the draft's sentences were checked instead")
            fallback = [s.strip() for s in re.split(r"(?<=[.!?])\s+", draft) if s.strip()][:limit]
            detail.update(questions=fallback, attempts=2, fallback=True)
            return fallback


def _as_questions(value: object) -> list[str]:
    if isinstance(value, dict):
        value = value.get("questions", next(iter(value.values()), []) if value else [])
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            value = [value]
    if not isinstance(value, list):
        return []
    return [str(q).strip() for q in value if isinstance(q, (str, int, float)) and str(q).strip()]
