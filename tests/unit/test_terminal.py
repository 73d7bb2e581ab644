"""What the terminal shows: hit blocks, plain text, streamed answers, help. Snapshots at 80 and 120 columns.

Rewrite the snapshots after a deliberate change with ``UPDATE_SNAPSHOTS=1`` and read the diff.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from ragloom.cli.render import MATCH_STYLE, WrappedStream, hit_block, print_hits
from ragloom.cli.search import query_matcher
from ragloom.display import DisplayPaths
from ragloom.markup import PlainWords, plain_text
from ragloom.types import Hit

SNAPSHOTS = Path(__file__).parent / "snapshots"
ROOT = "/home/ana/fastapi/docs/en/docs"

CORS = """# CORS (Cross-Origin Resource Sharing) { #cors-cross-origin-resource-sharing }

## Use `CORSMiddleware` { #use-corsmiddleware }

You can configure it in your **FastAPI** application using the `CORSMiddleware`.

* Import `CORSMiddleware`.
* Create a list of allowed origins (as strings).
* Add it as a "middleware" to your **FastAPI** application.

See <a href="https://developer.mozilla.org/en-US/docs/Web/HTTP/CORS" class="external-link" target="_blank">Mozilla's documentation about CORS</a>."""

MIDDLEWARE = """# Advanced Middleware { #advanced-middleware }

In the main tutorial you read how to add [Custom Middleware](../tutorial/middleware.md){.internal-link target=_blank} to your application.

And then you also read how to handle [CORS with the `CORSMiddleware`](../tutorial/cors.md){.internal-link target=_blank}."""

PDF = ("The planner samples configurations uniformly and connects each to its k nearest neighbours with a "
       "local planner; CORS is not involved, but middleware between planners often is. " * 3)


def hits() -> list[Hit]:
    def hit(rank: int, score: float, path: str, text: str, **metadata) -> Hit:
        return Hit(f"chunk{rank}", text, score, rank, f"{ROOT}/{path}", {"chunk_index": 0, **metadata})

    return [
        hit(1, 0.873, "tutorial/cors.md", CORS,
            section="CORS (Cross-Origin Resource Sharing) > Use `CORSMiddleware`"),
        hit(2, 0.861, "advanced/middleware.md", MIDDLEWARE, section="Advanced Middleware"),
        hit(3, 0.402, "reference/papers/a-very-long-folder-name-for-motion-planning/roadmaps.pdf", PDF, page=12,
            section="Probabilistic roadmaps: sampling, connecting and querying in high-dimensional spaces > Local planners"),
    ]


def render(width: int, **options) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=False, color_system=None)
    print_hits(console, hits(), DisplayPaths([ROOT]), query_matcher("how do I add CORS middleware"), **options)
    return out.getvalue()


def check_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("UPDATE_SNAPSHOTS") or not path.exists():
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} changed; UPDATE_SNAPSHOTS=1 rewrites it"


@pytest.mark.parametrize("width", [80, 120])
def test_search_hits_are_compact_blocks_at_80_and_120_columns(width: int) -> None:
    text = render(width)
    check_snapshot(f"search-{width}.txt", text)
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines) and all(line == line.rstrip() for line in lines)
    heads = [line for line in lines if re.match(r" ?\d  \d\.\d{3}  ", line)]
    assert [h.split()[2] for h in heads[:2]] == ["tutorial/cors.md", "advanced/middleware.md"]
    # One line per head: a long path keeps its end (the file's name), a long section is cut with "…".
    assert heads[2].endswith("roadmaps.pdf") if width == 80 else heads[2].endswith("…")
    for symbol in ("##", "**", "`", "<a ", "{ #", "{.internal-link"):
        assert symbol not in text, symbol


def test_raw_keeps_the_markup_and_full_shows_the_whole_passage() -> None:
    raw = render(120, raw=True, full=True)
    assert "## Use `CORSMiddleware` { #use-corsmiddleware }" in raw.replace("\n    ", "\n")
    assert "class=\"external-link\"" in raw.replace("\n    ", " ")


def test_matched_words_are_highlighted_in_the_snippet() -> None:
    lines = hit_block(hits()[1], "advanced/middleware.md", query_matcher("add CORS middleware"), 80)
    styled = {str(line)[span.start:span.end] for line in lines[1:] for span in line.spans if span.style == MATCH_STYLE}
    assert {"add", "Middleware", "CORS"} <= styled


ANSWER = ("To enable **CORS**, add the `CORSMiddleware` to your application [1]: import it, list the allowed "
          "origins and call `app.add_middleware(CORSMiddleware, allow_origins=origins)` [1]. The "
          "[HTTPSRedirectMiddleware](https://fastapi.tiangolo.com/advanced/middleware/) is another one [2]. "
          "Extraordinarilylongwordsthatgoonandonwithoutanyspaceatall appear in identifiers too.\n\n## Notes\n\n"
          "Keep <b>allow_credentials</b> off unless you need cookies.")


@pytest.mark.parametrize("width", [80, 120])
def test_a_streamed_answer_wraps_between_words_and_drops_markup(width: int) -> None:
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=True, color_system=None)
    stream = WrappedStream(console)
    for start in range(0, len(ANSWER), 3):  # three characters at a time, as tokens cut words anywhere
        stream.write(ANSWER[start:start + 3])
    stream.close()
    text = out.getvalue()
    check_snapshot(f"ask-{width}.txt", text)
    assert all(len(line) <= width for line in text.splitlines())
    words = " ".join(text.split())
    assert words == " ".join(plain_text(ANSWER).split())  # no word cut in two, nothing lost
    for symbol in ("**", "`", "<b>", "](", "## "):
        assert symbol not in text


def test_plain_text_keeps_citations_code_and_words() -> None:
    assert plain_text("# T { #t }\n\nUse `x` and **y** [2].") == "T\n\nUse x and y [2]."
    assert plain_text("```py\ncode()\n```") == "code()"
    assert plain_text("a <span class='k'>b</span> &amp; c") == "a b & c"
    pieces = PlainWords()
    assert "".join(pieces.feed("**bo") + pieces.feed("ld** [1] ") + pieces.end()) == "bold [1]"


def test_display_paths_are_relative_to_the_outermost_ingested_folder() -> None:
    shown = DisplayPaths(["/data/docs", "/data/docs/tutorial", "/notes"])
    assert shown("/data/docs/tutorial/index.md") == "tutorial/index.md"
    assert shown("/data/docs/advanced/index.md") == "advanced/index.md"
    assert shown("/notes/todo.md") == "todo.md"
    assert shown("/elsewhere/x.md") == "/elsewhere/x.md"
    # An index written before roots were recorded: the folder its sources share.
    legacy = DisplayPaths.of([], ["/a/docs/x/index.md", "/a/docs/y/index.md"])
    assert legacy("/a/docs/x/index.md") == "x/index.md"


def test_help_shows_flags_and_placeholders_and_every_command_has_an_example() -> None:
    import typer

    from ragloom.cli.app import _register_commands, app

    _register_commands()
    runner = CliRunner()
    group = typer.main.get_command(app)

    def commands(command, path=()):  # noqa: ANN001, ANN202
        for name, sub in getattr(command, "commands", {}).items():
            yield (*path, name), sub
            yield from commands(sub, (*path, name))

    for path, _ in commands(group):
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "120"}, terminal_width=120)
        assert result.exit_code == 0, (path, result.output)
        assert "Example" in result.output, path
        assert not re.search(r"<(bool|str|int|float|path|list\[\w+\])>", result.output, re.I), (path, result.output)
    search = runner.invoke(app, ["search", "--help"], env={"COLUMNS": "120"}).output
    assert re.search(r"--top-k\s+-k\s+N\b", search) and re.search(r"--json\s+Print", search)
    top = runner.invoke(app, ["--help"], env={"COLUMNS": "120"}).output
    assert "list_sources" not in top and "tools:" not in top.lower()


def test_mcp_help_names_the_tools_the_server_registers(tmp_path) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    import asyncio

    from ragloom.config import Config
    from ragloom.server.mcp import build_mcp
    from ragloom.server.service import IndexService

    from ragloom.cli.app import _register_commands, app

    _register_commands()
    helped = CliRunner().invoke(app, ["mcp", "--help"], env={"COLUMNS": "200"}, terminal_width=200).output
    listed = re.search(r"Tools: ([^;]+); with server.mcp.ingest on, also (\w+)", helped)
    named = {*listed.group(1).split(", "), listed.group(2)}
    config = Config.from_dict({"index": str(tmp_path / "index"), "server": {"mcp": {"ingest": True}}})
    service = IndexService(config, readers=1)
    try:
        tools = {tool.name for tool in asyncio.run(build_mcp(service, config).list_tools())}
    finally:
        service.close()
    assert named == tools
