"""Code searched as developers search it: names, pasted messages and tracebacks read from the query,
symbol keys as the chunker stores them, and the order the lifts put hits in (pure functions)."""

from __future__ import annotations

import pytest

from ragloom.config import UnderstandConfig
from ragloom.ingest.chunkers._sql import statements
from ragloom.retrieve.base import QueryPlan
from ragloom.retrieve.pasted import found_at, holds, lift_pasted, pasted_text, produces, read_traceback
from ragloom.retrieve.symbols import lift_symbols, query_symbols
from ragloom.retrieve.understand import understand
from ragloom.symbols import module_parts, query_keys, symbol_keys
from ragloom.types import Hit


@pytest.mark.parametrize("query, names", [
    ("Parser.parse_set", ["Parser.parse_set"]),
    ("parse_set", ["parse_set"]),
    ("rich.style.Style", ["rich.style.Style"]),
    ("Style.parse()", ["Style.parse"]),
    ("class Style", ["Style"]),
    ("def parse", ["parse"]),
    ("async def fetch_all(urls)", ["fetch_all"]),
    ("fn main", ["main"]),
    ("pub fn from_str", ["from_str"]),
    ("func (s *Server) Start", ["Server.Start"]),
    ("function leftPad", ["leftPad"]),
    ("Box::close", ["Box::close"]),
    ("ProgressBar __repr__", ["ProgressBar.__repr__"]),
    # prose is not a name: several plain words, gene names inside a sentence, Chinese
    ("stem cells", []),
    ("what does IL-10 do in macrophages", []),
    ("H3K4me3 marks at active promoters", []),
    ("哪个国家的首都是柏林", []),
])
def test_a_query_that_names_a_symbol_is_read_as_that_name(query, names):
    assert query_symbols(query) == names


def test_symbol_keys_hold_every_tail_exact_and_loose():
    module = module_parts("rich/style.py")
    assert module == ["rich", "style"] and module_parts("pkg/__init__.py") == ["pkg"]
    keys = symbol_keys(module, ["Style", "parse_set"])
    assert {"=parse_set", "=Style.parse_set", "=style.Style.parse_set", "=rich.style.Style.parse_set"} <= set(keys)
    assert {"~parseset", "~style.parseset"} <= set(keys)
    exact, loose = query_keys("Style.parseSet")
    assert exact == ["=Style.parseSet"] and loose[0] in keys  # camelCase and snake_case meet loosely


def hit(chunk_id, text, symbol, kind="method", source="a.py", start=1, end=5, score=1.0, **extra):
    module = module_parts(source)
    path = [] if kind == "module" else symbol.split(".")
    return Hit(chunk_id, text, score, 0, source, {"symbol": symbol, "kind": kind, "start_line": start,
                                                   "end_line": end, "symbols": symbol_keys(module, path), **extra})


def test_definitions_come_first_exact_then_loose_first_piece_and_implementation_over_stub():
    hits = [
        hit("mention", "x = Style.parse(y)", "Theme.__init__", score=0.9),
        hit("loose", "def parseSet(self): ...", "Style.parseSet", score=0.8),
        hit("second", "def parse_set(self):\n    more()", "Style.parse_set", start=40, end=60, score=0.7, part=2),
        hit("stub", "def parse_set(self) -> None: ...", "Style.parse_set", source="a.pyi", score=0.65),
        hit("first", "def parse_set(self):\n    start()", "Style.parse_set", start=20, end=39, score=0.6, part=1),
    ]
    plan = QueryPlan("Style.parse_set", k=5, hints={"symbols": ["Style.parse_set"]})
    order = [h.chunk_id for h in lift_symbols(hits, plan)]
    assert order == ["first", "second", "stub", "loose", "mention"]
    overloads = [hit("overload", "@overload\ndef get(x: int) -> int: ...", "get", kind="function", start=1, end=2),
                 hit("impl", "def get(x):\n    return x\n", "get", kind="function", start=4, end=9)]
    assert lift_symbols(overloads, QueryPlan("get", k=2, hints={"symbols": ["get"]}))[0].chunk_id == "impl"


def test_a_nested_function_is_found_in_its_parent_and_a_prefix_when_nothing_else_matches():
    hits = [hit("other", "def render(self): ...", "Table.render", score=0.9),
            hit("parent", "def _render(self):\n    def align_cell(cell): ...", "Table._render", score=0.5)]
    plan = QueryPlan("Table._render.align_cell", k=2, hints={"symbols": ["Table._render.align_cell"]})
    assert lift_symbols(hits, plan)[0].chunk_id == "parent"
    prefixed = lift_symbols(hits, QueryPlan("Table.rend", k=2, hints={"symbols": ["Table.rend"]}))
    assert prefixed[0].chunk_id == "other"


def test_prose_hits_carry_no_symbols_and_are_never_moved():
    prose = [Hit("a", "IL-10 and TNF in macrophages", 0.9, 1, "p.md", {}), Hit("b", "IL10 levels", 0.8, 2, "q.md", {})]
    assert lift_symbols(prose, QueryPlan("IL10", k=2, hints={"symbols": ["IL10"]})) == prose


def test_a_pasted_message_matches_across_string_pieces_prefixes_and_quotes():
    source = ('        raise MissingSchema(\n            f"Invalid URL {url!r}: No scheme supplied. "\n'
              '            f"Perhaps you meant https://{url}?"\n        )\n')
    pasted = pasted_text("No scheme supplied. Perhaps you meant https://")
    assert holds(source, pasted) and found_at(source, pasted) is not None and produces(source, pasted)
    assert holds("raise StyleSyntaxError(\"URL expected after 'link'\")", pasted_text("URL expected after 'link'"))
    assert not holds("URL expected before 'link'", pasted_text("URL expected after 'link'"))
    assert pasted_text("Style.parse") is None and pasted_text("stem cells") is None


def test_the_chunk_that_raises_a_message_comes_before_one_that_mentions_it_and_twins_in_file_order():
    message = "The content for this response was already consumed"
    hits = [
        hit("doc", f'class StreamConsumedError(TypeError):\n    """{message}."""', "StreamConsumedError",
            kind="class", source="exceptions.py", score=0.9),
        hit("unrelated", "def text(self): ...", "Response.text", score=0.8),
        hit("async", f'    async def read(self):\n        raise RuntimeError("{message}")', "AsyncResponse.read",
            source="models.py", start=90, end=95, score=0.7),
        hit("sync", f'    def read(self):\n        raise RuntimeError("{message}")', "Response.read",
            source="models.py", start=30, end=35, score=0.6),
    ]
    plan = QueryPlan(message, k=4, hints={"pasted": pasted_text(message)})
    assert [h.chunk_id for h in lift_pasted(hits, plan)] == ["sync", "async", "doc", "unrelated"]


def test_only_a_wholly_quoted_query_is_a_phrase_search_and_inner_quotes_are_text():
    inner = understand("URL expected after 'link'", UnderstandConfig())
    assert inner.hints["pasted"] == "url expected after link"
    whole = understand('"URL expected after"', UnderstandConfig())
    assert whole.phrases == ["URL expected after"]
    assert understand("'URL expected after'", UnderstandConfig()).phrases == ["URL expected after"]
    inside = understand("""StyleSyntaxError: "URL expected after 'link'" at col 4""", UnderstandConfig())
    assert inside.phrases == ["URL expected after 'link'"]  # double quotes inside: a preference; single: text
    assert understand("class Style", UnderstandConfig()).hints["symbols"] == ["Style"]
    off = UnderstandConfig(symbols=False, pasted=False)
    assert "symbols" not in understand("class Style", off).hints
    assert "pasted" not in understand("URL expected after 'link'", off).hints


TRACEBACK = '''Traceback (most recent call last):
  File "/home/me/app.py", line 12, in <module>
    main()
  File "/usr/lib/python3/site-packages/rich/style.py", line 496, in parse
    raise errors.StyleSyntaxError("URL expected after 'link'")
rich.errors.StyleSyntaxError: URL expected after 'link'
'''


def test_a_pasted_traceback_is_searched_by_its_message_and_names_its_frames():
    read = read_traceback(TRACEBACK)
    assert read is not None and read.exception == "StyleSyntaxError"
    assert read.message == "URL expected after 'link'" and read.functions == ("parse",)
    understood = understand(TRACEBACK, UnderstandConfig())
    assert understood.text == "StyleSyntaxError: URL expected after 'link'"
    assert understood.hints["pasted"] == "url expected after link"
    assert read_traceback("two lines\nof prose") is None


def test_sql_statements_are_found_in_any_dialect():
    text = ("-- users\nCREATE TABLE IF NOT EXISTS public.users (id int);\nALTER TABLE ONLY users ADD x int;\n"
            "CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql;\n"
            "CREATE OR REPLACE VIEW \"Active Users\" AS SELECT ';' AS x;\n")
    found = [(s.kind, s.name) for s in statements(text)]
    assert found == [("table", "public.users"), ("", ""), ("function", "f"), ("view", "Active Users")]


def test_markdown_code_spans_and_fences_are_kept_as_written_in_plain_text():
    from ragloom.markup import plain_text

    text = ("Use `__init__` with `**kwargs`; a `URL | str` is **bold**.\n\n"
            "```python\ndef f(**kwargs) -> URL | str:\n    return __name__\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    shown = plain_text(text)
    assert "Use __init__ with **kwargs; a URL | str is bold." in shown
    assert "def f(**kwargs) -> URL | str:\n    return __name__" in shown
    assert "1  2" in shown  # a table's cells still two spaces apart


def test_a_code_hit_prints_as_numbered_lines_centred_on_the_match():
    import re

    from ragloom.cli.render import hit_block

    body = "\n".join(f"    line_{n} = {n}" for n in range(1, 31))
    text = "class Config:\n" + body.replace("line_20 = 20", 'raise ValueError("no such key")')
    hit = Hit("c", text, 1.0, 1, "/repo/config.py", {"symbol": "Config.load", "kind": "method", "language": "python",
                                                    "start_line": 101, "end_line": 130, "section": "Config > load"})

    def matcher(line: str) -> list[tuple[int, int]]:
        return [m.span() for m in re.finditer(r"no|such|key", line)]

    lines = [t.plain for t in hit_block(hit, "config.py", matcher, 100)]
    assert lines[0].endswith("config.py:101 · Config.load")
    assert '    120 │     raise ValueError("no such key")' in lines
    assert lines[1].strip() == "⋮" and "    101 │     line_1 = 1" not in lines  # centred, not from the top
    full = [t.plain for t in hit_block(hit, "config.py", matcher, 100, full=True)]
    assert full[1] == "        │ class Config:" and full[2] == "    101 │     line_1 = 1"


@pytest.mark.parametrize("size", [1, 3, 7, 1000])
def test_a_streamed_answer_prints_its_code_blocks_as_written(size):
    import io

    from rich.console import Console

    from ragloom.cli.render import WrappedStream

    answer = ("shop/style.py:17-19 [1]\n```python\n            if word == \"link\":\n"
              "                raise errors.StyleSyntaxError(\"URL expected after 'link'\")\n```\nand **that** is all [1].")
    out = io.StringIO()
    stream = WrappedStream(Console(file=out, width=60, force_terminal=True, color_system=None))
    for i in range(0, len(answer), size):
        stream.write(answer[i:i + size])
    stream.close()
    lines = out.getvalue().splitlines()
    assert lines[:3] == ["shop/style.py:17-19 [1]", '            if word == "link":',
                         "                raise errors.StyleSyntaxError(\"URL expected after 'link'\")"]
    assert lines[3] == "and that is all [1]."  # prose after it is still plain and wrapped
