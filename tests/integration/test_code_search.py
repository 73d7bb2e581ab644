"""Code searched as developers search it (issue 39), on a real embedded index with the packaged
model: names find their definitions, pasted messages and tracebacks find what raises them, quoted
phrases at any k, code shown verbatim with its lines, lines in every citation and context header."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragloom import Config, Index

STYLE = '''"""Styles."""

from . import errors


class Style:
    """A terminal style."""

    def __init__(self, color=None):
        self.color = color

    @classmethod
    def parse(cls, style_definition):
        """Parse a style definition."""
        words = style_definition.split()
        for original_word in words:
            word = original_word.lower()
            if word == "link":
                raise errors.StyleSyntaxError("URL expected after 'link'")
        return cls(words[0])

    def render(self, text):
        """Render text in this style."""
        return f"[{self.color}]{text}"
'''

THEME = '''"""Themes: a theme holds styles, each made with Style.parse."""

from .style import Style


class Theme:
    """A set of named styles; Style.parse reads each definition."""

    def __init__(self, styles):
        self.styles = {name: Style.parse(value) for name, value in styles.items()}

    def get_style(self, name):
        """The style of a name, parsed with Style.parse when it is text."""
        return self.styles.get(name) or Style.parse(name)
'''

CLIENT = '''"""HTTP clients, sync and async."""


class Client:
    def send(self, request):
        """Send a request and return its response."""
        if request.closed:
            raise RuntimeError("Cannot send a request, as the client has been closed.")
        response = self._transport.handle(request)
        return response


class AsyncClient:
    async def send(self, request):
        """Send a request and return its response."""
        if request.closed:
            raise RuntimeError("Cannot send a request, as the client has been closed.")
        response = await self._transport.handle(request)
        return response
'''

#: Chunks that say every word of a phrase, but never the phrase itself: they outrank the one
#: passage that holds it in both retrievers.
NOISE = '''def check_{n}(value):
    """The URL check {n}: after a link the URL is expected; an expected URL after the link, a URL, a link."""
    expected_url = value.url or value.link
    return expected_url, "url expected", "link after", "link url after expected"
'''

TRACEBACK = '''Traceback (most recent call last):
  File "/home/me/app.py", line 3, in <module>
    Style.parse("bold link")
  File "/usr/lib/python3/site-packages/shop/style.py", line 19, in parse
    raise errors.StyleSyntaxError("URL expected after 'link'")
shop.errors.StyleSyntaxError: URL expected after 'link'
'''


def project(root: Path) -> Path:
    package = root / "shop"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""The shop."""\n')
    (package / "style.py").write_text(STYLE)
    (package / "theme.py").write_text(THEME)
    (package / "client.py").write_text(CLIENT)
    for n in range(40):
        (package / f"checks_{n:02d}.py").write_text(NOISE.format(n=n))
    (root / "README.md").write_text("# Shop\n\nStyles are parsed with `Style.parse(**kwargs)`; a `URL | str` is "
                                    "taken.\n\n```python\ndef parse(**kwargs) -> URL | str:\n    return kwargs\n```\n")
    return root


@pytest.fixture(scope="module")
def shop(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("shop")
    folder = project(root / "repo")
    index = Index.open(root / "index", Config(), embedder=embedder)
    index.ingest(folder)
    yield index, folder
    index.close()


def first_line(index: Index, query: str, k: int = 5, mode: str | None = None):
    hits = index.search(query, k=k, mode=mode)
    assert hits, query
    return hits[0]


def defines(hit, source: str, line_text: str) -> bool:
    """Whether ``hit`` comes from ``source`` and its lines hold the line ``line_text`` of it."""
    lines = {"style.py": STYLE, "theme.py": THEME, "client.py": CLIENT}[source].splitlines()
    number = 1 + next(i for i, line in enumerate(lines) if line.strip() == line_text)
    return hit.source.endswith("/" + source) and hit.start_line <= number <= hit.end_line


@pytest.mark.parametrize("query, source, line", [
    ("Style.parse", "style.py", "def parse(cls, style_definition):"),
    ("class Style", "style.py", "class Style:"),
    ("def parse", "style.py", "def parse(cls, style_definition):"),
    ("shop.style.Style", "style.py", "class Style:"),
    ("get_style", "theme.py", "def get_style(self, name):"),
    ("theme.getStyle", "theme.py", "def get_style(self, name):"),  # loose: case and separators ignored
    ("Theme.get_sty", "theme.py", "def get_style(self, name):"),  # a prefix, when no name matches whole
    ("AsyncClient.send", "client.py", "async def send(self, request):"),
])
def test_a_name_finds_its_definition_first(shop, query, source, line):
    index, _ = shop
    top = first_line(index, query)
    assert defines(top, source, line), (query, top.source, top.metadata["symbol"], top.start_line)


def test_the_symbol_lift_is_what_brings_the_definition_up(shop, embedder, tmp_path):
    index, folder = shop
    off = Index.open(tmp_path / "off", Config.from_dict({"search": {"understand": {"symbols": False}}}),
                     embedder=embedder)
    off.ingest(folder)
    hits = off.search("Style.parse", k=5)
    off.close()
    assert not defines(hits[0], "style.py", "def parse(cls, style_definition):")  # Theme says "Style.parse" more


@pytest.mark.parametrize("k", [1, 3, 10])
def test_a_pasted_message_with_quotes_finds_the_raise_at_any_k(shop, k):
    index, _ = shop
    top = first_line(index, "URL expected after 'link'", k=k)
    assert defines(top, "style.py", "raise errors.StyleSyntaxError(\"URL expected after 'link'\")")
    assert top.scores["exact"] == 1.0 and top.weak is False  # it holds the text: never "weak", whatever its cosine


@pytest.mark.parametrize("k", [1, 3, 10])
def test_a_quoted_phrase_finds_the_passage_holding_it_at_any_k_in_the_default_mode(shop, k):
    index, _ = shop
    hits = index.search('"URL expected after"', k=k)
    assert "URL expected after" in hits[0].text, [h.metadata.get("symbol") for h in hits]


def test_a_pasted_traceback_is_searched_by_its_message(shop):
    index, _ = shop
    result = index.retrieve(TRACEBACK, k=3)
    assert result.plan.text == "StyleSyntaxError: URL expected after 'link'"
    assert defines(result.hits[0], "style.py", "raise errors.StyleSyntaxError(\"URL expected after 'link'\")")


def test_the_chunk_raising_a_message_comes_first_and_twins_in_file_order(shop):
    index, _ = shop
    hits = index.search("Cannot send a request, as the client has been closed", k=3)
    assert [h.metadata["symbol"].split(".")[0] for h in hits[:2]] == ["Client", "AsyncClient"]


def test_code_sections_are_qualified_symbols_and_fenced_code_stays_as_written(shop):
    index, _ = shop
    top = first_line(index, "Theme.get_style")
    assert top.section == top.metadata["symbol"] and top.section.startswith("Theme") and top.is_code
    readme = next(h for h in index.search("parse kwargs URL str", k=10, mode="lexical") if h.source.endswith(".md"))
    from ragloom.markup import plain_text

    shown = plain_text(readme.text)
    assert "def parse(**kwargs) -> URL | str:\n    return kwargs" in shown


def test_an_extractive_answer_quotes_code_lines_whole_and_twins_once(shop):
    index, _ = shop
    answer = index.ask("What happens when I send a request after the client has been closed?",
                       strategy="extractive", k=4)
    assert "```python\n" in answer.text
    block = answer.text.split("```python\n", 1)[1].split("\n```", 1)[0]
    assert 'raise RuntimeError("Cannot send a request, as the client has been closed.")' in block
    # The sync and async twins are one quote that names both places.
    assert answer.text.count('raise RuntimeError("Cannot send') == 1
    assert "shop/client.py:" in answer.text and answer.text.count("shop/client.py:") == 2
    assert all(c.start_line is not None for c in answer.citations)


def test_context_headers_name_the_path_in_the_ingested_folder_and_the_lines(shop):
    index, _ = shop
    context = index.context("Style.parse", k=2)
    header = context.passages[0].header
    assert "shop/style.py" in header and f"lines {context.passages[0].hit.start_line}-" in header


def test_cli_shows_code_verbatim_with_line_numbers_and_citations_with_lines(shop, tmp_path):
    _, folder = shop
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}

    def ragloom(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "ragloom", *args, "--index", str(tmp_path / "cli")],
                              capture_output=True, text=True, env={**env, "COLUMNS": "120"}, timeout=600)

    assert ragloom("ingest", str(folder)).returncode == 0
    found = ragloom("search", "URL expected after 'link'", "-k", "1")
    assert found.returncode == 0, found.stderr
    line = 1 + STYLE.splitlines().index("                raise errors.StyleSyntaxError(\"URL expected after 'link'\")")
    assert f"{line} │                 raise errors.StyleSyntaxError(\"URL expected after 'link'\")" in found.stdout
    assert "shop/style.py:" in found.stdout and "· Style" in found.stdout
    asked = ragloom("ask", "What does Style.parse raise after link?", "--strategy", "extractive", "--json")
    assert asked.returncode == 0, asked.stderr
    citations = json.loads(asked.stdout)["citations"]
    assert citations and all(c["start_line"] and c["end_line"] for c in citations)
    listed = ragloom("ask", "What does Style.parse raise after link?", "--strategy", "extractive")
    assert "shop/style.py:" in listed.stdout.split("Sources", 1)[1]


def test_a_name_under_a_package_ingested_as_its_own_folder_is_found_by_its_full_dotted_name(tmp_path, embedder):
    # The folder given is the package itself: "shop" is in no path, yet shop.style.Style.parse names it.
    folder = project(tmp_path / "repo") / "shop"
    with Index.open(tmp_path / "index", Config(), embedder=embedder) as index:
        index.ingest(folder)
        top = first_line(index, "shop.style.Style.parse")
    assert defines(top, "style.py", "def parse(cls, style_definition):")
