"""Filters as users write them (issue 25, finding 4): source names, contains, and warnings for
filters that cannot match."""

from __future__ import annotations

import pytest

from ragloom.errors import FilterError
from ragloom.filters import (
    Condition,
    filter_warnings,
    matches,
    names_source,
    parse_cli_filters,
    parse_where,
    resolve_sources,
    value_kinds,
)

SOURCES = ["/home/u/fastapi/docs/tutorial/cors.md", "/home/u/fastapi/docs/advanced/middleware.md",
           "/home/u/fastapi/docs/tutorial/middleware.md", "/home/u/fastapi/docs/index.md"]


@pytest.mark.parametrize(("name", "named"), [
    ("cors.md", [0]),                                  # a basename
    ("tutorial/middleware.md", [2]),                   # the path relative to the ingested folder (or a tail)
    ("docs/tutorial/cors.md", [0]),
    ("middleware.md", [1, 2]),                         # two files of one name: both
    ("**/cors.md", [0]),                               # a glob
    ("tutorial/*.md", [0, 2]),
    ("/home/u/fastapi/docs/index.md", [3]),            # the whole stored path
    ("ors.md", []),                                    # a tail must start at a folder boundary
    ("utorial/cors.md", []),
    ("CORS.md", []),                                   # paths are case-sensitive, as the files are
])
def test_a_source_name_is_a_path_tail_at_a_folder_boundary_a_basename_or_a_glob(name, named) -> None:
    assert [i for i, path in enumerate(SOURCES) if names_source(path, name)] == named


def test_source_conditions_become_the_stored_paths_they_name() -> None:
    resolved = resolve_sources(parse_where({"source": "middleware.md", "page": 2}), lambda: SOURCES)
    assert resolved == [Condition("source", "$in", (SOURCES[1], SOURCES[2])), Condition("page", "$eq", 2)]
    (one_of,) = resolve_sources(parse_where({"source": {"$in": ["cors.md", "index.md"]}}), lambda: SOURCES)
    assert one_of == Condition("source", "$in", tuple(sorted([SOURCES[0], SOURCES[3]])))
    (others,) = resolve_sources(parse_where({"source": {"$ne": "middleware.md"}}), lambda: SOURCES)
    assert others == Condition("source", "$in", tuple(sorted([SOURCES[0], SOURCES[3]])))
    assert resolve_sources(parse_where({"source": "nope.md"}), lambda: SOURCES) == [Condition("source", "$eq", "nope.md")]


def test_resolving_sources_does_not_list_them_without_a_source_filter() -> None:
    def never() -> list[str]:
        raise AssertionError("the sources were listed")

    assert resolve_sources(parse_where({"page": 2, "source": {"$contains": "cors"}}), never)


def test_contains_is_text_contains_ignoring_case_and_tilde_stays_one_of() -> None:
    assert parse_cli_filters(["section*=CORS", "kind~a,b"]) == {
        "section": {"$contains": "CORS"}, "kind": {"$in": ["a", "b"]}}
    assert parse_cli_filters(["section*=2"]) == {"section": {"$contains": "2"}}  # text, not the number 2
    contains = parse_where({"section": {"$contains": "cors"}})
    assert matches({"section": "Adding CORS middleware"}, contains)
    assert matches({"section": ["Intro", "CORS"]}, contains)  # a list matches when an element does
    assert not matches({"section": "Security"}, contains)
    assert not matches({"section": 7}, parse_where({"section": {"$contains": "7"}}))
    assert not matches({}, contains)
    one_of = parse_where(parse_cli_filters(["section~CORS"]))
    assert not matches({"section": "Adding CORS middleware"}, one_of) and matches({"section": "CORS"}, one_of)
    with pytest.raises(FilterError, match="contains on 'page' needs a non-empty text"):
        parse_where({"page": {"$contains": 2}})


STORED = value_kinds([
    {"source": SOURCES[0], "section": "CORS", "page": 1, "tags": ["a", "b"], "draft": False},
    {"source": SOURCES[3], "section": "Intro", "page": 2.0, "maybe": None},
])


def test_value_kinds_name_each_key_and_the_kinds_stored_under_it() -> None:
    assert STORED == {"source": {"text"}, "section": {"text"}, "page": {"number"}, "tags": {"text"},
                      "draft": {"boolean"}, "maybe": frozenset()}


@pytest.mark.parametrize(("where", "said"), [
    ({"sectoin": "CORS"}, "filter key 'sectoin' is in no passage of this index, so it matches nothing "
                          "(did you mean 'section'?); keys: draft, maybe, page, section, source, tags"),
    ({"page": {"$gte": "2"}}, "filter {\"page\": {\"$gte\": \"2\"}} matches nothing: 'page' holds numbers, "
                              "not text (write the value without quotes)"),
    ({"page": {"$contains": "2"}}, "filter {\"page\": {\"$contains\": \"2\"}} matches nothing: 'page' holds "
                                   "numbers, not text"),
    ({"draft": "false"}, "filter {\"draft\": {\"$eq\": \"false\"}} matches nothing: 'draft' holds booleans, not text"),
    ({"source": "nope.md"}, "filter source=nope.md names no indexed file"),
])
def test_a_filter_that_cannot_match_is_one_line_saying_why(where, said) -> None:
    (note,) = filter_warnings(resolve_sources(parse_where(where), lambda: SOURCES), STORED, SOURCES)
    assert note.startswith(said) and "\n" not in note


@pytest.mark.parametrize("where", [
    {"section": "CORS"}, {"page": {"$gte": 2}}, {"page": {"$in": ["x", 2]}}, {"tags": {"$contains": "a"}},
    {"sectoin": {"$ne": "CORS"}},  # $ne holds for every passage without the key: not empty
    {"source": "cors.md"}, {"source": "**/*.md"},
])
def test_a_filter_that_can_match_says_nothing(where) -> None:
    assert filter_warnings(resolve_sources(parse_where(where), lambda: SOURCES), STORED, SOURCES) == []
