"""The Python API's signatures: explicit, typed, documented keywords (issue 25, finding 8)."""

from __future__ import annotations

import inspect

import pytest

from ragloom import Answer, Citation, Index
from ragloom.types import Citations, SourceRecord


@pytest.mark.parametrize("method", [Index.ask, Index.ask_stream, Index.context, Index.search])
def test_query_methods_take_typed_keywords_each_documented(method) -> None:
    parameters = list(inspect.signature(method).parameters.values())[2:]  # after self and the text
    assert parameters and all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in parameters)
    assert all(p.annotation is not inspect.Parameter.empty for p in parameters)
    documented = inspect.getdoc(Index.ask if method is Index.ask_stream else method)
    assert all(f"{p.name}:" in documented for p in parameters), documented


def test_ask_and_ask_stream_take_the_same_keywords() -> None:
    assert inspect.signature(Index.ask).parameters.keys() == inspect.signature(Index.ask_stream).parameters.keys()


def _citation(number: int) -> Citation:
    return Citation(number, f"c{number}", "a.md", f"text {number}")


def test_an_answer_keeps_its_citations_ordered_by_number_whatever_it_was_given() -> None:
    by_list = Answer("q", "a [3] b [1]", "extractive", citations=[_citation(3), _citation(1)])
    by_mapping = Answer("q", "a [3] b [1]", "extractive", citations={3: _citation(3), 1: _citation(1)})
    for answer in (by_list, by_mapping):
        assert isinstance(answer.citations, Citations) and answer.citations.numbers == [1, 3]
        assert answer.citations.by_number(3).chunk_id == "c3"
    assert Answer("q", "t", "extractive").citations == []


def test_a_source_record_names_its_path_source_as_hits_do() -> None:
    record = SourceRecord("/docs/a.md", "h", 0.0, 1, 1, 0.0)
    assert record.source == record.path == "/docs/a.md"
