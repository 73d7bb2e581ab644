"""Extractive answers over documentation (issue 25, finding 5): whole steps, no answer that
starts mid-thought, and "The sources do not say" for what the sources do not cover."""

from __future__ import annotations


import pytest

from ragloom import Config, Index
from ragloom.generate.prompts import NO_ANSWER
from ragloom.generate.strategies.extractive import leans_back

CORS = """# CORS (Cross-Origin Resource Sharing)

## Use CORSMiddleware

You can configure CORS in your FastAPI application using the CORSMiddleware.

* Import CORSMiddleware.
* Create a list of allowed origins (as strings).
* Add it as a "middleware" to your FastAPI application.

You can also specify whether your backend allows credentials, specific HTTP methods or headers.
The same way, you can set which response headers the browser may read with expose_headers.
"""
DEPLOY = """# Deploy FastAPI with Docker

Build a container image from the official Python image and run Uvicorn inside it.
The image starts the server on port 80 with the command in the Dockerfile.
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, embedder):
    docs = tmp_path_factory.mktemp("docs")
    (docs / "cors.md").write_text(CORS, encoding="utf-8")
    (docs / "docker.md").write_text(DEPLOY, encoding="utf-8")
    with Index.open(docs.parent / "index", Config(), embedder=embedder) as built:
        built.ingest([docs])
        yield built


def test_the_steps_are_quoted_whole(index: Index) -> None:
    answer = index.ask("How do I add CORS to my app?", strategy="extractive")
    assert "* Import CORSMiddleware. * Create a list of allowed origins (as strings). * Add it as a" in answer.text


def test_no_answer_starts_mid_thought(index: Index) -> None:
    answer = index.ask("Which response headers can the browser read with CORS?", strategy="extractive")
    assert "expose_headers" in answer.text
    assert not leans_back(answer.text)  # "The same way, ..." comes after the sentence it continues
    assert answer.text.startswith("You can also specify whether your backend allows credentials")


def test_a_question_the_sources_do_not_answer_gets_the_sources_do_not_say(index: Index) -> None:
    answer = index.ask("How do I deploy it on Kubernetes with Helm charts?", strategy="extractive")
    assert answer.text == NO_ANSWER and not answer.citations
    step = next(s for s in answer.trace if s.name == "score sentences")
    assert step.detail["best"] < step.detail["threshold"] == index.config.answer.extractive_min_relevance
