"""Context assembly, citation parsing and validation, prompts, SQuAD metrics, split-model joining."""

from __future__ import annotations


import pytest

from ragloom.context import build_context, fit_text, header_for
from ragloom.errors import ConfigError
from ragloom.eval.answers import contains, exact_match, normalize_answer, spread, token_f1
from ragloom.generate.citations import (
    check_support,
    cited_numbers,
    overlap_support,
    remove_invalid,
    split_sentences,
)
from ragloom.generate.prompts import Prompts
from ragloom.types import Hit

TEXTS = [
    "ROS 2 nodes talk over topics. Services answer requests. Actions run long goals with feedback.",
    "DDS handles discovery, serialization and transport. Several DDS vendors exist.",
    "Parameters configure a node at run time. They can be set from the command line.",
]


def hits() -> list[Hit]:
    return [Hit(f"c{i}", text, 1.0 - i / 10, i + 1, f"/docs/guide{i}.md", {"section": f"Part {i}", "title": "Guide"})
            for i, text in enumerate(TEXTS)]


@pytest.mark.parametrize("budget", [5, 20, 30, 40, 55, 80, 1000])
def test_context_never_exceeds_the_budget_in_the_real_tokenizer(embedder, budget: int) -> None:
    context = build_context(hits(), budget, embedder.count_tokens, "q")
    assert context.tokens <= budget
    assert context.tokens == (embedder.count_tokens(context.render()) if context.passages else 0)
    assert [p.number for p in context.passages] == list(range(1, len(context.passages) + 1))


def test_a_budget_smaller_than_a_passage_cuts_it_at_a_sentence_and_says_so(embedder) -> None:
    first = hits()[0]
    whole = embedder.count_tokens(header_for(1, first) + "\n" + first.text)
    context = build_context(hits()[:1], whole - 3, embedder.count_tokens)
    (passage,) = context.passages
    assert passage.truncated
    assert passage.text == "ROS 2 nodes talk over topics. Services answer requests."
    assert any("cut at a sentence boundary" in note for note in context.notes)


def test_whole_passages_fit_and_the_rest_is_reported(embedder) -> None:
    context = build_context(hits(), 10_000, embedder.count_tokens)
    assert [p.text for p in context.passages] == TEXTS and not context.notes
    rendered = context.render()
    assert rendered.startswith("[1] guide0.md — Guide — Part 0 (score 1.000)\nROS 2 nodes talk over topics.")
    assert "\n\n[2] guide1.md" in rendered
    assert context.to_dict()["tokens"] == context.tokens


def test_a_sentence_longer_than_the_budget_is_cut_between_words() -> None:
    words = len
    cut, how = fit_text("one two three four five six seven.", 4, lambda t: words(t.split()))
    assert cut == "one two three …" and "inside its first sentence" in how


def test_citations_are_parsed_validated_and_attached_to_sentences() -> None:
    text = "Paris is the capital [1]. It is large. [2][7] The Seine runs through it [1, 9]."
    assert cited_numbers(text) == [1, 2, 7, 9]
    cleaned, removed = remove_invalid(text, {1, 2})
    assert removed == [7, 9]
    assert cleaned == "Paris is the capital [1]. It is large. [2] The Seine runs through it [1]."
    sentences = split_sentences(cleaned)
    assert [s.citations for s in sentences] == [[1], [2], [1]]


def test_support_check_flags_uncited_and_unsupported_sentences() -> None:
    sentences = split_sentences("DDS handles discovery [2]. Bananas are purple [2]. Nodes use topics.")
    check_support(sentences, {1: TEXTS[0], 2: TEXTS[1]}, overlap_support, 0.5)
    assert [s.supported for s in sentences] == [True, False, False]
    assert sentences[2].support is None  # cites nothing


def test_prompt_overrides_are_checked() -> None:
    prompts = Prompts({"standard": "Q: {question}\n{context}"})
    assert prompts.render("standard", question="why?", context="[1] x") == "Q: why?\n[1] x"
    with pytest.raises(ConfigError, match="no template named 'standrd'"):
        Prompts({"standrd": "x"})
    with pytest.raises(ConfigError, match="uses answer"):
        Prompts({"standard": "{answer}"})


def test_squad_metrics_follow_the_official_normalisation() -> None:
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert exact_match("the Main Building", ["Main Building"]) == 1.0
    assert token_f1("a golden statue of the Virgin Mary", ["golden statue"]) == pytest.approx(2 * (2 / 5) / (2 / 5 + 1))
    assert token_f1("nothing shared", ["golden statue"]) == 0.0
    assert contains("It is a Marian place of prayer [1].", ["a Marian place of prayer"]) == 1.0
    assert spread([str(i) for i in range(10)], 3) == ["0", "3", "6"]


