"""Standard RAG: one prompt with the numbered context; the answer cites passages as ``[n]``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from .base import AnswerRequest, Piece, Strategy, cited_answer, finish


class Standard(Strategy):
    name: ClassVar[str] = "standard"
    #: The prompt template used, and whether each sentence is checked for support afterwards.
    template: ClassVar[str] = "standard"
    check: ClassVar[bool] = False

    def stream(self, request: AnswerRequest) -> Iterator[Piece]:
        request.require_llm(self.name)
        messages = request.prompts.chat(self.template, context=request.context.render(), question=request.question)
        text = yield from cited_answer(request, messages, self.name)
        yield finish(request, text, self.name, check=self.check)
