"""Follow-up questions made standalone without an LLM."""

from __future__ import annotations

from ragloom.generate.followup import Turn, offline_rewrite, refers_back

OPERA = [
    Turn("user", "Who designed the Sydney Opera House?"),
    Turn("assistant", "The Danish architect Jørn Utzon designed it; the building opened in 1973."),
]


def test_a_pronoun_follow_up_carries_the_subject_of_the_conversation() -> None:
    rewrite = offline_rewrite("When did he die?", OPERA)
    assert rewrite.method == "offline" and rewrite.rewritten
    assert rewrite.query.startswith("When did he die? ")
    assert "Sydney Opera House" in rewrite.added and "designed" in rewrite.query
    assert "he" in rewrite.reason


def test_a_question_that_stands_alone_is_left_as_it_is() -> None:
    question = "What is the tallest building in Melbourne today?"
    rewrite = offline_rewrite(question, OPERA)
    assert rewrite.query == question and rewrite.method == "none" and rewrite.reason == "it stands alone"


def test_first_turn_and_empty_history() -> None:
    assert offline_rewrite("When did he die?", []).reason.startswith("first turn")
    assert offline_rewrite("When did he die?", [Turn("assistant", "   ")]).query == "When did he die?"


def test_terms_the_question_has_are_not_repeated_and_names_outlast_content_words() -> None:
    history = [Turn("user", "Tell me about Marie Curie"), Turn("assistant", "She won two Nobel prizes.")]
    for question in ("Where did she study physics?", "Which university?", "And her husband?"):
        history.append(Turn("user", question))
        history.append(Turn("assistant", "It is in the sources."))
    rewrite = offline_rewrite("What did she discover?", history)
    assert "Marie Curie" in rewrite.added
    assert rewrite.query.count("discover") == 1


def test_short_questions_and_openers_refer_back() -> None:
    assert refers_back("Which is more important?") is not None
    assert refers_back("And in France?") == "it continues the previous turn"
    assert refers_back("How do ROS 2 nodes discover each other over DDS?") is None
