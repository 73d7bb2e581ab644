"""Prompt templates for answers and query transforms, overridable under ``answer.prompts``.

Templates are ``str.format`` strings; each names the fields it may use. They are short on
purpose: on a local model every context token costs time before the first answer token.
"""

from __future__ import annotations

import string
from collections.abc import Mapping

from ..errors import ConfigError

NO_ANSWER = "The sources do not say."

TEMPLATES: dict[str, str] = {
    "system": (
        "You answer questions using only the numbered sources you are given. "
        "Answer in the language of the question. Be brief."
    ),
    "standard": (
        "Sources:\n{context}\n\nQuestion: {question}\n\n"
        "Answer the question in one or two sentences using the sources above, and cite the source number "
        f"like [1] after each sentence. If no source mentions the answer, say: {NO_ANSWER}"
    ),
    "attributed": (
        "Sources:\n{context}\n\nQuestion: {question}\n\n"
        "Answer the question in one or two sentences using the sources above. End EVERY sentence with the "
        f"number of the source that supports it, like [2]. If no source mentions the answer, say: {NO_ANSWER}"
    ),
    "attributed_retry": (
        "Your answer did not cite the sources. Answer again. Every sentence must end with a source "
        "number in square brackets, like [1]."
    ),
    "cove_questions": (
        "Question: {question}\nDraft answer: {draft}\n\n"
        "Write up to {n} short questions that would check the facts in the draft answer. "
        'Reply with JSON only: {{"questions": ["...", "..."]}}'
    ),
    "cove_answer": (
        "Sources:\n{context}\n\nQuestion: {question}\n\n"
        f"Answer in one short sentence using only the sources. If they do not say, reply: {NO_ANSWER}"
    ),
    "cove_revise": (
        "Sources:\n{context}\n\nQuestion: {question}\n\nDraft answer: {draft}\n\n"
        "Checks of the draft:\n{checks}\n\n"
        "Write the final answer in one to three sentences: keep what the checks confirm, drop what they "
        "contradict, cite the sources by number like [1]. "
        f"If the sources do not contain the answer, reply exactly: {NO_ANSWER}"
    ),
    "hyde": (
        "Write one short factual passage (three sentences) that answers the question, as an encyclopedia "
        "would.\nQuestion: {question}\nPassage:"
    ),
    "multi_query": (
        "Write {n} different search queries that ask for the same thing as this question, one per line, "
        "no numbering.\nQuestion: {question}"
    ),
    "rewrite": (
        "Rewrite this question as a short keyword search query that would find the answer. Reply with the "
        "query only.\nQuestion: {question}"
    ),
    "followup": (
        "Rewrite the user's last question so that it can be understood without the conversation: replace "
        "pronouns and vague references with the names and things they refer to, and keep everything else. "
        "Reply with the rewritten question only.\n\nConversation:\n{history}\n\nLast question: {question}\n"
        "Rewritten question:"
    ),
}

#: The fields each template may use.
FIELDS: dict[str, frozenset[str]] = {
    "system": frozenset(),
    "standard": frozenset({"context", "question"}),
    "attributed": frozenset({"context", "question"}),
    "attributed_retry": frozenset(),
    "cove_questions": frozenset({"question", "draft", "n"}),
    "cove_answer": frozenset({"context", "question"}),
    "cove_revise": frozenset({"context", "question", "draft", "checks"}),
    "hyde": frozenset({"question"}),
    "multi_query": frozenset({"question", "n"}),
    "rewrite": frozenset({"question"}),
    "followup": frozenset({"history", "question"}),
}


class Prompts:
    """The packaged templates with the config's overrides, checked when built."""

    def __init__(self, overrides: Mapping[str, str] | None = None) -> None:
        self.templates = dict(TEMPLATES)
        for name, template in (overrides or {}).items():
            if name not in TEMPLATES:
                raise ConfigError(
                    f"answer.prompts has no template named {name!r}; valid names: {', '.join(TEMPLATES)}"
                )
            used = {field for _, field, _, _ in string.Formatter().parse(template) if field}
            unknown = used - FIELDS[name]
            if unknown:
                raise ConfigError(
                    f"answer.prompts.{name} uses {', '.join(sorted(unknown))}; it may use only "
                    f"{', '.join(sorted(FIELDS[name])) or 'no fields'} (write {{{{ and }}}} for literal braces)"
                )
            self.templates[name] = template

    def render(self, name: str, **values: object) -> str:
        return self.templates[name].format(**values)

    def chat(self, name: str, **values: object) -> list[dict[str, str]]:
        """System prompt plus the rendered template as the user turn."""
        return [{"role": "system", "content": self.templates["system"]},
                {"role": "user", "content": self.render(name, **values)}]
