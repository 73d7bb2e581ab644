"""Extractive answers read passages as units and never start mid-thought (issue 25, finding 5)."""

from __future__ import annotations

import numpy as np

from ragloom.generate.strategies.extractive import Candidate, compose, leans_back, units

PASSAGE = [
    "## Use CORSMiddleware",
    "You can configure it in your FastAPI application using the CORSMiddleware.",
    "* Import CORSMiddleware.",
    "* Create a list of allowed origins (as strings).",
    "* Add it as a \"middleware\" to your FastAPI application.",
    "Then add it:",
    "```python\napp.add_middleware(CORSMiddleware, allow_origins=origins)\n```",
    "The same way, you can also specify whether your backend allows credentials.",
]


def test_list_items_run_together_and_code_joins_the_sentence_that_leads_into_it() -> None:
    got = units(PASSAGE)
    assert got[2] == "\n".join(PASSAGE[2:5])  # the steps, as one unit
    assert got[3] == PASSAGE[5] + "\n" + PASSAGE[6]
    assert got[4] == PASSAGE[7] and len(got) == 5


def test_sentences_that_lean_on_the_one_before_are_recognised() -> None:
    assert leans_back("The same way, you can also specify credentials.")
    assert leans_back("It is False by default.") and leans_back("This means the header is sent.")
    assert not leans_back("Italy is a country.") and not leans_back("CORS stands for cross-origin resource sharing.")


def test_a_leaning_unit_is_quoted_with_the_one_before_unless_that_is_quoted_already() -> None:
    lead = Candidate(1, 3, "Credentials can be allowed.", "Credentials can be allowed.")
    leaning = Candidate(1, 4, "It is False by default.", "Credentials can be allowed. It is False by default.")
    assert [text for text, _ in compose([leaning])] == ["Credentials can be allowed. It is False by default."]
    assert [text for text, _ in compose([lead, leaning])] == ["Credentials can be allowed.", "It is False by default."]


def test_a_follow_up_is_answered_when_the_question_in_context_clears_its_own_floor() -> None:
    from ragloom.generate.strategies.extractive import select

    def unit(position: int, alone: float, in_context: float) -> Candidate:
        logit = float(np.log(alone / (1 - alone)))  # ranked by the question alone
        return Candidate(1, position, f"sentence {position}", "", logit, alone, in_context)

    unclear = [unit(0, 0.01, 0.2), unit(1, 0.02, 0.6), unit(2, 0.00001, 0.9)]  # "does it cost more?"
    assert select(unclear, 3, floor=0.03) == []  # a question without a conversation is refused
    # answered in context; quoted by the question alone (the last is far below the best)
    assert [c.position for c in select(unclear, 3, floor=0.03, followup_floor=0.3)] == [0, 1]
    assert select(unclear, 3, floor=0.03, followup_floor=0.95) == []  # nor is the context enough
    clear = [unit(0, 0.5, 0.1)]
    assert select(clear, 3, floor=0.03, followup_floor=0.7) == clear  # the question alone still answers
